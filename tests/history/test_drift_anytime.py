"""The drift over many looks: the e-detector's bar, no false trip without a change."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import MetricGate
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.datasets.dataset import Dataset
from retrieval_gate.errors import InputError
from retrieval_gate.history import drift
from retrieval_gate.history.drift import check_drift, describe, drift_document
from retrieval_gate.history.record import AcceptEntry, Entry, ResultEntry, result_entry
from retrieval_gate.stats.edetector import log_e_values
from tests.helpers.cli import run_cli
from tests.helpers.drifting_main import BUDGET, Main

MERGES = 40


def _first(main: Main) -> ResultEntry:
    """The record of main's retriever as `check` made it."""
    _, document = main.gate()
    return result_entry(
        document, "result.json", commit="0" * 40, time="2025-01-01T00:00:00Z",
        ref="refs/heads/main", subject="The search service",
    )  # fmt: skip


def _history(first: ResultEntry, scores: list[dict[str, np.ndarray]]) -> list[ResultEntry]:
    """`first`, then one record per merge with `scores` put in its place (everything else
    the record holds, its fingerprints included, is the real one's)."""
    entries = []
    for look, values in enumerate(scores):
        record = dataclasses.replace(first.record, scores=values)
        entries.append(
            dataclasses.replace(
                first, commit=f"{look + 1:040x}", pr=100 + look if look else None, record=record
            )
        )
    return entries


def _walk(reference: dict[str, np.ndarray], seed: int, loss: list[float]) -> list[dict]:
    """Main's records when every merge moves each query by its own N(0, 0.08): no change
    of the mean; `loss[t]` is then taken off every query of record t (a true drop)."""
    rng = np.random.default_rng(seed)
    records, now = [reference], dict(reference)
    for t in range(1, len(loss)):
        # Not clipped: at 1 a clip would take off the upward moves, a true drop.
        now = {m: v + rng.normal(0.0, 0.08, v.size) for m, v in now.items()}
        records.append({m: v - loss[t] for m, v in now.items()})
    return records


def _looks(entries: list[ResultEntry], main: Main) -> list[tuple[int, str]]:
    config = load(main.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    found = []
    for end in range(2, len(entries) + 1):
        report = check_drift(entries[:end], config, dataset)
        found.append((report.exit_code, "\n".join(describe(report))))
    return found


def _dataset(main: Main) -> Dataset:
    config = load(main.config)
    return load_dataset(config.dataset, config.base_dir)


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> Main:
    made = Main(tmp_path_factory.mktemp("anytime"), f"max_drop: {BUDGET:g}pt")
    made.refresh()
    return made


def test_a_history_without_change_does_not_trip_and_the_horizon_is_why(
    main: Main, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 20, [0.0] * (MERGES + 1)))
    looks = _looks(entries, main)
    assert [code for code, _ in looks] == [0] * MERGES
    assert "bar: e-value >= gate.drift.horizon 50 / the check's share of gate.alpha" in looks[-1][1]
    # A bar of 1 / alpha, one look's Markov bound with no horizon, trips on the same history.
    monkeypatch.setattr(drift, "log_bar", lambda horizon, level: math.log(1 / level))
    tripped = [look for look, (code, _) in enumerate(_looks(entries, main), 1) if code == 1]
    assert tripped, "the seed no longer makes the bar of one look trip: pick another"


def test_a_real_drop_trips_at_once_and_names_where_its_evidence_starts(main: Main) -> None:
    first = _first(main)
    loss = [0.0, 0.0, 0.0] + [2 * BUDGET / 100] * 5
    entries = _history(first, _walk(dict(first.record.scores), 5, loss))
    looks = _looks(entries, main)
    assert [code for code, _ in looks[:2]] == [0, 0]
    assert [code for code, _ in looks[2:]] == [1] * 5
    # #103 brought the drop: the evidence counts from the record before it, #102.
    lines = looks[2][1].splitlines()
    assert lines[0] == "FAIL drift of drifting since 0000000 (3 merges; budget 3pt)", lines
    assert re.fullmatch(
        r"  ndcg@10: 0\.\d{4} -> 0\.\d{4} \(-\d\.\d pt\) drifted, e-value \S+ since #102 "
        r"\(bar 2e\+03\)",
        lines[2],
    ), lines[2]
    config = load(main.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    report = check_drift(entries, config, dataset)
    document = drift_document(report)
    assert document["look"] == {"number": 7, "horizon": 50, "alpha": 0.05}
    assert "past the horizon" not in describe(report)[1]
    # Past a shorter horizon the report says the false trips add up, and what to do.
    assert config.gate.drift is not None
    shorter = config.gate.drift.model_copy(update={"horizon": 5})
    short = config.model_copy(update={"gate": config.gate.model_copy(update={"drift": shorter})})
    line = describe(check_drift(entries, short, dataset))[1]
    assert line.endswith(
        "; 7 merges since the reference, past the horizon, where false trips add up: move the "
        "reference forward (history accept, or a newer tag in gate.drift.reference)"
    )
    (overall,) = [c for c in document["checks"] if c["metric"] == "ndcg@10" and c["slice"] == "all"]
    assert overall["failed"] is True
    assert overall["verdict"] == "drifted"
    assert overall["level"] == 0.025
    assert overall["log_bar"] == pytest.approx(math.log(2000))
    assert overall["log_e_value"] >= overall["log_bar"]


def test_a_drop_after_a_long_wander_is_found_from_the_record_before_it(main: Main) -> None:
    # 30 merges of per-query wander, then a drop of 5 points: against the reference the wander
    # hides it (the mean's noise grew with every merge); against the record before the drop,
    # one merge's noise, it stands out.
    first = _first(main)
    merges = 31
    loss = [0.0] * merges + [0.05]
    entries = _history(first, _walk(dict(first.record.scores), 3, loss))
    config = load(main.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    before = check_drift(entries[:-1], config, dataset)
    assert before.exit_code == 0
    report = check_drift(entries, config, dataset)
    assert report.exit_code == 1, describe(report)
    (overall,) = [
        e for e in report.evidence if e.check.metric == "ndcg@10" and e.check.slice == "all"
    ]
    assert overall.since == "#130"
    scores = [entry.record.scores["ndcg@10"] for entry in entries]
    from_reference = log_e_values(scores[0] - scores[-1], overall.log_bar)[0]
    assert from_reference < overall.log_bar < overall.log_e
    assert "since #130 (bar 2e+03)" in describe(report)[2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "greater than or equal to 1"),
        ("1000000", "less than or equal to 100000"),
        ("2.5", "integer"),
        ('"\\n::error::owned\\u001b[31m"', "integer"),
    ],
)
def test_a_bad_horizon_is_exit_2_naming_the_field(
    main: Main, tmp_path: Path, value: str, expected: str
) -> None:
    text = main.config.read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("drift: {", f"drift: {{horizon: {value}, "), encoding="utf-8")
    code, _, err = run_cli("history", "drift", "-c", str(bad), "--repo", str(main.work))
    assert code == 2
    assert "gate.drift.horizon" in err
    assert expected in err
    assert "\x1b" not in err
    assert not any(line.startswith("::") for line in err.splitlines())


def test_the_drift_json_is_byte_identical_run_to_run(main: Main, tmp_path: Path) -> None:
    code, out = main.record(refresh=False)
    main.merge(101, 40)
    code, out = main.record(refresh=False)
    assert code == 1, out
    written = []
    for name in ("one.json", "two.json"):
        path = tmp_path / name
        code, _, err = run_cli(
            "history", "drift", "-c", str(main.config), "--repo", str(main.work),
            "--json", str(path),
        )  # fmt: skip
        assert code == 1, err
        written.append(path.read_bytes())
    assert written[0] == written[1]
    document = json.loads(written[0])
    assert document["verdict"] == "fail"
    assert document["look"] == {"number": 1, "horizon": 50, "alpha": 0.05}
    (overall,) = [c for c in document["checks"] if c["metric"] == "ndcg@10" and c["slice"] == "all"]
    # The drop since the reference, named as the report names it.
    assert (overall["verdict"], overall["since"]) == ("drifted", document["reference"])
    assert [s["merge"] for s in document["attributions"][0]["steps"]] == ["#101"]


def test_a_bar_the_queries_cannot_reach_is_exit_2_saying_what_to_do(
    main: Main, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 1, [0.0, 0.0]))
    config = load(main.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    # 600 queries give at most about exp(300): a bar of exp(400) cannot be reached.
    monkeypatch.setattr(drift, "log_bar", lambda horizon, level: 400.0)
    with pytest.raises(InputError) as raised:
        check_drift(entries, config, dataset)
    message = str(raised.value)
    assert message.startswith("the drift of ndcg@10 can never trip: its bar is e >= 2e+03 ")
    assert "more than 600 queries can give" in message
    assert message.endswith("shorten gate.drift.horizon or raise gate.alpha")


def test_no_drop_at_all_is_no_evidence_and_names_no_record_it_starts_from(main: Main) -> None:
    first = _first(main)
    same = dict(first.record.scores)
    report = check_drift(_history(first, [same, same]), load(main.config), _dataset(main))
    (overall,) = [c for c in drift_document(report)["checks"]
                  if c["metric"] == "ndcg@10" and c["slice"] == "all"]  # fmt: skip
    # Not one query moved: e = 1, with no record the evidence would count from.
    assert (overall["verdict"], overall["log_e_value"], overall["since"]) == ("pass", 0.0, "#101")
    (line,) = [line for line in describe(report) if line.startswith("  ndcg@10:")]
    assert line.endswith("pass, e-value 1 (bar 2e+03)"), line


def test_an_unreachable_bar_is_refused_only_when_the_gate_needs_significance(
    main: Main, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 1, [0.0, 0.0]))
    config = load(main.config)
    monkeypatch.setattr(drift, "log_bar", lambda horizon, level: 400.0)
    # A drop past the budget fails whatever the evidence (require_significance false), or an
    # inconclusive check fails (on_inconclusive fail): the bar is not what can trip it.
    for update in ({"require_significance": False}, {"on_inconclusive": "fail"}):
        strict = config.model_copy(update={"gate": config.gate.model_copy(update=update)})
        report = check_drift(entries, strict, _dataset(main))
        assert report.exit_code == 0


def test_the_budget_gates_the_metrics_with_a_floor_or_a_drop_only(main: Main) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 1, [0.0, 0.0]))
    config = load(main.config)
    # ndcg@10 with a floor only, recall@10 with no gate: the budget gates ndcg@10 alone.
    metrics = {"ndcg@10": MetricGate(min=0.5), "recall@10": MetricGate()}
    report = check_drift(entries, config.model_copy(update={"metrics": metrics}), _dataset(main))
    assert sorted({item.check.metric for item in report.evidence}) == ["ndcg@10"]


def test_an_e_value_near_what_a_float_holds_is_shown_as_a_power_of_ten() -> None:
    shown = [drift._e_text(log_e) for log_e in (math.log(3.2e5), 699.9, 700.9, 1000.0)]
    # From e^700 on (a float ends near e^709.8) only the power of ten is shown: 10^304.4.
    assert shown == ["3.2e+05", "9.2e+303", "1e+304", "1e+434"]


def test_a_newest_record_too_sparse_to_reach_the_bar_is_refused(main: Main) -> None:
    first = _first(main)
    # auc is undefined (NaN) for a one-class query. The reference defines all 600 queries,
    # the newest 28, each 5 points lower: 28 queries give at most e^14 (every one dropping
    # alike), short of the bar of 10^5 / 0.05 (e^14.5), whatever the reference could give.
    defined = np.linspace(0.6, 0.9, 600)
    sparse = np.full(600, np.nan)
    sparse[:28] = defined[:28] - 0.05
    scores = [{**first.record.scores, "auc": values} for values in (defined, sparse)]
    config = load(main.config)
    assert config.gate.drift is not None
    budget = config.gate.drift.model_copy(update={"horizon": 100_000})
    auc = config.model_copy(
        update={
            "metrics": {"auc": MetricGate(max_drop=0.03)},
            "gate": config.gate.model_copy(update={"drift": budget}),
        }
    )
    with pytest.raises(InputError) as raised:
        check_drift(_history(first, scores), auc, _dataset(main))
    assert str(raised.value).startswith("the drift of auc can never trip: its bar is e >= 2e+06")
    assert "more than 28 queries can give" in str(raised.value)


def test_an_acceptance_before_the_reference_or_of_no_record_leaves_it_in_place(
    main: Main,
) -> None:
    first = _first(main)
    entries: list[Entry] = list(
        _history(first, _walk(dict(first.record.scores), 1, [0.0, 0.0, 0.0, 0.0]))
    )
    config = load(main.config)
    assert config.gate.drift is not None
    second = f"{2:040x}"  # #101's commit: the reference
    budget = config.gate.drift.model_copy(update={"reference": second})
    named = config.model_copy(update={"gate": config.gate.model_copy(update={"drift": budget})})
    plain = check_drift(entries, named, _dataset(main))
    assert (plain.reference, plain.merges) == (second, 2)
    # The record before the reference, and a commit the history holds no record of.
    for commit in (f"{1:040x}", "f" * 40):
        entries.append(
            AcceptEntry(config=first.config, commit=commit, time=first.time, reason="moved")
        )
    report = check_drift(entries, named, _dataset(main))
    assert (report.reference, report.merges) == (second, 2)
    assert describe(report) == describe(plain)
    # One of the reference itself names it as its record, with the reason given.
    itself = [
        *entries,
        AcceptEntry(config=first.config, commit=second, time=first.time, reason="kept"),
    ]
    kept = check_drift(itself, named, _dataset(main))
    assert (kept.reference, kept.merges) == ("#101 (0000000)", 2)
    assert kept.notes == ("the reference was moved to #101 (0000000) by an acceptance: kept",)
    # One after it moves the reference there.
    entries.append(
        AcceptEntry(config=first.config, commit=f"{3:040x}", time=first.time, reason="moved")
    )
    moved = check_drift(entries, named, _dataset(main))
    assert (moved.reference, moved.merges) == ("#102 (0000000)", 1)
    assert moved.notes == ("the reference was moved to #102 (0000000) by an acceptance: moved",)
