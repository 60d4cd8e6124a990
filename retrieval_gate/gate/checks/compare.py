"""Paired comparison of per-query scores with a baseline: deltas, tests, verdicts, power."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from retrieval_gate.config.columns import Direction
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.errors import CannotFailError, GateError
from retrieval_gate.gate.checks.compare_inputs import checked_slices, scores_of
from retrieval_gate.gate.checks.family import Member, family_of, refusal_advice, widest_level
from retrieval_gate.gate.checks.operational import Measured, measured_checks, swap_p_values
from retrieval_gate.gate.checks.run_noise import RunNoise, Runs, run_noise
from retrieval_gate.gate.checks.slicing import ALL, check_list
from retrieval_gate.gate.checks.undefined import defined_checks
from retrieval_gate.gate.checks.verdicts import (
    RULES,
    Evidence,
    OnInconclusive,
    Rule,
    Verdict,
    fails,
    verdict_of,
)
from retrieval_gate.stats.detectability import operating_characteristic, queries_needed
from retrieval_gate.stats.significance import (
    Correction,
    adjust_p_values,
    interval,
    paired_t,
    sign_flip,
    t_quantile,
    t_tail,
)

TestName = Literal["randomization", "t"]

_TEST_STREAM = 0


@dataclass(frozen=True, kw_only=True)
class Threshold:
    """What a check may lose: a change for the worse in its units or relative to the
    baseline, and an absolute bound; which way is worse, and its unit."""

    max_drop: float | None = None
    """The tolerated change for the worse (a drop, or an increase where lower is better): on
    the [0, 1] scale (0.02) or in the column's unit, or with `relative` a fraction of the
    baseline mean's magnitude."""
    relative: bool = False
    floor: float | None = None
    """Absolute minimum of the current mean (its maximum, where lower is better)."""
    direction: Direction = "higher"
    unit: str = ""
    """"" for the [0, 1] scale; else the unit word of the column's values."""

    def __post_init__(self) -> None:
        if self.max_drop is not None and not (math.isfinite(self.max_drop) and self.max_drop >= 0):
            raise GateError(f"threshold: max_drop must be 0 or more, got {self.max_drop}")
        if self.floor is not None and not math.isfinite(self.floor):
            raise GateError(f"threshold: min must be a finite number, got {self.floor}")

    def resolve(self, baseline_mean: float) -> float | None:
        """The tolerated drop in points, a relative one taken against `baseline_mean`."""
        if self.max_drop is None:
            return None
        return self.max_drop * abs(baseline_mean) if self.relative else self.max_drop

    @property
    def report_only(self) -> bool:
        """Neither a max_drop nor a floor: shown, never judged."""
        return self.max_drop is None and self.floor is None


@dataclass(frozen=True, kw_only=True)
class ComparisonSettings:
    """How comparisons are tested and corrected."""

    alpha: float = 0.05
    """Family-wise false-alarm rate when nothing changed (Holm), or false discovery rate (bh)."""
    correction: Correction = "holm"
    """Across every gated check: weighted Holm, weighted Benjamini-Hochberg, or none."""
    test: TestName = "randomization"
    """One-sided paired sign-flip randomization test, or one-sided paired t-test."""
    resamples: int = 10_000
    """Most randomization draws per check (sequential: most checks stop far sooner)."""
    seed: int = 0
    require_significance: bool = True
    """Off: a drop past max_drop regresses whatever the p-value."""
    min_size: int = 30
    """Slices with fewer queries are reported but never fail."""
    power: float = 0.8
    """Power at which each check's detectable drop is reported."""
    on_inconclusive: OnInconclusive = "pass"
    """What a check past its threshold without enough evidence does to the gate."""
    overall_share: float = 0.5
    """Share of alpha for the overall checks of the gated metrics when slices are gated too."""
    rule: Rule = "significant-drop"
    """How a check past its threshold is decided (`verdicts.RULES`)."""

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
        if self.on_inconclusive not in ("pass", "fail"):
            problems.append(f"on_inconclusive must be pass or fail, got {self.on_inconclusive!r}")
        if self.rule not in RULES:
            problems.append(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if not 0 < self.overall_share < 1:
            problems.append(f"overall_share must be within (0, 1), got {self.overall_share}")
        if problems:
            raise GateError("gate settings: " + "; ".join(problems))


@dataclass(frozen=True, kw_only=True)
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
    ci_low: float | None
    """95% confidence interval of the mean delta, the one the paired test inverts (not
    adjusted for multiplicity); None when too few queries bound it."""
    ci_high: float | None
    wins: int
    """Queries where current is better than baseline (higher, or lower where lower is)."""
    ties: int
    losses: int
    p_value: float | None
    """One-sided paired test of "no drop" (against no change); None when there are no
    queries."""
    p_bound: bool
    """Whether p_value is an upper bound: past the Monte Carlo resolution, no draw as extreme."""
    p_adjusted: float | None
    """The p-value of the hypothesis whose rejection fails the check (no drop under the
    significant-drop rule, `p_value`; a drop within max_drop under the other two, `p_excess`),
    after correction across every gated check; None for checks outside the family."""
    level: float | None
    """The alpha this check is tested at when it alone moved (its share of the family's
    alpha); None outside the family."""
    max_drop: float | None
    """Tolerated drop in points, a relative threshold resolved against baseline_mean."""
    floor: float | None
    detectable_drop: float | None
    """The true drop (points) this check catches with the settings' power under the gate's
    rule; None for report-only checks, below 2 queries, or when it can catch none."""
    queries_needed: int | None
    """Queries with which it would catch 1.5x max_drop with that power; None without a
    positive max_drop, with no variation, or with run-wide noise (which more queries do not
    remove: more repeats do)."""
    gated: bool
    """False for report-only metrics and slices too small to gate: reported, never failing."""
    reason: str
    """Why the comparison is not gated, or ""."""
    verdict: Verdict | None
    """None for report-only metrics (no max_drop, no floor)."""
    failed: bool
    """Whether this check fails the gate."""
    fail_chances: tuple[float, ...] | None = None
    """P(this check fails) at true drops of `detectability.OPERATING` (0, 0.5, 1, 1.5, 2) x its
    max_drop under the gate's rule, from the spread of this change's differences, at the level
    that makes each the least it is (`operating_characteristic`); None without spread."""
    p_excess: float | None = None
    """Under evidence-of-excess and non-inferiority: the one-sided test of "the drop is within
    max_drop" (small: evidence that it is past it); None under significant-drop."""
    p_within: float | None = None
    """Under non-inferiority: the one-sided test of "the drop is max_drop or more" (small:
    evidence that it is within it); None otherwise."""
    p_within_adjusted: float | None = None
    """`p_within` after correction across the family; None outside it."""
    run_sd: float | None = None
    """The sd of this check's mean between runs of one unchanged retriever, pooled over the
    repeats of both sides; None without repeats. Above 0, the test, interval and detectable
    drop include that run-wide noise."""
    direction: Direction = "higher"
    """Which way is better: "lower" for latency and cost, where `max_drop`, `detectable_drop`
    and `floor` are an increase and a ceiling, and `wins` are queries that got lower."""
    unit: str = ""
    """"" for the [0, 1] scale (shown in points); else the unit word of the values."""
    excluded: int = 0
    """Queries of the slice left out because the metric is undefined for them on a side (a
    one-class query's auc); `n` counts the others."""
    view: Literal["", "chunk", "document"] = ""
    """A chunked corpus's level this check compares at when it is not the one dataset.level
    names (dataset.other_level); "" at that one."""

    @property
    def gain(self) -> float:
        """The mean change for the better in the check's units (negative: worse)."""
        return self.delta if self.direction == "higher" else -self.delta


# --------------------------------------------------------------------------------------------
# The gate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Cell:
    """One check before its verdict: where it is, what it may lose, and why it is not gated."""

    metric: str
    slice: str
    rows: IntArray
    threshold: Threshold
    reason: str
    noise: RunNoise | None = None
    excluded: int = 0


def _p_values(
    diffs: FloatArray, cells: list[_Cell], settings: ComparisonSettings
) -> tuple[FloatArray, FloatArray, np.ndarray]:
    if settings.test == "t":
        pairs = [_paired_t(diffs[cell.rows, c], cell.noise) for c, cell in enumerate(cells)]
        drop = np.asarray([p for p, _ in pairs], dtype=np.float64)
        rise = np.asarray([p for _, p in pairs], dtype=np.float64)
        return drop, rise, np.zeros(len(cells), dtype=bool)
    rng = np.random.default_rng([settings.seed, _TEST_STREAM])
    # On the scale of a column's sum: its slice's size times the sd of its mean.
    run_sd = np.asarray(
        [cell.rows.size * math.sqrt(cell.noise.variance) if cell.noise else 0.0 for cell in cells]
    )
    run_df = np.asarray([cell.noise.df if cell.noise else 0 for cell in cells], dtype=np.int64)
    found = sign_flip(diffs, resamples=settings.resamples, rng=rng, run_sd=run_sd, run_df=run_df)
    return found.drop, found.rise, found.bound


def _paired_t(diff: FloatArray, noise: RunNoise | None) -> tuple[float, float]:
    """The paired t-test, with run-wide noise added to the variance of the mean and Welch-
    Satterthwaite degrees of freedom (rounded down) when there is some."""
    if noise is None:
        return paired_t(diff)
    n = diff.size
    within = float(diff.var(ddof=1)) / n if n >= 2 else 0.0
    variance = within + noise.variance
    spread = within**2 / (n - 1) if n >= 2 else 0.0
    df = variance**2 / (spread + noise.variance**2 / noise.df)
    t = float(diff.mean()) / math.sqrt(variance)
    whole = max(1, int(df))
    return t_tail(-t, whole), t_tail(t, whole)


def compare(
    baseline: Mapping[str, FloatArray],
    current: Mapping[str, FloatArray],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    *,
    strict: bool = True,
    runs: tuple[Runs, Runs] | None = None,
    columns: Mapping[str, Measured] | None = None,
) -> tuple[Comparison, ...]:
    """Compare every metric of `thresholds` on every slice, query by query.

    `baseline` and `current` hold one value per query, in the same query order; a slice is
    the indices of its queries. Ordered by metric (as in `thresholds`), then "all", then the
    other slices by name; a slice that holds exactly the queries of "all" is left out
    (`slicing.same_as_all`): it would be the overall check again.

    The rule: a check regresses when its mean drop is past its max_drop and a one-sided paired
    test shows a drop, corrected across the checks that can regress (gated slices of metrics
    with a max_drop; weighted Holm by default, the overall checks sharing half of alpha). Past
    the threshold without that evidence it is inconclusive.

    Raises CannotFailError when an overall check could never fail (too few queries for its share of
    alpha): the gate would pass every change. With `strict` off, such a check is reported as
    not gated instead (for `power` and `lint`, which say why).

    `runs` are the repeated runs of each side (reference, current), whose means `baseline` and
    `current` are: their run-to-run noise enters each check's test (`run_noise`).
    `columns`: the operational checks' measured pairs and tests (`gate/checks/operational.py`).
    """
    columns = columns or {}
    # Lower-is-better columns are tested negated, so that a drop is always the worse way.
    arrays = {
        m: _facing_up(
            (scores_of("baseline", baseline, m), scores_of("current", current, m)), threshold
        )
        for m, threshold in thresholds.items()
    }
    index = checked_slices(arrays, slices, thresholds, overrides)
    total = next(iter(arrays.values()))[0].size if arrays else 0
    for side, name in zip(runs or ((), ()), ("baseline", "current"), strict=True):
        for run in side:
            for metric in arrays:
                if scores_of(f"a {name} run", run, metric).size != total:
                    raise GateError(f"every {name} run must score the same {total} queries")
    checks = check_list(index, thresholds, overrides, settings.min_size)
    cells = [
        _Cell(
            metric=metric,
            slice=name,
            rows=rows,
            threshold=threshold,
            reason=reason,
            noise=run_noise(runs, metric, rows) if runs else None,
            excluded=excluded,
        )
        for metric, name, rows, threshold, reason, excluded in defined_checks(
            measured_checks(checks, columns), arrays, settings.min_size
        )
    ]
    # One column per check, zero outside its slice: every test runs on one matrix.
    # Column by column, as the tests read it (`sign_flip` then needs no copy).
    diffs = np.zeros((total, len(cells)), dtype=np.float64, order="F")
    for c, cell in enumerate(cells):
        base, cur = arrays[cell.metric]
        diffs[cell.rows, c] = cur[cell.rows] - base[cell.rows]
    p_drop, p_rise, p_bound = _p_values(diffs, cells, settings)
    swap_p_values(
        p_drop,
        p_rise,
        p_bound,
        cells,
        arrays,
        columns,
        resamples=settings.resamples,
        seed=settings.seed,
    )
    candidates = [
        c for c, cell in enumerate(cells) if not cell.reason and cell.threshold.max_drop is not None
    ]
    members = [
        Member.of(
            cells[c].slice,
            arrays[cells[c].metric][0][cells[c].rows],
            cells[c].threshold.resolve,
            bounded=not cells[c].threshold.unit and cells[c].threshold.direction == "higher",
        )
        for c in candidates
    ]
    found = family_of(members, settings)
    level_of = {candidates[i]: level for i, level in found.levels.items()}
    reasons = {candidates[i]: why for i, why in found.reasons.items()}
    unable = [i for i in sorted(found.reasons) if members[i].slice == ALL]
    if unable and strict:
        # Ungating the whole set would pass every change: refuse instead.
        i = unable[0]
        gated = len({cells[c].metric for c in candidates})
        raise CannotFailError(
            f"the gate could never fail: {cells[candidates[i]].metric} overall: "
            f"{found.reasons[i]}; " + refusal_advice(members[i], found.left_at[i], settings, gated)
        )
    excess = within = None
    if settings.rule != "significant-drop":
        # The same tests of the differences moved up by each check's max_drop: their drop
        # side tests "the drop is within max_drop", their rise side "it is max_drop or more".
        moved = diffs.copy(order="F")
        for c, cell in enumerate(cells):
            resolved = cell.threshold.resolve(float(arrays[cell.metric][0][cell.rows].mean()))
            if resolved and cell.rows.size:
                moved[cell.rows, c] += resolved
        excess, within, _ = _p_values(moved, cells, settings)
        if settings.rule != "non-inferiority":
            within = None
    failing = p_drop if excess is None else excess
    family = sorted(level_of)

    def corrected(p: FloatArray) -> dict[int, float]:
        found = adjust_p_values(
            [float(p[c]) for c in family], settings.correction, [level_of[c] for c in family]
        )
        return dict(zip(family, found, strict=True))

    adjusted_of = corrected(failing)
    within_of = corrected(within) if within is not None else {}
    return tuple(
        _comparison(
            cell,
            arrays[cell.metric],
            diffs[cell.rows, c],
            _Evidence(
                drop=float(p_drop[c]),
                rise=float(p_rise[c]),
                bound=bool(p_bound[c]),
                failing=float(failing[c]),
                adjusted=adjusted_of.get(c),
                excess=None if excess is None else float(excess[c]),
                within=None if within is None else float(within[c]),
                within_adjusted=within_of.get(c),
            ),
            level=level_of.get(c),
            widest=widest_level(level_of[c], tuple(level_of.values()), settings)
            if c in level_of
            else None,
            reason=cell.reason or reasons.get(c, ""),
            settings=settings,
            column=columns.get(cell.metric),
        )
        for c, cell in enumerate(cells)
    )


def _facing_up(
    pair: tuple[FloatArray, FloatArray], threshold: Threshold
) -> tuple[FloatArray, FloatArray]:
    """Both sides of a column, negated where lower is better."""
    return pair if threshold.direction == "higher" else (-pair[0], -pair[1])


@dataclass(frozen=True, kw_only=True)
class _Evidence:
    """One check's p-values: against no change, and under the rule (`Comparison`)."""

    drop: float
    rise: float
    bound: bool
    failing: float
    """The rule's failing hypothesis: `drop` under significant-drop, else `excess`."""
    adjusted: float | None
    excess: float | None
    within: float | None
    within_adjusted: float | None


def _comparison(
    cell: _Cell,
    arrays: tuple[FloatArray, FloatArray],
    diff: FloatArray,
    p: _Evidence,
    *,
    level: float | None,
    widest: float | None = None,
    reason: str,
    settings: ComparisonSettings,
    column: Measured | None = None,
) -> Comparison:
    n = int(cell.rows.size)
    base, cur = arrays[0][cell.rows], arrays[1][cell.rows]
    baseline_mean = float(base.mean()) if n else 0.0
    current_mean = float(cur.mean()) if n else 0.0
    delta = float(diff.mean()) if n else 0.0
    quantile = column is not None and column.quantile is not None and n > 0
    if quantile and column is not None:  # a quantile's change, not the mean change
        baseline_mean = column.summary(base, cell.threshold.direction)
        current_mean = column.summary(cur, cell.threshold.direction)
        delta = current_mean - baseline_mean
    max_drop = cell.threshold.resolve(baseline_mean)
    lower = cell.threshold.direction == "lower"
    floor = cell.threshold.floor
    gated = not reason
    in_family = gated and level is not None
    verdict = verdict_of(
        delta=delta,
        current_mean=current_mean,
        max_drop=max_drop,
        floor=-floor if lower and floor is not None else floor,
        n=n,
        # Outside the family, an informative verdict from the raw one-sided p-values.
        evidence=Evidence(
            failing=p.adjusted if in_family else p.failing,
            rise=p.rise,
            rise_level=level if in_family and level is not None else settings.alpha,
            within=(p.within_adjusted if in_family else p.within) if p.within is not None else None,
        ),
        alpha=settings.alpha,
        require_significance=settings.require_significance,
    )
    detectable = needed = chances = None
    if gated and max_drop is not None and n >= 2 and not quantile:
        rule: dict[str, Any] = {
            "sd": float(diff.std(ddof=1)),
            "level": level if settings.require_significance else None,
            "max_drop": max_drop,
            "resamples": settings.resamples,
            "t_test": settings.test == "t",
            "run_variance": cell.noise.variance if cell.noise else 0.0,
            "run_df": cell.noise.df if cell.noise else None,
            "rule": settings.rule,
            "on_inconclusive": settings.on_inconclusive,
        }
        detectable, chances = operating_characteristic(rule, n, settings.power, widest)
        # Run-wide noise does not shrink with more queries: no honest count to give.
        needed = None if cell.noise else queries_needed(power=settings.power, **rule)
    ci = interval(diff, t_test=settings.test == "t") if n and not quantile else None
    if ci is not None and cell.noise is not None:
        # The run-wide shift's own 95% half-width, added in quadrature.
        extra = t_quantile(0.975, cell.noise.df) * math.sqrt(cell.noise.variance)
        middle, half = (ci[0] + ci[1]) / 2.0, (ci[1] - ci[0]) / 2.0
        half = math.sqrt(half**2 + extra**2)
        ci = (middle - half, middle + half)
    if lower:  # back to the column's own sign
        baseline_mean, current_mean, delta = -baseline_mean, -current_mean, -delta
        ci = (-ci[1], -ci[0]) if ci else None
    return Comparison(
        metric=cell.metric,
        slice=cell.slice,
        n=n,
        baseline_mean=baseline_mean + 0.0,
        current_mean=current_mean + 0.0,
        delta=delta + 0.0,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        wins=int(np.count_nonzero(diff > 0)),
        ties=int(np.count_nonzero(diff == 0)),
        losses=int(np.count_nonzero(diff < 0)),
        p_value=p.drop if n else None,
        p_bound=p.bound,
        p_adjusted=p.adjusted,
        level=level,
        max_drop=max_drop,
        floor=floor,
        detectable_drop=detectable,
        queries_needed=needed,
        gated=gated,
        reason=reason,
        verdict=verdict,
        failed=gated and fails(verdict, settings.on_inconclusive),
        fail_chances=chances,
        p_excess=p.excess if n else None,
        p_within=p.within if n else None,
        p_within_adjusted=p.within_adjusted,
        run_sd=cell.noise.spread if cell.noise else None,
        direction=cell.threshold.direction,
        unit=cell.threshold.unit,
        excluded=cell.excluded,
    )
