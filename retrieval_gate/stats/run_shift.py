"""The bar a check's test sets under run-to-run noise, over what repeated runs estimate of it."""

from __future__ import annotations

import functools
import math

import numpy as np

from retrieval_gate.core.ids import BoolArray, FloatArray
from retrieval_gate.stats.normal_tail import normal_tails
from retrieval_gate.stats.significance import normal_quantile, t_cdf, t_quantile

_NODES = 64
"""Quadrature nodes of the inner integral (over the normal or over Student's t)."""
_ESTIMATES = 200
"""Nodes of B_hat / B's distribution, chi2_df / df."""
_NEGLIGIBLE = 1e-15
_TINY = 1e-300
"""Where a tail too small for its log to matter is floored."""
_HERMITE = np.polynomial.hermite_e.hermegauss(_NODES)


@functools.lru_cache(maxsize=64)
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
    nodes, kept_weights = np.exp(y[kept]), weights[kept] / weights[kept].sum()
    # Read-only: the cache hands the same arrays to every caller.
    nodes.setflags(write=False)
    kept_weights.setflags(write=False)
    return nodes, kept_weights


def _row_sums(terms: FloatArray) -> FloatArray:
    """Each row's sum, to the same bits whichever rows are beside it (a matrix product's
    blocking is not: a node's tail must not move with the nodes still being solved)."""
    return np.asarray(terms.sum(axis=1), dtype=np.float64)


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
        tail[wide] = _row_sums((1.0 - t_cdf(arg, df)) * w)
    narrow = ~wide
    if narrow.any():
        # T = Z' / sqrt(v), v ~ chi2_df / df: given v the sum is normal, and its tail is
        # smooth in log v, where the t's far tail (which a narrow shift reaches) lies.
        v, w = estimate_weights(df)
        total = np.sqrt(sd[narrow][:, None] ** 2 + shift[narrow][:, None] ** 2 / v)
        tail[narrow] = _row_sums(normal_tails(x[narrow][:, None] / total) * w)
    return tail


def bars_exist(n: int, level: float, *, t_test: bool) -> bool:
    """Whether some drop passes `shifted_bars`'s bar at `level` over `n` queries: the sign
    flips' spread of the mean grows with the drop as drop / sqrt(n), so their tail never
    falls below P(Z >= sqrt(n)), and at a level at or below that no drop is rejected.
    Student's bar is finite at any level."""
    return t_test or n > normal_quantile(1.0 - level) ** 2


@functools.lru_cache(maxsize=256)
def shifted_bars(
    sd: float, n: int, run_variance: float, run_df: int, level: float, t_test: bool
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean drops past which the one-sided test at `level` rejects, one for each node of
    B_hat / B (`estimate_weights`), and their weights: what a check's test demands when the
    per-query differences have sd `sd` over `n` (2 or more) queries and run-wide noise adds
    `run_variance` to the mean's variance, estimated with `run_df` degrees of freedom.

    The sign-flip test (`significance.noisy_sign_flip`) rejects a mean drop x when
    P(s_x Z + sqrt(V_hat) T >= x) <= level, with s_x^2 = ((n - 1) sd^2 + n x^2) / n^2 the
    sign flips' variance of the mean (the sum of squares the differences hold) and T
    Student's t with run_df degrees of freedom; the t-test (`_paired_t`) when x passes
    t(level, floor(df)) sqrt(sd^2 / n + V_hat), df Welch-Satterthwaite's. A ValueError when
    no drop is rejected (`bars_exist`): the bracket would double without end."""
    if not bars_exist(n, level, t_test=t_test):
        raise ValueError(f"no drop over {n} queries is rejected at {level:g}: no bar")
    u, weights = estimate_weights(run_df)
    estimated = run_variance * u
    if t_test:
        within = sd * sd / n
        df = (within + estimated) ** 2 / (within**2 / (n - 1) + estimated**2 / run_df)
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

    # The tail of each part at level / 2 bounds the sum's: the bar lies below their sum
    # (Student's quantile is past the normal's, so it serves both), unless the sign flips'
    # spread grows with the drop enough (a few queries) to need the doubling below.
    reach = t_quantile(1.0 - level / 2.0, run_df)
    high = reach * (spread(np.zeros_like(shift)) + shift)
    while bool(np.any(beyond := tail(high) > level)):
        high = np.where(beyond, 2.0 * high, high)

    # The Illinois variant of regula falsi on the log of the tail, every node at once: the
    # log tail is near quadratic where the tail itself falls off exponentially, so it
    # converges in a dozen steps where bisection takes forty. A node whose bracket has
    # closed is not evaluated again.
    def gap(x: FloatArray, shift: FloatArray) -> tuple[BoolArray, FloatArray]:
        at = shifted_tail(x, spread(x), shift, run_df)
        return at <= level, np.log(np.maximum(at, _TINY)) - log_level

    log_level = math.log(level)
    low = np.zeros_like(high)
    above, below = gap(low, shift)[1], gap(high, shift)[1]
    side = np.zeros(high.shape, dtype=np.int64)
    open_ = np.arange(high.size)
    for _ in range(100):
        lo, hi, ab, be = low[open_], high[open_], above[open_], below[open_]
        # Kept inside the bracket by a tenth of the tolerance: where the line lands on an end
        # (a tail an ulp past the level has a log gap of 0), one such step closes it.
        margin = 1e-13 * hi
        middle = np.clip((lo * be - hi * ab) / (be - ab), lo + margin, hi - margin)
        # Which side is decided by the tail itself: its log rounds a tail an ulp past the
        # level onto the level.
        rejects, found = gap(middle, shift[open_])
        hi, be = np.where(rejects, middle, hi), np.where(rejects, np.minimum(found, 0.0), be)
        lo, ab = np.where(rejects, lo, middle), np.where(rejects, ab, np.maximum(found, 0.0))
        ab = np.where(rejects & (side[open_] > 0), ab / 2.0, ab)
        be = np.where(~rejects & (side[open_] < 0), be / 2.0, be)
        low[open_], high[open_], above[open_], below[open_] = lo, hi, ab, be
        side[open_] = np.where(rejects, 1, -1)
        done = (hi - lo <= 1e-12 * hi) | (rejects & (found >= -1e-15))
        open_ = open_[~done]
        if open_.size == 0:
            break
    return tuple(high.tolist()), tuple(weights.tolist())
