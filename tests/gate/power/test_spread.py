"""The sd of the differences from data, the correlations, and a drop carried by 10% of queries."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.power.spread import (
    SHARE,
    DeltaSource,
    concentrated_chance,
    concentrated_drop,
    concentrated_sd,
    correlated_sd,
    correlations_for,
    source_note,
)
from retrieval_gate.stats.detectability import critical_t, detectable_drop, fail_probability

RULE = {"level": 0.05, "max_drop": 0.02, "resamples": 10_000}


def test_the_sd_is_pooled_over_pairs_each_about_its_own_mean() -> None:
    first = np.array([0.0, 0.1, 0.2, 0.3, 5.0])
    second = np.array([1.0, 1.0, 3.0, 3.0, np.nan])  # a query the pair lacks: left out
    source = DeltaSource(kind="history", label="main", query_ids=("a", "b", "c", "d", "e"),
                         pairs=({"m": first}, {"m": second}))  # fmt: skip
    rows = np.arange(4)
    pooled = (first[:4].var(ddof=1) * 3 + second[:4].var(ddof=1) * 3) / 6
    assert source.sd("m", rows) == pytest.approx(math.sqrt(pooled))
    assert source.sd("m", np.array([0])) is None  # under 2 queries: no spread
    assert source.sd("other", rows) is None
    scaled = DeltaSource(
        kind="repeats", label="runs", query_ids=source.query_ids, pairs=source.pairs, scale=0.5
    )
    assert scaled.sd("m", rows) == pytest.approx(0.5 * math.sqrt(pooled))


def test_aligning_reorders_and_leaves_unknown_ids_out() -> None:
    source = DeltaSource(
        kind="run", label="f", query_ids=("a", "b", "c"), pairs=({"m": np.array([1.0, 2.0, 4.0])},)
    )
    moved = source.aligned(("c", "x", "a"))
    assert moved.query_ids == ("c", "x", "a")
    values = moved.pairs[0]["m"]
    assert values[0] == 4.0
    assert np.isnan(values[1])
    assert values[2] == 1.0
    assert moved.sd("m", np.arange(3)) == pytest.approx(np.std([4.0, 1.0], ddof=1))


def test_the_correlation_scales_the_sd_of_the_differences() -> None:
    assert correlated_sd(0.2, 0.5) == pytest.approx(0.2)
    assert correlated_sd(0.2, 0.3) == pytest.approx(0.2 * math.sqrt(1.4))
    assert correlated_sd(0.2, 0.9) == pytest.approx(0.2 * math.sqrt(0.2))
    rng = np.random.default_rng(1)
    a = rng.normal(0, 0.2, 200_000)
    b = 0.7 * a + math.sqrt(1 - 0.49) * rng.normal(0, 0.2, 200_000)
    assert np.std(b - a) == pytest.approx(correlated_sd(0.2, 0.7), rel=0.01)


def test_every_source_says_what_it_rests_on() -> None:
    assert "lower bound" in source_note("repeats", "the baseline's 3 runs")
    assert "f.json" in source_note("run", "f.json")
    assert "typical merge" in source_note("history", "3 pairs")
    assert "for runs correlating 0.3 to 0.9" in source_note("assumption", "")
    assert "range over them" in source_note("assumption", "")


def test_the_runs_correlation_is_pooled_over_pairs_with_their_range() -> None:
    rng = np.random.default_rng(7)
    n, sides = 4_000, []
    for rho in (0.3, 0.6, 0.9):
        before = rng.normal(0.5, 0.2, n)
        after = 0.5 + rho * (before - 0.5) + math.sqrt(1 - rho * rho) * rng.normal(0, 0.2, n)
        sides.append(({"m": before}, {"m": after}))
    flat = ({"m": np.full(n, 0.5)}, {"m": rng.normal(0.5, 0.2, n)})  # no spread: left out
    short = ({"m": np.array([0.1, 0.2])}, {"m": np.array([0.3, 0.1])})  # two queries: left out
    ids = tuple(f"q{i}" for i in range(n))
    source = DeltaSource(
        kind="history", label="main", query_ids=ids, pairs=(), sides=(*sides, flat)
    )
    found = source.correlation("m", np.arange(n))
    assert found is not None
    assert found.pairs == 3
    assert found.value == pytest.approx(0.6, abs=0.02)
    assert found.lowest == pytest.approx(0.3, abs=0.03)
    assert found.highest == pytest.approx(0.9, abs=0.01)
    # Pearson's, pooled: the pairs' centred cross-products over their squares.
    before = np.concatenate([b["m"] - b["m"].mean() for b, _ in sides])
    after = np.concatenate([a["m"] - a["m"].mean() for _, a in sides])
    assert found.value == pytest.approx(
        before @ after / np.sqrt((before @ before) * (after @ after))
    )
    assert source.correlation("other", np.arange(n)) is None
    tiny = DeltaSource(kind="run", label="f", query_ids=("a", "b"), pairs=(), sides=(short,))
    assert tiny.correlation("m", np.arange(2)) is None
    # A value that is not finite (a metric undefined for a query) leaves that query out.
    broken = sides[0][1]["m"].copy()
    broken[:2] = [np.nan, np.inf]
    holed = DeltaSource(kind="run", label="f", query_ids=ids, pairs=(),
                        sides=(({"m": sides[0][0]["m"]}, {"m": broken}),))  # fmt: skip
    kept = holed.correlation("m", np.arange(n))
    assert kept is not None
    assert kept.value == pytest.approx(float(np.corrcoef(sides[0][0]["m"][2:], broken[2:])[0, 1]))
    # Aligned, a query the pair lacks is left out of both sides.
    moved = source.aligned(("x", *ids))
    again = moved.correlation("m", np.arange(n + 1))
    assert again is not None
    assert again.value == pytest.approx(found.value)


@pytest.mark.parametrize("n", [20, 131, 900])
def test_a_drop_on_every_query_is_the_even_rule(n: int) -> None:
    for drop in (0.0, 0.02, 0.05, 0.1):
        even = fail_probability(drop, sd=0.2, n=n, **RULE)
        assert concentrated_chance(drop, sd=0.2, n=n, share=1.0, **RULE) == pytest.approx(even)


def test_a_concentrated_drop_needs_more_and_small_sets_cannot_catch_it() -> None:
    common = {"sd": 0.22, **RULE}
    even = detectable_drop(n=131, **common)
    concentrated = concentrated_drop(common, 131, 0.8)
    assert even is not None
    assert concentrated is not None
    assert concentrated > even
    assert concentrated_chance(concentrated, n=131, **common) == pytest.approx(0.8, abs=1e-6)
    # 2 of 20 queries carrying the drop: even losing everything, the test does not reject
    # 80% of the time.
    assert concentrated_drop(common, 20, 0.8) is None


def test_the_concentrated_figure_holds_in_a_simulation_of_the_t_test() -> None:
    """A seeded check of the normal approximation with the gate's own compare (the
    benchmark does it at scale): 13 of 131 queries carry the drop."""
    n, trials = 131, 600
    settings = ComparisonSettings(test="t")
    common = {"sd": 0.2, "level": 0.05, "max_drop": 0.02, "resamples": 10_000, "t_test": True}
    drop = concentrated_drop(common, n, 0.8)
    assert drop is not None
    rng = np.random.default_rng(29)
    rows = {"all": np.arange(n)}
    threshold = {"m": Threshold(max_drop=0.02)}
    hits = 0
    for _ in range(trials):
        base = rng.normal(0.5, 0.2, n)
        current = base + rng.normal(0, 0.2, n)
        carriers = rng.choice(n, size=round(SHARE * n), replace=False)
        current[carriers] -= drop * n / carriers.size
        (check,) = compare({"m": base}, {"m": current}, rows, threshold, {}, settings)
        hits += check.failed
    # Within 3 Monte Carlo standard errors of the claim.
    assert abs(hits / trials - 0.8) <= 3 * math.sqrt(0.8 * 0.2 / trials)


def test_the_figures_at_each_correlation_go_with_the_assumption_and_the_repeats() -> None:
    assert correlations_for("assumption") == (0.3, 0.5, 0.7, 0.9)
    assert correlations_for("repeats") == (0.3, 0.5, 0.7, 0.9)
    assert correlations_for("run") == ()
    assert correlations_for("history") == ()


def test_a_pair_of_three_queries_counts_and_a_side_without_spread_or_metric_does_not() -> None:
    three = ({"m": np.array([0.1, 0.2, 0.6])}, {"m": np.array([0.2, 0.1, 0.9])})
    flat_after = ({"m": np.array([0.1, 0.2, 0.6])}, {"m": np.array([0.5, 0.5, 0.5])})
    one_sided = ({"m": np.array([0.1, 0.2, 0.6])}, {"other": np.array([0.2, 0.1, 0.9])})
    source = DeltaSource(kind="history", label="main", query_ids=("a", "b", "c"), pairs=(),
                         sides=(three, flat_after, one_sided))  # fmt: skip
    found = source.correlation("m", np.arange(3))
    assert found is not None
    assert found.pairs == 1
    # By hand: centred (-0.2, -0.1, 0.3) and (-0.2, -0.3, 0.5): 0.22 / sqrt(0.14 * 0.38).
    assert found.value == pytest.approx(0.22 / math.sqrt(0.14 * 0.38), rel=1e-12)
    assert found.lowest == found.highest == found.value


def test_two_queries_give_an_sd() -> None:
    source = DeltaSource(kind="run", label="f", query_ids=("a", "b"),
                         pairs=({"m": np.array([0.1, 0.4])},))  # fmt: skip
    assert source.sd("m", np.arange(2)) == pytest.approx(0.3 / math.sqrt(2), rel=1e-12)


def test_a_drop_carried_by_a_share_widens_the_differences_as_a_mixture_does() -> None:
    # 10% of the queries drop 0.02 / 0.1 = 0.2, the rest nothing: a shift with variance
    # 0.1 * 0.9 * 0.2^2 = 0.0036 on top of the differences' 0.2^2.
    assert concentrated_sd(0.2, 0.02) == pytest.approx(math.sqrt(0.04 + 0.0036), rel=1e-12)
    assert concentrated_sd(0.2, 0.02, share=0.25) == pytest.approx(
        math.sqrt(0.04 + 0.25 * 0.75 * 0.08**2), rel=1e-12
    )


@pytest.mark.parametrize("n", [2, 5, 40])
def test_the_concentrated_chance_is_the_normal_model_its_docstring_states(n: int) -> None:
    sd, drop, run_variance = 0.2, 0.06, 0.0004
    common = {"sd": sd, "n": n, "max_drop": 0.02, "resamples": 10_000, "t_test": True}
    chance = concentrated_chance(drop, level=0.05, run_variance=run_variance, **common)
    # The estimate varies by `measured`; the test rejects past c s / sqrt(n), s varying by
    # s / sqrt(2 (n - 1)), s the mixture's sd (10% of queries carry the drop).
    measured = math.sqrt(sd * sd / n + run_variance)
    past = stats.norm.cdf((drop - 0.02) / measured)
    c = critical_t(n, 0.05, resamples=10_000, t_test=True)
    scale = math.sqrt((sd * sd + drop * drop * 0.9 / 0.1) / n + run_variance)
    spread = math.sqrt(measured**2 + (c * scale) ** 2 / (2 * (n - 1)))
    rejects = stats.norm.cdf((drop - c * scale) / spread)
    assert chance == pytest.approx(min(past, rejects), rel=1e-9)
    assert concentrated_chance(drop, level=None, run_variance=run_variance, **common) == (
        pytest.approx(past, rel=1e-9)
    )


def test_the_concentrated_chance_at_its_edges() -> None:
    common = {"max_drop": 0.02, "resamples": 10_000}
    assert concentrated_chance(0.5, sd=0.2, n=1, level=0.05, **common) == 0.0
    # No spread at all: the estimate is the drop itself, past max_drop or not.
    assert concentrated_chance(0.03, sd=0.0, n=50, level=None, **common) == 1.0
    assert concentrated_chance(0.02, sd=0.0, n=50, level=None, **common) == 0.0
    # 4 queries: the sign flips cannot reach 0.05 (2^-4 > 0.05), whatever the drop.
    assert concentrated_chance(0.5, sd=0.2, n=4, level=0.05, **common) == 0.0


def test_a_side_constant_at_an_inexact_float_is_left_out_of_the_correlation() -> None:
    # 0.4 has no exact binary form: three of them centred leave ~1e-33, not 0.
    flat = ({"m": np.full(3, 0.4)}, {"m": np.array([0.1, 0.5, 0.3])})
    varied = ({"m": np.array([0.2, 0.6, 0.9])}, {"m": np.array([0.1, 0.5, 0.3])})
    source = DeltaSource(
        kind="history", label="main", query_ids=("a", "b", "c"), pairs=(), sides=(flat,)
    )
    assert source.correlation("m", np.arange(3)) is None
    both = DeltaSource(
        kind="history", label="main", query_ids=("a", "b", "c"), pairs=(), sides=(flat, varied)
    )
    found = both.correlation("m", np.arange(3))
    assert found is not None
    assert found.pairs == 1
    x, y = varied[0]["m"] - varied[0]["m"].mean(), varied[1]["m"] - varied[1]["m"].mean()
    assert found.lowest == found.highest == pytest.approx(x @ y / math.sqrt((x @ x) * (y @ y)))


def test_a_side_whose_spread_squares_to_zero_is_left_out_of_the_correlation() -> None:
    # Values 1e-200 apart differ, but their centred squares underflow to 0.0: no r exists.
    varied = np.array([0.1, 0.2, 0.6])
    tiny = np.array([0.0, 1e-200, 0.0])
    for before, after in ((varied, tiny), (tiny, varied)):
        source = DeltaSource(kind="history", label="main", query_ids=("a", "b", "c"), pairs=(),
                             sides=(({"m": before}, {"m": after}),))  # fmt: skip
        assert source.correlation("m", np.arange(3)) is None


@pytest.mark.parametrize("n", [1, 2, 30])
def test_without_the_test_the_concentrated_chance_is_the_even_drops(n: int) -> None:
    # The mixture only widens what the test divides by: the estimate alone decides as for an
    # even drop, one query included (before, a check of one query was said never to fail).
    common = {"sd": 0.2, "n": n, "level": None, "max_drop": 0.02, "resamples": 10_000}
    expected = fail_probability(0.05, **common)
    assert expected > 0.5
    assert concentrated_chance(0.05, **common) == pytest.approx(expected, rel=1e-12)
