"""The bounds of a prediction-powered check over every grading of its unjudged pairs."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from retrieval_gate.core.ids import object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold
from retrieval_gate.gate.explain.label_holes import HoleExtremes, LabelHole, _Extremes
from retrieval_gate.gate.modes.assisted import assisted_comparisons
from retrieval_gate.gate.modes.assisted_holes import (
    FREE_AT_MOST,
    Scores,
    _Bounds,
    _bounds,
    _fails,
    _largest_p,
    _max_drops,
    _sd,
    _smallest_p,
    _widest_se,
    bounded_checks,
    judge_extremes,
)
from retrieval_gate.stats.ppi import ppi_mean
from retrieval_gate.stats.significance import t_tail
from tests.helpers.baselines import make

Problem = tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _problem(seed: int, free: int) -> Problem:
    """People's deltas on n labelled queries, a judge weight, and each query's judge delta
    box (lowest, highest): `free` of the queries have a box wider than a point."""
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(4, 15)), int(rng.integers(3, 30))
    y = rng.normal(-0.08, 0.15, n)
    low = np.concatenate([y + rng.normal(0, 0.05, n), rng.normal(-0.05, 0.15, big_n)])
    high = low.copy()
    loose = rng.choice(n + big_n, size=min(free, n + big_n), replace=False)
    high[loose] += rng.uniform(0.0, 0.6, loose.size)
    return y, float(rng.uniform(0.1, 1.0)), low, high, np.arange(n), np.arange(n, n + big_n)


def _p_at(y: np.ndarray, lam: float, f: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> float:
    return ppi_mean(y, f[ours], f[theirs], lam=lam).p_drop


@pytest.mark.parametrize("seed", range(40))
def test_every_grading_has_a_p_value_between_the_bounds(seed: int) -> None:
    y, lam, low, high, ours, theirs = _problem(seed, free=5)
    smallest = _smallest_p(y, lam, (low, high), ours, theirs)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    rng = np.random.default_rng(seed + 1000)
    corners = []
    inside = [low + rng.uniform(0, 1, low.size) * (high - low) for _ in range(300)]
    loose = np.flatnonzero(high > low)
    for bits in itertools.product((False, True), repeat=loose.size):
        f = low.copy()
        f[loose[list(bits)]] = high[loose[list(bits)]]
        corners.append(f)
    values = [_p_at(y, lam, f, ours, theirs) for f in [*corners, *inside]]
    assert smallest <= min(values) + 1e-12
    assert max(values) <= largest + 1e-12


@pytest.mark.parametrize("seed", range(20))
def test_the_largest_p_value_is_a_corners_at_the_fewest_degrees_of_freedom(seed: int) -> None:
    """-estimate / se is a linear function over a convex one: its least value is at a corner,
    so the largest p-value found there is the box's (up to Welch's degrees of freedom, which
    the bound takes at their fewest)."""
    y, lam, low, high, ours, theirs = _problem(seed, free=4)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    loose = np.flatnonzero(high > low)
    ratios, estimates = [], []
    for bits in itertools.product((False, True), repeat=loose.size):
        f = low.copy()
        f[loose[list(bits)]] = high[loose[list(bits)]]
        found = ppi_mean(y, f[ours], f[theirs], lam=lam)
        ratios.append(-found.estimate / found.se)
        estimates.append(found.estimate)
    if max(estimates) >= 0:  # a grading with no drop: nothing bounds the p-value below 1
        assert largest == 1.0
        return
    df = min(ours.size - 1, theirs.size - 1) if theirs.size >= 2 else ours.size - 1
    assert largest == pytest.approx(t_tail(min(ratios), df), rel=1e-9)


def test_past_the_corners_it_tries_the_bound_still_holds() -> None:
    y, lam, low, high, ours, theirs = _problem(3, free=FREE_AT_MOST + 8)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    rng = np.random.default_rng(7)
    for _ in range(500):
        f = np.where(rng.random(low.size) < 0.5, low, high)
        assert _p_at(y, lam, f, ours, theirs) <= largest + 1e-12


def test_at_exactly_the_corners_it_tries_the_largest_p_value_is_the_corners() -> None:
    """FREE_AT_MOST free queries are still tried corner by corner: the bound is the box's
    largest p-value, not the looser one past them."""
    y, lam, low, high, ours, theirs = _problem(2, free=FREE_AT_MOST)
    loose = np.flatnonzero(high > low)
    assert loose.size == FREE_AT_MOST
    ratios, estimates = [], []
    for bits in itertools.product((False, True), repeat=loose.size):
        f = low.copy()
        f[loose[list(bits)]] = high[loose[list(bits)]]
        found = ppi_mean(y, f[ours], f[theirs], lam=lam)
        ratios.append(-found.estimate / found.se)
        estimates.append(found.estimate)
    assert max(estimates) < 0
    df = min(ours.size - 1, theirs.size - 1)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    assert largest == pytest.approx(t_tail(min(ratios), df), rel=1e-9)


def test_past_the_corners_the_highest_estimate_is_held_over_the_widest_error() -> None:
    """The highest estimate of the box has every labelled query's judge delta at its lowest
    and every judge-only one's at its highest (the estimate is y - lam f there, + lam f)."""
    y, lam, low, high, ours, theirs = _problem(4, free=FREE_AT_MOST + 8)
    assert np.count_nonzero(high > low) > FREE_AT_MOST
    highest = ppi_mean(y, low[ours], high[theirs], lam=lam).estimate
    assert highest < 0
    widest = _widest_se(y, lam, (low, high), ours, theirs, True)
    expected = t_tail(-highest / widest, min(ours.size - 1, theirs.size - 1))
    assert _largest_p(y, lam, (low, high), ours, theirs) == pytest.approx(expected, rel=1e-9)


# ---- the decision over the box -------------------------------------------------------------

N_PEOPLE, N_JUDGE = 30, 60
METRIC = "ndcg@10"


def _scores(drop: float, seed: int = 0) -> Scores:
    """People's and the judge's per-query scores, the first N_PEOPLE queries human-judged,
    every query losing about `drop`."""
    rng = np.random.default_rng(seed)
    n = N_PEOPLE + N_JUDGE
    base = rng.uniform(0.5, 0.9, n)
    change = drop + rng.normal(0.0, 0.05, n)
    judged_base = np.clip(base + rng.normal(0.0, 0.02, n), 0, 1)
    labelled = np.arange(n) < N_PEOPLE
    return Scores(
        human=({METRIC: base}, {METRIC: base + change}),
        judged=({METRIC: judged_base}, {METRIC: judged_base + change}),
        labelled=labelled,
    )


def _decided(
    scores: Scores, threshold: Threshold, settings: ComparisonSettings
) -> tuple[tuple[Comparison, ...], tuple[float | None, ...]]:
    slices = {"all": np.arange(N_PEOPLE + N_JUDGE)}
    made, _, weights = assisted_comparisons(
        scores.human, scores.judged, scores.labelled, slices, {METRIC: threshold}, {}, settings
    )
    return made, weights


def _box(scores: Scores, rows: list[int], widen: float, metric: str = METRIC) -> HoleExtremes:
    """Each of `rows`' judge-scored delta and current value free by `widen` either way."""
    n = N_PEOPLE + N_JUDGE
    delta = scores.judged[1][METRIC] - scores.judged[0][METRIC]
    current = scores.judged[1][METRIC]
    spread = np.zeros(n)
    spread[rows] = widen
    unjudged = np.zeros(n, dtype=np.int64)
    unjudged[rows] = 2
    extremes = _Extremes(
        delta=(delta - spread, delta + spread),
        current=(current - spread, current + spread),
        exact=np.ones(n, dtype=bool),
    )
    return HoleExtremes(unjudged=unjudged, extremes={metric: extremes}, reasons={})


def _bounded(
    drop: float, rows: list[int], widen: float, **settings: object
) -> tuple[Comparison, Comparison, LabelHole | None]:
    scores = _scores(drop)
    config = ComparisonSettings(**settings)  # type: ignore[arg-type]
    threshold = Threshold(max_drop=0.05)
    made, weights = _decided(scores, threshold, config)
    slices = {"all": np.arange(N_PEOPLE + N_JUDGE)}
    checks, holes = bounded_checks(
        made, weights, [threshold], scores, slices, _box(scores, rows, widen), config
    )
    return made[0], checks[0], holes[0] if holes else None


def test_a_clear_drop_fails_for_every_grading_and_stays_regressed() -> None:
    before, after, hole = _bounded(-0.2, [40, 41], 0.3)
    assert before.verdict == after.verdict == "regressed"
    assert after.failed
    assert hole is not None
    assert hole.robust
    assert (hole.worst, hole.best) == ("regressed", "regressed")
    assert hole.unjudged == 4
    assert hole.worst_delta is not None
    assert hole.best_delta is not None
    assert hole.worst_delta < after.delta < hole.best_delta
    assert not hole.exact  # an outer bound: the judge weight is held


def test_no_change_holds_whatever_a_few_pairs_turn_out_to_be() -> None:
    before, after, hole = _bounded(0.0, [40], 0.3)
    assert before.verdict == after.verdict == "pass"
    assert not after.failed
    assert hole is not None
    assert hole.robust
    assert (hole.worst, hole.best) == ("pass", "pass")


def test_a_drop_the_grades_could_undo_is_inconclusive_and_fails() -> None:
    before, after, hole = _bounded(-0.08, list(range(30, 90)), 0.5)
    assert before.verdict == "regressed"
    assert after.verdict == "inconclusive"
    assert after.failed  # whatever on_inconclusive says
    assert hole is not None
    assert not hole.robust
    assert (hole.worst, hole.best) == ("regressed", "pass")


def test_a_pass_the_grades_could_turn_fails_under_every_rule_setting() -> None:
    for settings in ({}, {"on_inconclusive": "fail"}, {"require_significance": False}):
        before, after, hole = _bounded(-0.02, list(range(30, 90)), 0.5, **settings)
        assert before.verdict == "pass", settings
        assert after.verdict == "inconclusive", settings
        assert after.failed
        assert hole is not None
        assert not hole.robust


def test_a_rise_is_not_claimed_for_every_grading() -> None:
    before, after, hole = _bounded(0.2, [40], 0.3)
    assert before.verdict == "improved"
    assert after.verdict == "pass"
    assert not after.failed
    assert hole is not None
    assert hole.robust


def test_checks_without_unjudged_pairs_keep_their_verdict_and_p_value() -> None:
    """Only the checks whose queries hold unjudged pairs are bounded; a family member without
    any keeps its raw p-value in the family's adjustment (a valid p-value, in [0, 1])."""
    scores = _scores(-0.2)
    config = ComparisonSettings()
    threshold = Threshold(max_drop=0.05)
    slices = {"all": np.arange(90), "even": np.arange(0, 90, 2), "odd": np.arange(1, 90, 2)}
    made, _, weights = assisted_comparisons(
        scores.human, scores.judged, scores.labelled, slices, {METRIC: threshold}, {},
        dataclasses.replace(config, min_size=10),
    )  # fmt: skip
    even = next(c for c in made if c.slice == "even")
    assert even.level is not None  # in the family: its raw p-value is adjusted with the rest
    checks, holes = bounded_checks(
        made, weights, [threshold] * len(made), scores, slices, _box(scores, [81], 0.3), config
    )
    assert [h.slice for h in holes] == ["all", "odd"]
    assert next(c for c in checks if c.slice == "even") == even


def test_a_metric_without_a_bound_is_inconclusive_where_it_has_unjudged_pairs() -> None:
    scores = _scores(-0.2)
    config = ComparisonSettings()
    threshold = Threshold(max_drop=0.05)
    made, weights = _decided(scores, threshold, config)
    box = _box(scores, [40], 0.3, metric="other@10")
    checks, holes = bounded_checks(
        made, weights, [threshold], scores, {"all": np.arange(90)}, box, config
    )
    assert checks[0].verdict == "inconclusive"
    assert checks[0].failed
    assert holes[0].reason == "no label-hole bound for this metric"
    assert holes[0].worst is None
    assert not holes[0].robust


def test_a_floor_the_box_crosses_is_inconclusive_one_it_clears_holds() -> None:
    scores = _scores(0.0)
    config = ComparisonSettings()
    slices = {"all": np.arange(90)}
    # The current mean's box is about [0.51, 0.91] (the judge's weight about 0.66).
    for floor, verdict in ((0.45, "pass"), (0.65, "inconclusive"), (0.95, "below_floor")):
        threshold = Threshold(floor=floor)
        made, weights = _decided(scores, threshold, config)
        rows = list(range(30, 90))
        checks, _ = bounded_checks(
            made, weights, [threshold], scores, slices, _box(scores, rows, 0.3), config
        )
        assert checks[0].verdict == verdict, floor


def test_a_relative_threshold_moves_with_the_baseline_mean_the_box_allows() -> None:
    bounds = _Bounds(delta=(-0.2, -0.1), current=(0.5, 0.6), p_drop=(0.0, 0.01))
    assert _max_drops(Threshold(max_drop=0.1, relative=True), bounds) == pytest.approx((0.06, 0.08))
    assert _max_drops(Threshold(max_drop=0.05), bounds) == (0.05, 0.05)
    assert _max_drops(Threshold(floor=0.3), bounds) is None
    across = _Bounds(delta=(-0.2, 0.3), current=(-0.1, 0.4), p_drop=(0.0, 1.0))
    assert _max_drops(Threshold(max_drop=0.5, relative=True), across) == pytest.approx((0.0, 0.3))


def test_the_p_value_bounds_at_their_edges() -> None:
    y = np.full(5, -0.1)
    flat = np.zeros(10)
    ours, theirs = np.arange(5), np.arange(5, 10)
    # No spread anywhere: a sure drop has p 0 at both ends.
    assert _largest_p(y, 0.5, (flat - 0.1, flat - 0.1), ours, theirs) == 0.0
    assert _smallest_p(y, 0.5, (flat - 0.1, flat - 0.1), ours, theirs) == 0.0
    wide = flat.copy()
    wide[7] = 0.2  # one judge-only query's box: its higher corner is the worse one
    f = flat - 0.1
    f[7] = 0.1
    worse = ppi_mean(y, f[ours], f[theirs], lam=0.5)
    found = _largest_p(y, 0.5, (flat - 0.1, wide - 0.1), ours, theirs)
    assert found == pytest.approx(t_tail(-worse.estimate / worse.se, 4), rel=1e-9)
    # One labelled query: no variance to test with.
    one = np.arange(1)
    assert _largest_p(y[:1], 0.5, (flat, flat), one, theirs) == 1.0
    assert _smallest_p(y[:1], 0.5, (flat, flat), one, theirs) == 1.0
    # No estimate below 0 anywhere: the smallest p-value is 0.5 at least.
    assert _smallest_p(-y, 0.5, (flat, flat + 0.1), ours, theirs) == 0.5
    # A judge weight of 0 tests people's deltas alone, at n - 1 degrees of freedom.
    rng = np.random.default_rng(3)
    people = rng.normal(-0.05, 0.1, 12)
    low = rng.normal(0, 0.1, 15)
    few = np.arange(12, 15)
    expected = ppi_mean(people, low[:12], low[few], lam=0.0)
    found = _largest_p(people, 0.0, (low, low), np.arange(12), few)
    assert found == pytest.approx(t_tail(-expected.estimate / expected.se, 11), rel=1e-12)
    assert _sd(np.array([0.3])) == 0.0


def test_the_widest_standard_error_bounds_every_grading() -> None:
    rng = np.random.default_rng(11)
    y = rng.normal(-0.05, 0.1, 10)
    low = rng.normal(0, 0.1, 40)
    high = low + rng.uniform(0, 0.4, 40)
    ours, theirs = np.arange(10), np.arange(10, 40)
    widest = _widest_se(y, 0.7, (low, high), ours, theirs, True)
    for _ in range(300):
        f = low + rng.uniform(0, 1, 40) * (high - low)
        assert ppi_mean(y, f[ours], f[theirs], lam=0.7).se <= widest + 1e-12


def test_a_family_member_without_unjudged_pairs_weighs_in_with_its_own_p_value() -> None:
    """The bound of a check is adjusted with the family's other raw p-values (weighted Holm):
    beside a member whose own p-value is tiny, the check's largest p-value is tested at its
    own; beside one without a p-value (counted as 1, no evidence) it is scaled up by the
    weight it shares, and at an alpha between the two the verdict turns inconclusive."""
    scores = _scores(-0.2)
    config = ComparisonSettings(min_size=10)
    threshold = Threshold(max_drop=0.05)
    slices = {"all": np.arange(90), "even": np.arange(0, 90, 2)}
    made, _, weights = assisted_comparisons(
        scores.human, scores.judged, scores.labelled, slices, {METRIC: threshold}, {}, config
    )
    first, even = made
    assert (first.slice, even.slice) == ("all", "even")
    assert first.level is not None
    assert even.level is not None
    assert even.p_value is not None
    box = _box(scores, [41], 0.3)  # an odd query: "even" has no unjudged pair
    lam = weights[0]
    assert lam is not None
    largest = _bounds(METRIC, slices["all"], lam, scores, box).p_drop[1]
    share = first.level / (first.level + even.level)
    assert even.p_value / (1 - share) < largest / share  # "even" comes first in Holm's order
    # At an alpha past the bound's own p-value, short of it scaled by its share of the weight:
    settings = dataclasses.replace(config, alpha=largest * (1 + 1 / share) / 2)
    checks, _ = bounded_checks(made, weights, [threshold] * 2, scores, slices, box, settings)
    assert checks[0].verdict == "regressed"
    assert checks[1] == even
    untested = [first, dataclasses.replace(even, p_value=None)]
    checks, _ = bounded_checks(untested, weights, [threshold] * 2, scores, slices, box, settings)
    assert checks[0].verdict == "inconclusive"
    assert checks[0].failed


@pytest.mark.parametrize(("n", "big_n"), [(2, 6), (3, 6), (6, 1)])
def test_few_queries_on_either_side_bound_as_the_corners_say(n: int, big_n: int) -> None:
    """From two labelled queries on the deltas have a variance, and the bounds are the
    corners' (at min(n - 1, N - 1) degrees of freedom for the largest); a single judge-only
    query adds its mean but no variance (`ppi_mean`), at n - 1 degrees of freedom."""
    rng = np.random.default_rng(n)
    y = -0.2 + rng.normal(0.0, 0.05, n)
    low = np.concatenate([y + rng.normal(0.0, 0.02, n), rng.normal(-0.2, 0.05, big_n)])
    loose = [0, n]
    high = low.copy()
    high[loose] += 0.1
    ours, theirs = np.arange(n), np.arange(n, n + big_n)
    ratios, values = [], []
    for bits in itertools.product((False, True), repeat=2):
        f = low.copy()
        f[loose] = np.where(bits, high[loose], low[loose])
        found = ppi_mean(y, f[ours], f[theirs], lam=0.5)
        assert found.estimate < 0
        ratios.append(-found.estimate / found.se)
        values.append(found.p_drop)
    df = min(n - 1, big_n - 1) if big_n >= 2 else n - 1
    largest = _largest_p(y, 0.5, (low, high), ours, theirs)
    assert largest == pytest.approx(t_tail(min(ratios), df), rel=1e-9)
    smallest = _smallest_p(y, 0.5, (low, high), ours, theirs)
    assert smallest <= min(values) + 1e-12
    assert smallest < 0.5


def _gathering_box(
    n: int, big_n: int, c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """People's deltas, and a box whose judge-only queries are spread about their middles
    (all but one a little low, one far high) by as much as the box lets them gather: at
    the lowest grading, every one at its low end, their spread shrinks to 1 - c of it."""
    rng = np.random.default_rng(5)
    y = rng.normal(-0.02, 0.01, n)
    labelled = y + rng.normal(0.0, 0.002, n)
    spread = np.full(big_n, -0.01)
    spread[-1] = 0.01 * (big_n - 1)  # mean 0
    half = c * spread + c * 0.01  # >= 0: the lowest end gathers them
    middle = -0.05 + spread
    low = np.concatenate([labelled, middle - half])
    high = np.concatenate([labelled, middle + half])
    return y, low, high, np.arange(n), np.arange(n, n + big_n)


def test_the_smallest_p_value_holds_where_the_box_gathers_the_judge_only_queries() -> None:
    """Minkowski's bound is near tight here (the judge-only spread at the lowest grading is
    1 - c of the middle's, the bound's a little less), so a bound that took the box's half
    widths as narrower would pass the p-value of a grading in the box."""
    y, low, high, ours, theirs = _gathering_box(30, 30, 0.9)
    lowest = ppi_mean(y, low[ours], low[theirs], lam=1.0)
    assert lowest.p_drop < 1e-12
    assert _smallest_p(y, 1.0, (low, high), ours, theirs) <= lowest.p_drop


def test_the_widest_standard_error_is_reached_by_a_grading() -> None:
    """Each judge-only query free by half its distance from the mean, away from it: the
    corner that spreads them most has exactly the Minkowski bound's standard error (it is
    no wider than it must be)."""
    rng = np.random.default_rng(1)
    n, big_n = 12, 30
    y = rng.normal(-0.05, 0.05, n)
    labelled = y + rng.normal(0.0, 0.02, n)
    deviation = rng.normal(0.0, 0.05, big_n)
    deviation -= deviation.mean()
    middle, half = -0.05 + deviation, 0.5 * np.abs(deviation)
    low = np.concatenate([labelled, middle - half])
    high = np.concatenate([labelled, middle + half])
    ours, theirs = np.arange(n), np.arange(n, n + big_n)
    widest = np.concatenate([labelled, middle + np.sign(deviation) * half])
    for lam in (0.3, 1.0):
        found = ppi_mean(y, widest[ours], widest[theirs], lam=lam)
        bound = _widest_se(y, lam, (low, high), ours, theirs, True)
        assert bound == pytest.approx(found.se, rel=1e-12)


def test_a_current_mean_at_the_floor_is_not_below_it_at_either_end() -> None:
    """As `verdicts.verdict_for` has it, a mean at the floor (to rounding) clears it: a box
    whose highest current mean is the floor does not fail every grading, one whose lowest
    is does not fail any."""
    made, _ = _decided(_scores(0.0), Threshold(floor=0.6), ComparisonSettings())
    check = made[0]
    settings = ComparisonSettings()
    for current, expected in (
        ((0.5, 0.6), (False, True)),
        ((0.6, 0.7), (False, False)),
        ((0.5, 0.6 - 1e-6), (True, True)),
    ):
        at = _Bounds(delta=(-0.01, 0.01), current=current, p_drop=(0.5, 0.5))
        assert _fails(check, at, None, at.p_drop, settings) == expected, current


def test_the_delta_and_current_ranges_are_the_corners_extremes() -> None:
    """At the judge weight held, each range is the least and the most `ppi_mean` estimate
    over the corners of its box (a labelled query's and judge-only queries' free)."""
    scores = _scores(-0.05)
    rows = [3, 40, 41]
    box = _box(scores, rows, 0.2)
    at = box.extremes[METRIC]
    lam = 0.7
    labelled = scores.labelled
    ours, theirs = np.flatnonzero(labelled), np.flatnonzero(~labelled)
    people = scores.human[1][METRIC] - scores.human[0][METRIC], scores.human[1][METRIC]
    found = _bounds(METRIC, np.arange(N_PEOPLE + N_JUDGE), lam, scores, box)
    for measured, ends, target in (
        (found.delta, at.delta, people[0]),
        (found.current, at.current, people[1]),
    ):
        estimates = []
        for bits in itertools.product((0, 1), repeat=len(rows)):
            f = ends[0].copy()
            for row, end in zip(rows, bits, strict=True):
                f[row] = ends[end][row]
            estimates.append(ppi_mean(target[ours], f[ours], f[theirs], lam=lam).estimate)
        assert measured == pytest.approx((min(estimates), max(estimates)), abs=1e-12)
        assert measured[1] - measured[0] > 0.01


def test_a_top_k_document_outside_the_pool_scores_0_and_one_inside_it_is_a_hole() -> None:
    """The judge graded a (2) of the pool {a, x}; b, below its depth, is outside the pool.
    precision@2: the baseline's [a, b] is 1/2 whatever; the current [x, a] is 1/2 or 1 as x
    turns out, so the delta is between 0 and 1/2, and only x is unjudged."""
    made, _ = _decided(_scores(-0.1), Threshold(max_drop=0.05), ComparisonSettings())
    check = dataclasses.replace(made[0], metric="precision@2")
    records = (
        dataclasses.replace(make(), top_k={"q1": ("a", "b")}),
        dataclasses.replace(make(), top_k={"q1": ("x", "a")}),
    )
    pool = Qrels(object_array(["q1"]), np.array([0]), object_array(["a"]), np.array([2.0]))
    found = judge_extremes([check], records, pool, {"q1": {"a", "x"}}, ["q1"], 2)
    assert found.unjudged.tolist() == [1]
    extremes = found.extremes["precision@2"]
    assert [side.tolist() for side in extremes.delta] == [[0.0], [0.5]]
    assert [side.tolist() for side in extremes.current] == [[0.5], [1.0]]
