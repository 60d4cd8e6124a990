"""The drift over many looks: each merge's share of alpha, no false trip without a change."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.errors import InputError
from retrieval_gate.history import drift
from retrieval_gate.history.drift import check_drift, describe, drift_document, look_level
from retrieval_gate.history.record import ResultEntry, result_entry
from tests.helpers.cli import run_cli
from tests.helpers.drifting_main import BUDGET, Main

MERGES = 40


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
@pytest.mark.parametrize("horizon", [1, 2, 7, 50, 1000])
def test_the_levels_of_every_look_sum_to_at_most_alpha(alpha: float, horizon: int) -> None:
    looks = np.arange(1, 2_000_001, dtype=np.float64)
    levels = np.where(
        looks <= horizon,
        alpha / (2 * horizon),
        alpha * horizon / (2 * looks * (looks - 1) + 1e-300),
    )
    assert [look_level(alpha, horizon, int(t)) for t in looks[:3000]] == pytest.approx(
        levels[:3000].tolist(), rel=1e-12
    )
    assert math.fsum(levels) <= alpha
    # The rest past two million looks: alpha horizon / (2 x 2e6), the telescoped tail.
    assert math.fsum(levels) + alpha * horizon / (2 * looks[-1]) == pytest.approx(alpha)
    within = math.fsum(look_level(alpha, horizon, t) for t in range(1, horizon + 1))
    assert within == pytest.approx(alpha / 2)
    # Look 0 (the newest record is the reference) is tested as look 1; levels never rise.
    assert look_level(alpha, horizon, 0) == look_level(alpha, horizon, 1)
    steps = [look_level(alpha, horizon, t) for t in range(1, horizon + 200)]
    assert all(b <= a for a, b in itertools.pairwise(steps))


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


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> Main:
    made = Main(tmp_path_factory.mktemp("anytime"), f"max_drop: {BUDGET:g}pt")
    made.refresh()
    return made


def test_a_history_without_change_that_the_old_rule_tripped_on_does_not_trip(
    main: Main, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 20, [0.0] * (MERGES + 1)))
    looks = _looks(entries, main)
    assert [code for code, _ in looks] == [0] * MERGES
    assert "look 40 of the 50-merge horizon: tested at 0.0005" in looks[-1][1]
    # The rule before: every look at gate.alpha. The same history trips it.
    monkeypatch.setattr(drift, "look_level", lambda alpha, horizon, look: alpha)
    old = _looks(entries, main)
    tripped = [look for look, (code, _) in enumerate(old, 1) if code == 1]
    assert tripped, "the seed no longer makes the old rule trip: pick another"
    assert "FAIL drift" in old[tripped[0] - 1][1]


def test_a_real_drop_trips_and_says_which_look_and_level(main: Main) -> None:
    first = _first(main)
    loss = [0.0, 0.0, 0.0] + [2 * BUDGET / 100] * 5
    entries = _history(first, _walk(dict(first.record.scores), 5, loss))
    looks = _looks(entries, main)
    assert [code for code, _ in looks[:2]] == [0, 0]
    assert [code for code, _ in looks[2:]] == [1] * 5
    text = looks[2][1]
    assert text.splitlines()[1] == (
        "look 3 of the 50-merge horizon: tested at 0.0005 "
        "(gate.alpha 0.05 spread over every look since the reference)"
    )
    # Past a shorter horizon the level shrinks and the report says how to start a new one.
    config = load(main.config)
    assert config.gate.drift is not None
    shorter = config.gate.drift.model_copy(update={"horizon": 5})
    config = config.model_copy(update={"gate": config.gate.model_copy(update={"drift": shorter})})
    dataset = load_dataset(config.dataset, config.base_dir)
    report = check_drift(entries, config, dataset)
    assert report.level == pytest.approx(0.05 * 5 / (2 * 7 * 6))
    line = describe(report)[1]
    assert line.startswith("look 7, past the 5-merge horizon: tested at 0.003 ")
    assert "move the reference forward (history accept" in line
    document = drift_document(report)
    assert document["look"] == {
        "number": 7, "horizon": 5, "past_horizon": True, "alpha": 0.05, "level": report.level,
    }  # fmt: skip
    (overall,) = [c for c in document["checks"] if c["metric"] == "ndcg@10" and c["slice"] == "all"]
    assert overall["failed"] is True
    assert overall["level"] <= report.level


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
    assert document["look"]["number"] == 1
    assert document["look"]["level"] == 0.0005
    assert [s["merge"] for s in document["attributions"][0]["steps"]] == ["#101"]


def test_a_level_the_queries_cannot_reach_is_exit_2_saying_what_to_do(
    main: Main, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _first(main)
    entries = _history(first, _walk(dict(first.record.scores), 1, [0.0, 0.0]))
    config = load(main.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    monkeypatch.setattr(drift, "look_level", lambda alpha, horizon, look: 1e-300)
    with pytest.raises(InputError) as raised:
        check_drift(entries, config, dataset)
    message = str(raised.value)
    assert message.startswith("the drift's look 1 of the 50-merge horizon is tested at 1e-300: ")
    assert "cannot give p <= " in message
    assert message.endswith("to start a new horizon")
