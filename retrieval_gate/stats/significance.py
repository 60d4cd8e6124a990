"""One-sided paired tests of a drop, the interval they invert, and weighted multiplicity control."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM, sign_flip_tails

Correction = Literal["holm", "bh", "none"]

CI_LEVEL = 0.95
STOP_EXCEEDANCES = 100
"""Sequential Monte Carlo (Besag and Clifford 1991) stops a tail once this many draws were at
least as extreme as the observed sum: its p-value is then known to about 10% and far above any
level a gate tests at, and a check that did not move costs a few hundred draws, not 10,000."""
# Randomization sums are compared with this tolerance, relative to sum(|diff|) (the scale of
# the float error of any signed sum): sums equal in exact arithmetic count as ties.
_TIE_TOLERANCE = 1e-10
# Sign matrices are built this many cells at a time, so memory stays bounded (~16 MB of
# float64) whatever the number of queries and resamples. It also sets the sizes in which random
# bytes are drawn (`_draw_sizes`): changing it changes every seeded Monte Carlo p-value.
_CHUNK_CELLS = 2_000_000
_FIRST_BLOCK = 128
# Random sign vectors are summed in blocks of at most this many packed bytes (4 MB): big
# blocks make each matrix product read the differences once per many sign vectors, and past a
# few MB they only raise the process's peak memory.
_BLOCK_BYTES = 4_000_000
# Sign bits are unpacked to float64 this many cells at a time (4 MB) for each matrix product.
_UNPACK_CELLS = 500_000
# A tail is not sampled when this bounds the chance that sampling would change its p-value.
_SKIP_RISK = 1e-6
_NORMAL = NormalDist()
_SCALE_PAST = 2.0**64
"""Differences larger than this are divided by a power of two near their size first: their
squares, and the saddlepoint's 8th powers, could overflow a float. A power of two changes no
bit of a p-value, nor of an interval once multiplied back."""


@dataclass(frozen=True, kw_only=True)
class OneSided:
    """Both one-sided p-values of a paired test, per column."""

    drop: FloatArray
    """P(a mean this low or lower | no change): the evidence of a drop."""
    rise: FloatArray
    """P(a mean this high or higher | no change)."""
    bound: np.ndarray[Any, np.dtype[np.bool_]]
    """Whether `drop` is an upper bound at the Monte Carlo resolution: no draw was as extreme
    (or none was drawn, the tail being far past it), so the exact p-value is below
    1 / (resamples + 1) (and below Hoeffding's bound)."""


def normal_quantile(p: float) -> float:
    """The standard normal quantile (statistics.NormalDist: scipy is slow to import)."""
    return _NORMAL.inv_cdf(p)


def normal_cdf(x: float) -> float:
    """The standard normal distribution function."""
    return _NORMAL.cdf(x)


def _as_columns(diffs: FloatArray | Sequence[float]) -> FloatArray:
    values = np.asarray(diffs, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError(f"expected differences as a vector or a matrix, got shape {values.shape}")
    return values


def _unit_scales(values: FloatArray) -> FloatArray:
    """Per column, the power of two at or above its largest |value| when that is past
    _SCALE_PAST, else 1."""
    largest = np.maximum(values.max(axis=0, initial=0.0), -values.min(axis=0, initial=0.0))
    return np.where(largest > _SCALE_PAST, np.ldexp(1.0, np.frexp(largest)[1]), 1.0)


def sign_flip(
    diffs: FloatArray | Sequence[float],
    *,
    resamples: int,
    rng: np.random.Generator,
    stop: int = STOP_EXCEEDANCES,
    run_sd: FloatArray | None = None,
    run_df: IntArray | None = None,
) -> OneSided:
    """One-sided paired sign-flip randomization tests of each column of `diffs` (queries x
    checks; a query outside a check's slice holds 0, which no sign changes).

    A column with m non-zero differences and 2^m <= resamples is tested exactly (every sign
    vector). The others share one stream of random sign vectors, drawn in blocks: a tail stops
    when `stop` draws were as extreme (p = stop / draws, Besag and Clifford's sequential
    p-value), else p = (1 + extreme) / (1 + resamples). When no draw is as extreme, p is
    min(1 / (1 + resamples), exp(-S^2 / (2 sum d^2))): Hoeffding's inequality bounds the exact
    sign-flip p-value, so a check whose evidence is past the Monte Carlo resolution can still
    fail. A tail with resamples * exp(-S^2 / (2 sum d^2)) below 1e-6 is not sampled at all: its
    p-value is that bound, which is what sampling gives unless one of the draws is as extreme,
    and that has probability below 1e-6 (each draw at most the bound: a union bound). The
    other tail of such a column stops within a few hundred draws. Every p-value is valid:
    P(p <= u) <= u when the differences are symmetric about 0.

    A column with `saddlepoint.SADDLEPOINT_FROM` (1,000) non-zero differences or more is not
    sampled: its p-values are the saddlepoint approximation of the same sign-flip
    distribution (`saddlepoint.sign_flip_tails`), closer to the exact ones than 10,000 draws
    resolve there (benchmarks/accuracy/bench_saddlepoint.py); past 1e-300 it is Hoeffding's bound.

    A column with `run_sd` > 0 (the sd of a run-wide shift of its sum, estimated from repeated
    runs with `run_df` degrees of freedom) is tested against the sign flips plus that shift:
    p = P(sum* + run_sd * T <= S), T Student's t with run_df degrees of freedom, averaged over
    the sign vectors (`noisy_sign_flip`).
    """
    values = _as_columns(diffs)
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    scale = _unit_scales(values)
    if bool(np.any(scale != 1.0)):  # the sign flips' p-values are the same in any unit
        values = np.asfortranarray(values / scale)
        run_sd = None if run_sd is None else np.asarray(run_sd, dtype=np.float64) / scale
    columns = values.shape[1]
    drop = np.ones(columns)
    rise = np.ones(columns)
    bound = np.zeros(columns, dtype=bool)
    noisy = np.zeros(columns, dtype=bool)
    if run_sd is not None:
        noisy = np.asarray(run_sd, dtype=np.float64) > 0
        if run_df is None or not bool(np.all(np.asarray(run_df)[noisy] >= 1)):
            raise ValueError("run_df must give 1 or more degrees of freedom per noisy column")
    if noisy.any():
        index = np.flatnonzero(noisy)
        found = noisy_sign_flip(
            values[:, index],
            np.asarray(run_sd, dtype=np.float64)[index],
            np.asarray(run_df, dtype=np.int64)[index],
            resamples=resamples,
            rng=copy.deepcopy(rng),  # the plain columns' stream stays as it would be
        )
        drop[index], rise[index] = found.drop, found.rise
    nonzero = np.count_nonzero(values, axis=0)
    total = values.sum(axis=0)
    tolerance = _TIE_TOLERANCE * np.abs(values).sum(axis=0)
    sampled = []
    large = []
    for c in range(columns):
        m = int(nonzero[c])
        if m == 0 or noisy[c]:
            continue
        if m < 63 and (1 << m) <= resamples:
            drop[c], rise[c] = _exact(values[:, c][values[:, c] != 0], float(tolerance[c]))
        elif m >= SADDLEPOINT_FROM:
            large.append(c)
        else:
            sampled.append(c)
    if large:
        index = np.asarray(large)
        drop[index], rise[index], bound[index] = sign_flip_tails(values[:, index])
    if sampled:
        index = np.asarray(sampled)
        # Each column contiguous (as indexing copies them anyway): the sums of squares behind
        # Hoeffding's p-values then keep their last bits, which reports print in full. Columns
        # given that way and all sampled are used as they are (compare's matrix is 20 MB at
        # 20,000 queries x 135 checks).
        whole = len(sampled) == columns and values.flags.f_contiguous
        columnwise = values if whole else np.asfortranarray(values[:, index])
        d, r, b = _monte_carlo(columnwise, total[index], tolerance[index], resamples, rng, stop)
        drop[index], rise[index], bound[index] = d, r, b
    return OneSided(drop=drop, rise=rise, bound=bound)


def _exact(values: FloatArray, tolerance: float) -> tuple[float, float]:
    m = int(values.size)
    count = 1 << m
    total = float(values.sum())
    rows = max(1, _CHUNK_CELLS // m)
    low = high = 0
    # Each sign vector is a bit vector b (1 = flipped): sum* = total - 2 * (b @ values).
    for start in range(0, count, rows):
        bits = _enumerated_bits(start, min(start + rows, count), m)
        sums = total - 2.0 * (bits @ values)
        low += int(np.count_nonzero(sums <= total + tolerance))
        high += int(np.count_nonzero(sums >= total - tolerance))
    return low / count, high / count


def _monte_carlo(
    values: FloatArray,
    total: FloatArray,
    tolerance: FloatArray,
    resamples: int,
    rng: np.random.Generator,
    stop: int,
) -> tuple[FloatArray, FloatArray, np.ndarray[Any, np.dtype[np.bool_]]]:
    n, columns = values.shape
    square = np.einsum("ij,ij->j", values, values)
    # Hoeffding: P(sum* <= S) <= exp(-S^2 / (2 sum d^2)) for S < 0, per tail (and the mirror).
    hoeffding = np.ones((2, columns))
    for tail, sign in ((0, -1.0), (1, 1.0)):
        directed = np.where(sign * total > 0, total, 0.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            hoeffding[tail] = np.exp(-(directed**2) / (2.0 * square))
    # A tail this far out is not sampled: its p-value is Hoeffding's bound, as when no draw is
    # as extreme, and a draw could only change that with probability <= resamples * bound.
    skipped = hoeffding * resamples < _SKIP_RISK
    # Per tail (0 = drop, 1 = rise): draws as extreme so far, and the draw that stopped it.
    extreme = np.zeros((2, columns), dtype=np.int64)
    stopped_at = np.zeros((2, columns), dtype=np.int64)
    drawn = 0
    sizes = _draw_sizes(resamples, n)
    target = _FIRST_BLOCK
    # Blocks of at most 4 MB of packed bits and 2,000,000 sums (but at least one call's rows).
    most = max(1, min(_BLOCK_BYTES // max((n + 7) // 8, 1), _CHUNK_CELLS // columns))
    active = np.arange(columns)
    subset = values  # the differences of the active columns
    live, dense = _live(subset)
    while drawn < resamples:
        open_tail = (stopped_at == 0) & ~skipped
        now = np.flatnonzero(open_tail.any(axis=0))
        if not now.size:
            break
        if now.size < active.size:  # columns only ever close: copy the fewer that stay open
            # compress copies columns several times faster than fancy indexing does.
            subset = subset.compress(np.isin(active, now), axis=1)
            active = now
            live, dense = _live(subset)
        # The stream is the same whichever columns are still open, so a column's p-value never
        # depends on the others. Its bytes are drawn in the call sizes of `_draw_sizes` (other
        # sizes give other bytes, and other seeded p-values), then summed in bigger blocks.
        calls = []
        size = 0
        while size < min(target, most) and drawn + size < resamples:
            calls.append(next(sizes))
            size += calls[-1]
        packed = np.empty((size, (n + 7) // 8), dtype=np.uint8)  # filled call by call: no copy
        at = 0
        for rows in calls:
            packed[at : at + rows] = rng.integers(
                0, 256, size=(rows, packed.shape[1]), dtype=np.uint8
            )
            at += rows
        flipped = _flipped_sums(packed, dense, live)  # sum* = total - 2 * flipped
        half = tolerance[active] / 2.0
        for tail, hits in enumerate((flipped >= -half, flipped <= half)):
            running = np.cumsum(hits, axis=0) + extreme[tail, active]
            reached = running[-1] >= stop
            first = np.argmax(running >= stop, axis=0)
            fresh = reached & open_tail[tail, active]
            stopped_at[tail, active[fresh]] = drawn + first[fresh] + 1
            keep = open_tail[tail, active]
            extreme[tail, active[keep]] = running[-1][keep]
        drawn += size
        target *= 2
    p = np.ones((2, columns))
    done = stopped_at > 0
    p[done] = stop / stopped_at[done]
    rest = ~done
    p[rest] = (1.0 + extreme[rest]) / (1.0 + drawn)
    at_limit = rest & (extreme == 0)
    p[at_limit] = np.minimum(p[at_limit], hoeffding[at_limit])
    return p[0], p[1], at_limit[0]


def _draw_sizes(resamples: int, n: int) -> Iterator[int]:
    """The rows of each call for random bytes: 128, doubling, at most 2,000,000 / n. Calls of
    other sizes give other bytes: these are the sizes the test has always used, so seeded
    p-values stay what they were."""
    cap = max(1, _CHUNK_CELLS // max(n, 1))
    block = _FIRST_BLOCK
    drawn = 0
    while drawn < resamples:
        size = min(block, cap, resamples - drawn)
        yield size
        drawn += size
        block *= 2


def _flipped_sums(
    packed: np.ndarray[Any, np.dtype[np.uint8]], values: FloatArray, rows: IntArray | None = None
) -> FloatArray:
    """bits @ values for sign vectors given as packed bits (rows of bytes, 8 queries each),
    `values` holding the queries `rows` (None: every query, in order), taken a slice of
    queries at a time so memory stays bounded."""
    size = packed.shape[0]
    n = values.shape[0]
    step = max(8, _UNPACK_CELLS // size // 8 * 8)
    out = np.zeros((size, values.shape[1]))
    for start in range(0, n, step):
        end = min(start + step, n)
        if rows is None:
            bits = np.unpackbits(packed[:, start // 8 : (end + 7) // 8], axis=1, count=end - start)
        else:  # each query's bit where unpackbits puts it: the high bit is the first query
            at = rows[start:end]
            bits = (packed[:, at >> 3] >> (7 - (at & 7)).astype(np.uint8)) & np.uint8(1)
        out += bits.astype(np.float64) @ values[start:end]
    return out


def _live(values: FloatArray) -> tuple[IntArray | None, FloatArray]:
    """The queries with a difference in any of the columns `values`, and their rows; (None,
    `values`) when most have one. A query without adds nothing to any flipped sum: a check of
    a small slice, or of a metric few queries moved, is summed over its own queries only."""
    rows = np.flatnonzero((values != 0).any(axis=1))
    if len(rows) * 2 > len(values):
        return None, values
    return rows, values[rows]


def noisy_sign_flip(
    diffs: FloatArray | Sequence[float],
    run_sd: FloatArray | Sequence[float],
    run_df: IntArray | Sequence[int],
    *,
    resamples: int,
    rng: np.random.Generator,
) -> OneSided:
    """One-sided tests of each column's sum S against the sign flips of its differences plus a
    run-wide shift: p_drop = P(sum* + run_sd * T <= S), T ~ Student's t with run_df degrees of
    freedom, p_rise the mirror.

    Repeated runs of one retriever differ by noise shared across queries (an index rebuilt,
    an endpoint changed), which the sign flips cannot see; its size is estimated from the
    runs' means, hence Student's t rather than a normal (exact when the shift dominates and is
    normal). The probability is averaged over every sign vector when 2^m <= resamples (m the
    non-zero differences), else over `resamples` random ones: the t distribution is
    integrated exactly, so p has no Monte Carlo floor and is never an upper bound.
    """
    values = _as_columns(diffs)
    sd = np.asarray(run_sd, dtype=np.float64)
    df = np.asarray(run_df, dtype=np.int64)
    n, columns = values.shape
    if sd.shape != (columns,) or df.shape != (columns,):
        raise ValueError("run_sd and run_df need one value per column")
    if not bool(np.all(sd > 0)) or not bool(np.all(df >= 1)):
        raise ValueError("run_sd must be positive and run_df 1 or more")
    drop = np.empty(columns)
    rise = np.empty(columns)
    nonzero = np.count_nonzero(values, axis=0)
    sampled = []
    for c in range(columns):
        m = int(nonzero[c])
        if m < 63 and (1 << m) <= resamples:
            kept = values[:, c][values[:, c] != 0]
            # S - sum* = 2 * (b @ d) for the bit vector b of the flipped signs.
            gap = 2.0 * (_enumerated_bits(0, 1 << m, m) @ kept)
            drop[c] = float(t_cdf(gap / sd[c], int(df[c])).mean())
            rise[c] = float(t_cdf(-gap / sd[c], int(df[c])).mean())
        else:
            sampled.append(c)
    if sampled:
        index = np.asarray(sampled)
        low = np.zeros(index.size)
        high = np.zeros(index.size)
        cap = max(1, _CHUNK_CELLS // max(n, 1))
        drawn = 0
        while drawn < resamples:
            size = min(cap, resamples - drawn)
            gap = 2.0 * (_random_bits(rng, size, n) @ values[:, index]) / sd[index]
            for j, c in enumerate(index.tolist()):
                low[j] += float(t_cdf(gap[:, j], int(df[c])).sum())
                high[j] += float(t_cdf(-gap[:, j], int(df[c])).sum())
            drawn += size
        drop[index] = low / drawn
        rise[index] = high / drawn
    return OneSided(
        drop=np.minimum(drop, 1.0), rise=np.minimum(rise, 1.0), bound=np.zeros(columns, dtype=bool)
    )


def _enumerated_bits(start: int, stop: int, m: int) -> FloatArray:
    """Sign vectors number start..stop-1 of all 2^m, as rows of bits (1 = flipped)."""
    codes = np.arange(start, stop, dtype=np.int64)
    return ((codes[:, None] >> np.arange(m, dtype=np.int64)) & 1).astype(np.float64)


def _random_bits(rng: np.random.Generator, size: int, n: int) -> FloatArray:
    """`size` random sign vectors over `n` queries, as rows of bits (1 = flipped). Random
    bytes unpacked to bits: 8x fewer draws than one integer per sign, and the same stream
    whichever columns are tested."""
    packed = rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8)
    return np.unpackbits(packed, axis=1, count=n).astype(np.float64)


def t_cdf(x: FloatArray | float, df: int) -> FloatArray:
    """Student's t distribution function for a whole number of degrees of freedom, in closed
    form (Abramowitz and Stegun 26.7.3-4): no scipy on the check path."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be 1 or more, got {df}")
    values = np.asarray(x, dtype=np.float64)
    theta = np.arctan(values / math.sqrt(df))
    cos2 = np.cos(theta) ** 2
    term = np.ones_like(values)
    total = np.ones_like(values)
    # Even df: sin(theta) (1 + 1/2 cos^2 + 1.3/(2.4) cos^4 + ...); odd: (2 / pi) (theta +
    # sin cos (1 + 2/3 cos^2 + 2.4/(3.5) cos^4 + ...)), to the power df - 2 of cos.
    for j in range(1 if df % 2 == 0 else 2, df - 1, 2):
        term = term * cos2 * (j / (j + 1))
        total = total + term
    if df % 2 == 0:
        share = np.sin(theta) * total
    elif df == 1:
        share = (2.0 / math.pi) * theta
    else:
        share = (2.0 / math.pi) * (theta + np.sin(theta) * np.cos(theta) * total)
    return np.clip(0.5 + 0.5 * share, 0.0, 1.0)


def t_tail(t: float, df: float) -> float:
    """P(T >= t) for Student's t with `df` > 0 degrees of freedom, from the regularized
    incomplete beta function (no scipy): relative error about 1e-12, tiny tails included."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    # P(|T| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2).
    both = _beta_regularized(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))
    return 0.5 * both if t > 0 else 1.0 - 0.5 * both


def _beta_regularized(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) with y = 1 - x given as computed exactly (near x = 1, 1 - x would lose it),
    by the continued fraction on whichever side converges fast (Numerical Recipes' betai):
    it needs O(sqrt(max(a, b))) terms."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    log_front += b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 100_000):
        even = m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))
        for term in (even, odd):
            d = 1.0 + term * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + term / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-16:
            break
    return fraction


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile; a fractional df is rounded down (a heavier tail, never a lighter
    one), above 10^6 the normal quantile."""
    if not 0 < p < 1:
        raise ValueError(f"p must be within (0, 1), got {p}")
    if df >= 1e6:
        return normal_quantile(p)
    whole = max(1, int(df))
    low, high = -1e12, 1e12
    for _ in range(200):
        middle = (low + high) / 2.0
        if 1.0 - t_tail(middle, whole) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, abs(middle)):
            break
    return (low + high) / 2.0


def paired_t(diffs: FloatArray | Sequence[float]) -> tuple[float, float]:
    """One-sided paired t-tests of a drop and of a rise: (p_drop, p_rise).

    No variation gives p = 1 in the direction of no change, else 0; fewer than 2 values give
    p = 1 both ways (nothing to test against).
    """
    columns = _as_columns(diffs)
    values = columns[:, 0] / _unit_scales(columns)[0]  # t is the same in any unit
    n = int(values.size)
    if n < 2:
        return 1.0, 1.0
    mean = float(values.mean())
    std = float(values.std(ddof=1))
    if std == 0.0:
        return (0.0 if mean < 0 else 1.0), (0.0 if mean > 0 else 1.0)
    t = mean / (std / math.sqrt(n))
    return t_tail(-t, n - 1), t_tail(t, n - 1)


def interval(
    diffs: FloatArray | Sequence[float], *, t_test: bool = False, level: float = CI_LEVEL
) -> tuple[float, float] | None:
    """The two-sided `level` confidence interval of the mean difference that the gate's paired
    test inverts; None when no such interval is finite (too few queries).

    The sign-flip test in its normal form rejects a shift delta when
    |sum(d - delta)| > z * sqrt(sum((d - delta)^2)); the shifts it keeps are
    mean +- z * sqrt(sum((d - mean)^2) / (n (n - z^2))), finite for n > z^2. With `t_test`,
    the paired t interval.
    """
    columns = _as_columns(diffs)
    scale = float(_unit_scales(columns)[0])
    values = columns[:, 0] / scale
    n = int(values.size)
    if not 0 < level < 1:
        raise ValueError(f"level must be within (0, 1), got {level}")
    if n == 0:
        return None
    mean = float(values.mean())
    squares = float(np.square(values - mean).sum())
    if bool(np.all(values == values[0])):
        # No variation: the mean of equal floats can miss their value in the last bit.
        return float(values[0]) * scale, float(values[0]) * scale
    tail = (1.0 - level) / 2.0
    if t_test:
        if n < 2:
            return None
        half = t_quantile(1.0 - tail, n - 1) * math.sqrt(squares / (n - 1) / n)
    else:
        z = normal_quantile(1.0 - tail)
        if n <= z * z:
            return None
        half = z * math.sqrt(squares / (n * (n - z * z)))
    return (mean - half) * scale, (mean + half) * scale


def adjust_p_values(
    p: Sequence[float], method: Correction, weights: Sequence[float] | None = None
) -> list[float]:
    """Multiple-testing adjusted p-values: weighted Holm step-down, weighted Benjamini-Hochberg
    step-up, or none. A hypothesis is rejected at level alpha when its adjusted p <= alpha.

    Weights (equal when omitted) say how alpha is shared: Holm (1979, weighted) tests p_i
    against alpha * w_i / (weight of the hypotheses not yet rejected), so a hypothesis alone
    in moving is tested at alpha * w_i / sum(w); Benjamini-Hochberg runs on p_i / w_i with the
    weights scaled to average 1 (Genovese, Roeder and Wasserman 2006).
    """
    values = np.asarray(p, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("expected a flat sequence of p-values")
    if values.size and not bool(np.all((values >= 0) & (values <= 1))):
        raise ValueError(f"p-values must be within [0, 1], got {list(p)}")
    if method == "none" or values.size == 0:
        return [float(v) for v in values]
    m = values.size
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != values.shape or not bool(np.all(w > 0)):
        raise ValueError("weights must be one positive number per p-value")
    w = w / w.sum()
    ratio = values / w
    order = np.argsort(ratio, kind="stable")
    if method == "holm":
        # The weight still in play at each step: that of this hypothesis and all after it.
        remaining = np.cumsum(w[order][::-1])[::-1]
        scaled = np.maximum.accumulate(values[order] / w[order] * remaining)
    elif method == "bh":
        # The k-th smallest p_i / (m w_i) times m / k, then running min from the largest down.
        scaled = ratio[order] / np.arange(1, m + 1)
        scaled = np.minimum.accumulate(scaled[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {method!r}; expected holm, bh or none")
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(scaled, 1.0)
    if method == "holm":
        # Never below the raw p-value (a rounding error of the division could put it there);
        # weighted BH may be, for a hypothesis weighted above the average.
        adjusted = np.maximum(adjusted, values)
    return [float(v) for v in adjusted]


def smallest_p(n: int, *, resamples: int, t_test: bool = False) -> float:
    """The smallest p-value the gate's test can give on a slice of `n` queries (all moved the
    same way by the same amount): 2^-n for an exact sign-flip test, the Monte Carlo resolution
    or Hoeffding's exp(-n / 2) otherwise, 0 for a t-test of 2 or more queries."""
    if n < 1:
        return 1.0
    if t_test:
        return 0.0 if n >= 2 else 1.0
    if (n < 63 and (1 << n) <= resamples) or n >= SADDLEPOINT_FROM:
        return 2.0**-n
    return min(1.0 / (resamples + 1), math.exp(-n / 2.0))
