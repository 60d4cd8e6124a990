"""The run-wide shift's quadratures against scipy's adaptive integration and root finding."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from retrieval_gate.stats import run_shift
from retrieval_gate.stats.run_shift import (
    bars_exist,
    estimate_weights,
    shifted_bars,
    shifted_tail,
)

STUDENT = stats.t
CHI_SQUARE = stats.chi2


def convolved_tail(x: float, sd: float, shift: float, df: int) -> float:
    """P(sd Z + shift T >= x) by adaptive quadrature of the normal's tail over t's density,
    in theta (t = sqrt(df) tan(theta)) to keep the range finite."""
    root = math.sqrt(df)
    # Student's density by its formula and the normal's tail by math.erfc: scipy's frozen
    # distributions cost about 100 us a call, and quad makes thousands of them here.
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def integrand(theta: float) -> float:
        t = root * math.tan(theta)
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        tail = 0.5 * math.erfc((x - shift * t) / sd / math.sqrt(2.0))
        return tail * density * root / math.cos(theta) ** 2

    # Split where the normal's tail steps (t = x / shift): a narrow shift puts the step far
    # out in t's tail, where an unsplit quadrature never samples it.
    step = math.atan(x / shift / root)
    edges = sorted({-math.pi / 2, min(step, 0.0), max(step, 0.0), math.pi / 2})
    with warnings.catch_warnings():
        # Its own accuracy warnings: the comparison's tolerance is the judge.
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return sum(
            integrate.quad(integrand, low, high, epsabs=1e-15, epsrel=1e-11, limit=1000)[0]
            for low, high in itertools.pairwise(edges)
        )


@pytest.mark.parametrize("df", [1, 4, 40])
@pytest.mark.parametrize(
    ("sd", "shift"), [(1.0, 0.01), (1.0, 0.3), (1.0, 1.0), (1.0, 3.0), (0.01, 1.0)]
)
def test_the_convolution_tail_matches_adaptive_quadrature(df: int, sd: float, shift: float) -> None:
    for multiple in (0.0, 1.0, 2.5, 5.0):
        x = multiple * math.hypot(sd, shift)
        got = float(shifted_tail(np.asarray([x]), np.asarray([sd]), np.asarray([shift]), df)[0])
        assert got == pytest.approx(convolved_tail(x, sd, shift, df), rel=1e-7)


@pytest.mark.parametrize("df", [1, 2, 4, 9, 100])
def test_the_estimates_weigh_as_chi_square_over_its_df(df: int) -> None:
    u, weights = estimate_weights(df)
    assert weights.sum() == pytest.approx(1.0, rel=1e-12)
    # A node that weighs nothing is left out: each node costs the bars a root of its own.
    assert weights.min() > 1e-15
    assert float(u @ weights) == pytest.approx(1.0, rel=1e-9)  # B_hat is unbiased
    assert float((u - 1.0) ** 2 @ weights) == pytest.approx(2.0 / df, rel=1e-8)
    # And a smooth function's mean, not only moments: E exp(-u) = (1 + 2 / df)^(-df / 2).
    assert float(np.exp(-u) @ weights) == pytest.approx((1 + 2 / df) ** (-df / 2), rel=1e-10)


@pytest.mark.parametrize("df", [1, 2, 4, 9, 100])
def test_less_than_1e_11_of_the_mass_lies_outside_the_nodes(df: int) -> None:
    # The moments above barely feel a tail cut too short: chi-square's own mass past the
    # last node (and below the first) is what the range promises.
    u, _ = estimate_weights(df)
    outside = CHI_SQUARE.sf(df * u[-1], df) + CHI_SQUARE.cdf(df * u[0], df)
    assert outside < 1e-11


@pytest.mark.parametrize(
    ("sd", "n", "run_variance", "run_df", "level"),
    [(0.2, 200, 2e-4, 4, 0.05), (0.1, 40, 1e-4, 1, 0.01)],
)
def test_each_bar_is_where_the_sign_flip_test_s_p_value_reaches_the_level(
    sd: float, n: int, run_variance: float, run_df: int, level: float
) -> None:
    bars, weights = shifted_bars(sd, n, run_variance, run_df, level, False)
    u, expected_weights = estimate_weights(run_df)
    assert weights == pytest.approx(tuple(expected_weights), rel=1e-15)
    # Three nodes across those that weigh (below, the shift is 1e-9 of the sd and more).
    heavy = np.flatnonzero(expected_weights > 1e-7)
    for i in heavy[np.linspace(0, heavy.size - 1, 3).astype(int)].tolist():
        shift = math.sqrt(run_variance * u[i])

        def p_value(x: float, shift: float = shift) -> float:
            spread = math.sqrt(((n - 1) * sd * sd + n * x * x) / n**2)
            return convolved_tail(x, spread, shift, run_df) - level

        root = optimize.brentq(p_value, 0.0, 100.0 * (sd + shift), xtol=1e-15, rtol=1e-13)
        assert bars[i] == pytest.approx(root, rel=1e-7)


def test_the_t_test_s_bars_are_student_s_at_welch_satterthwaite_s_df() -> None:
    sd, n, run_variance, run_df, level = 0.2, 60, 3e-4, 4, 0.05
    bars, _ = shifted_bars(sd, n, run_variance, run_df, level, True)
    u, _ = estimate_weights(run_df)
    within = sd * sd / n
    for i in (0, len(u) // 2, len(u) - 1):
        estimated = run_variance * u[i]
        df = (within + estimated) ** 2 / (within**2 / (n - 1) + estimated**2 / run_df)
        expected = STUDENT.isf(level, max(1, math.floor(df))) * math.sqrt(within + estimated)
        assert bars[i] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("sd", "n", "run_variance", "run_df", "level", "most"),
    [(0.2, 200, 2e-4, 4, 0.05, 15), (0.1, 40, 1e-4, 1, 0.01, 30), (0.3, 1000, 1e-6, 2, 1e-3, 30)],
)
def test_the_bars_take_fewer_steps_than_bisection(
    sd: float,
    n: int,
    run_variance: float,
    run_df: int,
    level: float,
    most: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Illinois' regula falsi converges superlinearly: fifteen tail evaluations (each over
    every node at once) where bisection to the same 1e-12 would take forty; a step that no
    longer halves the stale end, or halves the wrong one, falls back to regula falsi's
    linear crawl."""
    calls: list[int] = []
    tail = run_shift.shifted_tail

    def counted(*args: Any) -> Any:
        calls.append(1)
        return tail(*args)

    monkeypatch.setattr(run_shift, "shifted_tail", counted)
    bars, _ = run_shift.shifted_bars.__wrapped__(sd, n, run_variance, run_df, level, False)
    # Three evaluations bracket the root (the high end's check, then both ends' values).
    assert len(calls) - 3 <= most
    # And the bars are the roots, on the side where the test rejects: p at most the level.
    u, _ = estimate_weights(run_df)
    monkeypatch.setattr(run_shift, "shifted_tail", tail)
    x = np.asarray(bars)
    spread = np.sqrt(((n - 1) * sd * sd + n * x * x) / (n * n))
    at = shifted_tail(x, spread, np.sqrt(run_variance * u), run_df)
    assert np.all(at <= level)
    assert at == pytest.approx(np.full(x.size, level), rel=1e-7)


def test_the_root_finder_halves_whichever_end_is_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a tail concave at the root, regula falsi keeps replacing the low end: Illinois then
    halves the high end's value, as it halves the low end's on the convex tails above. The
    high end returned is the root, not a stale end left where a low end's tail happened to
    fall within 1e-15 of the level."""
    sd, n, run_variance, run_df, level = 0.2, 200, 2e-4, 4, 0.05
    calls: list[int] = []

    def concave(x: Any, spread: Any, shift: Any, df: int) -> Any:
        calls.append(1)
        return 2.0 - np.exp(x / np.hypot(shift, sd / math.sqrt(n)))

    monkeypatch.setattr(run_shift, "shifted_tail", concave)
    bars, _ = run_shift.shifted_bars.__wrapped__(sd, n, run_variance, run_df, level, False)
    u, _ = estimate_weights(run_df)
    roots = np.hypot(np.sqrt(run_variance * u), sd / math.sqrt(n)) * math.log(2.0 - level)
    assert np.asarray(bars) == pytest.approx(roots, rel=1e-12)
    # Fewer steps than bisection's forty, though the log of this tail is steep at the root.
    assert len(calls) - 3 <= 30


@pytest.mark.parametrize(
    ("sd", "n", "run_variance", "run_df", "level"),
    [(0.2, 50, 0.08, 4, 0.01), (0.2, 20, 0.018, 10, 0.01), (0.2, 20, 0.08, 1, 0.05)],
)
def test_the_first_bracket_already_holds_every_root(
    sd: float,
    n: int,
    run_variance: float,
    run_df: int,
    level: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each part's tail at level / 2 bounds the sum's at the sum of their quantiles: from 20
    queries on (where the sign flips' spread barely grows with the drop) the search starts from
    a high end where every node's test already rejects, with no doubling, even where the run
    noise is ten times the queries' (a bracket from each part at the level would not hold)."""
    evaluated: list[np.ndarray] = []
    tail = run_shift.shifted_tail

    def recorded(x: Any, spread: Any, shift: Any, df: int) -> Any:
        at = tail(x, spread, shift, df)
        evaluated.append(np.asarray(at))
        return at

    monkeypatch.setattr(run_shift, "shifted_tail", recorded)
    run_shift.shifted_bars.__wrapped__(sd, n, run_variance, run_df, level, False)
    # The high end's check, then the low end (x = 0, where every tail is a half).
    assert np.all(evaluated[0] <= level)
    assert np.all(evaluated[1] == pytest.approx(0.5, abs=1e-12))


def test_a_level_no_drop_reaches_has_no_bar_and_is_refused_not_doubled_forever() -> None:
    # The sign flips' tail never falls below P(Z >= sqrt(n)): at 9 queries, 1e-3 is past it
    # (z = 3.09 > 3), 0.01 is not (z = 2.33); Student's bar exists at any level.
    assert not bars_exist(9, 1e-3, t_test=False)
    assert bars_exist(9, 0.01, t_test=False)
    assert bars_exist(9, 1e-3, t_test=True)
    with pytest.raises(ValueError, match=r"no drop over 9 queries is rejected at 0\.001"):
        shifted_bars(0.1, 9, 0.001, 4, 1e-3, False)
    bars, _ = shifted_bars(0.1, 9, 0.001, 4, 1e-3, True)
    assert all(math.isfinite(bar) for bar in bars)
