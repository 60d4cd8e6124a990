"""Paired comparison: verdicts on constructed per-query data, and each statistic on its own."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from retrieval_gate.compare import (
    Comparison,
    GateSettings,
    Threshold,
    adjust_p_values,
    bootstrap_ci,
    compare,
    minimum_detectable_effect,
    paired_t_p_value,
    queries_needed,
    sign_flip_p_value,
    verdict_for,
)
from retrieval_gate.errors import GateError
from retrieval_gate.ids import FloatArray, IntArray

METRIC = "ndcg@10"
Z_SUM = 1.959963984540054 + 0.8416212335729143  # z_{0.975} + z_{0.8}


def run(
    base: FloatArray,
    cur: FloatArray,
    threshold: Threshold,
    *,
    slices: dict[str, IntArray] | None = None,
    overrides: dict[str, dict[str, Threshold]] | None = None,
    **options: object,
) -> tuple[Comparison, ...]:
    everything = {"all": np.arange(base.size)}
    return compare(
        {METRIC: base},
        {METRIC: cur},
        {**everything, **(slices or {})},
        {METRIC: threshold},
        overrides or {},
        GateSettings(**options),  # type: ignore[arg-type]
    )


def baseline_scores(n: int = 500, seed: int = 1) -> FloatArray:
    return np.random.default_rng(seed).beta(2.0, 2.0, n)


def shifted(base: FloatArray, shift: float, sd: float, seed: int = 2) -> FloatArray:
    noise = np.random.default_rng(seed).normal(shift, sd, base.size)
    return np.clip(base + noise, 0.0, 1.0)


# --------------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("test", ["randomization", "t"])
def test_a_drop_spread_over_many_queries_regresses(test: str) -> None:
    base = baseline_scores()
    cur = shifted(base, -0.03, 0.05)
    (c,) = run(base, cur, Threshold(max_drop=0.02), test=test)
    assert c.delta < -0.025
    assert c.verdict == "regressed"
    assert c.failed
    assert c.gated
    assert c.reason == ""
    assert c.p_value is not None
    assert c.p_value < 0.001
    assert c.p_adjusted == c.p_value  # one gated comparison: nothing to correct
    assert c.ci_low <= c.delta <= c.ci_high < 0
    assert c.n == 500
    assert c.wins + c.ties + c.losses == 500
    assert c.losses > c.wins
    if test == "randomization":
        assert c.p_value == pytest.approx(1 / 10_001)  # no resampled mean was as extreme


@pytest.mark.parametrize("test", ["randomization", "t"])
def test_the_same_kind_of_drop_from_a_few_queries_is_noise(test: str) -> None:
    base = baseline_scores()
    cur = base.copy()
    cur[7] = max(0.0, base[7] - 1.0)
    base[7] = 1.0  # one query falls from 1 to 0 ...
    cur[8] = base[8] - 0.05  # ... and two lose a little
    cur[9] = base[9] - 0.02
    (c,) = run(base, cur, Threshold(max_drop=0.001), test=test)
    assert -c.delta > 0.001
    assert (c.wins, c.ties, c.losses) == (0, 497, 3)
    assert c.verdict == "noise"
    assert not c.failed
    assert c.p_value is not None
    assert c.p_value > 0.05
    if test == "randomization":
        assert c.p_value == 0.25  # exact: 3 non-zero differences, 2 of 8 sign vectors as extreme


def test_a_significant_drop_within_the_threshold_passes() -> None:
    base = baseline_scores()
    (c,) = run(base, shifted(base, -0.01, 0.05), Threshold(max_drop=0.02))
    assert c.p_value is not None
    assert c.p_value < 0.001
    assert c.verdict == "pass"
    assert not c.failed


def test_a_significant_gain_past_the_threshold_is_improved() -> None:
    base = baseline_scores()
    (c,) = run(base, shifted(base, 0.04, 0.05), Threshold(max_drop=0.02))
    assert c.delta > 0.02
    assert c.verdict == "improved"
    assert not c.failed


def test_a_current_mean_under_the_floor_is_below_floor_and_a_regression_wins() -> None:
    base = baseline_scores()
    (c,) = run(base, shifted(base, 0.0, 0.05), Threshold(max_drop=0.02, floor=0.6))
    assert c.current_mean < 0.6
    assert c.verdict == "below_floor"
    assert c.failed
    (c,) = run(base, shifted(base, -0.05, 0.05), Threshold(max_drop=0.02, floor=0.6))
    assert c.verdict == "regressed"
    (c,) = run(base, base, Threshold(floor=float(base.mean())))
    assert c.verdict == "pass"  # exactly at the floor is not below it


def test_without_significance_the_drop_alone_decides() -> None:
    base = baseline_scores(40)
    cur = shifted(base, -0.03, 0.3)
    (noisy,) = run(base, cur, Threshold(max_drop=0.02))
    assert -noisy.delta > 0.02
    assert noisy.p_value is not None
    assert noisy.p_value > 0.05
    assert noisy.verdict == "noise"
    (decided,) = run(base, cur, Threshold(max_drop=0.02), require_significance=False)
    assert decided.verdict == "regressed"
    assert decided.failed
    assert decided.p_value == noisy.p_value  # still computed and reported


def test_a_relative_threshold_resolves_against_the_baseline_mean() -> None:
    base = np.full(100, 0.5)
    cur = base - np.linspace(0.01, 0.03, 100)  # mean drop 0.02 = 4% of 0.5
    (strict,) = run(base, cur, Threshold(max_drop=0.03, relative=True))
    assert strict.max_drop == pytest.approx(0.015)
    assert strict.verdict == "regressed"
    (lenient,) = run(base, cur, Threshold(max_drop=0.05, relative=True))
    assert lenient.max_drop == pytest.approx(0.025)
    assert lenient.verdict == "pass"


def test_a_drop_equal_to_the_threshold_passes() -> None:
    base = np.full(100, 0.7)
    cur = base - 0.02  # 0.7 - 0.02 is not exactly 0.68 in floats
    (c,) = run(base, cur, Threshold(max_drop=0.02))
    assert c.verdict == "pass"


def test_verdict_rules() -> None:
    def verdict(delta: float, p: float | None, **kw: object) -> str:
        options: dict[str, object] = {
            "current_mean": 0.5,
            "max_drop": 0.02,
            "floor": None,
            "alpha": 0.05,
            "require_significance": True,
            **kw,
        }
        return verdict_for(delta=delta, p=p, **options)  # type: ignore[arg-type]

    assert verdict(-0.03, 0.01) == "regressed"
    assert verdict(-0.03, 0.05) == "noise"  # p must be below alpha
    assert verdict(-0.03, 0.5, require_significance=False) == "regressed"
    assert verdict(-0.01, 0.001) == "pass"
    assert verdict(0.03, 0.01) == "improved"
    assert verdict(0.03, 0.2) == "pass"
    assert verdict(-0.03, 0.01, max_drop=None) == "pass"
    assert verdict(0.0, 1.0, floor=0.6) == "below_floor"
    assert verdict(-0.03, 0.2, floor=0.6) == "below_floor"  # a floor breach is never noise
    assert verdict(-0.03, 0.01, floor=0.6) == "regressed"
    assert verdict(-0.03, None) == "noise"


# --------------------------------------------------------------------------------------------
# Slices, correction, ordering
# --------------------------------------------------------------------------------------------


def test_a_slice_under_min_size_is_reported_but_never_fails() -> None:
    base = baseline_scores()
    cur = base.copy()
    small = np.arange(12)
    cur[small] = 0.0  # a bad regression on 12 queries
    all_, c = run(base, cur, Threshold(max_drop=0.02), slices={"intent=billing": small})
    assert c.slice == "intent=billing"
    assert c.n == 12
    assert not c.gated
    assert c.reason == "12 queries, below min_size 30"
    assert c.verdict == "regressed"  # from the raw p-value, for information
    assert c.p_value == pytest.approx(2 / 4096)  # exact test over 12 differences
    assert c.p_adjusted is None
    assert not c.failed
    assert all_.gated
    assert all_.p_adjusted == all_.p_value  # the ungated slice is not part of the family
    (one,) = run(base, cur, Threshold(), slices={"s": np.array([3])})[1:]
    assert one.reason == "1 query, below min_size 30"


def test_the_whole_query_set_is_gated_whatever_its_size() -> None:
    base = baseline_scores(12)
    (c,) = run(base, base - 0.5 * base, Threshold(max_drop=0.02))
    assert c.gated
    assert c.reason == ""
    assert c.verdict == "regressed"
    assert c.p_value == pytest.approx(2 / 4096)
    assert c.failed


def test_an_empty_slice_has_no_test() -> None:
    base = baseline_scores()
    empty = np.array([], dtype=np.int64)
    _, c = run(base, base, Threshold(max_drop=0.02, floor=0.5), slices={"segment=none": empty})
    assert (c.n, c.baseline_mean, c.current_mean, c.delta) == (0, 0.0, 0.0, 0.0)
    assert c.p_value is None
    assert c.p_adjusted is None
    assert c.mde is None
    assert not c.gated
    assert c.reason == "no queries"
    assert c.verdict == "pass"
    assert not c.failed


def test_holm_runs_over_every_gated_comparison() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.004, 0.05)
    slices = {"a": np.arange(0, 250), "b": np.arange(250, 500), "tiny": np.arange(5)}
    out = compare(
        {METRIC: base, "recall@10": base},
        {METRIC: cur, "recall@10": cur},
        {"all": np.arange(500), **slices},
        {METRIC: Threshold(max_drop=0.02), "recall@10": Threshold()},
        {},
        GateSettings(),
    )
    gated = [c for c in out if c.gated]
    assert len(gated) == 6
    raw = [c.p_value for c in gated]
    assert [c.p_adjusted for c in gated] == adjust_p_values(raw, "holm")  # type: ignore[arg-type]
    assert all(c.p_adjusted is None for c in out if not c.gated)


def test_order_is_metrics_as_given_then_all_then_slices_by_name() -> None:
    base = baseline_scores(60)
    slices = {"z": np.arange(30), "all": np.arange(60), "a": np.arange(30, 60)}
    out = compare(
        {"b": base, "a": base, "c": base},
        {"b": base, "a": base, "c": base},
        slices,
        {"b": Threshold(), "a": Threshold()},
        {},
        GateSettings(),
    )
    assert [(c.metric, c.slice) for c in out] == [
        ("b", "all"),
        ("b", "a"),
        ("b", "z"),
        ("a", "all"),
        ("a", "a"),
        ("a", "z"),
    ]


def test_an_override_replaces_the_threshold_in_its_slice_only() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.03, 0.05)
    half = {"intent=faq": np.arange(250), "intent=other": np.arange(250, 500)}
    overrides = {"intent=faq": {METRIC: Threshold(max_drop=0.05)}, "gone": {}}
    all_, faq, other = run(base, cur, Threshold(max_drop=0.02), slices=half, overrides=overrides)
    assert (all_.max_drop, faq.max_drop, other.max_drop) == (0.02, 0.05, 0.02)
    assert (all_.verdict, faq.verdict, other.verdict) == ("regressed", "pass", "regressed")


def test_mde_and_queries_needed_show_a_slice_too_small_for_its_threshold() -> None:
    base = baseline_scores()
    cur = shifted(base, 0.0, 0.2)
    _, c = run(base, cur, Threshold(max_drop=0.02), slices={"segment=rare": np.arange(40)})
    assert c.gated
    std = float(np.std(cur[:40] - base[:40], ddof=1))
    assert c.mde == pytest.approx(Z_SUM * std / math.sqrt(40))
    assert c.mde is not None
    assert c.mde > c.max_drop  # type: ignore[operator]
    assert c.queries_needed == math.ceil((Z_SUM * std / 0.02) ** 2)
    assert c.queries_needed is not None
    assert c.queries_needed > 40
    (flat,) = run(base, base, Threshold(max_drop=0.02))
    assert (flat.mde, flat.queries_needed) == (0.0, None)  # no variation
    (free,) = run(base, cur, Threshold())
    assert free.queries_needed is None


def test_compare_is_deterministic_and_independent_of_evaluation_order() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.01, 0.1)
    slices = {"all": np.arange(500), "a": np.arange(100), "b": np.arange(100, 400)}
    thresholds = {METRIC: Threshold(max_drop=0.02), "rr@10": Threshold(max_drop=0.01)}
    scores_b = {METRIC: base, "rr@10": base[::-1].copy()}
    scores_c = {METRIC: cur, "rr@10": cur[::-1].copy()}
    first = compare(scores_b, scores_c, slices, thresholds, {}, GateSettings())
    second = compare(scores_b, scores_c, slices, thresholds, {}, GateSettings())
    assert first == second
    assert repr(first) == repr(second)
    reordered = compare(
        scores_b,
        scores_c,
        dict(reversed(slices.items())),
        dict(reversed(thresholds.items())),
        {},
        GateSettings(),
    )
    assert sorted(reordered, key=repr) == sorted(first, key=repr)
    other_seed = compare(scores_b, scores_c, slices, thresholds, {}, GateSettings(seed=1))
    assert [c.p_value for c in other_seed] != [c.p_value for c in first]


def test_inputs_that_cannot_be_compared_are_errors() -> None:
    base = baseline_scores(50)
    everything = {"all": np.arange(50)}
    ok = {METRIC: Threshold()}
    with pytest.raises(GateError, match="same queries"):
        compare({METRIC: base}, {METRIC: base[:40]}, everything, ok, {}, GateSettings())
    with pytest.raises(GateError, match="current has no scores for metric ndcg@10"):
        compare({METRIC: base}, {"rr@10": base}, everything, ok, {}, GateSettings())
    with pytest.raises(GateError, match='include "all"'):
        compare({METRIC: base}, {METRIC: base}, {"a": np.arange(5)}, ok, {}, GateSettings())
    with pytest.raises(GateError, match="within"):
        compare({METRIC: base}, {METRIC: base}, {"all": np.arange(51)}, ok, {}, GateSettings())
    bad = base.copy()
    bad[3] = np.nan
    with pytest.raises(GateError, match="NaN"):
        compare({METRIC: base}, {METRIC: bad}, everything, ok, {}, GateSettings())
    override = {"all": {"rr@10": Threshold()}}
    with pytest.raises(GateError, match="metric rr@10, which has no threshold"):
        compare({METRIC: base}, {METRIC: base}, everything, ok, override, GateSettings())
    with pytest.raises(GateError, match="alpha"):
        GateSettings(alpha=1.5)
    with pytest.raises(GateError, match="max_drop"):
        Threshold(max_drop=-0.01)


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def test_holm_and_bh_on_the_textbook_example() -> None:
    # Wikipedia's Holm-Bonferroni example; BH by hand: sorted 0.005, 0.01, 0.03, 0.04 times
    # 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 (already monotone).
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_p_values(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_p_values(p, "none") == p
    assert adjust_p_values([], "holm") == []
    assert adjust_p_values([0.3, 0.6], "holm") == [0.6, 0.6]  # capped and monotone
    assert adjust_p_values([0.9, 0.9], "holm") == [1.0, 1.0]
    with pytest.raises(ValueError, match="within"):
        adjust_p_values([1.5], "holm")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), max_size=30))
def test_adjusted_p_values_are_bounded_monotone_and_bh_matches_scipy(p: list[float]) -> None:
    holm = adjust_p_values(p, "holm")
    bh = adjust_p_values(p, "bh")
    for raw, h, b in zip(p, holm, bh, strict=True):
        assert raw <= b <= h <= 1.0
        assert h <= min(1.0, raw * len(p))  # never worse than Bonferroni
    order = sorted(range(len(p)), key=lambda i: p[i])
    for adjusted in (holm, bh):
        ranked = [adjusted[i] for i in order]
        assert ranked == sorted(ranked)
    if p:
        expected = stats.false_discovery_control(p, method="bh")
        assert bh == pytest.approx(list(expected), abs=1e-12)


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        ([1.0, 1.0, 1.0], 2 / 8),
        ([1.0, 2.0, 3.0, 4.0], 2 / 16),
        # Flipping a subset s of {1, 2, 3, 4} gives sum 10 - 2 * sum(s); |sum| >= 2 fails only
        # for the two subsets summing to 5, so p = 14/16. The zero changes nothing.
        ([0.0, 1.0, 2.0, 3.0, -4.0], 14 / 16),
        ([0.0, 0.0], 1.0),
        ([], 1.0),
        ([0.3], 1.0),
    ],
)
def test_exact_sign_flip_p_values_by_hand(diff: list[float], expected: float) -> None:
    rng = np.random.default_rng(0)
    assert sign_flip_p_value(np.array(diff), resamples=10_000, rng=rng) == expected


@pytest.mark.parametrize("seed", range(5))
def test_exact_sign_flip_matches_exact_arithmetic_with_float_ties_as_ties(seed: int) -> None:
    # Differences on a 0.1 grid: many sign vectors tie with the observed sum in exact
    # arithmetic but not in floats (0.1 + 0.2 != 0.3); they must count as extreme.
    tenths = np.random.default_rng(seed).integers(-5, 6, 10)
    diff = tenths / 10
    observed = abs(int(tenths.sum()))
    flips = itertools.product([1, -1], repeat=diff.size)
    extreme = sum(abs(int(np.dot(s, tenths))) >= observed for s in flips)
    # A zero difference doubles both counts, so enumerating it too gives the same p.
    expected = extreme / 2**diff.size
    p = sign_flip_p_value(diff, resamples=10_000, rng=np.random.default_rng(0))
    assert p == expected
    assert (
        sign_flip_p_value(np.array([0.1, 0.2, -0.3]), resamples=8, rng=np.random.default_rng()) == 1
    )


def test_exact_and_monte_carlo_sign_flip_agree() -> None:
    diff = np.random.default_rng(4).normal(-0.04, 0.1, 12)
    exact = sign_flip_p_value(diff, resamples=4096, rng=np.random.default_rng(0))
    monte_carlo = sign_flip_p_value(diff, resamples=200_000, rng=np.random.default_rng(0))
    assert 0.01 < exact < 0.5
    assert monte_carlo == pytest.approx(exact, abs=0.01)
    coarse = sign_flip_p_value(diff, resamples=4095, rng=np.random.default_rng(0))
    assert coarse != exact  # one draw short of 2^12: Monte Carlo
    assert coarse == pytest.approx(exact, abs=0.03)


def test_monte_carlo_sign_flip_is_seeded_and_never_zero() -> None:
    diff = np.random.default_rng(5).normal(-0.5, 0.1, 300)
    p = sign_flip_p_value(diff, resamples=999, rng=np.random.default_rng(7))
    assert p == 1 / 1000
    noisy = np.random.default_rng(5).normal(0.0, 0.1, 300)
    again = [sign_flip_p_value(noisy, resamples=999, rng=np.random.default_rng(7)) for _ in "ab"]
    assert again[0] == again[1]
    assert 0 < again[0] <= 1


def test_paired_t_matches_scipy() -> None:
    rng = np.random.default_rng(6)
    base = rng.beta(2.0, 2.0, 200)
    cur = np.clip(base + rng.normal(-0.01, 0.1, 200), 0.0, 1.0)
    expected = stats.ttest_rel(cur, base).pvalue
    assert paired_t_p_value(cur - base) == pytest.approx(expected, rel=1e-9)
    assert paired_t_p_value(np.zeros(10)) == 1.0
    assert paired_t_p_value(np.full(10, -0.1)) == 0.0
    assert paired_t_p_value(np.array([0.5])) == 1.0


def test_bootstrap_ci_contains_the_mean_and_is_seeded() -> None:
    diff = np.random.default_rng(8).normal(-0.02, 0.1, 500)
    low, high = bootstrap_ci(diff, resamples=10_000, rng=np.random.default_rng(1))
    assert low < diff.mean() < high
    assert high - low == pytest.approx(2 * 1.96 * diff.std() / math.sqrt(500), rel=0.1)
    again = bootstrap_ci(diff, resamples=10_000, rng=np.random.default_rng(1))
    assert again == (low, high)
    assert bootstrap_ci(np.full(7, 0.1), resamples=100, rng=np.random.default_rng(1)) == (0.1, 0.1)
    wide = bootstrap_ci(diff, resamples=10_000, rng=np.random.default_rng(1), level=0.99)
    assert wide[0] < low < high < wide[1]


def test_minimum_detectable_effect_and_queries_needed() -> None:
    assert minimum_detectable_effect(0.1, 500, 0.05, 0.8) == pytest.approx(
        Z_SUM * 0.1 / math.sqrt(500)
    )
    assert minimum_detectable_effect(0.1, 500, 0.05, 0.8) == pytest.approx(0.012529, abs=1e-6)
    assert queries_needed(0.1, 0.02, 0.05, 0.8) == 197  # (2.8016 * 5)^2 = 196.2
    for std, drop in [(0.1, 0.02), (0.25, 0.01), (0.05, 0.03)]:
        needed = queries_needed(std, drop, 0.05, 0.8)
        assert minimum_detectable_effect(std, needed, 0.05, 0.8) <= drop
        if needed > 1:
            assert minimum_detectable_effect(std, needed - 1, 0.05, 0.8) > drop
    assert minimum_detectable_effect(0.1, 500, 0.01, 0.9) > minimum_detectable_effect(
        0.1, 500, 0.05, 0.8
    )
    with pytest.raises(ValueError, match="max_drop"):
        queries_needed(0.1, 0.0, 0.05, 0.8)
