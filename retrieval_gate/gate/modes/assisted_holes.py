"""Pairs the judge did not grade under human+llm: each check's verdict bounded, or inconclusive."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray, object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold
from retrieval_gate.gate.checks.verdicts import EPS, Verdict
from retrieval_gate.gate.explain.diagnostics import graded_blocks
from retrieval_gate.gate.explain.label_holes import (
    HoleExtremes,
    HolePlan,
    LabelHole,
    block_extremes,
    boundable,
    joined_extremes,
)
from retrieval_gate.gate.explain.top_k_facts import QUERIES_AT_ONCE
from retrieval_gate.gate.modes.unvouched import unvouched
from retrieval_gate.stats.calibration import GRADES
from retrieval_gate.stats.detectability import LEAN
from retrieval_gate.stats.significance import adjust_p_values, t_tail

FREE_AT_MOST = 12
"""Most queries with unjudged pairs in one check whose every corner is tried (4,096)."""


@dataclass(frozen=True, kw_only=True)
class Scores:
    """Per query over the estimate's queries: people's (baseline, current) scores and the
    judge's, its unjudged pairs non-relevant (`judge_scores`)."""

    human: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]]
    judged: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]]
    labelled: np.ndarray


@dataclass(frozen=True)
class _Bounds:
    """One check's estimate over every grading of its unjudged pairs, at the judge weight it
    was decided with: the delta's and current mean's ranges, the largest standard error,
    the fewest degrees of freedom, so the largest p-value of a drop."""

    delta: tuple[float, float]
    current: tuple[float, float]
    p_drop: tuple[float, float]
    """The smallest and the largest p-value of a drop."""


def bounded_checks(
    made: Sequence[Comparison],
    weights: Sequence[float | None],
    thresholds: Sequence[Threshold],
    scores: Scores,
    slices: Mapping[str, IntArray],
    found: HoleExtremes,
    settings: ComparisonSettings,
) -> tuple[tuple[Comparison, ...], tuple[LabelHole, ...]]:
    """The prediction-powered checks `made` with their unjudged pairs (graded 0 when
    decided) at every grade 0 to the top: a check whose verdict is the same for every grading
    keeps it; any other is inconclusive and fails the gate (its verdict depends on pairs
    nobody graded). With the judge's weight lam of each check held at the value it was
    decided with, the estimate, mean(Y - lam f_L) + lam mean(f_U), moves one way with each
    query's judge-scored delta f (down for the judge-only queries U, up for the human-judged
    L), so its range is exact from each query's extremes (`label_hole_extremes`); the
    largest p-value of a drop is found at a corner of the box (`_largest_p`), at Welch's
    fewest degrees of freedom, min(n - 1, N - 1); the family's adjusted p-values rise with
    every raw one. A pass is kept when no grading takes the drop past
    max_drop or the current mean below the floor; a failure when every grading does, with a
    p-value within alpha at the largest. Returns the checks and one label hole per gated
    check with unjudged pairs, in check order."""
    bounds: dict[int, _Bounds] = {}
    unjudged: dict[int, int] = {}
    for c, check in enumerate(made):
        rows = np.asarray(slices[check.slice], dtype=np.int64)
        count = int(found.unjudged[rows].sum()) if rows.size else 0
        lam = weights[c]
        if not count or not check.gated or lam is None or check.metric not in found.extremes:
            if count and check.gated:
                unjudged[c] = count
            continue
        unjudged[c] = count
        bounds[c] = _bounds(check.metric, rows, float(lam), scores, found)
    family = [c for c, check in enumerate(made) if check.level is not None]
    adjusted = [
        adjust_p_values(
            [bounds[c].p_drop[end] if c in bounds else _raw(made[c]) for c in family],
            settings.correction,
            [float(made[c].level or 0.0) for c in family],
        )
        for end in (0, 1)
    ]
    failing_p = {c: (adjusted[0][i], adjusted[1][i]) for i, c in enumerate(family)}
    checks, holes = list(made), []
    for c, count in unjudged.items():
        check = made[c]
        if c not in bounds:
            checks[c] = unvouched(check)
            holes.append(_hole(check, count, None, (None, None)))
            continue
        at = bounds[c]
        threshold = thresholds[c]
        drops = _max_drops(threshold, at)
        evidence = failing_p.get(c, at.p_drop)
        fails_all, fails_some = _fails(check, at, drops, evidence, settings)
        failing: Verdict = check.verdict if check.failed and check.verdict else "regressed"
        if fails_all:
            checks[c] = dataclasses.replace(check, verdict=failing, failed=True)
        elif fails_some:
            checks[c] = unvouched(check)
        elif check.verdict == "improved":  # a rise is not shown for every grading
            checks[c] = dataclasses.replace(check, verdict="pass", failed=False)
        worst: Verdict = failing if fails_some else "pass"
        best: Verdict = failing if fails_all else "pass"
        holes.append(_hole(check, count, at, (worst, best)))
    return tuple(checks), tuple(holes)


def _raw(check: Comparison) -> float:
    return 1.0 if check.p_value is None else float(check.p_value)


def _bounds(
    metric: str, rows: IntArray, lam: float, scores: Scores, found: HoleExtremes
) -> _Bounds:
    at = found.extremes[metric]
    labelled = scores.labelled[rows]
    ours, theirs = rows[labelled], rows[~labelled]
    human_delta = np.asarray(scores.human[1][metric]) - np.asarray(scores.human[0][metric])
    y, current = human_delta[ours], np.asarray(scores.human[1][metric])[ours]
    low, high = at.delta[0], at.delta[1]
    if not theirs.size:
        lam = 0.0  # ppi_mean's rule: the judge-only mean needs judge-only queries
    delta = (
        _mean(y) - lam * _mean(high[ours]) + lam * _mean(low[theirs]),
        _mean(y) - lam * _mean(low[ours]) + lam * _mean(high[theirs]),
    )
    now = (
        _mean(current) - lam * _mean(at.current[1][ours]) + lam * _mean(at.current[0][theirs]),
        _mean(current) - lam * _mean(at.current[0][ours]) + lam * _mean(at.current[1][theirs]),
    )
    p_drop = (
        _smallest_p(y, lam, (low, high), ours, theirs),
        _largest_p(y, lam, (low, high), ours, theirs),
    )
    return _Bounds(delta=delta, current=now, p_drop=p_drop)


def _largest_p(
    y: FloatArray,
    lam: float,
    deltas: tuple[FloatArray, FloatArray],
    ours: IntArray,
    theirs: IntArray,
) -> float:
    """The largest one-sided p-value of a drop (`PpiEstimate.p_drop`) over the box of
    gradings, at the fewest degrees of freedom (a t tail past a positive point shrinks as
    they grow). -estimate / se is a linear function over a convex one, so its smallest value
    on the box is at a corner: with at most 2^FREE_AT_MOST corners every one is tried, past
    that the highest estimate is held over the largest standard error (`_widest_se`)."""
    n, big_n = int(ours.size), int(theirs.size)
    if n < 2:
        return 1.0
    judge_part = big_n >= 2 and lam > 0
    df = max(float(min(n - 1, big_n - 1) if judge_part else n - 1), 1.0)
    low, high = deltas
    free = [np.flatnonzero(high[rows] > low[rows]) for rows in (ours, theirs)]
    if sum(part.size for part in free) <= FREE_AT_MOST:
        estimates, variances = _corners(y, lam, deltas, (ours, theirs), free, judge_part)
    else:
        estimates = np.array([_mean(y) - lam * _mean(low[ours]) + lam * _mean(high[theirs])])
        variances = np.array([_widest_se(y, lam, deltas, ours, theirs, judge_part) ** 2])
    if (estimates >= 0).any():
        return 1.0  # no drop at some grading: nothing bounds the p-value below 1
    se = np.sqrt(np.maximum(variances, 0.0))
    if (se == 0.0).all():
        return 0.0
    ratio = np.where(se > 0, -estimates / np.where(se > 0, se, 1.0), np.inf)
    return t_tail(float(ratio.min()), df)


def _smallest_p(
    y: FloatArray,
    lam: float,
    deltas: tuple[FloatArray, FloatArray],
    ours: IntArray,
    theirs: IntArray,
) -> float:
    """A lower bound of the one-sided p-value of a drop over the box of gradings: the lowest
    estimate over the smallest standard error (Minkowski's inequality the other way,
    sd(a + b) >= sd(a) - sd(b)), at Welch's most degrees of freedom, n + N - 2."""
    n, big_n = int(ours.size), int(theirs.size)
    if n < 2:
        return 1.0
    low, high = deltas
    judge_part = big_n >= 2 and lam > 0
    lowest = _mean(y) - lam * _mean(high[ours]) + lam * _mean(low[theirs])
    if lowest >= 0:
        return 0.5  # no estimate below 0: the one-sided p-value is 0.5 at least
    middle, half = (low + high) / 2.0, (high - low) / 2.0
    variance = max(0.0, _sd(y - lam * middle[ours]) - lam * _spread(half[ours])) ** 2 / n
    if judge_part:
        spread = max(0.0, _sd(middle[theirs]) - _spread(half[theirs]))
        variance += lam * lam * spread**2 / big_n
    if variance == 0.0:
        return 0.0
    df = float(n + big_n - 2 if judge_part else n - 1)
    return t_tail(-lowest / math.sqrt(variance), df)


def _corners(
    y: FloatArray,
    lam: float,
    deltas: tuple[FloatArray, FloatArray],
    sides: tuple[IntArray, IntArray],
    free: Sequence[IntArray],
    judge_part: bool,
) -> tuple[FloatArray, FloatArray]:
    """The estimate and the variance of `ppi_mean` at every corner of the box: each free
    query's judge-scored delta at its lowest or highest, from running sums (a corner costs
    the free queries, not the slice)."""
    low, high = deltas
    ours, theirs = sides
    count = sum(part.size for part in free)
    corners = (np.arange(1 << count)[:, None] >> np.arange(count)) & 1
    parts = []
    for side, (rows, loose) in enumerate(zip((ours, theirs), free, strict=True)):
        at_low, at_high = low[rows], high[rows]
        # The labelled side's values are y - lam f; the judge-only side's, f.
        lows, highs = (y - lam * at_low, y - lam * at_high) if side == 0 else (at_low, at_high)
        # Centred first: the running sums' variance is exact to rounding, not cancellation.
        shift = float(lows.mean()) if lows.size else 0.0
        lows, highs = lows - shift, highs - shift
        fixed: FloatArray = np.delete(lows, loose)
        start = 0 if side == 0 else free[0].size
        pick = corners[:, start : start + loose.size].astype(bool)
        chosen: FloatArray = np.where(pick, highs[loose], lows[loose])
        total = float(fixed.sum()) + chosen.sum(axis=1)
        squares = float((fixed * fixed).sum()) + (chosen * chosen).sum(axis=1)
        parts.append((total, squares, rows.size, shift))
    (sum_l, sq_l, n, shift_l), (sum_u, sq_u, big_n, shift_u) = parts
    estimates = sum_l / n + shift_l + (lam * (sum_u / big_n + shift_u) if big_n else 0.0)
    variances = (sq_l - sum_l * sum_l / n) / (n - 1) / n
    if judge_part:
        variances = variances + lam * lam * (sq_u - sum_u * sum_u / big_n) / (big_n - 1) / big_n
    return estimates, variances


def _widest_se(
    y: FloatArray,
    lam: float,
    deltas: tuple[FloatArray, FloatArray],
    ours: IntArray,
    theirs: IntArray,
    judge_part: bool,
) -> float:
    """An upper bound of `ppi_mean`'s standard error over the box, by Minkowski's inequality
    (sd(a + b) <= sd(a) + sd(b)) about each query's middle."""
    low, high = deltas
    middle, half = (low + high) / 2.0, (high - low) / 2.0
    variance = (_sd(y - lam * middle[ours]) + lam * _spread(half[ours])) ** 2 / ours.size
    if judge_part:
        spread = _sd(middle[theirs]) + _spread(half[theirs])
        variance += lam * lam * spread**2 / theirs.size
    return math.sqrt(variance)


def _max_drops(threshold: Threshold, at: _Bounds) -> tuple[float, float] | None:
    """The smallest and largest max_drop over the baseline means the box allows (a relative
    one moves with |baseline|), or None for a check without one."""
    low = at.current[0] - at.delta[1]
    high = at.current[1] - at.delta[0]
    ends = [threshold.resolve(low), threshold.resolve(high)]
    if low < 0 < high:
        ends.append(threshold.resolve(0.0))
    found = [end for end in ends if end is not None]
    return (min(found), max(found)) if found else None


def _fails(
    check: Comparison,
    at: _Bounds,
    drops: tuple[float, float] | None,
    evidence: tuple[float, float],
    settings: ComparisonSettings,
) -> tuple[bool, bool]:
    """(whether every grading fails the check, whether some grading may): past max_drop with
    evidence, or below the floor (`verdicts.verdict_for`); an inconclusive lean fails under
    on_inconclusive: fail."""
    lowest, highest = at.delta
    floor = check.floor
    level = settings.alpha * (LEAN if settings.on_inconclusive == "fail" else 1.0)
    always = evidence[1] <= level or not settings.require_significance
    sometimes = evidence[0] <= level or not settings.require_significance
    fails_all = bool(floor is not None and at.current[1] < floor - EPS) or bool(
        drops is not None and -highest > drops[1] + EPS and always
    )
    fails_some = bool(floor is not None and at.current[0] < floor - EPS) or bool(
        drops is not None and -lowest > drops[0] + EPS and sometimes
    )
    return fails_all, fails_some


def _hole(
    check: Comparison,
    count: int,
    at: _Bounds | None,
    verdicts: tuple[Verdict | None, Verdict | None],
) -> LabelHole:
    """The bound of one check, its verdict as decided (the unjudged pairs graded 0); robust
    when the worst and the best grading agree."""
    worst, best = verdicts
    return LabelHole(
        metric=check.metric,
        slice=check.slice,
        verdict=check.verdict or "pass",
        unjudged=count,
        worst=worst,
        best=best,
        worst_delta=None if at is None else at.delta[0],
        best_delta=None if at is None else at.delta[1],
        robust=worst is not None and worst == best,
        exact=False,
        reason="" if at is not None else "no label-hole bound for this metric",
    )


def _mean(values: FloatArray) -> float:
    return float(np.mean(values)) if values.size else 0.0


def _sd(values: FloatArray) -> float:
    return float(np.std(values, ddof=1)) if values.size >= 2 else 0.0


def _spread(half: FloatArray) -> float:
    """sqrt(sum(h^2) / (n - 1)): the largest sd (ddof 1) of a vector within +-h of 0."""
    return math.sqrt(float(np.sum(half * half)) / (half.size - 1)) if half.size >= 2 else 0.0


def judge_extremes(
    checks: Sequence[Comparison],
    records: tuple[Baseline, Baseline],
    pool: Qrels,
    pools: Mapping[str, set[str]],
    query_ids: Sequence[str],
    k: int,
) -> HoleExtremes:
    """Each query's extremes over every grade (0 to the judge's top) of the pool pairs the
    judge did not grade. A document of the top k below judge.depth is outside the pool and
    scores 0 by the rule the estimate uses (`pooled`), so it is graded 0 here, not bounded."""
    specs, reasons = {}, {}
    for metric in sorted({check.metric for check in checks}):
        spec, why = boundable(metric, k)
        if spec is None:
            reasons[metric] = why
        else:
            specs[metric] = spec
    plan = HolePlan(specs=specs, reasons=reasons, top=float(max(GRADES)))
    outside = [
        (q, d)
        for q, query in enumerate(pool.query_ids.tolist())
        for d in dict.fromkeys(doc for record in records for doc in record.top_k.get(query, ())[:k])
        if d not in pools.get(query, ())
    ]
    view = pool
    if outside:
        view = Qrels(
            pool.query_ids,
            np.concatenate([pool.query, np.fromiter((q for q, _ in outside), dtype=np.int64)]),
            object_array([*pool.docs.tolist(), *(d for _, d in outside)]),
            np.concatenate([pool.grade, np.zeros(len(outside))]),
            pool.source,
        )
    blocks = [
        block_extremes(plan, old, new, judgments)
        for old, new, judgments in graded_blocks(
            records[0].top_k, records[1].top_k, query_ids, view, QUERIES_AT_ONCE
        )
    ]
    return joined_extremes(plan, blocks)
