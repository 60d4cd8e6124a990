"""The early fail's checks: their share of alpha, their looks, what they cannot test."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.modes.sequential import (
    Crossing,
    Monitor,
    SequentialRun,
    bounded,
    draw_order,
    stop_line,
)
from retrieval_gate.gate.modes.sequential import evidence as sequential_evidence
from retrieval_gate.stats.sequential import LOOKS, MIN_SIDE, bound

N = 400
SETTINGS = ComparisonSettings(min_size=30)


def _slices(rng: np.random.Generator) -> dict[str, np.ndarray]:
    group = rng.integers(0, 4, N)  # four slices of about 100 queries
    slices = {"all": np.arange(N, dtype=np.int64)}
    slices.update({f"g={g}": np.flatnonzero(group == g).astype(np.int64) for g in range(4)})
    return slices


def _pair(rng: np.random.Generator, drop: float) -> tuple[np.ndarray, np.ndarray]:
    """Baseline and current ndcg-like scores on [0, 1]: a query's quality, each run's noise."""
    quality = rng.normal(0.5, 0.2, N)
    base = np.clip(quality + rng.normal(0, 0.15, N), 0, 1)
    current = np.clip(quality + rng.normal(0, 0.15, N) - drop, 0, 1)
    tie = rng.random(N) < 0.25
    return base, np.where(tie, base, current)


THRESHOLDS = {
    "ndcg@10": Threshold(max_drop=0.02),
    "recall@10": Threshold(max_drop=0.03, relative=True),
}


def _first_stop(
    seed: int, drop: float, batch: int = 10, thresholds: dict[str, Threshold] = THRESHOLDS
) -> int | None:
    """Queries run when the early fail first stops (None: it never did before the end)."""
    rng = np.random.default_rng([11, seed])
    slices = _slices(rng)
    pairs = {metric: _pair(rng, drop) for metric in thresholds}
    monitor = Monitor({m: b for m, (b, _) in pairs.items()}, slices, thresholds, {}, SETTINGS, 0.05)
    order = draw_order(N, seed)
    for end in range(batch, N, batch):
        drawn = order[:end]
        if monitor.look(drawn, {m: c[drawn] for m, (_, c) in pairs.items()}):
            return end
    return None


def test_the_checks_share_alpha_as_the_gate_does() -> None:
    rng = np.random.default_rng(0)
    base, _ = _pair(rng, 0.0)
    monitor = Monitor(
        {"ndcg@10": base, "recall@10": base}, _slices(rng), THRESHOLDS, {}, SETTINGS, 0.05
    )
    levels = {(c.metric, c.slice): c.level for c in monitor.checks}
    assert math.isclose(sum(levels.values()), 0.05)
    # The overall checks share half (gate.overall_share), the 8 slice checks the other half.
    assert math.isclose(levels["ndcg@10", "all"], 0.05 / 2 / 2)
    assert math.isclose(levels["recall@10", "g=0"], 0.05 / 2 / 8)
    # A relative max_drop is resolved against the baseline's mean on the set.
    recall = next(c for c in monitor.checks if (c.metric, c.slice) == ("recall@10", "all"))
    assert math.isclose(recall.max_drop, 0.03 * float(base.mean()))


@pytest.mark.parametrize(
    ("metric", "testable"),
    [("ndcg@10", True), ("ap@100", True), ("dcg@10", False), ("num_ret", False)],
)
def test_only_metrics_on_the_unit_scale_are_tested(metric: str, testable: bool) -> None:
    assert bounded(metric) is testable


def test_values_off_the_unit_scale_leave_the_metric_untested() -> None:
    values = np.linspace(0, 3, N)  # a gain sum, say
    monitor = Monitor(
        {"ndcg@10": values},
        {"all": np.arange(N)},
        {"ndcg@10": Threshold(max_drop=0.02)},
        {},
        SETTINGS,
        0.05,
    )
    assert monitor.untested == ("ndcg@10",)
    assert monitor.checks == []


def test_under_evidence_of_excess_the_drop_shown_is_one_past_max_drop() -> None:
    # A 2.5pt drop with 2pt tolerated: evidence of a drop, not of one past 2pt at this size.
    rng = np.random.default_rng(4)
    deltas = np.clip(rng.normal(-0.025, 0.05, N), -1, 1)
    _, shown = sequential_evidence(deltas, 0.02, N)
    _, excess = sequential_evidence(deltas, 0.02, N, any_drop=False)
    assert shown >= bound(0.05, N) > excess


def test_nothing_changed_rarely_stops_and_a_large_drop_stops_early() -> None:
    stops = [_first_stop(seed, 0.0) for seed in range(60)]
    assert sum(stop is not None for stop in stops) <= 0.05 * 60
    spent = [_first_stop(seed, 0.08) for seed in range(20)]
    assert all(stop is not None for stop in spent)
    assert float(np.median([stop or N for stop in spent])) < N / 2


def test_the_sets_own_evidence_alone_would_stop_with_nothing_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Why a drop at all must be shown too: with nothing changed a set's mean drop is past a
    # max_drop of 0 half the time, and late in the set its own statistic knows it.
    import retrieval_gate.gate.modes.sequential as sequential

    exact = {"ndcg@10": Threshold(max_drop=0.0)}
    stops = [_first_stop(seed, 0.0, thresholds=exact) for seed in range(60)]
    assert sum(stop is not None for stop in stops) <= 0.05 * 60
    both = sequential.evidence
    monkeypatch.setattr(sequential, "evidence", lambda *a, **k: (both(*a, **k)[0],) * 2)
    stops = [_first_stop(seed, 0.0, thresholds=exact) for seed in range(60)]
    assert sum(stop is not None for stop in stops) > 0.15 * 60


def test_values_below_zero_leave_the_metric_untested_and_a_look_skips_them() -> None:
    """On [0, 1] means no value below 0 either: a baseline with one is untested, and a look
    whose current values hold one cannot test the check."""
    below = np.linspace(-0.5, 1.0, N)
    monitor = Monitor(
        {"ndcg@10": below}, {"all": np.arange(N)}, {"ndcg@10": Threshold(max_drop=0.02)}, {},
        SETTINGS, 0.05,
    )  # fmt: skip
    assert monitor.untested == ("ndcg@10",)
    base = np.full(N, 0.9)
    monitor = Monitor(
        {"ndcg@10": base}, {"all": np.arange(N)}, {"ndcg@10": Threshold(max_drop=0.02)}, {},
        SETTINGS, 0.05,
    )  # fmt: skip
    assert monitor.untested == ()
    drawn = np.arange(N // 2)
    collapsed = np.zeros(N // 2)  # every query lost all of its 0.9: a sure stop
    [crossing] = monitor.look(drawn, {"ndcg@10": collapsed})
    assert (crossing.metric, crossing.slice, crossing.queries) == ("ndcg@10", "all", N // 2)
    assert crossing.t == 1e9  # certain, yet a number the result's JSON can hold
    collapsed[0] = -0.1
    monitor.ran = 0  # the same look again
    assert monitor.look(drawn, {"ndcg@10": collapsed}) == ()


def _crossing(metric: str, name: str) -> Crossing:
    return Crossing(
        metric=metric, slice=name, queries=40, size=100, max_drop=0.02, t=3.14159,
        bound=2.6041, level=0.0125,
    )  # fmt: skip


def test_the_stop_line_says_whether_and_why_the_run_stopped() -> None:
    ran = SequentialRun(batch=10, looks=39, queries_run=400, queries_total=400, alpha=0.025)
    assert stop_line(ran) == (
        "looked 39 times, every 10 queries, and did not stop early: all 400 queries ran"
    )
    first = _crossing("ndcg@10", "all")
    one = dataclasses.replace(ran, looks=4, queries_run=40, stopped_by=(first,))
    assert stop_line(one) == (
        "stopped early after 40 of 400 queries: ndcg@10 overall dropped past 2pt over the "
        "labelled set (t 3.14 >= 2.6); the checks below are on the 40 queries run"
    )
    three = dataclasses.replace(
        one, stopped_by=(_crossing("recall@10", "g=1"), first, _crossing("ndcg@10", "g=2"))
    )
    two = dataclasses.replace(one, stopped_by=(first, _crossing("ndcg@10", "g=2")))
    assert "(t 3.14 >= 2.6) and 1 more; " in stop_line(two)
    line = stop_line(three)
    assert "recall@10 on g=1 dropped past 2pt" in line
    assert "(t 3.14 >= 2.6) and 2 more; " in line


def _one_check(max_drop: float, **settings: object) -> Monitor:
    config = dataclasses.replace(SETTINGS, **settings)  # type: ignore[arg-type]
    return Monitor(
        {"ndcg@10": np.full(N, 0.5)}, {"all": np.arange(N)},
        {"ndcg@10": Threshold(max_drop=max_drop)}, {}, config, 0.05,
    )  # fmt: skip


def test_the_drop_a_stop_needs_shown_follows_the_rule() -> None:
    """A 2.6pt drop with 2pt tolerated, half the queries run: the set's own statistic is past
    2pt, and a drop at all is shown, so the significant-drop rule stops; evidence of excess
    needs one past 2pt shown as a sample's, which this size cannot give. The crossing states
    the smaller of the two statistics and the bound of the half look's share of the level."""
    rng = np.random.default_rng(8)
    deltas = np.clip(rng.normal(-0.027, 0.06, N // 2), -0.5, 0.5)
    drawn = np.arange(N // 2)
    current = {"ndcg@10": 0.5 + deltas}
    [crossing] = _one_check(0.02).look(drawn, current)
    over_set, shown = sequential_evidence(deltas, 0.02, N)
    assert crossing.t == pytest.approx(min(over_set, shown), rel=1e-12)
    spent = sum(weight for share, weight in LOOKS if share <= 0.5)
    assert crossing.bound == pytest.approx(bound(0.05 * spent, N // 2))
    assert crossing.t >= crossing.bound
    assert (crossing.max_drop, crossing.size, crossing.queries) == (0.02, N, N // 2)
    assert crossing.level == pytest.approx(0.05)  # one check: the whole alpha
    assert _one_check(0.02, rule="evidence-of-excess").look(drawn, current) == ()


def test_a_max_drop_of_zero_stops_on_a_drop_but_not_on_nothing() -> None:
    drawn = np.arange(N // 2)
    rng = np.random.default_rng(2)
    noise = rng.normal(0.0, 0.05, N // 2)
    monitor = _one_check(0.0)
    assert [c.max_drop for c in monitor.checks] == [0.0]
    assert monitor.look(drawn, {"ndcg@10": 0.5 + noise - noise.mean()}) == ()
    assert _one_check(0.0).look(drawn, {"ndcg@10": 0.5 + noise - noise.mean() - 0.03})


def test_a_look_before_any_query_ran_finds_nothing() -> None:
    monitor = _one_check(0.02)
    nothing = np.arange(0, dtype=np.int64)
    assert monitor.look(nothing, {"ndcg@10": np.zeros(0)}) == ()


def test_each_planned_look_is_spent_once_and_none_at_the_end() -> None:
    monitor = _one_check(0.02)
    firsts = [math.ceil(share * N) for share, _ in LOOKS]  # 140, 200, 260, 320 of 400
    assert monitor.due(firsts[0] - 1) == 0.0
    assert monitor.due(firsts[0]) == pytest.approx(LOOKS[0][1])
    monitor.ran = firsts[0]
    assert monitor.due(firsts[0] + 5) == 0.0  # spent at the last look
    # A batch that spans two planned looks spends both at once.
    assert monitor.due(firsts[2]) == pytest.approx(LOOKS[1][1] + LOOKS[2][1])
    assert monitor.due(N) == 0.0  # every query ran: the full set decides


def test_a_sure_drop_waits_for_the_first_planned_look() -> None:
    monitor = _one_check(0.02)
    first = math.ceil(LOOKS[0][0] * N)
    collapsed = {"ndcg@10": np.zeros(N)}  # every query lost 0.5
    for end in range(10, first, 10):
        assert monitor.look(np.arange(end), {"ndcg@10": collapsed["ndcg@10"][:end]}) == ()
    assert monitor.look(np.arange(first), {"ndcg@10": collapsed["ndcg@10"][:first]})


def test_a_slice_without_enough_queries_on_each_side_is_not_tested_early() -> None:
    small = 2 * MIN_SIDE - 1  # at any look, one side has fewer than MIN_SIDE
    slices = {"all": np.arange(N), "g=small": np.arange(small)}
    monitor = Monitor(
        {"ndcg@10": np.full(N, 0.9)}, slices, {"ndcg@10": Threshold(max_drop=0.02)}, {},
        SETTINGS, 0.05,
    )  # fmt: skip
    assert {c.slice for c in monitor.checks} == {"all", "g=small"}
    current = np.full(N, 0.9)
    current[:small] = 0.0  # the small slice lost everything, the rest nothing
    crossed: list[Crossing] = []
    for end in range(10, N, 10):
        crossed += monitor.look(np.arange(end), {"ndcg@10": current[:end]})
    assert "g=small" not in {c.slice for c in crossed}
