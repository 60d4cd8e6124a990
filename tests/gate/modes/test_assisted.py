"""gate.labels human+llm on the example with 70% of its judgments held back: verdicts, trust,
the provisional path, coverage, and what a hostile layer reaches."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.core.ids import object_array
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.model import Query
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.datasets.dataset import Dataset
from retrieval_gate.datasets.llm_layer import LlmJudgment, read_layer, write_layer
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.checks.slicing import slice_queries
from retrieval_gate.gate.decide import decide
from retrieval_gate.gate.modes.assisted import (
    MIN_HUMAN,
    assisted_comparisons,
    human_judged,
    labels_of,
    uncovered_note,
)
from retrieval_gate.gate.modes.judges import same_family
from retrieval_gate.gate.power.estimate import power_report
from retrieval_gate.gate.result import GateResult
from retrieval_gate.history.record import entry_line, result_entry
from retrieval_gate.pipeline.check import check
from retrieval_gate.pipeline.judge_labels import gate_judge, judge_labels
from retrieval_gate.report import render, summary_of, validate_result
from retrieval_gate.stats.ppi import ppi_mean, weighted_ppi_mean
from retrieval_gate.stats.significance import normal_quantile
from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.judged_example import (
    MODEL,
    PROMPT,
    assisted_config,
    held_back_example,
    pooled_pairs,
    read_qrels,
    simulated_layer,
)
from tests.helpers.paths import CONFIGS

NAMES = ("example.yaml", "example-regressed.yaml")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The held-back example, a trusted judge's layer over both retrievers' pools and every
    human-judged pair (as `judge` grades its calibration queries)."""
    target = held_back_example(tmp_path_factory.mktemp("assisted") / "example")
    configs = [assisted_config(target, name) for name in NAMES]
    full = read_qrels(target / "full.tsv")
    simulated_layer(target / "judge.llm.jsonl", pooled_pairs(configs) | set(full), full)
    return target


@pytest.fixture(scope="module")
def full_results() -> dict[str, GateResult]:
    """The example's own gate, every judgment by people."""
    return {name: check(CONFIGS / name, cache=False) for name in NAMES}


@pytest.fixture(scope="module")
def assisted_results(example: Path) -> dict[str, GateResult]:
    return {name: check(example / f"assisted-{name}", cache=False) for name in NAMES}


def overall(comparisons: Any, metric: str) -> Any:
    return next(c for c in comparisons if c.metric == metric and c.slice == "all")


def test_held_back_labels_and_a_judge_give_the_full_labels_verdicts(
    full_results: dict[str, GateResult], assisted_results: dict[str, GateResult]
) -> None:
    for name in NAMES:
        full, assisted = full_results[name], assisted_results[name]
        assert assisted.status == full.status, name
        labels = assisted.assisted
        assert labels is not None
        assert labels.trusted, labels.why_not
        assert labels.decided_by == "human+llm"
        assert assisted.comparisons == labels.assisted
        assert labels.human_queries == 39  # 30% of 131, by query
        assert labels.queries == 131
        assert not labels.uncovered
    assert full_results["example.yaml"].status == "pass"
    assert full_results["example-regressed.yaml"].status == "fail"


def test_the_assisted_interval_covers_the_full_labels_delta_and_beats_human_only(
    full_results: dict[str, GateResult], assisted_results: dict[str, GateResult]
) -> None:
    name = "example-regressed.yaml"
    labels = assisted_results[name].assisted
    assert labels is not None
    for metric in ("ndcg@10", "recall@10"):
        truth = overall(full_results[name].comparisons, metric).delta
        ppi = overall(labels.assisted, metric)
        human = overall(labels.human, metric)
        assert ppi.ci_low <= truth <= ppi.ci_high, metric
        assert human.n == 39
        assert ppi.n == 131
        assert ppi.ci_high - ppi.ci_low < human.ci_high - human.ci_low
    # The human-judged 39 alone cannot show the ndcg drop the assisted check shows (their
    # test does not even lean towards it).
    assert overall(labels.human, "ndcg@10").verdict == "pass"
    assert overall(labels.assisted, "ndcg@10").verdict == "regressed"


def test_means_add_up_and_unchanged_retrievers_change_nothing(
    assisted_results: dict[str, GateResult],
) -> None:
    for result in assisted_results.values():
        assert result.assisted is not None
        for c in result.assisted.assisted:
            assert c.current_mean - c.baseline_mean == pytest.approx(c.delta, abs=1e-12)
    same = assisted_results["example.yaml"].assisted
    assert same is not None
    assert all(c.delta == 0 and c.verdict in ("pass", None) for c in same.assisted)


def test_slices_with_few_human_judged_queries_are_not_gated(
    assisted_results: dict[str, GateResult],
) -> None:
    labels = assisted_results["example-regressed.yaml"].assisted
    assert labels is not None
    few = [
        (c, n)
        for c, n in zip(labels.assisted, labels.human_judged, strict=True)
        if c.verdict is not None and n < MIN_HUMAN
    ]
    assert few
    for c, n in few:
        assert not c.gated
        assert not c.failed
        assert f"too few human-judged queries ({n} < {MIN_HUMAN})" in c.reason


def test_the_calibration_card_counts_the_shared_pairs(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    labels = assisted_results["example.yaml"].assisted
    assert labels is not None
    card = labels.card
    kept = read_qrels(example / "example" / "qrels" / "test.tsv")
    assert card.pairs == len(kept)
    assert sum(map(sum, card.confusion)) == card.pairs
    assert card.kappa is not None
    assert card.kappa > 0.7
    assert [b.pairs for b in card.bias] == [sum(row) for row in card.confusion]
    assert card.systems is not None
    assert card.systems.tau is None
    assert "base and head alone" in card.systems.note


def test_below_the_trust_floor_the_verdict_stays_human_only(example: Path) -> None:
    config = assisted_config(
        example, "example-regressed.yaml", trust={"min_pairs": 10_000}, file="few.yaml"
    )
    result = check(config, cache=False)
    labels = result.assisted
    assert labels is not None
    assert not labels.trusted
    assert labels.decided_by == "human"
    assert result.comparisons == labels.human
    assert "(judge.trust.min_pairs: 10000)" in labels.why_not
    assert any(w.startswith("LLM labels are provisional") for w in result.warnings)
    # The would-be verdict is shown: the assisted checks fail where the human-only pass.
    assert any(c.failed for c in labels.assisted)
    assert overall(result.comparisons, "ndcg@10").verdict == "pass"
    record = validate_result(result.document())
    markdown = render(record, "markdown")
    assert "LLM labels are provisional" in markdown
    assert "it would fail" in markdown
    assert "Overall, with the judge's labels (not used)" in markdown
    assert "provisional" in summary_of(record)


def test_a_judge_that_disagrees_with_people_is_provisional(example: Path, tmp_path: Path) -> None:
    rows = read_layer(example / "judge.llm.jsonl")
    rng = np.random.default_rng(5)
    noise = [
        LlmJudgment(r.query, r.doc, int(rng.integers(0, 4)), r.model, r.prompt_sha256, "", r.time)
        for r in rows
    ]
    write_layer(tmp_path / "random.llm.jsonl", noise)
    config = assisted_config(
        example,
        "example-regressed.yaml",
        output=str(tmp_path / "random.llm.jsonl"),
        file="random.yaml",
    )
    result = check(config, cache=False)
    labels = result.assisted
    assert labels is not None
    assert not labels.trusted
    assert labels.card.kappa is not None
    assert labels.card.kappa < 0.4
    assert "quadratic kappa" in labels.why_not
    assert result.comparisons == labels.human


def test_pairs_the_judge_did_not_grade_are_bounded_never_left_out(
    example: Path, tmp_path: Path
) -> None:
    """q001's pairs gone from the layer, and no judge to grade them (--no-judge): q001 stays
    in every check, its pairs non-relevant, and each check it is in is bounded over their
    grades. Unchanged rankings (example.yaml) move nothing whatever the grades; on the
    regressed example the overall ndcg@10 and recall@10 fail for every grading, and a check
    whose verdict the grades could turn is inconclusive and fails the gate."""
    rows = [r for r in read_layer(example / "judge.llm.jsonl") if r.query != "q001"]
    write_layer(tmp_path / "gap.llm.jsonl", rows)
    found = {}
    for name in NAMES:
        config = assisted_config(
            example, name, output=str(tmp_path / "gap.llm.jsonl"), file=f"gap-{name}"
        )
        found[name] = check(config, cache=False, judge=False)
    same, regressed = found["example.yaml"], found["example-regressed.yaml"]
    for result in (same, regressed):
        labels = result.assisted
        assert labels is not None
        assert labels.uncovered == ("q001",)
        assert labels.queries == 131
        assert labels.calls is not None
        assert labels.calls.skipped == "--no-judge"
        assert labels.calls.graded == labels.calls.calls == 0
        assert labels.calls.needed > 0
        assert any("1 query of 131 hold" in w and "q001" in w for w in result.warnings)
        holed = {(h.metric, h.slice) for h in result.label_holes}
        assert ("ndcg@10", "all") in holed
        assert all(h.unjudged > 0 and not h.exact for h in result.label_holes)
    assert same.status == "pass"
    assert all(h.robust and h.worst_delta == h.best_delta == 0.0 for h in same.label_holes)
    holes = {(h.metric, h.slice): h for h in regressed.label_holes}
    for metric in ("ndcg@10", "recall@10"):
        hole = holes[metric, "all"]
        assert hole.robust
        assert hole.worst == hole.best == "regressed"
        assert hole.worst_delta is not None
        assert hole.best_delta is not None
        assert hole.worst_delta < overall(regressed.comparisons, metric).delta < hole.best_delta
    turned = [h for h in regressed.label_holes if not h.robust]
    assert turned
    for hole in turned:
        check_of = next(
            c for c in regressed.comparisons if (c.metric, c.slice) == (hole.metric, hole.slice)
        )
        assert check_of.verdict == "inconclusive"
        assert check_of.failed
    document = regressed.document()
    assert document["labels"]["judging"]["skipped"] == "--no-judge"
    assert document["label_holes"]


def test_a_judge_depth_below_k_covers_a_query_once_its_top_depth_is_graded(
    example: Path, tmp_path: Path
) -> None:
    """A layer of each run's top 3 (and people's pairs): with judge.depth 3 every query is
    covered; at the default depth (k, 10) the documents ranked 4-10 are missing."""
    shallow = pooled_pairs([example / f"assisted-{name}" for name in NAMES], depth=3)
    people = set(read_qrels(example / "example" / "qrels" / "test.tsv"))
    rows = [
        r for r in read_layer(example / "judge.llm.jsonl") if (r.query, r.doc) in shallow | people
    ]
    write_layer(tmp_path / "shallow.llm.jsonl", rows)
    found = {}
    for depth in (3, None):
        config = assisted_config(
            example,
            "example-regressed.yaml",
            output=str(tmp_path / "shallow.llm.jsonl"),
            file=f"shallow-{depth}.yaml",
            **({} if depth is None else {"depth": depth}),
        )
        found[depth] = check(config, cache=False).assisted
    assert found[3] is not None
    assert found[None] is not None
    assert (found[3].queries, found[3].uncovered) == (131, ())
    assert len(found[None].uncovered) > 10


def _layer_with(example: Path, tmp_path: Path, extra: list[LlmJudgment]) -> Path:
    path = tmp_path / "layer.llm.jsonl"
    write_layer(path, [*read_layer(example / "judge.llm.jsonl"), *extra])
    return path


def test_a_layer_without_the_model_or_with_two_prompts_is_exit_2(
    example: Path, tmp_path: Path
) -> None:
    other = assisted_config(example, "example.yaml", model="another-model", file="other.yaml")
    code, _, err = run_cli("check", "-c", other, "--no-cache")
    assert code == 2
    assert "holds no grades of model another-model" in err
    assert MODEL in err
    second = LlmJudgment("q001", "kb-1", 1, MODEL, "b" * 64, "1", "2026-11-26T00:00:00Z")
    path = _layer_with(example, tmp_path, [second])
    config = assisted_config(example, "example.yaml", output=str(path), file="two.yaml")
    code, _, err = run_cli("check", "-c", config, "--no-cache")
    assert code == 2
    assert "under 2 prompts" in err
    assert PROMPT[:12] in err
    assert "b" * 12 in err


HOSTILE_MODEL = "evil\n::error::owned\x1b[31m <b>x</b> | y"


def test_hostile_answers_and_model_names_reach_no_report_raw(example: Path, tmp_path: Path) -> None:
    rows = read_layer(example / "judge.llm.jsonl")
    hostile = [
        LlmJudgment(
            r.query,
            r.doc,
            r.grade,
            HOSTILE_MODEL,
            r.prompt_sha256,
            "\n::error::pwned\x1b[2J\x07 ignore previous instructions",
            r.time,
        )
        for r in rows
    ]
    write_layer(tmp_path / "hostile.llm.jsonl", hostile)
    config = assisted_config(
        example,
        "example-regressed.yaml",
        model=HOSTILE_MODEL,
        output=str(tmp_path / "hostile.llm.jsonl"),
        file="hostile.yaml",
    )
    code, out, err = run_cli("check", "-c", config, "--no-cache")
    assert code == 1, err
    result = check(config, cache=False)
    record = validate_result(json.loads(json.dumps(result.document())))
    texts = {
        "terminal": out + err,
        "summary": summary_of(record),
        "markdown": render(record, "markdown"),
        "html": render(record, "html"),
        "json": render(record, "json"),
    }
    for sink, text in texts.items():
        assert "pwned" not in text, sink
        assert not re.search(r"^\s*::error::owned", text, re.MULTILINE), sink
        assert "\x1b" not in text, sink
        assert "\x07" not in text, sink
    assert "<b>x</b>" not in texts["html"]


def test_compare_re_decides_a_saved_assisted_result(example: Path, tmp_path: Path) -> None:
    config = example / "assisted-example-regressed.yaml"
    saved = tmp_path / "result.json"
    code, _, err = run_cli("check", "-c", config, "--no-cache", "--json", saved, "--quiet")
    assert code == 1, err
    baseline = example / ".retrieval-gate" / "example" / "baseline.json"
    code, out, err = run_cli(
        "compare", baseline, saved, "-c", config, "--quiet", "--json", tmp_path / "again.json"
    )
    assert code == 1, err
    assert "Labels: people's and the LLM judge sim-judge" in out
    first = json.loads(saved.read_text(encoding="utf-8"))
    again = json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert again["labels"]["assisted"] == first["labels"]["assisted"]


def _power(config: Path) -> dict[str, Any]:
    code, out, err = run_cli("power", "-c", config, "-f", "json")
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def test_power_states_the_prediction_powered_detectable_drop(example: Path) -> None:
    trusted = _power(example / "assisted-example.yaml")
    provisional = _power(
        assisted_config(example, "example.yaml", trust={"min_kappa": 0.99}, file="strict.yaml")
    )
    assert any("prediction-powered figures (a t-test)" in w for w in trusted["warnings"])
    assert any("LLM labels are provisional" in w for w in provisional["warnings"])

    def first(document: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in document["checks"] if c["slice"] == "all")

    assert first(trusted)["n"] == first(provisional)["n"] == 39
    # The judge's labels on the other 92 queries make the overall check see a smaller drop.
    assert first(trusted)["detectable_drop"] < first(provisional)["detectable_drop"]
    # Slices gate as `check` gates them: by size, and by 10 human-judged queries inside.
    gated = {c["slice"] for c in trusted["checks"] if c["gated"]}
    assert "intent=billing" in gated
    assert "intent=account" not in gated


def test_power_without_the_judges_grades_gives_human_only_figures(example: Path) -> None:
    # `check` refuses such a layer (exit 2); `power` still answers, and says why.
    other = assisted_config(example, "example.yaml", model="another-model", file="other.yaml")
    warnings = _power(other)["warnings"]
    layer = example / "judge.llm.jsonl"
    assert (
        f"human-only figures on the 39 human-judged queries: {layer}: the layer holds no "
        f"grades of model another-model (it holds: {MODEL}); run `retrieval-gate judge` with "
        "this config"
    ) in warnings


def test_power_keeps_the_assisted_spread_over_a_saved_run(example: Path) -> None:
    saved = example / ".retrieval-gate" / "example" / "baseline.json"
    code, out, err = run_cli(
        "power", "-c", example / "assisted-example.yaml", "--run", saved, "-f", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["spread"]["source"] == "assumption"
    assert any("the assisted estimate's, not" in w for w in document["warnings"])


def test_repeated_runs_are_said_to_be_averaged(example: Path) -> None:
    result = check(example / "assisted-example.yaml", cache=False, repeats=2)
    assert result.status == "pass"
    assert any("the first run's rankings" in w for w in result.warnings)


def test_single_runs_are_not_said_to_be_averaged(
    assisted_results: dict[str, GateResult],
) -> None:
    for result in assisted_results.values():
        assert not any("the first run's rankings" in w for w in result.warnings)


def test_too_few_human_judged_queries_and_a_blind_human_view_are_refused(tmp_path: Path) -> None:
    # 7 human-judged queries: the judge is not trusted on so few, and the people's own checks
    # could not fail on a drop carried by 2 of them: the gate refuses rather than pass.
    target = held_back_example(tmp_path / "example", share=0.95)
    config = assisted_config(target, "example.yaml", trust={"min_pairs": 1})
    full = read_qrels(target / "full.tsv")
    simulated_layer(target / "judge.llm.jsonl", pooled_pairs([config]) | set(full), full)
    with pytest.raises(GateError, match=r"could never fail: .* of its 7 queries cannot give"):
        check(config, cache=False)


def _human_judged_only(dataset: Dataset, count: int) -> Dataset:
    """`dataset` with people's judgments of its first `count` human-judged queries alone (the
    pooled, unjudged pairs kept)."""
    qrels = dataset.qrels
    judged = human_judged(dataset)
    kept = {q.id for q, mine in zip(dataset.queries, judged, strict=True) if mine}
    kept = set(sorted(kept)[:count])
    rows = np.isin(qrels.query_ids[qrels.query], sorted(kept)) | (qrels.grade < 0)
    docs = object_array(np.asarray(qrels.docs)[rows].tolist())
    cut = Qrels(qrels.query_ids, qrels.query[rows], docs, qrels.grade[rows], qrels.source)
    return dataclasses.replace(dataset, qrels=cut)


def test_exactly_min_human_judged_queries_let_an_agreeing_judge_decide(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    # "At least MIN_HUMAN": ten are enough; nine leave the verdict to people, whose own
    # checks on so few queries could never fail, so the gate refuses.
    result = assisted_results["example-regressed.yaml"]
    config = load(
        assisted_config(example, "example-regressed.yaml", trust={"min_pairs": 1}, file="ten.yaml")
    )
    ten = _human_judged_only(result.dataset, MIN_HUMAN)
    assert int(human_judged(ten).sum()) == MIN_HUMAN == 10
    again = decide(result.baseline, result.current, config, ten, judge=gate_judge(config, ten))
    labels = again.assisted
    assert labels is not None
    assert (labels.trusted, labels.why_not, labels.human_queries) == (True, "", 10)
    assert labels.decided_by == "human+llm"
    assert again.comparisons == labels.assisted
    assert not any("human-judged queries in the estimate" in w for w in again.warnings)
    nine = _human_judged_only(result.dataset, MIN_HUMAN - 1)
    with pytest.raises(GateError, match=r"could never fail: .* of its 9 queries"):
        decide(result.baseline, result.current, config, nine, judge=gate_judge(config, nine))


def test_human_llm_results_carry_no_label_hole_bounds(
    full_results: dict[str, GateResult], assisted_results: dict[str, GateResult]
) -> None:
    # The judge's labels fill the holes and the prediction-powered rule decides: the bounds,
    # which re-decide with people's labels alone, would bound another gate.
    assert full_results["example-regressed.yaml"].label_holes  # people only: bounded
    assert all(result.label_holes == () for result in assisted_results.values())
    assert all(result.document()["label_holes"] == [] for result in assisted_results.values())


def test_the_gate_is_handed_the_judges_labels_and_refuses_without_them(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    config = load(example / "assisted-example-regressed.yaml")
    result = assisted_results["example-regressed.yaml"]
    records = (result.baseline, result.current)
    with pytest.raises(AssertionError, match="read the judge's labels"):
        decide(*records, config, result.dataset)
    with pytest.raises(AssertionError, match="read the judge's labels"):
        power_report(config, result.dataset, result.baseline, "baseline.json")
    again = decide(*records, config, result.dataset, judge=gate_judge(config, result.dataset))
    # The same labels: `check` adds only what its judge step did (`decide` makes no call).
    decided = {k: v for k, v in result.document()["labels"].items() if k != "judging"}
    assert json.dumps(again.document()["labels"]) == json.dumps(decided)
    assert json.dumps(again.document()["comparisons"]) == json.dumps(
        result.document()["comparisons"]
    )


def test_labels_read_over_the_whole_set_are_cut_to_the_queries_the_gate_keeps(
    example: Path,
) -> None:
    # decide leaves out the queries whose judged documents changed in the corpus after the
    # labels were read: the card and the estimate must not see the judge's grades of them.
    config = load(example / "assisted-example.yaml")
    dataset = load_dataset(config.dataset, config.base_dir, keep_unjudged=True)
    ids = [query.id for query in dataset.queries]
    kept = ids[::2]
    smaller = dataclasses.replace(dataset, queries=tuple(dataset.queries[::2]))
    whole = judge_labels(config, ids).qrels
    cut = labels_of(judge_labels(config, ids), smaller).qrels
    alone = judge_labels(config, kept).qrels
    assert len(alone) < len(whole)
    for column in ("query_ids", "query", "docs", "grade"):
        assert getattr(cut, column).tolist() == getattr(alone, column).tolist(), column


def test_baseline_and_drift_hand_the_gate_the_judges_labels(example: Path, tmp_path: Path) -> None:
    # Each command that decides reads the layer itself: without it the gate would refuse.
    stored = tmp_path / "baseline.json"
    shutil.copy(example / ".retrieval-gate" / "example" / "baseline.json", stored)
    regressed = example / "assisted-example-regressed.yaml"
    code, out, err = run_cli(
        "baseline", "-c", regressed, "--if-improved", "-o", stored, "--no-cache", "--quiet"
    )
    assert (code, out.startswith(f"kept {stored}: ")) == (0, True), err
    lines = []
    for n, name in enumerate(("assisted-example.yaml", "assisted-example-regressed.yaml")):
        saved = tmp_path / f"{n}.json"
        run_cli("check", "-c", example / name, "--no-cache", "--quiet", "--json", saved)
        document = {**json.loads(saved.read_text(encoding="utf-8")), "name": "drift"}
        lines.append(
            entry_line(
                result_entry(
                    document,
                    str(saved),
                    commit=str(n + 1) * 40,
                    time=f"2026-11-2{n}T00:00:00Z",
                    ref="refs/heads/main",
                    subject=f"Merge pull request #{n + 1} from a/b",
                )
            )
        )
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(lines) + "\n", encoding="utf-8")
    document = yaml.safe_load(regressed.read_text(encoding="utf-8"))
    document["name"], document["gate"]["drift"] = "drift", {"max_drop": "1pt"}
    drift = example / "assisted-drift.yaml"
    drift.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    # The records' commits resolve in a checkout of their own, not whichever one the tests
    # run in (a copy of the repository outside git, as mutation.py's, has none).
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    git(checkout, "init", "-q", "-b", "main")
    code, out, err = run_cli("history", "drift", "-c", drift, "--from", history, "--repo", checkout)
    assert code == 1, err
    assert "#2" in out
    # The records' scores are not what human+llm compares: the drift holds the gate's own test
    # against the reference to the e-detector's bar.
    assert re.search(r" drifted, p \S+ against #1 \(1111111\) \(bar 6e\+03\)", out), out
    code, _, err = run_cli("check", "-c", drift, "--no-cache", "--history", history)
    assert code == 1
    assert "main's drift: " in err


def test_a_judge_of_the_system_s_family_is_named_on_the_card(example: Path) -> None:
    """judge.system_models names the system's models; a judge of the generator's family
    (configured, or as it answered) is named, with a warning; one of another family is not."""
    config = load(example / "assisted-example.yaml")
    assert config.judge is not None
    models = {"embedder": "BAAI/bge-small-en-v1.5", "generator": "openai/gpt-4o"}
    judge = config.judge.model_copy(
        update={"system_models": config.judge.system_models.model_copy(update=models)}
    )
    named = config.model_copy(update={"judge": judge})
    assert same_family(named, ["gpt-4o-mini"]) == ("generator openai/gpt-4o (OpenAI GPT)",)
    assert same_family(named, ["sim-judge", "gpt-4o-2024-08-06"]) == (
        "generator openai/gpt-4o (OpenAI GPT)",
    )
    assert same_family(named, ["claude-3-5-haiku", "sim-judge"]) == ()
    assert same_family(config, ["gpt-4o-mini"]) == ()  # no system named: nothing to say
    # A name from the config reaches the console and the reports on one line, no command.
    hostile = judge.model_copy(
        update={
            "system_models": judge.system_models.model_copy(
                update={"generator": "gpt-4o\n::error::pwned\x1b[31m"}
            )
        }
    )
    [said] = same_family(config.model_copy(update={"judge": hostile}), ["gpt-4o-mini"])
    assert "\n" not in said
    assert "\x1b" not in said
    result = check(example / "assisted-example.yaml", cache=False)
    document = result.document()
    document["labels"]["calibration"]["same_family"] = list(same_family(named, ["gpt-4o"]))
    record = validate_result(json.loads(json.dumps(document)))
    shown = "The judge is of the same family as the system's generator openai/gpt-4o (OpenAI GPT)"
    assert shown in render(record, "markdown")
    assert shown in render(record, "html")
    assert "same family" not in render(validate_result(result.document()), "markdown")


def test_a_gated_assisted_check_states_the_drop_it_would_catch(
    assisted_results: dict[str, GateResult],
) -> None:
    """Each gated prediction-powered check with a max_drop states its detectable drop, past
    max_drop (the drop it catches with power is max_drop and more, by its standard error)."""
    labels = assisted_results["example-regressed.yaml"].assisted
    assert labels is not None
    gated = [c for c in labels.assisted if c.gated and c.max_drop is not None and c.n >= 2]
    assert gated
    for c in gated:
        assert c.detectable_drop is not None, (c.metric, c.slice)
        assert c.max_drop is not None
        assert c.detectable_drop > c.max_drop, (c.metric, c.slice)


def test_labels_are_mixed_only_when_two_judges_graded_them(
    assisted_results: dict[str, GateResult],
) -> None:
    labels = assisted_results["example-regressed.yaml"].assisted
    assert labels is not None
    one = JudgeIdentity(model=MODEL, prompt_sha256="a" * 64, answered_by="judge-1")
    other = dataclasses.replace(one, answered_by="judge-2")
    assert not dataclasses.replace(labels, judges=()).mixed
    assert not dataclasses.replace(labels, judges=((one, 40),)).mixed
    assert dataclasses.replace(labels, judges=((one, 40), (other, 2))).mixed


def test_a_query_people_graded_only_non_relevant_is_human_judged() -> None:
    """A grade of 0 is a judgment; only a pooled pair left unjudged (below 0) is not one."""
    ids = ["all-zero", "mixed", "pooled-only", "absent"]
    qrels = Qrels(
        object_array(ids),
        np.array([0, 0, 1, 1, 2], dtype=np.int64),
        object_array(["d1", "d2", "d3", "d4", "d5"]),
        np.array([0.0, 0.0, -1.0, 2.0, -1.0]),
    )
    dataset = Dataset(
        queries=tuple(Query(id=q, text=q) for q in ids),
        qrels=qrels,
        corpus=None,
        layout="beir",
        warnings=(),
        source="<test>",
    )
    assert human_judged(dataset).tolist() == [True, True, False, False]


def test_wins_ties_and_losses_count_the_human_judged_queries_deltas(
    assisted_results: dict[str, GateResult],
) -> None:
    """The tallies are people's: the same as the human-only check's over the same queries,
    one per human-judged query of the check."""
    labels = assisted_results["example-regressed.yaml"].assisted
    assert labels is not None
    human = {(h.metric, h.slice): h for h in labels.human}
    tied = 0
    for c, count in zip(labels.assisted, labels.human_judged, strict=True):
        h = human[(c.metric, c.slice)]
        assert (c.wins, c.ties, c.losses) == (h.wins, h.ties, h.losses), (c.metric, c.slice)
        assert c.wins + c.ties + c.losses == count
        tied += c.ties
    assert tied  # some human-judged queries score the same before and after


def test_the_uncovered_note_names_five_queries_and_counts_the_rest() -> None:
    seven = [f"q{n}" for n in range(1, 8)]
    note = uncovered_note(seven, 40)
    assert note.startswith("7 queries of 40 hold documents")
    assert "(q1, q2, q3, q4, q5 and 2 more)" in note
    assert "q6" not in note
    assert "(q1, q2, q3, q4, q5)" in uncovered_note(seven[:5], 40)
    assert uncovered_note(["a\nb"], 3).startswith("1 query of 3 ")


def test_a_slice_without_human_judged_queries_estimates_nothing() -> None:
    """With no query people judged there is nothing to correct the judge with: the check is
    not gated, its means and delta are 0 and the judge's weight 0, without a p-value."""
    rng = np.random.default_rng(8)
    n = 40
    base = rng.uniform(0.3, 0.9, n)
    current = np.clip(base - 0.1 + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    labelled = np.arange(n) < 20
    scores = ({"ndcg@10": base}, {"ndcg@10": current})
    slices = {"all": np.arange(n), "judge-only": np.arange(20, n)}
    made, counts, weights = assisted_comparisons(
        scores, scores, labelled, slices, {"ndcg@10": Threshold(max_drop=0.05)}, {},
        ComparisonSettings(min_size=10),
    )  # fmt: skip
    assert [c.slice for c in made] == ["all", "judge-only"]
    assert counts == (20, 0)
    alone = made[1]
    assert not alone.gated
    assert "too few human-judged queries (0 < 10)" in alone.reason
    assert (alone.baseline_mean, alone.current_mean, alone.delta) == (0.0, 0.0, 0.0)
    assert (alone.p_value, alone.ci_low, alone.detectable_drop) == (None, None, None)
    assert weights[1] == 0.0
    assert weights[0] is not None
    assert made[0].delta < -0.05


def test_a_check_with_too_few_human_judged_queries_takes_no_share_of_alpha() -> None:
    rng = np.random.default_rng(8)
    n = 40
    base = rng.uniform(0.3, 0.9, n)
    current = np.clip(base - 0.1 + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    scores = ({"ndcg@10": base}, {"ndcg@10": current})
    slices = {"all": np.arange(n), "few": np.arange(15, n)}  # 5 of them human-judged
    made, counts, _ = assisted_comparisons(
        scores, scores, np.arange(n) < 20, slices, {"ndcg@10": Threshold(max_drop=0.05)}, {},
        ComparisonSettings(min_size=10),
    )  # fmt: skip
    assert counts == (20, 5)
    assert [c.gated for c in made] == [True, False]
    # Not gated, it is no test of the family: the one gated check is tested at alpha itself.
    assert (made[0].level, made[1].level) == (ComparisonSettings().alpha, None)


def test_the_human_ids_are_the_queries_people_judged(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    labels = assisted_results["example-regressed.yaml"].assisted
    assert labels is not None
    config = load(example / "assisted-example-regressed.yaml")
    dataset = load_dataset(config.dataset, config.base_dir, keep_unjudged=True)
    judged = human_judged(dataset)
    expected = sorted(q.id for q, mine in zip(dataset.queries, judged, strict=True) if mine)
    assert list(labels.human_ids) == expected
    assert len(expected) == labels.human_queries == 39


def test_inclusion_probabilities_make_every_check_the_weighted_estimate() -> None:
    rng = np.random.default_rng(9)
    n = 60
    base = rng.uniform(0.3, 0.9, n)
    current = np.clip(base - 0.05 + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    judged = ({"ndcg@10": np.clip(base + 0.1, 0, 1)}, {"ndcg@10": np.clip(current + 0.12, 0, 1)})
    human = ({"ndcg@10": base}, {"ndcg@10": current})
    labelled = np.arange(n) % 3 == 0
    inclusion = np.where(np.arange(n) % 2 == 0, 0.5, 0.25)
    slices = {"all": np.arange(n)}
    thresholds = {"ndcg@10": Threshold(max_drop=0.05)}
    settings = ComparisonSettings(min_size=10)
    plain, _, _ = assisted_comparisons(human, judged, labelled, slices, thresholds, {}, settings)
    made, counts, weights = assisted_comparisons(
        human, judged, labelled, slices, thresholds, {}, settings, inclusion
    )
    ours, theirs = np.flatnonzero(labelled), np.flatnonzero(~labelled)
    hd, jd = current - base, judged[1]["ndcg@10"] - judged[0]["ndcg@10"]
    delta = weighted_ppi_mean(hd[ours], jd[ours], inclusion[ours], jd[theirs])
    assert made[0].delta == delta.estimate != plain[0].delta
    assert (made[0].ci_low, made[0].ci_high) == delta.interval()
    assert made[0].p_value == delta.p_drop
    assert weights == (delta.lam,)
    assert counts == (20,)
    base_mean = weighted_ppi_mean(
        base[ours], judged[0]["ndcg@10"][ours], inclusion[ours], judged[0]["ndcg@10"][theirs],
        lam=delta.lam,
    )  # fmt: skip
    assert made[0].baseline_mean == base_mean.estimate


def test_the_detectable_drop_is_max_drop_and_the_estimate_s_se_times_z_power() -> None:
    # Without significance the drop caught with power 0.8 is max_drop + z(0.8) x the PPI++
    # delta's standard error, which the n human-judged queries' spread gives.
    rng = np.random.default_rng(11)
    n = 60
    base = rng.uniform(0.3, 0.9, n)
    current = np.clip(base - 0.02 + rng.normal(0.0, 0.08, n), 0.0, 1.0)
    judged = ({"ndcg@10": np.clip(base + 0.05, 0, 1)}, {"ndcg@10": np.clip(current + 0.04, 0, 1)})
    labelled = np.arange(n) % 3 == 0
    settings = ComparisonSettings(min_size=10, require_significance=False)
    made, _, _ = assisted_comparisons(
        ({"ndcg@10": base}, {"ndcg@10": current}), judged, labelled, {"all": np.arange(n)},
        {"ndcg@10": Threshold(max_drop=0.05)}, {}, settings,
    )  # fmt: skip
    ours, theirs = np.flatnonzero(labelled), np.flatnonzero(~labelled)
    jd = judged[1]["ndcg@10"] - judged[0]["ndcg@10"]
    delta = ppi_mean((current - base)[ours], jd[ours], jd[theirs])
    assert made[0].delta == delta.estimate
    assert made[0].gated
    assert delta.se > 0
    expected = 0.05 + normal_quantile(0.8) * delta.se
    assert made[0].detectable_drop == pytest.approx(expected, rel=1e-12, abs=0)


def test_a_judge_the_probes_made_provisional_leaves_the_verdict_to_people(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    # Trusted by its card, the judge is provisional by the probes' recorded verdict alone.
    config = load(example / "assisted-example-regressed.yaml")
    result = assisted_results["example-regressed.yaml"]
    reason = "the position probe moved 40% of the grades"
    judge = dataclasses.replace(gate_judge(config, result.dataset), probed=reason)
    again = decide(result.baseline, result.current, config, result.dataset, judge=judge)
    labels = again.assisted
    assert labels is not None
    assert not labels.trusted
    assert labels.why_not == reason
    assert labels.decided_by == "human"
    assert again.comparisons == labels.human
    assert any(w.startswith(f"LLM labels are provisional: {reason};") for w in again.warnings)


def test_a_drop_significant_alone_is_held_to_the_familys_adjusted_p_value() -> None:
    # Two checks of the same deltas: Holm doubles the smaller of two equal p-values, so a
    # drop at p 0.031 alone is a regression, and beside its twin (0.062) is not called one.
    n_people, n = 30, 90
    rng = np.random.default_rng(9)
    base = rng.uniform(0.5, 0.9, n)
    change = -0.03 + rng.normal(0.0, 0.1, n)
    judged = np.clip(base + rng.normal(0.0, 0.02, n), 0, 1)
    labelled = np.arange(n) < n_people
    threshold = Threshold(max_drop=0.01)

    def made(metrics: tuple[str, ...]) -> Any:
        human = (dict.fromkeys(metrics, base), dict.fromkeys(metrics, base + change))
        judge = (dict.fromkeys(metrics, judged), dict.fromkeys(metrics, judged + change))
        thresholds = dict.fromkeys(metrics, threshold)
        slices = {"all": np.arange(n)}
        settings = ComparisonSettings()
        return assisted_comparisons(human, judge, labelled, slices, thresholds, {}, settings)[0]

    (alone,) = made(("ndcg@10",))
    assert alone.p_value is not None
    assert alone.p_value < 0.05
    assert alone.verdict == "regressed"
    for twin in made(("ndcg@10", "recall@10")):
        assert twin.p_value == pytest.approx(alone.p_value, rel=1e-12)
        assert twin.p_adjusted == pytest.approx(2 * alone.p_value, rel=1e-12)
        assert twin.verdict == "inconclusive"


def test_power_shrinks_each_sd_by_the_judges_share_and_its_agreement(
    example: Path, assisted_results: dict[str, GateResult]
) -> None:
    """The assisted sd is the human-only sd times sqrt(1 - rho^2 N / (n + N)): never below
    the sqrt(1 - N / (n + N)) of a judge that copies people (rho = 1), never above 1. On
    ndcg@10, where the simulated judge's scores vary on every slice and track people's
    loosely: 1 below three human-judged queries (no correlation is taken), strictly between
    the two above."""
    config = load(example / "assisted-example.yaml")
    result = assisted_results["example.yaml"]
    dataset, baseline = result.dataset, result.baseline
    trusted = power_report(
        config, dataset, baseline, "baseline.json", judge=gate_judge(config, dataset)
    )
    alone = power_report(config, dataset, baseline, "baseline.json", judge=InputError("no layer"))
    human = {(c.metric, c.slice): c.sd for c in alone.checks}
    slicing = config.slices
    sizes = {
        name: len(rows)
        for name, rows in slice_queries(
            dataset.queries, slicing.by, slicing.combine, slicing.query_length.bins
        ).items()
    }
    counts = set()
    for c in trusted.checks:
        sd = human[c.metric, c.slice]
        if c.sd is None or sd is None or sd == 0:
            assert c.sd == sd, (c.metric, c.slice)  # nothing varies: nothing to shrink
            continue
        factor = c.sd / sd
        share = (sizes[c.slice] - c.n) / sizes[c.slice]
        # Whatever the judge's agreement, between a perfect judge's floor and no shrink.
        assert math.sqrt(1.0 - share) - 1e-9 <= factor <= 1.0, (c.metric, c.slice)
        if c.metric != "ndcg@10":
            continue
        counts.add(c.n)
        if c.n < 3:
            assert factor == 1.0, c.slice
        else:
            assert math.sqrt(1.0 - share) + 1e-6 < factor < 1.0 - 1e-6, c.slice
    assert {2, 3} <= counts  # the edges of the three-query rule are both on the example


def test_power_reads_the_judges_grades_of_its_top_depth_only(example: Path, tmp_path: Path) -> None:
    """With judge.depth 3, the grades of documents ranked 4-10 change none of power's figures
    (the judge's pool is the baseline's top 3); at the default depth (k) they do."""
    shallow = pooled_pairs([example / f"assisted-{name}" for name in NAMES], depth=3)
    people = set(read_qrels(example / "example" / "qrels" / "test.tsv"))
    rows = [
        r for r in read_layer(example / "judge.llm.jsonl") if (r.query, r.doc) in shallow | people
    ]
    write_layer(tmp_path / "shallow.llm.jsonl", rows)
    found = {}
    for layer, depth in (("shallow", 3), ("judge", 3), ("judge", None)):
        output = (
            tmp_path / "shallow.llm.jsonl" if layer == "shallow" else example / f"{layer}.llm.jsonl"
        )
        config = assisted_config(
            example,
            "example.yaml",
            output=str(output),
            file=f"power-{layer}-{depth}.yaml",
            **({} if depth is None else {"depth": depth}),
        )
        found[layer, depth] = _power(config)["checks"]
    assert found["shallow", 3] == found["judge", 3]
    assert found["judge", 3] != found["judge", None]
