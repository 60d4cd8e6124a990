"""No check is decided on two judges' labels: only the pairs it scores count, old rows too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.datasets.llm_layer import read_layer, write_layer
from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.gate.modes.judges import mixed_judges, same_family
from retrieval_gate.gate.result import GateResult
from retrieval_gate.pipeline.check import check
from tests.helpers.judged_example import (
    assisted_config,
    held_back_example,
    pooled_pairs,
    read_qrels,
    simulated_layer,
)

NAMES = ("example.yaml", "example-regressed.yaml")
REGRESSED = "assisted-example-regressed.yaml"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The held-back example and a trusted judge's layer, its rows written as versions before
    the judge's identity wrote them: no answering model recorded."""
    target = held_back_example(tmp_path_factory.mktemp("judges") / "example")
    configs = [assisted_config(target, name) for name in NAMES]
    full = read_qrels(target / "full.tsv")
    simulated_layer(target / "judge.llm.jsonl", pooled_pairs(configs) | set(full), full)
    return target


@pytest.fixture(scope="module")
def one_judge(example: Path) -> GateResult:
    return check(example / REGRESSED, cache=False)


def _relabelled(example: Path, tmp_path: Path, inside_pool: bool) -> Path:
    """A copy of the example whose layer names another answering model on the rows outside
    the pool (people's pairs beyond it, graded for the card), and on one inside it when
    `inside_pool`."""
    import shutil

    copy = tmp_path / "example"
    shutil.copytree(example, copy)
    layer = copy / "judge.llm.jsonl"
    configs = [copy / f"assisted-{name}" for name in NAMES]
    pool = pooled_pairs(configs)
    rows = read_layer(layer)
    first_in_pool = next(row for row in rows if (row.query, row.doc) in pool)
    relabelled = [
        dataclasses.replace(row, answered_by="sim-judge-2026", system_fingerprint="fp_2")
        for row in rows
        if (row.query, row.doc) not in pool or (inside_pool and row == first_in_pool)
    ]
    assert relabelled
    write_layer(layer, relabelled)
    return copy


def test_rows_of_an_older_version_are_one_judge_and_decide(one_judge: GateResult) -> None:
    assisted = one_judge.assisted
    assert assisted is not None
    assert assisted.trusted
    assert not assisted.mixed
    [(who, pairs)] = assisted.judges
    assert who.answering() == "an unrecorded model"
    assert pairs > 1000
    assert one_judge.status == "fail"  # the regressed example, decided with the judge's labels
    judge = one_judge.document()["labels"]["judge"]
    assert judge["answered_by"] == [
        {
            "model": None,
            "system_fingerprint": None,
            "temperature": None,
            "max_tokens": None,
            "logprobs": None,
            "pairs": pairs,
        }
    ]
    assert judge["mixed"] is False


def test_another_judge_outside_the_pairs_a_check_scores_changes_nothing(
    example: Path, tmp_path: Path, one_judge: GateResult
) -> None:
    copy = _relabelled(example, tmp_path, inside_pool=False)
    result = check(copy / REGRESSED, cache=False)
    assert result.assisted is not None
    assert not result.assisted.mixed
    assert result.comparisons == one_judge.comparisons


def test_one_pair_of_another_judge_in_the_pool_makes_every_gated_check_inconclusive(
    example: Path, tmp_path: Path, one_judge: GateResult
) -> None:
    copy = _relabelled(example, tmp_path, inside_pool=True)
    result = check(copy / REGRESSED, cache=False)
    assisted = result.assisted
    assert assisted is not None
    assert assisted.mixed
    assert [(who.answering(), pairs) for who, pairs in assisted.judges][1] == (
        "sim-judge-2026 (fingerprint fp_2)",
        1,
    )
    gated = [c for c in result.comparisons if c.gated]
    assert gated
    assert {c.verdict for c in gated} == {"inconclusive"}
    # A mix fails the gate whatever gate.on_inconclusive says, as unjudged pairs do.
    assert all(c.failed for c in gated)
    assert result.status == "fail"
    assert one_judge.status == "fail"
    [warning] = [w for w in result.warnings if "graded by 2 judges" in w]
    assert "an unrecorded model on " in warning
    assert "sim-judge-2026 (fingerprint fp_2) on 1 pairs" in warning


def test_a_mix_turns_only_the_gated_checks_with_a_verdict(one_judge: GateResult) -> None:
    made = one_judge.comparisons
    ungated = [c for c in made if not c.gated and c.verdict is not None]
    assert ungated  # slices too small to gate, shown with a verdict
    first = JudgeIdentity(model="m", prompt_sha256="a" * 64, answered_by="judge-1")
    second = dataclasses.replace(first, answered_by="judge-2")
    third = dataclasses.replace(first, answered_by="judge-3")
    settings = ComparisonSettings()
    few: list[tuple[tuple[JudgeIdentity, int], ...]] = [(), ((first, 9),)]
    for judges in few:
        assert mixed_judges(made, judges, settings) == (tuple(made), "")
    several: list[tuple[tuple[JudgeIdentity, int], ...]] = [
        ((first, 9), (second, 2)),
        ((first, 9), (second, 2), (third, 1)),
    ]
    for judges in several:
        undecided, warning = mixed_judges(made, judges, settings)
        assert len(undecided) == len(made)
        for before, after in zip(made, undecided, strict=True):
            if before.gated and before.verdict is not None:
                assert (after.verdict, after.failed) == ("inconclusive", True)
                restored = dataclasses.replace(after, verdict=before.verdict, failed=before.failed)
                assert restored == before
            else:
                assert after == before
        assert f"were graded by {len(judges)} judges (" in warning
        assert "judge-1 on 9; judge-2 on 2" in warning
    gated_none = dataclasses.replace(ungated[0], gated=True, verdict=None, failed=False)
    kept, _ = mixed_judges([gated_none], ((first, 1), (second, 1)), settings)
    assert kept == (gated_none,)


def test_only_the_system_s_models_of_a_judge_s_family_are_named(example: Path) -> None:
    config = load(example / REGRESSED)
    assert config.judge is not None
    models = {"embedder": "BAAI/bge-small-en-v1.5", "generator": "Qwen/Qwen2.5-14B-Instruct"}
    judge = config.judge.model_copy(
        update={"system_models": config.judge.system_models.model_copy(update=models)}
    )
    named = config.model_copy(update={"judge": judge})
    assert same_family(named, ["qwen2.5:7b"]) == ("generator Qwen/Qwen2.5-14B-Instruct (Qwen)",)
    assert same_family(named, ["gpt-4o-mini", ""]) == ()
