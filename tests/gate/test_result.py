"""The gate's result: exit code and status, the failures' order, and the canonical document."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.gate.baseline.corpus_changes import CorpusCheck, NotComparableQuery
from retrieval_gate.gate.decide import decide
from retrieval_gate.gate.modes.assisted import Assisted
from retrieval_gate.gate.result import (
    GateResult,
    OtherLevelChecks,
    assisted_document,
    error_document,
    failing_checks,
)
from retrieval_gate.pipeline.record import CurrentRun, record_current
from retrieval_gate.stats.calibration import CalibrationCard, SystemAgreement
from tests.helpers.generated_project import make_set, write_config, write_retriever


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, CurrentRun]:
    root = tmp_path_factory.mktemp("result")
    make_set(root)
    write_retriever(root, "good_search", broken=0)
    config = load(write_config(root, "good_search"))
    return config, record_current(config, cache=False)


@pytest.fixture(scope="module")
def unchanged(project: tuple[Any, CurrentRun]) -> GateResult:
    config, run = project
    return decide(run.record, run.record, config, run.dataset)


@pytest.fixture(scope="module")
def worse(project: tuple[Any, CurrentRun]) -> GateResult:
    """Every query 10 pt of ndcg@10 and 6 pt of recall@10 lower: both fail, overall."""
    config, run = project
    scores = dict(run.record.scores)
    scores["ndcg@10"] = scores["ndcg@10"] - 0.10
    scores["recall@10"] = scores["recall@10"] - 0.06
    current = dataclasses.replace(run.record, scores=scores)
    return decide(run.record, current, config, run.dataset)


def test_a_pass_exits_0_and_a_failure_exits_1(unchanged: GateResult, worse: GateResult) -> None:
    assert (unchanged.status, unchanged.exit_code, unchanged.failures) == ("pass", 0, ())
    assert unchanged.document()["status"] == "pass"
    assert unchanged.document()["failures"] == []
    assert (worse.status, worse.exit_code) == ("fail", 1)
    assert worse.document()["status"] == "fail"
    assert worse.failures
    assert all(c.failed for c in worse.failures)
    assert [f["metric"] for f in worse.document()["failures"]] == [c.metric for c in worse.failures]


def test_failures_are_regressions_first_each_kind_worst_first(unchanged: GateResult) -> None:
    base = unchanged.comparisons[0]

    def check(name: str, verdict: Any, delta: float, failed: bool = True) -> Any:
        return dataclasses.replace(base, metric=name, verdict=verdict, delta=delta, failed=failed)

    checks = [
        check("floor-small", "below_floor", -0.01),
        check("passing", "pass", -0.5, failed=False),
        check("regressed-small", "regressed", -0.02),
        check("inconclusive", "inconclusive", -0.3),
        check("floor-big", "below_floor", -0.2),
        check("regressed-big", "regressed", -0.04),
    ]
    order = [c.metric for c in failing_checks(checks)]
    # Then by verdict name (below_floor before inconclusive), each by its delta.
    assert order == ["regressed-big", "regressed-small", "floor-big", "floor-small", "inconclusive"]
    failing = dataclasses.replace(unchanged, comparisons=tuple(checks))
    assert failing.exit_code == 1
    assert failing.status == "fail"
    assert [f["metric"] for f in failing.document()["failures"]] == order


def test_a_check_s_defaults_are_left_out_and_other_values_kept(unchanged: GateResult) -> None:
    base = unchanged.comparisons[0]
    plain = GateResult.document(dataclasses.replace(unchanged, comparisons=(base,)))
    row = plain["comparisons"][0]
    assert not {"direction", "unit", "excluded"} & set(row)
    assert row["metric"] == base.metric
    latency = dataclasses.replace(base, direction="lower", unit="ms", excluded=3)
    shown = dataclasses.replace(unchanged, comparisons=(latency,)).document()["comparisons"][0]
    assert (shown["direction"], shown["unit"], shown["excluded"]) == ("lower", "ms", 3)


def test_the_baseline_scores_follow_the_current_order_with_null_for_undefined(
    unchanged: GateResult,
) -> None:
    baseline = unchanged.baseline
    ids = baseline.query_ids
    values = np.arange(len(ids), dtype=np.float64) / 1000.0
    values[1] = math.nan
    record = dataclasses.replace(baseline, scores={"ndcg@10": values})
    current = dataclasses.replace(unchanged.current, query_ids=tuple(reversed(ids)))
    result = dataclasses.replace(unchanged, baseline=record, current=current)
    scores = result.document()["baseline"]["scores"]
    expected: list[float | None] = [float(v) for v in values[::-1]]
    expected[-2] = None
    assert scores == {"ndcg@10": expected}


def test_the_corpus_block_says_only_what_there_is_to_say(unchanged: GateResult) -> None:
    def block(corpus: CorpusCheck | None) -> Any:
        return dataclasses.replace(unchanged, corpus=corpus).document().get("corpus")

    assert block(None) is None
    assert block(CorpusCheck(checked=True)) is None
    assert block(CorpusCheck(checked=False, reason="no corpus")) == {
        "checked": False,
        "reason": "no corpus",
    }
    changed = NotComparableQuery(query_id="q7", reasons=("doc d7 removed",))
    assert block(CorpusCheck(checked=True, not_comparable=(changed,))) == {
        "checked": True,
        "not_comparable": [{"query_id": "q7", "reasons": ["doc d7 removed"]}],
    }


def test_the_spread_is_each_overall_check_s_run_sd(unchanged: GateResult) -> None:
    overall = [c for c in unchanged.comparisons if c.slice == "all"]
    sliced = next(c for c in unchanged.comparisons if c.slice != "all")
    noisy = (
        dataclasses.replace(overall[0], run_sd=0.02),
        dataclasses.replace(overall[1], run_sd=0.0),
        dataclasses.replace(sliced, run_sd=0.5),
    )
    result = dataclasses.replace(unchanged, comparisons=noisy)
    assert result.document()["noise"]["spread"] == {overall[0].metric: 0.02}


def test_an_error_document_says_why_it_could_not_decide() -> None:
    document = error_document("nightly", "the baseline is missing")
    assert document["status"] == "error"
    assert (document["name"], document["error"]) == ("nightly", "the baseline is missing")


def _assisted(systems: SystemAgreement | None) -> Assisted:
    card = CalibrationCard(
        pairs=40, kappa=0.8, alpha=0.7, confusion=((1, 2), (3, 4)), bias=(), systems=systems
    )
    named = JudgeIdentity(
        model="judge", prompt_sha256="abc", answered_by="judge-2025", system_fingerprint="fp_9"
    )
    bare = JudgeIdentity(model="judge", prompt_sha256="abc", temperature=0.0)
    return Assisted(
        model="judge",
        prompt_sha256="abc",
        judges=((named, 30), (bare, 10)),
        card=card,
        trusted=True,
        why_not="",
        assisted=(),
        human=(),
        human_judged=(),
        weights=(),
        queries=12,
        human_queries=10,
        uncovered=(),
    )


def test_the_labels_block_says_null_for_what_the_judge_did_not_say() -> None:
    document = assisted_document(_assisted(None))
    assert document["decided_by"] == "human+llm"
    named, bare = document["judge"]["answered_by"]
    assert (named["model"], named["system_fingerprint"], named["pairs"]) == (
        "judge-2025",
        "fp_9",
        30,
    )
    assert (bare["model"], bare["system_fingerprint"], bare["pairs"]) == (None, None, 10)
    assert bare["temperature"] == 0.0
    assert document["judge"]["mixed"] is True
    assert document["calibration"]["systems"] is None
    ranked = assisted_document(_assisted(SystemAgreement(runs=5, tau=0.6)))
    assert ranked["calibration"]["systems"] == {"runs": 5, "tau": 0.6, "note": ""}
    assert "judging" not in document  # nothing was graded on the way


def test_a_result_with_a_judge_carries_its_labels_block(unchanged: GateResult) -> None:
    assert "labels" not in unchanged.document()
    assisted = _assisted(None)
    document = dataclasses.replace(unchanged, assisted=assisted).document()
    assert document["labels"] == assisted_document(assisted)


@pytest.mark.parametrize(("other", "gating"), [("chunk", "document"), ("document", "chunk")])
def test_the_gating_level_is_the_one_the_other_level_is_not(other: str, gating: str) -> None:
    found = OtherLevelChecks(level=other, gated=False, comparisons=())  # type: ignore[arg-type]
    assert found.gating_level == gating


def test_a_gating_other_level_s_failures_fail_the_result(unchanged: GateResult) -> None:
    base = unchanged.comparisons[0]
    failed = dataclasses.replace(base, view="chunk", verdict="regressed", delta=-0.1, failed=True)
    other = OtherLevelChecks(level="chunk", gated=True, comparisons=(failed,))
    both = dataclasses.replace(unchanged, other_level=other)
    assert (both.failures, both.status, both.exit_code) == ((failed,), "fail", 1)
    block = both.document()["other_level"]
    assert (block["level"], block["gating_level"], block["gated"]) == ("chunk", "document", True)
    assert [c["view"] for c in block["comparisons"]] == ["chunk"]
