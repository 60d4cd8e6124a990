"""The bar a check's test sets under run-to-run noise, over what repeated runs estimate of it."""

from __future__ import annotations

import functools
import math

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.stats.significance import normal_quantile, t_cdf, t_quantile

_NODES = 64
"""Quadrature nodes of the inner integral (over the normal or over Student's t)."""
_ESTIMATES = 200
"""Nodes of B_hat / B's distribution, chi2_df / df."""
_NEGLIGIBLE = 1e-15
_erfc = np.frompyfunc(math.erfc, 1, 1)
_HERMITE = np.polynomial.hermite_e.hermegauss(_NODES)


def estimate_weights(df: int) -> tuple[FloatArray, FloatArray]:
    """Nodes u and weights of the distribution of B_hat / B = chi2_df / df, the ratio of the
    run-to-run variance repeated runs estimate with `df` degrees of freedom to the true one
    (normal run means): the trapezoid rule in log u, whose integrand is smooth and decays at
    both ends (as u^(df/2) below, as exp(-df u / 2) above), over a range past which less than
    1e-11 of the mass lies (4e-12 at df 1, below 1e-12 from df 2)."""
    half = df / 2.0
    low = -60.0 / df - 1.0
    high = math.log(1.0 + 12.0 * math.sqrt(2.0 / df) + 30.0 / df)
    y = np.linspace(low, high, _ESTIMATES)
    log_density = half * math.log(half) - math.lgamma(half) + half * y - half * np.exp(y)
    weights = np.exp(log_density)
    weights /= weights.sum()  # the trapezoid's ends weigh < 1e-12: equal weights
    kept = weights > _NEGLIGIBLE
    return np.exp(y[kept]), weights[kept] / weights[kept].sum()


def normal_tails(x: FloatArray) -> FloatArray:
    """P(Z >= x) elementwise, to the last digit (math.erfc; numpy has no erfc)."""
    return np.asarray(0.5 * _erfc(x / math.sqrt(2.0)), dtype=np.float64)


def shifted_tail(x: FloatArray, sd: FloatArray, shift: FloatArray, df: int) -> FloatArray:
    """P(sd Z + shift T >= x), Z standard normal and T Student's t with `df` degrees of
    freedom, elementwise: the convolution integrated over whichever of the two is the wider
    (the other's distribution function is then smooth over its nodes): Gauss-Hermite over Z
    when shift > sd, Gauss-Legendre over T = sqrt(df) tan(theta) (whose density in theta is
    proportional to cos^(df - 1)) otherwise."""
    x, sd, shift = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, sd, shift)))
    tail = np.empty(x.shape)
    wide = shift > sd
    if wide.any():
        z, w = _HERMITE
        w = w / w.sum()
        arg = (x[wide][:, None] - sd[wide][:, None] * z) / shift[wide][:, None]
        tail[wide] = (1.0 - t_cdf(arg, df)) @ w
    narrow = ~wide
    if narrow.any():
        # T = Z' / sqrt(v), v ~ chi2_df / df: given v the sum is normal, and its tail is
        # smooth in log v, where the t's far tail (which a narrow shift reaches) lies.
        v, w = estimate_weights(df)
        total = np.sqrt(sd[narrow][:, None] ** 2 + shift[narrow][:, None] ** 2 / v)
        tail[narrow] = normal_tails(x[narrow][:, None] / total) @ w
    return tail


@functools.lru_cache(maxsize=256)
def shifted_bars(
    sd: float, n: int, run_variance: float, run_df: int, level: float, t_test: bool
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean drops past which the one-sided test at `level` rejects, one for each node of
    B_hat / B (`estimate_weights`), and their weights: what a check's test demands when the
    per-query differences have sd `sd` over `n` queries and run-wide noise adds `run_variance`
    to the mean's variance, estimated with `run_df` degrees of freedom.

    The sign-flip test (`significance.noisy_sign_flip`) rejects a mean drop x when
    P(s_x Z + sqrt(V_hat) T >= x) <= level, with s_x^2 = ((n - 1) sd^2 + n x^2) / n^2 the
    sign flips' variance of the mean (the sum of squares the differences hold) and T
    Student's t with run_df degrees of freedom; the t-test (`_paired_t`) when x passes
    t(level, floor(df)) sqrt(sd^2 / n + V_hat), df Welch-Satterthwaite's."""
    u, weights = estimate_weights(run_df)
    estimated = run_variance * u
    if t_test:
        within = sd * sd / n
        df = (within + estimated) ** 2 / (within**2 / max(n - 1, 1) + estimated**2 / run_df)
        whole = np.maximum(1, df.astype(np.int64))
        quantile = {int(k): t_quantile(1.0 - level, int(k)) for k in np.unique(whole)}
        critical = np.asarray([quantile[int(k)] for k in whole])
        bars = critical * np.sqrt(within + estimated)
        return tuple(bars.tolist()), tuple(weights.tolist())
    shift = np.sqrt(estimated)

    def spread(x: FloatArray) -> FloatArray:
        return np.sqrt(((n - 1) * sd * sd + n * x * x) / (n * n))

    def tail(x: FloatArray) -> FloatArray:
        return shifted_tail(x, spread(x), shift, run_df)

    # The tail of each part at level / 2 bounds the sum's: the bar lies below their sum.
    reach = max(normal_quantile(1.0 - level / 2.0), t_quantile(1.0 - level / 2.0, run_df))
    high = reach * (spread(np.zeros_like(shift)) + shift)
    while bool(np.any(beyond := tail(high) > level)):
        high = np.where(beyond, 2.0 * high, high)
    # The Illinois variant of regula falsi, every node at once: the tail is smooth, so it
    # converges in fifteen steps or so where bisection takes forty.
    low = np.zeros_like(high)
    above, below = tail(low) - level, tail(high) - level
    side = np.zeros(high.shape, dtype=np.int64)
    for _ in range(100):
        middle = np.clip((low * below - high * above) / (below - above), low, high)
        found = tail(middle) - level
        rejects = found <= 0
        high, below = np.where(rejects, middle, high), np.where(rejects, found, below)
        low, above = np.where(rejects, low, middle), np.where(rejects, above, found)
        above = np.where(rejects & (side > 0), above / 2.0, above)
        below = np.where(~rejects & (side < 0), below / 2.0, below)
        side = np.where(rejects, 1, -1)
        # A tail within 1e-15 of the level settles a node only where it is the returned high
        # end: at the low end the high one may still be far from the root.
        if bool(np.all((high - low <= 1e-12 * high) | (rejects & (np.abs(found) <= 1e-15)))):
            break
    return tuple(high.tolist()), tuple(weights.tolist())
