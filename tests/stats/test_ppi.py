"""PPI++ means: human-only at lam 0, unbiased and covering under biased judges, and narrower."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.stats.ppi import active_probabilities, ppi_mean, tuned_lambda, weighted_ppi_mean
from retrieval_gate.stats.significance import interval, paired_t


def _world(
    rng: np.random.Generator, *, n: int, big_n: int, noise: float, bias: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labelled values, the judge's on them, and the judge's on the unlabelled units: the
    judge sees the truth plus noise and a constant bias."""
    truth = rng.normal(0.2, 1.0, n + big_n)
    judged = truth + bias + rng.normal(0.0, noise, n + big_n)
    return truth[:n], judged[:n], judged[n:]


def test_lambda_zero_is_the_human_only_paired_t() -> None:
    rng = np.random.default_rng(1)
    y, f, u = _world(rng, n=40, big_n=300, noise=0.3, bias=0.5)
    found = ppi_mean(y, f, u, lam=0.0)
    assert found.estimate == pytest.approx(float(y.mean()), abs=1e-15)
    assert (found.p_drop, found.p_rise) == pytest.approx(paired_t(y), abs=1e-12)
    assert found.interval() == pytest.approx(interval(y, t_test=True), abs=1e-12)
    assert found.df == 39


def test_no_unlabelled_units_is_human_only() -> None:
    y = np.array([0.1, 0.4, -0.2, 0.3])
    found = ppi_mean(y, y + 1.0, np.array([]))
    assert found.lam == 0.0
    assert found.estimate == pytest.approx(float(y.mean()))


def test_unbiased_and_covering_under_a_biased_judge() -> None:
    rng = np.random.default_rng(7)
    estimates, covered = [], 0
    for _ in range(400):
        y, f, u = _world(rng, n=60, big_n=600, noise=0.5, bias=0.4)
        found = ppi_mean(y, f, u)
        estimates.append(found.estimate)
        low, high = found.interval()  # type: ignore[misc]
        covered += low <= 0.2 <= high
    # A judge 0.4 too high on every unit: the rectifier takes it all out.
    assert np.mean(estimates) == pytest.approx(0.2, abs=0.02)
    # 400 draws: a true 95% gives 0.92 or more with probability > 0.99.
    assert covered / 400 >= 0.92


def test_a_judge_only_mean_of_a_biased_judge_does_not_cover() -> None:
    # The contrast the rectifier exists for: the judge's mean alone is 0.4 off.
    rng = np.random.default_rng(8)
    y, f, u = _world(rng, n=60, big_n=600, noise=0.5, bias=0.4)
    low, high = interval(np.concatenate([f, u]), t_test=True)  # type: ignore[misc]
    assert not low <= 0.2 <= high
    low, high = ppi_mean(y, f, u).interval()  # type: ignore[misc]
    assert low <= 0.2 <= high


def test_a_perfect_judge_gives_a_far_narrower_interval() -> None:
    rng = np.random.default_rng(3)
    y, f, u = _world(rng, n=100, big_n=1900, noise=0.0, bias=0.0)
    human = ppi_mean(y, f, u, lam=0.0)
    assisted = ppi_mean(y, f, u)
    assert assisted.lam == pytest.approx(1.0 / (1.0 + 100 / 1900), rel=0.2)
    assert assisted.se < human.se / 3


def test_a_useless_judge_is_weighted_near_zero() -> None:
    rng = np.random.default_rng(4)
    y = rng.normal(size=200)
    f = rng.normal(size=200)
    u = rng.normal(size=2000)
    assert tuned_lambda(y, f, u) < 0.2
    assert ppi_mean(y, f, u).se <= ppi_mean(y, f, u, lam=0.0).se * 1.05


def test_tests_point_the_right_way() -> None:
    rng = np.random.default_rng(5)
    y, f, u = _world(rng, n=80, big_n=800, noise=0.2, bias=0.0)
    found = ppi_mean(y - 1.0, f - 1.0, u - 1.0)
    assert found.p_drop < 1e-6 < 0.5 < found.p_rise


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="one length"):
        ppi_mean(np.zeros(3), np.zeros(2), np.zeros(4))
    with pytest.raises(ValueError, match="at least one"):
        ppi_mean(np.zeros(0), np.zeros(0), np.zeros(4))
    for lam in (1.5, -0.5):
        with pytest.raises(ValueError, match="lam must be within"):
            ppi_mean(np.zeros(3), np.zeros(3), np.zeros(4), lam=lam)


def test_two_labelled_units_are_enough_for_an_interval_and_a_test() -> None:
    """The fewest units with a variance: at 2 the estimate has its tuned weight, Welch's
    degrees of freedom, an interval and p-values (scipy's t); at 1 it has none of them."""
    from scipy import stats

    y, f = np.array([0.2, 0.6]), np.array([0.25, 0.5])
    u = np.array([0.1, 0.4, 0.3, 0.7, 0.2])
    found = ppi_mean(y, f, u)
    # By hand: cov(y, f) = 0.05; var of f and u together = 0.245 / 6; n / N = 2 / 5.
    lam = 0.05 / ((1 + 2 / 5) * (0.245 / 6))
    assert found.lam == pytest.approx(lam, rel=1e-12)
    assert found.estimate == pytest.approx(float((y - lam * f).mean() + lam * u.mean()))
    labelled = float((y - lam * f).var(ddof=1)) / 2
    judge = lam**2 * float(u.var(ddof=1)) / 5
    assert found.se == pytest.approx(np.sqrt(labelled + judge), rel=1e-12)
    df = (labelled + judge) ** 2 / (labelled**2 / 1 + judge**2 / 4)
    assert found.df == pytest.approx(df, rel=1e-12)
    assert 1 < found.df < 5  # between the labelled part's 1 and both parts' 1 + 4
    t = found.estimate / found.se
    assert found.p_drop == pytest.approx(stats.t.sf(-t, df), rel=1e-9)
    assert found.p_rise == pytest.approx(stats.t.sf(t, df), rel=1e-9)
    half = stats.t.ppf(0.975, np.floor(df)) * found.se  # t_quantile rounds df down
    assert found.interval() == pytest.approx((found.estimate - half, found.estimate + half))
    one = ppi_mean(y[:1], f[:1], u)
    assert (one.lam, one.se, one.df, one.interval()) == (0.0, 0.0, 1.0, None)
    assert one.p_drop == one.p_rise == 1.0


def test_without_spread_the_tests_are_certain_and_a_constant_judge_weighs_nothing() -> None:
    f, u = np.full(3, 0.5), np.full(5, 0.5)  # binary fractions: no rounding in the variances
    for y, expected in ((-0.25, (0.0, 1.0)), (0.25, (1.0, 0.0)), (0.0, (1.0, 1.0))):
        found = ppi_mean(np.full(3, y), f, u)
        assert (found.lam, found.se, found.estimate) == (0.0, 0.0, y)
        assert (found.p_drop, found.p_rise) == expected
    assert tuned_lambda(np.array([0.1, 0.9, 0.5]), f, u) == 0.0


def test_human_only_degrees_of_freedom_are_n_minus_1_to_the_bit() -> None:
    """Welch's formula over the labelled part alone is n - 1 in exact arithmetic, not always
    in floats (51.99999999999999 here), and the interval's t quantile rounds df down."""
    rng = np.random.default_rng(32)
    y = rng.normal(0.1, 1.0, int(rng.integers(5, 60)))
    found = ppi_mean(y, y, np.array([]))
    assert found.df == y.size - 1 == 52
    assert found.interval() == pytest.approx(interval(y, t_test=True), abs=1e-12)


def _by_hand(y: np.ndarray, f: np.ndarray, u: np.ndarray, lam: float) -> tuple[float, ...]:
    """PPI++'s estimate, se and Welch df at a fixed weight, from the definitions."""
    n, big_n = y.size, u.size
    estimate = float((y - lam * f).mean() + lam * u.mean())
    labelled = float((y - lam * f).var(ddof=1)) / n
    judge = lam**2 * float(u.var(ddof=1)) / big_n
    df = (labelled + judge) ** 2 / (labelled**2 / (n - 1) + judge**2 / (big_n - 1))
    return estimate, float(np.sqrt(labelled + judge)), df


def test_two_unlabelled_units_are_enough_for_the_judge_part_and_the_weight() -> None:
    """Two judge-only units have a variance: they enter the se, Welch's df and the tuned
    weight; one does not, and leaves the human-only weight 0."""
    y, f = np.array([0.2, 0.6, 0.5]), np.array([0.25, 0.5, 0.6])
    u = np.array([0.1, 0.7])
    found = ppi_mean(y, f, u, lam=0.5)
    assert (found.estimate, found.se, found.df) == pytest.approx(_by_hand(y, f, u, 0.5))
    one = ppi_mean(y, f, u[:1], lam=0.5)  # one unit: no judge part, the labelled n - 1
    assert one.se == pytest.approx(float(np.sqrt((y - 0.5 * f).var(ddof=1) / 3)), rel=1e-12)
    assert one.df == 2.0
    # cov(y, f) = 0.065 / 2; var of f and u together: 0.248 / 4; n / N = 3 / 2.
    lam = (0.065 / 2) / ((1 + 3 / 2) * (0.248 / 4))
    assert tuned_lambda(y, f, u) == pytest.approx(lam, rel=1e-12)
    tuned = ppi_mean(y, f, u)
    assert tuned.lam == pytest.approx(lam, rel=1e-12)
    assert (tuned.estimate, tuned.se, tuned.df) == pytest.approx(_by_hand(y, f, u, lam))
    assert tuned_lambda(y, f, u[:1]) == 0.0


def test_a_judge_that_runs_against_the_labels_is_weighted_zero() -> None:
    """cov(Y, f) < 0 makes the unclipped weight negative; PPI++ clips it to 0, the human-only
    mean, rather than subtract a judge that points the wrong way."""
    y = np.array([0.1, 0.4, 0.8, 0.3])
    f = 1.0 - y
    u = np.array([0.2, 0.9, 0.5, 0.6, 0.4])
    assert float(np.cov(y, f)[0, 1]) < 0
    assert tuned_lambda(y, f, u) == 0.0
    found = ppi_mean(y, f, u)
    assert found.lam == 0.0
    assert found.estimate == pytest.approx(float(y.mean()), abs=1e-15)


def test_a_judge_that_overstates_the_labels_is_weighted_at_most_one() -> None:
    """f = y / 2: cov(Y, f) is var(Y) / 2 and var(f) var(Y) / 4, so the unclipped weight is
    near 2 / (1 + n / N) = 4 / 3 (var(f) pooled with u's copies is 9 / 11 of it: 1.63),
    clipped to 1, the plain PPI rectifier."""
    y = np.array([0.1, 0.4, 0.8, 0.3])
    f = y / 2
    u = np.concatenate([f, f])
    assert tuned_lambda(y, f, u) == 1.0
    found = ppi_mean(y, f, u)
    assert found.lam == 1.0
    assert found.estimate == pytest.approx(float((y - f).mean() + u.mean()), abs=1e-15)


def test_the_weighted_estimate_is_the_hand_computed_ipw_mean() -> None:
    # Two labelled units (pi 0.5 and 0.25) and two judge-only ones, lam fixed at 0.5:
    # z = lam f + (y - lam f) / pi on the labelled, lam f on the others.
    y, f, pi, u = (
        np.array([1.0, 0.0]),
        np.array([0.8, 0.4]),
        np.array([0.5, 0.25]),
        np.array([0.6, 0.2]),
    )
    z = [0.4 + (1.0 - 0.4) / 0.5, 0.2 + (0.0 - 0.2) / 0.25, 0.3, 0.1]  # 1.6, -0.6, 0.3, 0.1
    found = weighted_ppi_mean(y, f, pi, u, lam=0.5)
    mean = sum(z) / 4
    variance = sum((v - mean) ** 2 for v in z) / 3 / 4
    assert found.estimate == pytest.approx(0.35, abs=1e-15) == pytest.approx(mean)
    assert found.se == pytest.approx(variance**0.5, abs=1e-15)
    assert (found.n, found.unlabelled, found.df, found.lam) == (2, 2, 1.0, 0.5)


def test_the_weighted_lambda_minimises_the_variance_of_z() -> None:
    rng = np.random.default_rng(3)
    y, f, u = _world(rng, n=60, big_n=400, noise=0.4, bias=0.3)
    pi = rng.uniform(0.05, 0.3, 60)
    tuned = weighted_ppi_mean(y, f, pi, u)
    assert 0.0 < tuned.lam < 1.0
    a = np.concatenate([y / pi, np.zeros(400)])
    b = np.concatenate([f * (1 - 1 / pi), u])
    by_hand = -np.cov(a, b)[0, 1] / b.var(ddof=1)
    assert tuned.lam == pytest.approx(by_hand, abs=1e-12)
    for lam in (tuned.lam - 0.05, tuned.lam + 0.05):
        assert weighted_ppi_mean(y, f, pi, u, lam=lam).se > tuned.se


def test_equal_probabilities_are_ppi_over_the_whole_population() -> None:
    rng = np.random.default_rng(4)
    y, f, u = _world(rng, n=50, big_n=450, noise=0.3, bias=0.5)
    found = weighted_ppi_mean(y, f, np.full(50, 0.1), u, lam=0.7)
    whole = 0.7 * np.concatenate([f, u]).mean() + (y - 0.7 * f).mean()
    assert found.estimate == pytest.approx(whole, abs=1e-12)
    horvitz_thompson = weighted_ppi_mean(y, f, np.full(50, 0.1), u, lam=0.0)
    assert horvitz_thompson.estimate == pytest.approx(y.sum() / 0.1 / 500, abs=1e-12)


def test_the_weighted_estimate_is_unbiased_under_a_draw_by_doubt() -> None:
    rng = np.random.default_rng(11)
    truth = rng.normal(0.0, 1.0, 2000)
    doubt = np.abs(rng.normal(0.0, 1.0, 2000))
    judged = truth + 0.4 + doubt * rng.normal(0.0, 1.0, 2000)  # wrong where it doubts
    pi, _, _ = active_probabilities(doubt, 150, 0.2)
    found, covered = [], 0
    for _ in range(400):
        drawn = rng.random(2000) < pi
        estimate = weighted_ppi_mean(truth[drawn], judged[drawn], pi[drawn], judged[~drawn])
        found.append(estimate.estimate)
        low, high = estimate.interval() or (0.0, 0.0)
        covered += low <= truth.mean() <= high
    assert abs(np.mean(found) - truth.mean()) < 3 * np.std(found) / 20  # 400 draws
    assert covered / 400 > 0.9


def test_active_probabilities_sum_to_the_expected_count_above_the_floor() -> None:
    doubt = np.array([0.0, 0.0, 1.0, 3.0, 8.0])
    pi, rate, weight = active_probabilities(doubt, 2.0, 0.2)
    mean = 12.0 / 5
    assert weight == pytest.approx([0.2, 0.2, 0.2 + 0.8 / mean, 0.2 + 2.4 / mean, 0.2 + 6.4 / mean])
    assert weight.mean() == pytest.approx(1.0)
    assert pi.sum() == pytest.approx(2.0, abs=1e-12)
    assert pi == pytest.approx(np.minimum(1.0, rate * weight), abs=1e-15)
    capped, _, _ = active_probabilities(doubt, 4.5, 0.2)
    assert capped[-1] == 1.0
    assert capped.sum() == pytest.approx(4.5, abs=1e-12)
    flat, _, _ = active_probabilities(np.zeros(4), 1.0, 0.2)
    assert flat == pytest.approx([0.25] * 4)


@pytest.mark.parametrize(
    ("doubt", "expected", "floor"),
    [
        ([1.0, np.nan], 1, 0.2),
        ([1.0, -1.0], 1, 0.2),
        ([1.0, np.inf], 1, 0.2),
        ([], 1, 0.2),
        ([1.0], 0, 0.2),
        ([1.0], 1, 0.0),
    ],
)
def test_active_probabilities_refuse_what_is_not_a_doubt(
    doubt: list[float], expected: float, floor: float
) -> None:
    with pytest.raises(ValueError, match=r"doubt|floor|expected"):
        active_probabilities(np.array(doubt), expected, floor)


def test_the_weighted_estimate_refuses_a_probability_outside_zero_one() -> None:
    for pi in (0.0, 1.5, np.nan):
        with pytest.raises(ValueError, match="inclusion probabilities"):
            weighted_ppi_mean(np.ones(2), np.ones(2), np.array([0.5, pi]), np.ones(3))


def test_the_weighted_lambda_by_hand_on_six_units() -> None:
    # y = 1, 0, 0 labelled at pi 0.5; f = 0.2, 0.4, 0.4; the judge alone 0.8, 0.2, 0.4.
    # a = y / pi: 2, 0, 0, 0, 0, 0 (mean 1/3); b = f (1 - 1 / pi), u: -0.2, -0.4, -0.4, 0.8,
    # 0.2, 0.4 (mean 1/15). cov(a, b) = -8/75 and var(b) = 88/375, so lam = 5/11.
    y, f, u = np.array([1.0, 0.0, 0.0]), np.array([0.2, 0.4, 0.4]), np.array([0.8, 0.2, 0.4])
    found = weighted_ppi_mean(y, f, np.full(3, 0.5), u)
    assert found.lam == pytest.approx(5 / 11, rel=1e-12)
    z = 2 * np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]) + 5 / 11 * np.array(
        [-0.2, -0.4, -0.4, 0.8, 0.2, 0.4]
    )
    assert found.estimate == pytest.approx(z.mean(), rel=1e-12)
    assert found.se == pytest.approx(np.sqrt(z.var(ddof=1) / 6), rel=1e-12)
    assert (found.n, found.df) == (3, 2.0)  # n - 1
    # Every unit labelled for sure and no judge-only unit: b is all 0, no weight to tune,
    # and the estimate is the plain mean.
    certain = weighted_ppi_mean(y, f, np.ones(3), np.array([]))
    assert (certain.lam, certain.estimate) == (0.0, pytest.approx(1 / 3, rel=1e-15))


def test_the_weighted_estimate_of_one_labelled_unit_has_no_tuned_weight() -> None:
    # One labelled unit (pi 0.25) and one judge-only: z = 0.4 / 0.25 = 1.6 and 0 at lam 0;
    # two values have a variance, (1.6 - 0.8)^2 * 2 / 1 over 2 units.
    found = weighted_ppi_mean(np.array([0.4]), np.array([0.9]), np.array([0.25]), np.array([0.7]))
    assert (found.lam, found.n, found.df) == (0.0, 1, 1.0)
    assert found.estimate == pytest.approx(0.8, rel=1e-15)
    assert found.se == pytest.approx(np.sqrt(1.28 / 2), rel=1e-15)
    alone = weighted_ppi_mean(np.array([0.4]), np.array([0.9]), np.array([0.25]), np.array([]))
    assert (alone.estimate, alone.se) == (pytest.approx(1.6, rel=1e-15), 0.0)
    assert alone.interval() is None


def test_the_weighted_estimate_takes_lam_and_pi_up_to_one_and_no_further() -> None:
    y, f, u = np.array([1.0, 0.0]), np.array([0.8, 0.4]), np.array([0.6, 0.2])
    full = weighted_ppi_mean(y, f, np.array([1.0, 0.5]), u, lam=1.0)
    # z = f + (y - f) / pi: 1.0, 0.4 - 0.8 = -0.4, then 0.6, 0.2.
    assert full.estimate == pytest.approx((1.0 - 0.4 + 0.6 + 0.2) / 4, rel=1e-12)
    for lam in (1.5, -0.5):
        with pytest.raises(ValueError, match="lam must be within"):
            weighted_ppi_mean(y, f, np.array([0.5, 0.5]), u, lam=lam)
    with pytest.raises(ValueError, match="at least one labelled unit"):
        weighted_ppi_mean(np.zeros(0), np.zeros(0), np.zeros(0), u)
    with pytest.raises(ValueError, match="one length"):
        weighted_ppi_mean(y, f, np.array([0.5]), u)


def test_active_probabilities_at_the_edges_of_floor_and_expected() -> None:
    doubt = np.array([0.0, 0.5, 1.0])  # mean 0.5: weights 0.2, 1.0, 1.8 at floor 0.2
    pi, rate, weight = active_probabilities(doubt, 1.0, 0.2)
    assert weight == pytest.approx([0.2, 1.0, 1.8], rel=1e-15)
    assert rate == pytest.approx(1 / 3, rel=1e-15)
    assert pi == pytest.approx([0.2 / 3, 1 / 3, 0.6], rel=1e-15)
    # A floor of 1 is the uniform draw, whatever the doubt.
    uniform, _, ones = active_probabilities(doubt, 1.0, 1.0)
    assert np.array_equal(ones, np.ones(3))
    assert uniform == pytest.approx([1 / 3] * 3, rel=1e-15)
    # More expected than there are candidates: every one is drawn (to the float's last bit:
    # the rate reached is the first whose probabilities sum to 3 in floats).
    assert active_probabilities(doubt, 10.0, 0.2)[0] == pytest.approx([1.0] * 3, abs=1e-15)
    # Equal weights whose rate is a binary fraction: the bisection lands on it exactly.
    flat, rate, _ = active_probabilities(np.zeros(4), 1.0, 0.2)
    assert rate == 0.25
    assert np.array_equal(flat, np.full(4, 0.25))
    for floor in (1.5, -0.1):
        with pytest.raises(ValueError, match="floor must be within"):
            active_probabilities(doubt, 1.0, floor)
    with pytest.raises(ValueError, match="one finite value"):
        active_probabilities(np.ones((2, 2)), 1.0, 0.2)
