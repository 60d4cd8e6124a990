"""The gate's rule on constructed per-query data: verdicts, the family, levels and power."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import (
    Comparison,
    ComparisonSettings,
    Threshold,
    compare,
)
from retrieval_gate.gate.checks.family import family_levels
from retrieval_gate.gate.checks.verdicts import verdict_for
from retrieval_gate.stats.detectability import detectable_drop, queries_needed
from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM
from retrieval_gate.stats.significance import adjust_p_values, interval

METRIC = "ndcg@10"


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
        ComparisonSettings(**options),  # type: ignore[arg-type]
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
    (c,) = run(base, shifted(base, -0.05, 0.05), Threshold(max_drop=0.02), test=test)
    assert c.delta < -0.04
    assert c.p_value is not None
    assert c.p_value < 1e-6
    assert c.p_adjusted == c.p_value  # alone in its family
    assert c.level == 0.05
    assert c.verdict == "regressed"
    assert c.failed
    assert c.ci_low is not None
    assert c.ci_high is not None
    assert c.ci_low < c.delta < c.ci_high < 0


@pytest.mark.parametrize("test", ["randomization", "t"])
def test_the_same_drop_from_a_few_queries_in_noise_passes_unless_the_test_leans(test: str) -> None:
    base = baseline_scores(100)
    noise = np.random.default_rng(3).normal(0.0, 0.3, base.size)
    cur = base + noise - noise.mean()
    cur[:5] -= 0.6  # 5 queries carry a 3pt drop in a noisy set: p about 0.2
    (c,) = run(base, cur, Threshold(max_drop=0.02), test=test)
    assert -c.delta > 0.02
    assert c.p_adjusted is not None
    assert c.p_adjusted > 0.10
    assert c.verdict == "pass"
    assert not c.failed
    (strict,) = run(base, cur, Threshold(max_drop=0.02), test=test, on_inconclusive="fail")
    assert not strict.failed
    cur[:5] -= 0.6  # twice that drop: the test leans (p within 2 alpha) without the evidence
    (c,) = run(base, cur, Threshold(max_drop=0.02), test=test)
    assert c.p_adjusted is not None
    assert 0.05 < c.p_adjusted <= 0.10
    assert c.verdict == "inconclusive"
    assert not c.failed
    (strict,) = run(base, cur, Threshold(max_drop=0.02), test=test, on_inconclusive="fail")
    assert strict.verdict == "inconclusive"
    assert strict.failed
    (c,) = run(base, shifted(base, -0.02, 0.05), Threshold(max_drop=0.03, relative=True))
    assert c.max_drop == pytest.approx(0.03 * base.mean())
    assert c.verdict == "regressed"


def test_a_drop_equal_to_the_threshold_passes() -> None:
    base = np.full(100, 0.5)
    (c,) = run(base, base - 0.02, Threshold(max_drop=0.02))
    assert c.verdict == "pass"


def test_verdict_rules() -> None:
    def v(delta: float, evidence: bool, **kw: object) -> str | None:
        options: dict[str, object] = {"max_drop": 0.02, "floor": None, "current_mean": 0.5}
        options.update(kw)
        return verdict_for(delta=delta, drop_evidence=evidence, rise_evidence=evidence, **options)  # type: ignore[arg-type]

    assert v(-0.03, True) == "regressed"
    assert v(-0.03, False) == "pass"  # past the threshold, and the test does not even lean
    assert v(-0.03, False, lean=True) == "inconclusive"
    assert v(-0.01, True) == "pass"
    assert v(0.03, True) == "improved"
    assert v(0.03, False) == "pass"
    assert v(-0.01, False, floor=0.6) == "below_floor"
    assert v(-0.03, True, floor=0.6) == "regressed"
    assert v(-0.03, False, floor=0.6) == "below_floor"
    assert v(-0.5, True, max_drop=None, floor=0.1) == "pass"
    assert v(-0.5, True, max_drop=None, floor=None) is None  # report only


def test_a_report_only_metric_has_no_verdict_and_stays_out_of_the_family() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.2, 0.05)
    out = compare(
        {METRIC: base, "ap@10": base},
        {METRIC: base, "ap@10": cur},
        {"all": np.arange(500)},
        {METRIC: Threshold(max_drop=0.02), "ap@10": Threshold()},
        {},
        ComparisonSettings(),
    )
    gated, report_only = out
    assert report_only.verdict is None
    assert not report_only.gated
    assert report_only.reason == "report only: no max_drop or min"
    assert report_only.p_adjusted is None
    assert report_only.level is None
    assert report_only.detectable_drop is None
    assert not report_only.failed
    assert gated.level == 0.05  # the whole alpha: the family is this one check


# --------------------------------------------------------------------------------------------
# Slices and the family
# --------------------------------------------------------------------------------------------


def test_a_slice_under_min_size_is_reported_but_never_fails() -> None:
    base = baseline_scores()
    cur = base.copy()
    small = np.arange(12)
    cur[small] = 0.0
    all_, c = run(base, cur, Threshold(max_drop=0.02), slices={"intent=billing": small})
    assert c.slice == "intent=billing"
    assert (c.n, c.gated, c.reason) == (12, False, "12 queries, below min_size 30")
    assert c.verdict == "regressed"  # from the raw p-value, for information
    assert c.p_value == 2.0**-12  # exact and one-sided
    assert c.p_adjusted is None
    assert c.level is None
    assert not c.failed
    assert all_.gated
    assert all_.level == 0.05
    (one,) = run(base, cur, Threshold(), slices={"s": np.array([3])})[1:]
    assert one.reason == "report only: no max_drop or min"
    (tiny,) = run(base, cur, Threshold(max_drop=0.02), slices={"s": np.array([3])})[1:]
    assert tiny.reason == "1 query, below min_size 30"


def test_the_whole_query_set_is_gated_down_to_where_a_concentrated_drop_can_fail() -> None:
    # 17 queries: a drop carried by 5 of them (30%) gives p = 2^-5 <= 0.05; 16 queries: 4
    # of them give 2^-4 > 0.05, and the gate refuses rather than pass such drops.
    base = baseline_scores(17)
    (c,) = run(base, base - 0.5 * base, Threshold(max_drop=0.02))
    assert c.gated
    assert c.reason == ""
    assert c.p_value == pytest.approx(1 / 10_001)  # no draw as extreme: the Monte Carlo floor
    assert c.verdict == "regressed"
    assert c.failed
    small = baseline_scores(16)
    with pytest.raises(GateError, match="a drop carried by 4 of its 16 queries cannot give"):
        run(small, small - 0.5 * small, Threshold(max_drop=0.02))


def test_an_empty_slice_has_no_test() -> None:
    base = baseline_scores()
    empty = np.array([], dtype=np.int64)
    _, c = run(base, base, Threshold(max_drop=0.02, floor=0.5), slices={"segment=none": empty})
    assert (c.n, c.baseline_mean, c.current_mean, c.delta) == (0, 0.0, 0.0, 0.0)
    assert (c.p_value, c.p_adjusted, c.detectable_drop, c.ci_low) == (None, None, None, None)
    assert (c.gated, c.reason, c.verdict, c.failed) == (False, "no queries", "pass", False)


def test_overall_checks_share_half_of_alpha_and_slices_the_rest() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.004, 0.05)
    slices = {"a": np.arange(0, 250), "b": np.arange(250, 500), "tiny": np.arange(5)}
    out = compare(
        {METRIC: base, "recall@10": base, "ap@10": base},
        {METRIC: cur, "recall@10": cur, "ap@10": cur},
        {"all": np.arange(500), **slices},
        {
            METRIC: Threshold(max_drop=0.02),
            "recall@10": Threshold(max_drop=0.05),
            "ap@10": Threshold(floor=0.1),
        },
        {},
        ComparisonSettings(),
    )
    family = [c for c in out if c.level is not None]
    assert [(c.metric, c.slice) for c in family] == [
        (METRIC, "all"),
        (METRIC, "a"),
        (METRIC, "b"),
        ("recall@10", "all"),
        ("recall@10", "a"),
        ("recall@10", "b"),
    ]
    assert [c.level for c in family] == pytest.approx([0.0125, 0.00625, 0.00625] * 2)
    raw = [c.p_value for c in family]
    weights = [c.level for c in family]
    expected = adjust_p_values(raw, "holm", weights)  # type: ignore[arg-type]
    assert [c.p_adjusted for c in family] == expected
    floor_only = next(c for c in out if c.metric == "ap@10" and c.slice == "all")
    assert floor_only.gated
    assert floor_only.level is None
    levels, dropped = family_levels(
        [("all", 500), ("a", 250)], ComparisonSettings(overall_share=0.8)
    )
    assert levels == pytest.approx({0: 0.04, 1: 0.01})
    assert dropped == {}
    assert family_levels([("all", 500)], ComparisonSettings(correction="none"))[0] == {0: 0.05}


def test_a_slice_too_small_for_its_level_leaves_the_family_with_a_reason() -> None:
    # 12 queries: the exact test's smallest p is 2^-12 = 0.00024, above 0.025 / 200.
    base = baseline_scores(3_000)
    slices = {f"s={i:03d}": np.arange(12 * i, 12 * i + 12) for i in range(199)}
    slices["big"] = np.arange(2_400, 3_000)
    out = run(base, base * 0.5, Threshold(max_drop=0.02), slices=slices, min_size=10)
    small = [c for c in out if c.slice.startswith("s=")]
    assert all(not c.gated and c.level is None for c in small)
    assert small[0].reason.startswith("12 queries cannot give p <= 0.00013")
    all_, big = out[0], next(c for c in out if c.slice == "big")
    assert all_.level == 0.025
    assert big.level == 0.025
    assert all_.failed
    assert big.failed


def test_the_smallest_resamples_and_a_family_of_100_still_fail_a_25pt_drop() -> None:
    base = baseline_scores(2_000)
    metrics = [f"m{i}" for i in range(4)]
    slices = {"all": np.arange(2_000)}
    slices.update({f"s={i:02d}": np.arange(80 * i, 80 * i + 80) for i in range(24)})
    out = compare(
        dict.fromkeys(metrics, base),
        dict.fromkeys(metrics, base - 0.25),
        slices,
        {m: Threshold(max_drop=0.02) for m in metrics},
        {},
        ComparisonSettings(resamples=1_000),
    )
    assert len(out) == 100
    assert all(c.gated and c.level is not None for c in out)
    assert min(c.level for c in out if c.level) < 1 / 1_001  # past the Monte Carlo resolution
    assert all(c.failed and c.verdict == "regressed" for c in out)
    # Past the Monte Carlo resolution the slices' p-values are bounds; the 2,000 queries of
    # the overall checks take the saddlepoint's, which has none.
    assert all(c.p_bound == (c.n < SADDLEPOINT_FROM) for c in out)


def test_the_smallest_gated_slice_with_an_exact_test_can_fail() -> None:
    # min_size 1: which slices are gated depends on the level; the smallest one that is gated
    # must fail a 25pt drop on every one of its queries.
    base = baseline_scores(300)
    slices = {f"n={n:02d}": np.arange(10 * n, 10 * n + n) for n in range(1, 20)}
    out = run(base, base - 0.25, Threshold(max_drop=0.02), slices=slices, min_size=1)
    gated = [c for c in out if c.slice != "all" and c.gated]
    smallest = min(gated, key=lambda c: c.n)
    assert smallest.p_value is not None
    assert smallest.level is not None
    assert smallest.p_value == 2.0**-smallest.n <= smallest.level
    assert all(c.failed for c in gated)
    ungated = [c for c in out if c.slice != "all" and not c.gated]
    assert ungated
    assert max(c.n for c in ungated) < smallest.n


def test_order_is_metrics_as_given_then_all_then_slices_by_name() -> None:
    base = baseline_scores(60)
    slices = {"z": np.arange(30), "all": np.arange(60), "a": np.arange(30, 60)}
    out = compare(
        {"b": base, "a": base, "c": base},
        {"b": base, "a": base, "c": base},
        slices,
        {"b": Threshold(), "a": Threshold()},
        {},
        ComparisonSettings(),
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


def test_each_check_reports_what_it_can_detect() -> None:
    base = baseline_scores()
    cur = shifted(base, 0.0, 0.2)
    _, c = run(base, cur, Threshold(max_drop=0.02), slices={"segment=rare": np.arange(40)})
    assert c.gated
    assert c.level == pytest.approx(0.025)
    sd = float(np.std(cur[:40] - base[:40], ddof=1))
    common = {"sd": sd, "level": 0.025, "max_drop": 0.02, "resamples": 10_000}
    assert c.detectable_drop == detectable_drop(n=40, **common)  # type: ignore[arg-type]
    assert c.queries_needed == queries_needed(**common)  # type: ignore[arg-type]
    assert c.detectable_drop is not None
    assert c.detectable_drop > 0.02
    assert c.queries_needed is not None
    assert c.queries_needed > 40
    (flat,) = run(base, base, Threshold(max_drop=0.02))
    assert (flat.detectable_drop, flat.queries_needed) == (None, None)  # no variation
    (free,) = run(base, cur, Threshold(floor=0.1))
    assert (free.detectable_drop, free.queries_needed) == (None, None)


def test_the_interval_is_the_test_s_and_none_below_four_queries() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.01, 0.1)
    all_, three = run(base, cur, Threshold(max_drop=0.02), slices={"s": np.arange(3)})
    assert (all_.ci_low, all_.ci_high) == interval(cur - base)
    assert (three.ci_low, three.ci_high) == (None, None)


def test_compare_is_deterministic_and_independent_of_evaluation_order() -> None:
    base = baseline_scores()
    cur = shifted(base, -0.01, 0.1)
    slices = {"all": np.arange(500), "a": np.arange(100), "b": np.arange(100, 400)}
    thresholds = {METRIC: Threshold(max_drop=0.02), "rr@10": Threshold(max_drop=0.01)}
    scores_b = {METRIC: base, "rr@10": base[::-1].copy()}
    scores_c = {METRIC: cur, "rr@10": cur[::-1].copy()}
    first = compare(scores_b, scores_c, slices, thresholds, {}, ComparisonSettings())
    second = compare(scores_b, scores_c, slices, thresholds, {}, ComparisonSettings())
    assert repr(first) == repr(second)
    reordered = compare(
        scores_b,
        scores_c,
        dict(reversed(slices.items())),
        dict(reversed(thresholds.items())),
        {},
        ComparisonSettings(),
    )
    key = lambda c: (c.metric, c.slice)  # noqa: E731
    for a, b in zip(sorted(reordered, key=key), sorted(first, key=key), strict=True):
        assert (a.verdict, a.level, a.p_bound) == (b.verdict, b.level, b.p_bound)
        assert a.p_value == pytest.approx(b.p_value, rel=1e-9)
    other_seed = compare(scores_b, scores_c, slices, thresholds, {}, ComparisonSettings(seed=1))
    assert [c.p_value for c in other_seed] != [c.p_value for c in first]


def test_no_change_rarely_fails_the_whole_family() -> None:
    # 3 gated metrics x (all + 4 slices): the family-wise false alarm stays at most alpha.
    rng = np.random.default_rng(41)
    slices = {"all": np.arange(400)}
    slices.update({f"s={i}": np.arange(100 * i, 100 * i + 100) for i in range(4)})
    thresholds = {m: Threshold(max_drop=0.0) for m in ("a", "b", "c")}
    trials, failed = 300, 0
    for _ in range(trials):
        base = {m: rng.random(400) for m in thresholds}
        cur = {m: base[m] + rng.normal(0, 0.1, 400) * (rng.random(400) < 0.6) for m in base}
        out = compare(base, cur, slices, thresholds, {}, ComparisonSettings(resamples=2_000))
        failed += any(c.failed for c in out)
    assert failed / trials <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / trials)


def test_inputs_that_cannot_be_compared_are_errors() -> None:
    base = baseline_scores(50)
    everything = {"all": np.arange(50)}
    ok = {METRIC: Threshold()}
    with pytest.raises(GateError, match="same queries"):
        compare({METRIC: base}, {METRIC: base[:40]}, everything, ok, {}, ComparisonSettings())
    with pytest.raises(GateError, match="current has no scores for metric ndcg@10"):
        compare({METRIC: base}, {"rr@10": base}, everything, ok, {}, ComparisonSettings())
    with pytest.raises(GateError, match='include "all"'):
        compare({METRIC: base}, {METRIC: base}, {"a": np.arange(5)}, ok, {}, ComparisonSettings())
    with pytest.raises(GateError, match="within"):
        compare(
            {METRIC: base}, {METRIC: base}, {"all": np.arange(51)}, ok, {}, ComparisonSettings()
        )
    bad = base.copy()
    bad[3] = np.nan
    with pytest.raises(GateError, match="NaN"):
        compare({METRIC: base}, {METRIC: bad}, everything, ok, {}, ComparisonSettings())
    override = {"all": {"rr@10": Threshold()}}
    with pytest.raises(GateError, match="metric rr@10, which has no threshold"):
        compare({METRIC: base}, {METRIC: base}, everything, ok, override, ComparisonSettings())
    with pytest.raises(GateError, match="alpha"):
        ComparisonSettings(alpha=1.5)
    with pytest.raises(GateError, match="on_inconclusive"):
        ComparisonSettings(on_inconclusive="maybe")  # type: ignore[arg-type]
    with pytest.raises(GateError, match="overall_share"):
        ComparisonSettings(overall_share=1.0)
    with pytest.raises(GateError, match="max_drop"):
        Threshold(max_drop=-0.01)


def test_a_set_too_small_to_ever_fail_is_refused_unless_significance_is_off() -> None:
    # 5 queries: the exact test's smallest p, 2^-5 = 0.031, is above 0.05 / 2 metrics.
    base = baseline_scores(5)
    scores = {METRIC: base, "rr@10": base}
    thresholds = {METRIC: Threshold(max_drop=0.02), "rr@10": Threshold(max_drop=0.02)}
    worse = {METRIC: base - 0.3, "rr@10": base}
    everything = {"all": np.arange(5)}
    with pytest.raises(GateError, match=r"could never fail: ndcg@10 overall: 5 queries cannot"):
        compare(scores, worse, everything, thresholds, {}, ComparisonSettings())
    out = compare(
        scores, worse, everything, thresholds, {}, ComparisonSettings(require_significance=False)
    )
    assert [(c.gated, c.verdict, c.failed) for c in out] == [
        (True, "regressed", True),
        (True, "pass", False),
    ]


# --------------------------------------------------------------------------------------------
# Repeated runs: run-wide noise
# --------------------------------------------------------------------------------------------


def repeated_runs(base: FloatArray, shifts: list[float], seed: int) -> list[FloatArray]:
    """Runs of one retriever: a run-wide shift shared by every query, plus per-query noise."""
    rng = np.random.default_rng(seed)
    return [np.clip(base + shift + rng.normal(0.0, 0.02, base.size), 0, 1) for shift in shifts]


def noisy(
    reference: list[FloatArray], current: list[FloatArray], threshold: Threshold, **options: object
) -> Comparison:
    means = [np.mean(side, axis=0) for side in (reference, current)]
    return compare(
        {METRIC: means[0]},
        {METRIC: means[1]},
        {"all": np.arange(means[0].size)},
        {METRIC: threshold},
        {},
        ComparisonSettings(**options),  # type: ignore[arg-type]
        runs=([{METRIC: r} for r in reference], [{METRIC: r} for r in current]),
    )[0]


def test_identical_runs_change_nothing() -> None:
    base = baseline_scores(200)
    cur = shifted(base, -0.03, 0.1)
    plain = run(base, cur, Threshold(max_drop=0.02))[0]
    repeated = noisy([base] * 3, [cur] * 3, Threshold(max_drop=0.02))
    assert repeated.run_sd is None
    assert plain.p_value == repeated.p_value
    assert (plain.ci_low, plain.ci_high) == (repeated.ci_low, repeated.ci_high)
    assert plain.detectable_drop == repeated.detectable_drop


def test_a_run_wide_shift_makes_an_unchanged_retriever_fail_without_repeats_only() -> None:
    base = baseline_scores(300)
    # The first runs of each side happen to sit 3.4 points apart; the means of three, 1.2.
    reference = repeated_runs(base, [0.012, -0.01, 0.004], seed=5)
    current = repeated_runs(base, [-0.022, 0.006, -0.014], seed=6)
    threshold = Threshold(max_drop=0.02)
    single = run(reference[0], current[0], threshold)[0]
    assert single.verdict == "regressed"
    three = noisy(reference, current, threshold)
    assert three.run_sd is not None
    assert three.run_sd > 0.005
    assert not three.failed
    assert three.p_value > single.p_value
    assert three.ci_high - three.ci_low > single.ci_high - single.ci_low
    assert three.detectable_drop > single.detectable_drop


def test_a_real_drop_still_regresses_through_run_noise() -> None:
    base = baseline_scores(500)
    reference = repeated_runs(base, [0.004, -0.003, 0.0], seed=7)
    current = repeated_runs(base, [-0.062, -0.058, -0.06], seed=8)
    for test in ("randomization", "t"):
        found = noisy(reference, current, Threshold(max_drop=0.02), test=test)
        assert found.verdict == "regressed", test


def test_one_repeated_side_lends_its_noise_to_the_other() -> None:
    base = baseline_scores(200)
    current = repeated_runs(base, [0.01, -0.01, 0.0, 0.02], seed=9)
    found = noisy([base], current, Threshold(max_drop=0.02))
    spreads = [float(r.mean()) for r in current]
    assert found.run_sd == pytest.approx(float(np.std(spreads, ddof=1)), rel=1e-12)


def test_runs_that_score_other_queries_are_refused() -> None:
    base = baseline_scores(50)
    with pytest.raises(GateError, match="every current run must score the same 50 queries"):
        compare(
            {METRIC: base},
            {METRIC: base},
            {"all": np.arange(50)},
            {METRIC: Threshold(max_drop=0.02)},
            {},
            ComparisonSettings(),
            runs=([{METRIC: base}], [{METRIC: base}, {METRIC: base[:40]}]),
        )


@pytest.mark.parametrize(
    ("field", "refused", "accepted"),
    [
        ("alpha", (0.0, 1.0, -0.1), (1e-300, 0.999)),
        ("power", (0.0, 1.0), (0.01, 0.99)),
        ("overall_share", (0.0, 1.0), (0.01, 0.99)),
        ("resamples", (0, -5), (1,)),
        ("seed", (-1,), (0,)),
        ("min_size", (-1,), (0,)),
        ("correction", ("bonferroni",), ("holm", "bh", "none")),
        ("test", ("wilcoxon",), ("randomization", "t")),
        ("rule", ("no-drop",), ("significant-drop", "evidence-of-excess", "non-inferiority")),
    ],
)
def test_each_gate_setting_is_refused_just_outside_its_range(
    field: str, refused: tuple[Any, ...], accepted: tuple[Any, ...]
) -> None:
    for value in refused:
        with pytest.raises(GateError, match=f"gate settings: {field} must be"):
            ComparisonSettings(**{field: value})
    for value in accepted:
        assert getattr(ComparisonSettings(**{field: value}), field) == value


def test_every_bad_gate_setting_is_named_at_once() -> None:
    with pytest.raises(GateError) as raised:
        ComparisonSettings(alpha=2.0, seed=-1)
    assert str(raised.value) == (
        "gate settings: alpha must be within (0, 1), got 2.0; seed must be 0 or more, got -1"
    )


@pytest.mark.parametrize("max_drop", [-1e-9, math.nan, math.inf])
def test_a_max_drop_below_0_or_not_finite_is_refused(max_drop: float) -> None:
    with pytest.raises(GateError, match=r"threshold: max_drop must be 0 or more, got"):
        Threshold(max_drop=max_drop)


@pytest.mark.parametrize("floor", [math.nan, math.inf, -math.inf])
def test_a_floor_that_is_not_finite_is_refused(floor: float) -> None:
    with pytest.raises(GateError, match=r"threshold: min must be a finite number, got"):
        Threshold(floor=floor)


def test_a_max_drop_of_0_and_any_finite_floor_are_taken() -> None:
    taken = Threshold(max_drop=0.0, floor=-2.5)
    assert (taken.max_drop, taken.floor, taken.report_only) == (0.0, -2.5, False)
    assert Threshold(floor=0.4).report_only is False
    assert Threshold().report_only is True


def test_a_rise_is_shown_at_the_check_s_share_of_alpha_not_at_alpha() -> None:
    # 5 of 60 queries up by 0.4: +0.033, past max_drop, with p_rise = 2^-5 = 0.031. Alone the
    # check is tested at 0.05 and improved; beside a second metric, at its half, 0.025: pass.
    n = 60
    base = np.full(n, 0.5)
    up = base.copy()
    up[:5] = 0.9
    t = Threshold(max_drop=0.02)
    (alone,) = compare(
        {"a": base}, {"a": up}, {"all": np.arange(n)}, {"a": t}, {}, ComparisonSettings()
    )
    assert (alone.level, alone.verdict) == (0.05, "improved")
    a, b = compare(
        {"a": base, "b": base},
        {"a": up, "b": base},
        {"all": np.arange(n)},
        {"a": t, "b": t},
        {},
        ComparisonSettings(),
    )
    assert (a.level, a.delta, a.verdict) == (0.025, pytest.approx(2.0 / 60), "pass")
    assert b.verdict == "pass"
