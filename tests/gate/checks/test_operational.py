"""Latency and cost checks in compare: measured pairs, enforcement, the quantile's swap test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.gate.baseline.repeats import mean_of_runs
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.operational import (
    ANOTHER_JOB,
    NOT_INTERLEAVED,
    LatencyRun,
    filled_runs,
    operational_columns,
)
from retrieval_gate.gate.checks.run_noise import run_spread

N = 80
IDS = [f"q{i:02d}" for i in range(N)]
LOWER = Threshold(max_drop=0.10, relative=True, direction="lower", unit="ms")


def sides(slower: float = 1.0, seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(3.0, 0.5, N)
    ref = base * rng.lognormal(0.0, 0.05, N)
    cur = base * rng.lognormal(0.0, 0.05, N) * slower
    ndcg = rng.uniform(0.3, 0.9, N)
    return (
        {"ndcg@10": ndcg, "latency_p95": ref, "cost_mean": np.full(N, 10.0)},
        {"ndcg@10": ndcg, "latency_p95": cur, "cost_mean": np.full(N, 10.0)},
    )


def decided(before: dict, after: dict, latency: LatencyRun | None) -> dict:
    ready, columns, notes = operational_columns(list(before), IDS, (before, after), latency)
    found = compare(
        ready[0],
        ready[1],
        {"all": np.arange(N)},
        {"ndcg@10": Threshold(max_drop=0.02), "latency_p95": LOWER, "cost_mean": LOWER},
        {},
        ComparisonSettings(),
        columns=columns,
    )
    return {"notes": notes, **{c.metric: c for c in found}}


def test_an_interleaved_slowdown_regresses_with_the_quantiles_stated() -> None:
    before, after = sides(slower=1.5)
    found = decided(before, after, LatencyRun({q: i for i, q in enumerate(IDS)}))
    p95 = found["latency_p95"]
    assert p95.reason == ""
    assert p95.verdict == "regressed"
    assert p95.failed
    assert p95.baseline_mean == pytest.approx(np.quantile(before["latency_p95"], 0.95))
    assert p95.current_mean == pytest.approx(np.quantile(after["latency_p95"], 0.95))
    assert p95.delta == pytest.approx(p95.current_mean - p95.baseline_mean)
    assert p95.max_drop == pytest.approx(0.10 * p95.baseline_mean)
    assert p95.ci_low is None
    assert p95.detectable_drop is None
    assert p95.level is not None  # in the family, beside ndcg@10
    assert found["ndcg@10"].level is not None


def tail_slowdown(seed: int = 2) -> tuple[dict, dict]:
    """A quarter of the queries 50% slower, half 40% faster, the fastest quarter unchanged:
    the mean latency falls, the 95th percentile rises 40% and the 5th stays. Only a test of
    the 95th percentile sees it."""
    rng = np.random.default_rng(seed)
    group = np.arange(N) % 4  # 0: the tail, 1 and 2: faster, 3: the fastest
    ref = np.where(group == 3, 20.0, 100.0) + rng.uniform(-8.0, 8.0, N)
    cur = np.choose(group, [150.0, 60.0, 60.0, 20.0]) + rng.uniform(-8.0, 8.0, N)
    before, after = sides()
    before["latency_p95"], after["latency_p95"] = ref, cur
    return before, after


def test_a_slower_tail_under_a_faster_mean_regresses_by_the_quantile_s_swap_test() -> None:
    before, after = tail_slowdown()
    ref, cur = before["latency_p95"], after["latency_p95"]
    assert cur.mean() < ref.mean()
    assert np.quantile(cur, 0.95) > 1.3 * np.quantile(ref, 0.95)
    assert np.quantile(cur, 0.05) < 1.1 * np.quantile(ref, 0.05)
    p95 = decided(before, after, LatencyRun({q: i for i, q in enumerate(IDS)}))["latency_p95"]
    assert p95.delta == pytest.approx(np.quantile(cur, 0.95) - np.quantile(ref, 0.95))
    # Past 4 of 20 tail queries on one side (P < 0.002 when swapped at random) the p95 moves.
    assert p95.p_value is not None
    assert p95.p_value < 0.005
    assert p95.verdict == "regressed"
    assert p95.failed


def test_a_tail_slowdown_within_one_interleaving_turn_is_no_evidence() -> None:
    """The twenty slower queries ran in one turn: a load change between the sides' turns
    would move them all alike, so they swap together, and one turn is a coin flip."""
    before, after = tail_slowdown()
    turns = {q: 0 if i % 4 == 0 else i for i, q in enumerate(IDS)}  # the tail: turn 0
    p95 = decided(before, after, LatencyRun(turns))["latency_p95"]
    assert p95.reason == ""
    assert p95.p_value is not None
    assert p95.p_value > 0.3
    assert not p95.failed


def test_without_interleaving_latency_is_report_only_and_cost_is_not() -> None:
    before, after = sides(slower=1.5)
    found = decided(before, after, None)
    assert found["latency_p95"].reason == ANOTHER_JOB
    assert not found["latency_p95"].failed
    assert found["cost_mean"].reason == ""
    repeated = decided(before, after, LatencyRun(None))
    assert repeated["latency_p95"].reason == NOT_INTERLEAVED


def test_warm_up_and_unmeasured_queries_are_left_out_and_counted() -> None:
    before, after = sides()
    before["latency_p95"] = before["latency_p95"].copy()
    before["latency_p95"][10] = np.nan  # a cached answer: no latency
    before["cost_mean"] = before["cost_mean"].copy()
    before["cost_mean"][3] = np.nan
    found = decided(before, after, LatencyRun({q: i for i, q in enumerate(IDS)}, tuple(IDS[:5])))
    assert found["latency_p95"].n == N - 6
    assert found["cost_mean"].n == N - 1
    assert found["notes"] == [
        "latency_p95: 6 queries left out of the check, without a latency on both sides: "
        "5 warm-up, 1 cached, failed or not reported",
        "cost_mean: 1 query left out of the check, without a cost on both sides: 1 cached, "
        "failed or not reported",
    ]


def test_an_unchanged_service_passes_and_the_same_seed_gives_the_same_p_value() -> None:
    before, after = sides()
    turns = LatencyRun({q: i // 4 for i, q in enumerate(IDS)})
    first = decided(before, after, turns)["latency_p95"]
    again = decided(before, after, turns)["latency_p95"]
    assert first.verdict == "pass"
    assert first.p_value == again.p_value


def test_no_queries_with_a_warm_up_leave_every_column_empty() -> None:
    empty = {"latency_p95": np.zeros(0), "cost_mean": np.zeros(0)}
    (before, after), columns, notes = operational_columns(
        ["latency_p95", "cost_mean"], [], (empty, empty), LatencyRun({}, ("q1",))
    )
    assert before["latency_p95"].size == after["cost_mean"].size == 0
    assert columns["latency_p95"].both.dtype == np.bool_
    assert not columns["latency_p95"].both.size
    assert notes == []


def test_a_warm_up_alone_is_the_only_reason_given() -> None:
    before, after = sides()
    found = decided(before, after, LatencyRun({q: i for i, q in enumerate(IDS)}, tuple(IDS[:5])))
    assert found["notes"] == [
        "latency_p95: 5 queries left out of the check, without a latency on both sides: 5 warm-up"
    ]


def test_a_slice_of_a_latency_check_keeps_its_own_measured_queries() -> None:
    before, after = sides(slower=1.5)
    before["latency_p95"] = before["latency_p95"].copy()
    before["latency_p95"][45] = np.nan
    latency = LatencyRun({q: i for i, q in enumerate(IDS)})
    ready, columns, _ = operational_columns(list(before), IDS, (before, after), latency)
    found = compare(
        ready[0],
        ready[1],
        {"all": np.arange(N), "late": np.arange(40, N)},
        {"latency_p95": LOWER},
        {},
        ComparisonSettings(min_size=10),
        columns=columns,
    )
    late = next(c for c in found if c.slice == "late")
    kept = [i for i in range(40, N) if i != 45]
    assert late.n == len(kept)
    assert late.baseline_mean == pytest.approx(np.quantile(before["latency_p95"][kept], 0.95))
    assert late.current_mean == pytest.approx(np.quantile(after["latency_p95"][kept], 0.95))


def test_a_latency_one_repeated_run_missed_adds_no_run_to_run_spread() -> None:
    # q1 failed in the first run only, q3 in both: the runs otherwise differ by 2 ms at q0.
    runs = [
        {"latency_p95": np.array([10.0, np.nan, 30.0, np.nan])},
        {"latency_p95": np.array([12.0, 20.0, 30.0, np.nan])},
    ]
    means = {"latency_p95": mean_of_runs([run["latency_p95"] for run in runs])}
    ids = ["q0", "q1", "q2", "q3"]
    _, columns, _ = operational_columns(["latency_p95"], ids, (means, means), None)
    filled = filled_runs(runs, columns, means)
    assert filled[0]["latency_p95"].tolist() == [10.0, 20.0, 30.0, 0.0]
    assert filled[1]["latency_p95"].tolist() == [12.0, 20.0, 30.0, 0.0]
    rows = columns["latency_p95"].rows(np.arange(4))
    # Run means 20 and 20 2/3: sd sqrt(2 * (1/3)^2 / 1); q1 counted as missing, not as 0 ms.
    spread, df = run_spread([filled], "latency_p95", rows) or (0.0, 0)
    assert (spread, df) == (pytest.approx(np.sqrt(2.0) / 3.0), 1)
    assert np.mean([run["latency_p95"] for run in filled], axis=0)[:3] == pytest.approx(
        means["latency_p95"][:3]
    )


def test_a_measured_query_run_in_no_turn_is_swapped_with_no_turn_s_queries() -> None:
    before, after = sides()
    latency = LatencyRun({q: i // 10 for i, q in enumerate(IDS[:-5])})  # the last 5: no turn
    _, columns, _ = operational_columns(list(before), IDS, (before, after), latency)
    turns = columns["latency_p95"].turns
    assert turns is not None
    assert turns[:10].tolist() == [0] * 10
    assert not set(turns[-5:].tolist()) & set(turns[:-5].tolist())
    assert len(set(turns[-5:].tolist())) == 1


def test_a_quantile_no_query_measured_is_report_only_with_no_change() -> None:
    # Every current latency missing (a service that reported none): there is no quantile to
    # compare, so the check says so instead of taking the quantile of nothing.
    before, after = sides()
    after["latency_p95"] = np.full(N, np.nan)
    found = decided(before, after, LatencyRun({q: i for i, q in enumerate(IDS)}))
    latency = found["latency_p95"]
    assert (latency.n, latency.reason, latency.failed) == (0, "no query measured", False)
    assert (latency.baseline_mean, latency.current_mean, latency.delta) == (0.0, 0.0, 0.0)
    # Zeros negated back from the lower-is-better sign stay +0: a report would show "-0".
    means = (latency.baseline_mean, latency.current_mean, latency.delta)
    assert [math.copysign(1.0, v) for v in means] == [1.0, 1.0, 1.0]
    assert latency.p_value is None
    assert found["notes"] == [
        "latency_p95: 80 queries left out of the check, without a latency on both sides: "
        "80 cached, failed or not reported"
    ]


def test_a_one_pair_quantile_check_states_its_values_and_no_interval_of_a_mean() -> None:
    # One measured pair: its quantile is its value, and a quantile's change has no interval
    # of the mean delta to state, however few pairs it has.
    before, after = sides(slower=1.5)
    latency = LatencyRun({q: i for i, q in enumerate(IDS)})
    ready, columns, _ = operational_columns(list(before), IDS, (before, after), latency)
    found = compare(
        ready[0],
        ready[1],
        {"all": np.arange(N), "one": np.array([3])},
        {"latency_p95": LOWER},
        {},
        ComparisonSettings(),
        columns=columns,
    )
    one = next(c for c in found if c.slice == "one")
    assert one.n == 1
    assert (one.baseline_mean, one.current_mean) == (
        before["latency_p95"][3],
        after["latency_p95"][3],
    )
    assert (one.ci_low, one.ci_high) == (None, None)
