"""The drift's reference and chain: a named commit must have a record; a record that reads
the retriever's scores (auc) is not re-scored under other judgments."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.file import write_baseline
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.history.drift import check_drift
from retrieval_gate.history.record import ResultEntry
from retrieval_gate.pipeline.record import CurrentRun, record_current
from tests.helpers.generated_project import CONFIG, make_set, write_retriever

NAME = "generated"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, CurrentRun]:
    """The generated set's config with a drift budget, and the good retriever's record."""
    root = tmp_path_factory.mktemp("drift")
    make_set(root)
    write_retriever(root, "good_search", broken=0)
    text = CONFIG.format(target="good_search", k=10).replace(
        "gate: {resamples: 2000}", "gate: {resamples: 2000, drift: {max_drop: 3pt}}"
    )
    (root / "gate.yaml").write_text(text, encoding="utf-8")
    config = load(root / "gate.yaml")
    return config, record_current(config, cache=False)


def entry(record: Baseline, commit: str, pr: int | None = None) -> ResultEntry:
    """The history's record of a `check` of `record` at `commit` on main."""
    return ResultEntry(
        config=NAME,
        commit=commit,
        time="2026-01-01T00:00:00Z",
        ref="refs/heads/main",
        pr=pr,
        subject="a merge",
        status="pass",
        tool_version="0",
        fingerprints={},
        means={},
        slices={},
        record=record,
    )


def referenced(config: Any, reference: str) -> Any:
    """`config` with gate.drift.reference set."""
    drift = config.gate.drift.model_copy(update={"reference": reference})
    return config.model_copy(update={"gate": config.gate.model_copy(update={"drift": drift})})


def test_a_reference_git_knows_but_the_history_lacks_is_refused(
    project: tuple[Any, CurrentRun],
) -> None:
    config, run = project
    entries = [entry(run.record, "a" * 40, 101), entry(run.record, "b" * 40, 102)]
    report = check_drift(entries, referenced(config, "v1"), run.dataset, resolve=lambda _: "a" * 40)
    assert (report.reference, report.merges, report.notes) == ("v1", 1, ())
    with pytest.raises(InputError, match=r"'v2': commit cccccccccccc has no record in the history"):
        check_drift(entries, referenced(config, "v2"), run.dataset, resolve=lambda _: "c" * 40)


def test_a_short_sha_git_does_not_know_names_the_latest_record_it_starts(
    project: tuple[Any, CurrentRun],
) -> None:
    """A shallow clone's git may not know an older commit: the history's own shas are
    searched, and of two starting alike the later record is the reference."""
    config, run = project
    entries = [
        entry(run.record, "abab" + "0" * 36, 100),
        entry(run.record, "abab" + "1" * 36, 101),
        entry(run.record, "c" * 40, 102),
    ]
    report = check_drift(entries, referenced(config, "abab"), run.dataset)
    assert (report.reference, report.merges) == ("abab", 1)
    with pytest.raises(InputError, match="'abcd': git does not know it in the history"):
        check_drift(entries, referenced(config, "abcd"), run.dataset)


def test_a_reference_recorded_before_the_drift_restarted_counts_from_the_restart(
    project: tuple[Any, CurrentRun],
) -> None:
    """The oldest record was made at another k: the chain starts after it, and a reference
    naming it says so instead of comparing across the change."""
    config, run = project
    other_k = dataclasses.replace(
        run.record, fingerprints=dataclasses.replace(run.record.fingerprints, k=5)
    )
    entries = [
        entry(other_k, "a" * 40, 100),
        entry(run.record, "b" * 40, 101),
        entry(run.record, "c" * 40, 102),
    ]
    report = check_drift(entries, referenced(config, "v0"), run.dataset, resolve=lambda _: "a" * 40)
    assert report.merges == 1
    assert report.reference == "#101 (bbbbbbb)"
    assert report.notes[-1] == (
        "the reference v0 was recorded before the drift restarted; counting from #101 (bbbbbbb)"
    )


def _with_auc(record: Baseline) -> Baseline:
    """`record` with an auc column beside its metrics (a measure of the retriever's scores)."""
    fingerprints = dataclasses.replace(
        record.fingerprints, metrics=(*record.fingerprints.metrics, "auc")
    )
    auc = record.scores["ndcg@10"] * 0 + 0.75
    return dataclasses.replace(
        record, fingerprints=fingerprints, scores={**record.scores, "auc": auc}
    )


@pytest.mark.parametrize("auc", [False, True])
def test_a_record_with_auc_is_not_re_scored_under_other_judgments(
    project: tuple[Any, CurrentRun], auc: bool
) -> None:
    """The older record was made under other judgments of the same queries: its stored top k
    is re-scored, unless one of its metrics reads the retriever's scores, which the top k
    does not keep. Then the drift restarts at the newest record."""
    config, run = project
    newest = _with_auc(run.record) if auc else run.record
    fingerprints = dataclasses.replace(newest.fingerprints, dataset="0" * 64)
    older = dataclasses.replace(newest, fingerprints=fingerprints)
    assert older.fingerprints.queries == run.dataset.queries_fingerprint
    report = check_drift(
        [entry(older, "a" * 40, 101), entry(newest, "b" * 40, 102)], config, run.dataset
    )
    if auc:
        assert report.merges == 0
        assert report.reference == "#102 (bbbbbbb)"
        assert report.notes == (
            "the drift restarts at #102 (bbbbbbb): the record before it (#101 (aaaaaaa)) was "
            "made with other queries, k, metrics or slices",
        )
    else:
        assert report.merges == 1
        assert report.reference == "#101 (aaaaaaa)"
        assert report.notes == (
            "1 record made under other judgments re-scored from their stored top k under the "
            "current ones",
        )


def test_a_committed_baseline_the_history_lacks_comes_before_the_chain(
    project: tuple[Any, CurrentRun],
) -> None:
    """The baseline's commit has no record (made by hand, or the history began after it):
    the baseline itself is the reference, unless it was made under other fingerprints."""
    config, run = project
    path = config.resolve(config.baseline)
    entries = [entry(run.record, "a" * 40, 101), entry(run.record, "b" * 40, 102)]
    write_baseline(dataclasses.replace(run.record, git_commit="f" * 40), path)
    report = check_drift(entries, referenced(config, "baseline"), run.dataset)
    assert (report.reference, report.merges, report.exit_code) == ("the baseline (fffffff)", 2, 0)
    other_slices = dataclasses.replace(
        run.record, git_commit="f" * 40,
        fingerprints=dataclasses.replace(run.record.fingerprints, slices="0" * 64),
    )  # fmt: skip
    write_baseline(other_slices, path)
    with pytest.raises(InputError, match=r"reference baseline: .* was not made with the current"):
        check_drift(entries, referenced(config, "baseline"), run.dataset)


def test_evidence_from_a_named_reference_is_named_as_the_reference(
    project: tuple[Any, CurrentRun],
) -> None:
    config, run = project
    lower = {metric: values - 0.1 for metric, values in run.record.scores.items()}
    entries = [
        entry(run.record, "a" * 40, 101),
        entry(dataclasses.replace(run.record, scores=lower), "b" * 40, 102),
    ]
    report = check_drift(entries, referenced(config, "v1"), run.dataset, resolve=lambda _: "a" * 40)
    assert report.exit_code == 1
    # One record after the reference: the evidence can only count from it, named as given.
    assert {(item.since, item.drifted) for item in report.evidence} == {("v1", True)}
