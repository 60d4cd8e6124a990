"""The decision on two records: repeated runs' noise reaches every check, from either side;
what explains a failure (the queries shown, the label-hole bounds) and its warnings."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.baseline.repeats import averaged
from retrieval_gate.gate.decide import decide
from retrieval_gate.pipeline.record import CurrentRun, record_current
from tests.helpers.generated_project import CONFIG, QUERIES, make_set, write_retriever

METRIC = "ndcg@10"
REFERENCE_SHIFTS = (-0.01, 0.0, 0.01)
"""Run-wide moves of the reference side's three runs: a spread of 0.01 between runs."""
CURRENT_SHIFTS = (-0.03, 0.0, 0.03)
"""The current side's: 0.03, so that which side's runs reach a check shows in its run_sd."""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, CurrentRun]:
    """The generated set's config with a cost check beside the relevance ones, and the good
    retriever's record (its cost filled in: a python retriever reports none)."""
    root = tmp_path_factory.mktemp("decide")
    make_set(root)
    write_retriever(root, "good_search", broken=0)
    text = CONFIG.format(target="good_search", k=10)
    text = text.replace("metrics:\n", "metrics:\n  cost_mean: {max_increase: 10%}\n")
    (root / "gate.yaml").write_text(text, encoding="utf-8")
    config = load(root / "gate.yaml")
    run = record_current(config, cache=False)
    cost = 100.0 + np.arange(QUERIES) % 7
    record = _with(run.record, cost_mean=cost)
    return config, dataclasses.replace(run, record=record)


def _config(project: tuple[Any, CurrentRun], folder: Path, *edits: tuple[str, str]) -> Any:
    """The project's config with each (old, new) text edit, written in `folder`."""
    text = project[0].path.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    (folder / "gate.yaml").write_text(text, encoding="utf-8")
    return load(folder / "gate.yaml")


def _with(record: Baseline, **columns: np.ndarray) -> Baseline:
    scores = {**record.scores, **{m: np.asarray(v, dtype=np.float64) for m, v in columns.items()}}
    return dataclasses.replace(record, scores=scores)


def _runs(record: Baseline, shifts: tuple[float, ...], **columns: np.ndarray) -> Baseline:
    """`record` as the mean of runs whose METRIC moves by each of `shifts` on every query
    (a run-wide shift: the noise repeats measure), `columns` replacing others in each run."""
    runs = [_with(record, **{METRIC: record.scores[METRIC] + shift}, **columns) for shift in shifts]
    return averaged(runs)


def _spread(*sides: tuple[float, ...]) -> float:
    """The pooled sd between runs of a check's mean, by hand: every query moves alike, so
    the run means differ by the shifts."""
    squares = sum(float(np.sum((np.asarray(s) - np.mean(s)) ** 2)) for s in sides)
    return float(np.sqrt(squares / sum(len(s) - 1 for s in sides)))


def _overall(result: Any, metric: str = METRIC) -> Any:
    return next(c for c in result.comparisons if c.metric == metric and c.slice == "all")


def test_the_run_noise_of_both_sides_reaches_every_relevance_check(
    project: tuple[Any, CurrentRun],
) -> None:
    config, run = project
    plain = decide(run.record, run.record, config, run.dataset)
    assert _overall(plain).run_sd is None
    baseline = _runs(run.record, REFERENCE_SHIFTS)
    current = _runs(run.record, CURRENT_SHIFTS)
    result = decide(baseline, current, config, run.dataset)
    assert (result.noise.reference_runs, result.noise.current_runs) == (3, 3)
    pooled = _spread(REFERENCE_SHIFTS, CURRENT_SHIFTS)
    for check in result.comparisons:
        if check.metric == METRIC:
            assert check.run_sd == pytest.approx(pooled, rel=1e-9), check.slice
    # The noise widens the interval past the one of the queries' differences alone.
    noisy, quiet = _overall(result), _overall(plain)
    assert noisy.ci_high - noisy.ci_low > quiet.ci_high - quiet.ci_low + 0.04


@pytest.mark.parametrize("side", ["reference", "current"])
def test_repeats_of_one_side_alone_still_reach_the_checks(
    project: tuple[Any, CurrentRun], side: str
) -> None:
    config, run = project
    shifts = REFERENCE_SHIFTS if side == "reference" else CURRENT_SHIFTS
    repeated = _runs(run.record, shifts)
    pair = (repeated, run.record) if side == "reference" else (run.record, repeated)
    result = decide(*pair, config, run.dataset)
    assert _overall(result).run_sd == pytest.approx(_spread(shifts), rel=1e-9)


def test_with_a_cost_check_each_side_keeps_its_own_runs(
    project: tuple[Any, CurrentRun],
) -> None:
    """A cost left unmeasured on a query is set aside in every run (else the runs' NaN would
    be refused), and the current side's runs stay the current side's."""
    config, run = project
    cost = run.record.scores["cost_mean"].copy()
    cost[5] = np.nan  # cached on the current side: no cost
    baseline = _runs(run.record, REFERENCE_SHIFTS)
    current = _runs(run.record, CURRENT_SHIFTS, cost_mean=cost)
    result = decide(baseline, current, config, run.dataset)
    assert _overall(result).run_sd == pytest.approx(
        _spread(REFERENCE_SHIFTS, CURRENT_SHIFTS), rel=1e-9
    )
    spent = _overall(result, "cost_mean")
    assert spent.n == QUERIES - 1
    assert spent.reason == ""
    assert spent.run_sd is None  # every run spent the same
    assert any(w.startswith("cost_mean: 1 query left out of the check") for w in result.warnings)


def test_without_repeats_or_a_cost_column_nothing_is_filled(
    project: tuple[Any, CurrentRun], tmp_path: Path
) -> None:
    """The plain path: no runs, and a config without an operational column."""
    _, run = project
    plain = _config(project, tmp_path, ("  cost_mean: {max_increase: 10%}\n", ""))
    record = dataclasses.replace(
        run.record,
        scores={m: v for m, v in run.record.scores.items() if m != "cost_mean"},
        fingerprints=dataclasses.replace(
            run.record.fingerprints,
            metrics=tuple(m for m in run.record.fingerprints.metrics if m != "cost_mean"),
        ),
    )
    result = decide(_runs(record, REFERENCE_SHIFTS), record, plain, run.dataset)
    assert _overall(result).run_sd == pytest.approx(_spread(REFERENCE_SHIFTS), rel=1e-9)
    assert {c.metric for c in result.comparisons} == {"ndcg@10", "recall@10"}


def test_an_unchanged_record_passes_without_a_warning_or_an_explanation(
    project: tuple[Any, CurrentRun],
) -> None:
    config, run = project
    result = decide(run.record, run.record, config, run.dataset)
    assert result.status == "pass"
    assert result.warnings == ()
    assert result.query_changes == ()
    assert result.label_holes == ()
    assert result.stage_losses is None  # no first stage's candidates recorded
    cost = _overall(result, "cost_mean")
    assert (cost.reason, cost.delta) == ("", 0.0)


def test_an_override_of_a_slice_that_does_not_exist_is_named(
    project: tuple[Any, CurrentRun], tmp_path: Path
) -> None:
    _, run = project
    config = _config(
        project,
        tmp_path,
        (
            "  min_size: 30\n",
            "  min_size: 30\n  overrides:\n    intent=nowhere: {ndcg@10: {max_drop: 1pt}}\n",
        ),
    )
    result = decide(run.record, run.record, config, run.dataset)
    assert result.warnings == ("slices.overrides names slices that do not exist: intent=nowhere",)


def _worse(record: Baseline) -> Baseline:
    """Every query 10 pt of ndcg@10 and 6 pt of recall@10 lower, and half again the cost."""
    scores = record.scores
    return _with(
        record,
        **{"ndcg@10": scores["ndcg@10"] - 0.10, "recall@10": scores["recall@10"] - 0.06},
        cost_mean=scores["cost_mean"] * 1.5,
    )


@pytest.mark.parametrize("test", ["randomization", "t"])
def test_a_failure_shows_its_worst_metric_s_queries_and_bounds_its_label_holes(
    project: tuple[Any, CurrentRun], tmp_path: Path, test: str
) -> None:
    """With no slices, three checks fail: ndcg@10 (the worst drop), recall@10, cost_mean.
    The queries shown are ndcg@10's; each failing relevance check gets its label-hole bound
    (the retriever leaves documents nobody judged in every top 10), exact under the
    randomization test and never under the t-test."""
    _, run = project
    config = _config(
        project,
        tmp_path,
        ("  by: [intent, query_length]\n", "  by: []\n"),
        ("gate: {resamples: 2000}", f"gate: {{resamples: 2000, test: {test}}}"),
    )
    cost = run.record.scores["cost_mean"]
    result = decide(run.record, _worse(run.record), config, run.dataset)
    failing = [(c.metric, c.slice, c.verdict) for c in result.comparisons if c.failed]
    assert sorted(failing) == [
        ("cost_mean", "all", "regressed"),
        ("ndcg@10", "all", "regressed"),
        ("recall@10", "all", "regressed"),
    ]
    spent = _overall(result, "cost_mean")
    assert spent.baseline_mean == pytest.approx(float(cost.mean()), rel=1e-12)
    assert spent.current_mean == pytest.approx(float(cost.mean()) * 1.5, rel=1e-12)
    assert result.query_changes
    assert {change.metric for change in result.query_changes} == {"ndcg@10"}
    holes = {(h.metric, h.slice): h for h in result.label_holes}
    assert sorted(holes) == [("cost_mean", "all"), ("ndcg@10", "all"), ("recall@10", "all")]
    assert holes["cost_mean", "all"].reason == "not a ranking metric: no labels to miss"
    for metric in ("ndcg@10", "recall@10"):
        hole = holes[metric, "all"]
        assert hole.unjudged > 0
        assert hole.worst is not None
        assert hole.exact is (test == "randomization")
        if test == "t":
            assert not hole.robust


def test_the_config_sha_leaves_out_other_level_at_its_default_alone(
    project: tuple[Any, CurrentRun],
) -> None:
    # dataset.other_level: report changes nothing an unchunked corpus's gate decides: the
    # sha is that of the config as written before the key existed. Any other value counts.
    config, run = project
    dumped = config.model_dump(mode="json")
    assert dumped["dataset"].pop("other_level") == "report"
    text = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
    before = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert decide(run.record, run.record, config, run.dataset).context.config_sha256 == before
    gating = config.model_copy(
        update={"dataset": config.dataset.model_copy(update={"other_level": "gate"})}
    )
    sha = decide(run.record, run.record, gating, run.dataset).context.config_sha256
    assert sha not in (before, hashlib.sha256(b"").hexdigest())
