"""Paired comparison of per-query scores with a baseline: deltas, CIs, tests and verdicts."""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from retrieval_gate.errors import GateError
from retrieval_gate.ids import FloatArray, IntArray
from retrieval_gate.slicing import ALL, small_slices

Verdict = Literal["pass", "regressed", "noise", "improved", "below_floor"]
Correction = Literal["holm", "bh", "none"]
TestName = Literal["randomization", "t"]

CI_LEVEL = 0.95
# Verdicts compare means that went through float sums; a drop that equals the threshold in
# exact arithmetic must not fail because of the last bit.
_EPS = 1e-12
# Resample matrices are built this many cells at a time, so memory stays bounded (~16 MB of
# float64) whatever the number of queries and resamples.
_CHUNK_CELLS = 2_000_000
# Randomization sums are compared with this tolerance, relative to sum(|diff|) (the scale of
# the float error of any signed sum): sums equal in exact arithmetic count as ties.
_TIE_TOLERANCE = 1e-10
# Separate random streams per comparison, so the bootstrap does not shift the test's draws.
_TEST_STREAM = 0
_BOOTSTRAP_STREAM = 1


@dataclass(frozen=True)
class Threshold:
    """What a metric may lose: a drop in points or relative to the baseline, and a floor."""

    max_drop: float | None = None
    """Points on the [0, 1] scale (0.02), or with `relative` a fraction of the baseline mean."""
    relative: bool = False
    floor: float | None = None
    """Absolute minimum of the current mean."""

    def __post_init__(self) -> None:
        if self.max_drop is not None and not (math.isfinite(self.max_drop) and self.max_drop >= 0):
            raise GateError(f"threshold: max_drop must be 0 or more, got {self.max_drop}")
        if self.floor is not None and not math.isfinite(self.floor):
            raise GateError(f"threshold: min must be a finite number, got {self.floor}")

    def resolve(self, baseline_mean: float) -> float | None:
        """The tolerated drop in points, a relative one taken against `baseline_mean`."""
        if self.max_drop is None:
            return None
        return self.max_drop * baseline_mean if self.relative else self.max_drop


@dataclass(frozen=True)
class GateSettings:
    """How comparisons are tested and corrected."""

    alpha: float = 0.05
    correction: Correction = "holm"
    """Across every gated (metric, slice): Holm (family-wise error) or Benjamini-Hochberg."""
    test: TestName = "randomization"
    """Paired sign-flip randomization test, or paired t-test."""
    resamples: int = 10_000
    """Randomization draws and bootstrap resamples."""
    seed: int = 0
    require_significance: bool = True
    """Off: a drop past max_drop regresses whatever the p-value."""
    min_size: int = 30
    """Slices with fewer queries are reported but never fail."""
    power: float = 0.8
    """Power at which the minimum detectable effect is reported."""

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.alpha < 1:
            problems.append(f"alpha must be within (0, 1), got {self.alpha}")
        if self.correction not in ("holm", "bh", "none"):
            problems.append(f"correction must be holm, bh or none, got {self.correction!r}")
        if self.test not in ("randomization", "t"):
            problems.append(f"test must be randomization or t, got {self.test!r}")
        if self.resamples < 1:
            problems.append(f"resamples must be at least 1, got {self.resamples}")
        if self.seed < 0:
            problems.append(f"seed must be 0 or more, got {self.seed}")
        if self.min_size < 0:
            problems.append(f"min_size must be 0 or more, got {self.min_size}")
        if not 0 < self.power < 1:
            problems.append(f"power must be within (0, 1), got {self.power}")
        if problems:
            raise GateError("gate settings: " + "; ".join(problems))


@dataclass(frozen=True)
class Comparison:
    """One metric on one slice: baseline vs current, query by query."""

    metric: str
    """Canonical metric name."""
    slice: str
    """The whole query set, "all", or a slice such as "intent=billing"."""
    n: int
    """Paired queries in the slice."""
    baseline_mean: float
    current_mean: float
    delta: float
    """Mean of current - baseline per query (negative = worse), on the metric's scale."""
    ci_low: float
    """Percentile bootstrap 95% CI of the mean delta (seeded)."""
    ci_high: float
    wins: int
    """Queries where current > baseline."""
    ties: int
    losses: int
    p_value: float | None
    """Two-sided paired test of "no change"; None when there are no queries."""
    p_adjusted: float | None
    """After correction across every gated (metric, slice); None for ungated ones."""
    max_drop: float | None
    """Tolerated drop in points, a relative threshold resolved against baseline_mean."""
    floor: float | None
    mde: float | None
    """Minimum detectable effect (points) at alpha and the settings' power; None below 2 queries."""
    queries_needed: int | None
    """Queries for mde <= max_drop; None without a positive max_drop or with no variation."""
    gated: bool
    """False for slices smaller than min_size (never "all") or empty: reported, never failing."""
    reason: str
    """Why the comparison is not gated, or ""."""
    verdict: Verdict

    @property
    def failed(self) -> bool:
        """Whether this comparison fails the gate."""
        return self.gated and self.verdict in ("regressed", "below_floor")


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def _as_diff(diff: FloatArray | Sequence[float]) -> FloatArray:
    values = np.asarray(diff, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-d array of differences, got shape {values.shape}")
    return values


def sign_flip_p_value(
    diff: FloatArray | Sequence[float], *, resamples: int, rng: np.random.Generator
) -> float:
    """Two-sided paired sign-flip randomization test of mean(diff) == 0, statistic |mean|.

    Exact (every sign vector) when 2^m <= resamples for the m non-zero differences, else
    Monte Carlo with p = (1 + #{|mean*| >= |mean|}) / (1 + resamples).
    """
    values = _as_diff(diff)
    # A zero difference is the same under either sign: it changes no resampled sum.
    values = values[values != 0]
    m = int(values.size)
    if m == 0:
        return 1.0
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    # Sums instead of means: the divisor is the same for every sign vector.
    total = float(values.sum())
    observed = abs(total) - _TIE_TOLERANCE * float(np.abs(values).sum())
    rows = max(1, _CHUNK_CELLS // m)
    # Each sign vector is a bit vector b (1 = flipped): sum* = total - 2 * (b @ values).
    if m < 63 and (1 << m) <= resamples:
        count = 1 << m
        shifts = np.arange(m, dtype=np.int64)
        extreme = 0
        for start in range(0, count, rows):
            codes = np.arange(start, min(start + rows, count), dtype=np.int64)
            bits = ((codes[:, None] >> shifts) & 1).astype(np.float64)
            extreme += int(np.count_nonzero(np.abs(total - 2.0 * (bits @ values)) >= observed))
        return extreme / count
    width = (m + 7) // 8
    extreme = 0
    for start in range(0, resamples, rows):
        size = min(rows, resamples - start)
        # Random bytes unpacked to bits: 8x fewer draws than one integer per sign.
        packed = rng.integers(0, 256, size=(size, width), dtype=np.uint8)
        bits = np.unpackbits(packed, axis=1, count=m).astype(np.float64)
        extreme += int(np.count_nonzero(np.abs(total - 2.0 * (bits @ values)) >= observed))
    return (1 + extreme) / (1 + resamples)


def _scipy_stats() -> Any:
    # Imported on first use: scipy is slow to import and only the t-test and the power
    # figures need it. It ships no type stubs.
    from scipy import stats  # type: ignore[import-untyped]

    return stats


def paired_t_p_value(diff: FloatArray | Sequence[float]) -> float:
    """Two-sided paired t-test of mean(diff) == 0 (scipy's ttest_rel on the differences).

    No variation gives p = 1 when the mean is 0, else 0; fewer than 2 values give p = 1
    (nothing to test against).
    """
    values = _as_diff(diff)
    n = int(values.size)
    if n < 2:
        return 1.0
    mean = float(values.mean())
    std = float(values.std(ddof=1))
    if std == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    stats = _scipy_stats()
    t = mean / (std / math.sqrt(n))
    return float(min(1.0, 2.0 * stats.t.sf(abs(t), n - 1)))


def bootstrap_ci(
    diff: FloatArray | Sequence[float],
    *,
    resamples: int,
    rng: np.random.Generator,
    level: float = CI_LEVEL,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of `diff`."""
    values = _as_diff(diff)
    n = int(values.size)
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be within (0, 1), got {level}")
    if bool(np.all(values == values[0])):
        # Every resample is the same; skip the work and the float noise of its mean.
        return float(values[0]), float(values[0])
    means = np.empty(resamples, dtype=np.float64)
    rows = max(1, _CHUNK_CELLS // n)
    # Narrow draws are faster (about 25% for uint16 over int64); the index is always in range.
    index_type = np.uint16 if n <= 1 << 16 else np.int64
    for start in range(0, resamples, rows):
        size = min(rows, resamples - start)
        picks = rng.integers(0, n, size=(size, n), dtype=index_type)
        means[start : start + size] = values[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def adjust_p_values(p: Sequence[float], method: Correction) -> list[float]:
    """Multiple-testing adjusted p-values: Holm step-down, Benjamini-Hochberg step-up, or none."""
    values = np.asarray(p, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("expected a flat sequence of p-values")
    if values.size and not bool(np.all((values >= 0) & (values <= 1))):
        raise ValueError(f"p-values must be within [0, 1], got {list(p)}")
    if method == "none" or values.size == 0:
        return [float(v) for v in values]
    m = values.size
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    if method == "holm":
        # k-th smallest times (m - k + 1), then running max so the order of p is kept.
        scaled = np.maximum.accumulate(ranked * (m - np.arange(m)))
    elif method == "bh":
        # k-th smallest times m / k, then running min from the largest down.
        # m / k >= 1 is rounded first so that the product never rounds below p itself.
        scaled = np.minimum.accumulate((ranked * (m / np.arange(1, m + 1)))[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {method!r}; expected holm, bh or none")
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(scaled, 1.0)
    return [float(v) for v in adjusted]


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be within (0, 1), got {alpha}")
    if not 0 < power < 1:
        raise ValueError(f"power must be within (0, 1), got {power}")
    stats = _scipy_stats()
    return float(stats.norm.ppf(1.0 - alpha / 2.0) + stats.norm.ppf(power))


def minimum_detectable_effect(std: float, n: int, alpha: float, power: float) -> float:
    """Smallest true mean difference a two-sided test at `alpha` finds with `power` (normal)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not std >= 0:
        raise ValueError(f"std must be 0 or more, got {std}")
    return _z_sum(alpha, power) * std / math.sqrt(n)


def queries_needed(std: float, max_drop: float, alpha: float, power: float) -> int:
    """Queries for the minimum detectable effect to be at most `max_drop`."""
    if not max_drop > 0:
        raise ValueError(f"max_drop must be more than 0, got {max_drop}")
    if not std >= 0:
        raise ValueError(f"std must be 0 or more, got {std}")
    needed = (_z_sum(alpha, power) * std / max_drop) ** 2
    # An exact integer computed as 100.00000000001 must not ask for a 101st query.
    return max(1, math.ceil(needed - 1e-9))


def verdict_for(
    *,
    delta: float,
    current_mean: float,
    max_drop: float | None,
    floor: float | None,
    p: float | None,
    alpha: float,
    require_significance: bool,
) -> Verdict:
    """The verdict of one comparison from its mean delta, its (adjusted) p-value and threshold."""
    significant = (p is not None and p < alpha) or not require_significance
    past_drop = max_drop is not None and -delta > max_drop + _EPS
    if past_drop and significant:
        return "regressed"
    if floor is not None and current_mean < floor - _EPS:
        return "below_floor"
    if past_drop:
        return "noise"
    if max_drop is not None and delta > max_drop + _EPS and significant:
        return "improved"
    return "pass"


# --------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------


def _rng(seed: int, metric: str, slice_name: str, stream: int) -> np.random.Generator:
    # crc32 is stable across processes (str hash is salted), so results do not depend on the
    # order the comparisons run in nor on the interpreter.
    key = zlib.crc32(f"{metric}|{slice_name}".encode())
    return np.random.default_rng([seed, key, stream])


def _stats(
    metric: str,
    slice_name: str,
    base: FloatArray,
    cur: FloatArray,
    threshold: Threshold,
    settings: GateSettings,
    small: str,
) -> Comparison:
    """The comparison before correction: `p_adjusted` None and a provisional verdict."""
    n = int(base.size)
    if n == 0:
        return Comparison(
            metric=metric,
            slice=slice_name,
            n=0,
            baseline_mean=0.0,
            current_mean=0.0,
            delta=0.0,
            ci_low=0.0,
            ci_high=0.0,
            wins=0,
            ties=0,
            losses=0,
            p_value=None,
            p_adjusted=None,
            max_drop=threshold.resolve(0.0),
            floor=threshold.floor,
            mde=None,
            queries_needed=None,
            gated=False,
            reason="no queries",
            verdict="pass",
        )
    diff = cur - base
    baseline_mean = float(base.mean())
    max_drop = threshold.resolve(baseline_mean)
    if settings.test == "t":
        p_value = paired_t_p_value(diff)
    else:
        rng = _rng(settings.seed, metric, slice_name, _TEST_STREAM)
        p_value = sign_flip_p_value(diff, resamples=settings.resamples, rng=rng)
    ci_low, ci_high = bootstrap_ci(
        diff,
        resamples=settings.resamples,
        rng=_rng(settings.seed, metric, slice_name, _BOOTSTRAP_STREAM),
    )
    mde = needed = None
    if n >= 2:
        std = float(diff.std(ddof=1))
        mde = minimum_detectable_effect(std, n, settings.alpha, settings.power)
        if max_drop is not None and max_drop > 0 and std > 0:
            needed = queries_needed(std, max_drop, settings.alpha, settings.power)
    gated = not small  # why a slice is too small to gate is slicing's rule
    return Comparison(
        metric=metric,
        slice=slice_name,
        n=n,
        baseline_mean=baseline_mean,
        current_mean=float(cur.mean()),
        delta=float(diff.mean()),
        ci_low=ci_low,
        ci_high=ci_high,
        wins=int(np.count_nonzero(diff > 0)),
        ties=int(np.count_nonzero(diff == 0)),
        losses=int(np.count_nonzero(diff < 0)),
        p_value=p_value,
        p_adjusted=None,
        max_drop=max_drop,
        floor=threshold.floor,
        mde=mde,
        queries_needed=needed,
        gated=gated,
        reason=small,
        verdict="pass",
    )


def _scores(name: str, scores: Mapping[str, FloatArray], metric: str) -> FloatArray:
    if metric not in scores:
        known = ", ".join(sorted(scores)) or "none"
        raise GateError(f"{name} has no scores for metric {metric} (it has: {known})")
    values = np.asarray(scores[metric], dtype=np.float64)
    if values.ndim != 1:
        raise GateError(f"{name} scores of {metric} must be one value per query")
    if not bool(np.all(np.isfinite(values))):
        raise GateError(f"{name} scores of {metric} contain NaN or infinite values")
    return values


def _check_inputs(
    arrays: Mapping[str, tuple[FloatArray, FloatArray]],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
) -> dict[str, IntArray]:
    sizes = {m: (b.size, c.size) for m, (b, c) in arrays.items()}
    lengths = {size for pair in sizes.values() for size in pair}
    if len(lengths) > 1:
        listed = "; ".join(f"{m}: baseline {b}, current {c}" for m, (b, c) in sizes.items())
        raise GateError(
            f"baseline and current must score the same queries in the same order ({listed})"
        )
    total = lengths.pop() if lengths else None
    if ALL not in slices:
        raise GateError(f'slices must include "{ALL}"')
    checked: dict[str, IntArray] = {}
    for name, raw in slices.items():
        index = np.asarray(raw, dtype=np.int64)
        if index.ndim != 1:
            raise GateError(f"slice {name}: expected a 1-d array of query indices")
        if total is not None and index.size and (index.min() < 0 or index.max() >= total):
            raise GateError(f"slice {name}: query indices must be within [0, {total})")
        if np.unique(index).size != index.size:
            raise GateError(f"slice {name}: a query is listed more than once")
        checked[name] = index
    # An override for a slice absent from this query set is not an error here: the caller
    # warns about it, and the override simply applies nowhere.
    for name, per_metric in overrides.items():
        for metric in per_metric:
            if metric not in thresholds:
                known = ", ".join(thresholds) or "none"
                raise GateError(
                    f"threshold override for slice {name} names metric {metric}, "
                    f"which has no threshold (metrics: {known})"
                )
    return checked


def compare(
    baseline: Mapping[str, FloatArray],
    current: Mapping[str, FloatArray],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: GateSettings,
) -> tuple[Comparison, ...]:
    """Compare every metric of `thresholds` on every slice, query by query.

    `baseline` and `current` hold one value per query, in the same query order; a slice is
    the indices of its queries. Ordered by metric (as in `thresholds`), then "all", then the
    other slices by name.
    """
    arrays = {
        m: (_scores("baseline", baseline, m), _scores("current", current, m)) for m in thresholds
    }
    index = _check_inputs(arrays, slices, thresholds, overrides)
    order = [ALL, *sorted(name for name in index if name != ALL)]
    small = small_slices(index, settings.min_size)
    computed = []
    for metric, (base, cur) in arrays.items():
        for name in order:
            threshold = overrides.get(name, {}).get(metric, thresholds[metric])
            rows = index[name]
            computed.append(
                _stats(
                    metric, name, base[rows], cur[rows], threshold, settings, small.get(name, "")
                )
            )
    # Corrected over every gated (metric, slice), including those with no max_drop that can
    # never regress: a larger family than strictly needed, so the correction is conservative.
    family = [(i, s.p_value) for i, s in enumerate(computed) if s.gated and s.p_value is not None]
    corrected = adjust_p_values([p for _, p in family], settings.correction)
    adjusted = {i: p for (i, _), p in zip(family, corrected, strict=True)}
    out = []
    for i, s in enumerate(computed):
        p_adjusted = adjusted.get(i)
        # Ungated slices get an informative verdict from their raw p-value; they never fail.
        p = p_adjusted if s.gated else s.p_value
        verdict: Verdict = (
            verdict_for(
                delta=s.delta,
                current_mean=s.current_mean,
                max_drop=s.max_drop,
                floor=s.floor,
                p=p,
                alpha=settings.alpha,
                require_significance=settings.require_significance,
            )
            if s.n
            else "pass"  # nothing to judge: reported with reason "no queries"
        )
        out.append(dataclasses.replace(s, p_adjusted=p_adjusted, verdict=verdict))
    return tuple(out)
