"""`retrieval-gate power`: what the labelled set can see, before a regression happens.

For every check the gate would run (metric x slice), from the baseline's per-query scores: the
true drop it catches with the gate's power, P(it fails) at 1x, 1.5x and 2x its threshold, its
level and the queries it needs, all under the rule `check` applies (`compare.compare`,
`detectability`). Nothing here prints.

Before a change there are no paired differences, so their sd is taken as the sd of the
baseline's per-query scores: exact when the two runs correlate at 0.5, which related runs
usually exceed, so the estimate errs on the cautious side.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.wording import aligned, one_line, plural
from retrieval_gate.gate.compare import (
    Comparison,
    ComparisonSettings,
    RunNoise,
    Threshold,
    compare,
    run_spread,
)
from retrieval_gate.metrics import parse_metric
from retrieval_gate.stats.detectability import (
    TARGET,
    detectable_drop,
    fail_probability,
    queries_needed,
    stated_chance,
    stated_points,
)

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.core.model import Query
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.gate.baseline.record import Baseline

MULTIPLES = (1.0, TARGET, 2.0)
"""The true drops, as multiples of each check's max_drop, at which P(fail) is stated."""
SCHEMA = "retrieval-gate/power"
SCHEMA_VERSION = 1
ASSUMPTION = (
    "before a change there are no paired differences, so their per-query sd is taken as the sd "
    "of the baseline's per-query scores: exact when the two runs correlate at 0.5; related runs "
    "usually correlate more, so the real power is usually higher"
)


@dataclass(frozen=True)
class CheckPower:
    """What one check (metric x slice) with a max_drop can see."""

    metric: str
    """Canonical metric name."""
    slice: str
    n: int
    """Queries in the slice."""
    threshold: str
    """The max_drop as configured: `2pt`, or `3%` of the baseline mean."""
    max_drop: float
    """The tolerated drop in points (a relative one resolved against the baseline mean)."""
    sd: float | None
    """The sd of the baseline's per-query scores, taken as that of the paired differences;
    None below 2 queries."""
    level: float | None
    """The alpha this check is tested at when it alone moves; None outside the family."""
    detectable_drop: float | None
    """The true drop (points) caught with the gate's power; None when not gated, when none
    is, or without spread to estimate from."""
    fail_probability: tuple[float, ...] | None
    """P(the check fails) at each of MULTIPLES x max_drop: 0 when it is not gated, None
    without spread to estimate from."""
    queries_needed: int | None
    """Queries with which it would catch TARGET x max_drop with that power."""

    @property
    def unknown(self) -> bool:
        """Gated, but the baseline's scores do not vary on the slice: nothing to estimate."""
        return self.gated and not (self.sd is not None and self.sd > 0)

    gated: bool
    reason: str
    """Why the check is not gated (too small, or cannot reach its level), or ""."""


@dataclass(frozen=True)
class PowerReport:
    """Every check with a max_drop, in the gate's order, and what the estimate rests on."""

    config: str
    baseline: str
    settings: ComparisonSettings
    checks: tuple[CheckPower, ...]
    untested: tuple[str, ...]
    """Metrics without a max_drop anywhere: never tested for a drop."""
    warnings: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        """The JSON document: settings, the assumption, one object per check."""
        settings = self.settings
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "config": self.config,
            "baseline": self.baseline,
            "assumption": ASSUMPTION,
            "power": settings.power,
            "multiples": list(MULTIPLES),
            "settings": {
                "alpha": settings.alpha,
                "correction": settings.correction,
                "test": settings.test,
                "resamples": settings.resamples,
                "require_significance": settings.require_significance,
                "min_size": settings.min_size,
                "overall_share": settings.overall_share,
            },
            "checks": [
                {
                    "metric": c.metric,
                    "slice": c.slice,
                    "n": c.n,
                    "threshold": c.threshold,
                    "max_drop": c.max_drop,
                    "sd": c.sd,
                    "level": c.level,
                    "detectable_drop": c.detectable_drop,
                    "fail_probability": None
                    if c.fail_probability is None
                    else [
                        {"multiple": m, "drop": m * c.max_drop, "probability": p}
                        for m, p in zip(MULTIPLES, c.fail_probability, strict=True)
                    ],
                    "queries_needed": c.queries_needed,
                    "gated": c.gated,
                    "reason": c.reason,
                }
                for c in self.checks
            ],
            "untested_metrics": list(self.untested),
            "warnings": list(self.warnings),
        }

    def to_json(self) -> str:
        """`document()` as sorted, indented ASCII JSON with one trailing newline: the control
        characters of a slice name or path are escaped, so a terminal shows them inert."""
        return json.dumps(self.document(), indent=2, sort_keys=True, allow_nan=False) + "\n"

    def to_text(self) -> str:
        """An aligned table of the gated checks, the others with their reason, and what the
        numbers mean. Config and dataset text is printed inert, never at a line's start."""
        settings = self.settings
        power = f"{settings.power:.0%}"
        gated = [c for c in self.checks if c.gated]
        lines = [
            f"retrieval-gate power: {one_line(self.config)}",
            f"baseline {one_line(self.baseline)}",
            f"alpha {settings.alpha:g}: {_family(settings)}; {_test(settings)}",
            "",
        ]
        if gated:
            header = ["metric", "slice", "n", "max_drop", "level", f"detects ({power})"]
            header += [
                f"P(fail) {_times(m)}" if i == 0 else _times(m) for i, m in enumerate(MULTIPLES)
            ]
            header.append(f"queries for {_times(TARGET)}")
            rows = [header]
            for c in gated:
                rows.append(
                    [
                        one_line(c.metric),
                        one_line(c.slice),
                        str(c.n),
                        _threshold_text(c),
                        f"{c.level:.2g}" if c.level and settings.require_significance else "-",
                        "-"
                        if c.detectable_drop is None
                        else f"{stated_points(c.detectable_drop, c.max_drop)}pt",
                        *(
                            _chance(p, settings.power)
                            for p in c.fail_probability or (None,) * len(MULTIPLES)
                        ),
                        "-" if c.queries_needed is None else str(c.queries_needed),
                    ]
                )
            lines += aligned(rows, right_from=2)
            if any(c.unknown for c in gated):
                lines.append(
                    "(-: the baseline's scores do not vary on that slice: no spread to estimate "
                    "from)"
                )
            if any(
                c.detectable_drop is not None and c.queries_needed is None and c.max_drop > 0
                for c in gated
            ):
                lines.append(
                    "(- queries for 1.5x: no count with run-to-run noise, which more queries do "
                    "not remove and more runs do)"
                )
        else:
            lines.append("no check can be gated")
        ungated = [c for c in self.checks if not c.gated]
        if ungated:
            lines += ["", f"not gated ({plural(len(ungated), 'check')}):"]
            lines += [
                f"  {one_line(c.metric)} on {one_line(c.slice)}: {one_line(c.reason)}"
                for c in ungated
            ]
        if self.untested:
            names = ", ".join(one_line(m) for m in self.untested)
            lines += ["", f"never tested for a drop (no max_drop): {names}"]
        lines += ["", *_explanation(settings)]
        return "\n".join(lines) + "\n"


def _explanation(settings: ComparisonSettings) -> list[str]:
    import textwrap

    power = f"{settings.power:.0%}"
    test = (
        f"and the one-sided paired test shows a drop at the check's level (its share of alpha "
        f"{settings.alpha:g} when it alone moves)"
        if settings.require_significance
        else "(gate.require_significance is off: no test)"
    )
    text = (
        "What the numbers mean: a check fails when its measured mean drop is past max_drop "
        f"{test}. "
        f"`detects` is the true drop the check catches with {power} power; `P(fail) 1x`, `1.5x` "
        f"and `2x` are the chances it fails when the true drop is 1, 1.5 or 2 times max_drop "
        f"(at most 50% at 1x: half the measurements of a true drop of exactly max_drop "
        f"fall short of it); `queries for 1.5x` is how many queries the slice needs to catch "
        f"1.5x max_drop with {power} power. Estimated from the baseline alone: {ASSUMPTION}."
    )
    return textwrap.wrap(text, width=96, break_on_hyphens=False)


def _family(settings: ComparisonSettings) -> str:
    if settings.correction == "none":
        return "no correction"
    name = "weighted Holm" if settings.correction == "holm" else "weighted Benjamini-Hochberg"
    return f"{name} over the gated checks (overall share {settings.overall_share:g})"


def _test(settings: ComparisonSettings) -> str:
    if settings.test == "t":
        return "one-sided paired t-test"
    return f"one-sided paired sign-flip test ({settings.resamples} resamples)"


def _chance(p: float | None, power: float) -> str:
    """A probability as a whole percentage; never 0% or 100% unless it is exactly that, nor
    `power` when it is below it (`stated_chance`)."""
    if p is None:
        return "-"
    if 0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1:
        return ">99%"
    return f"{stated_chance(p, power):.0%}"


def _times(multiple: float) -> str:
    return f"{multiple:g}x"


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}pt"


def _threshold_text(check: CheckPower) -> str:
    if check.threshold.endswith("%"):
        return f"{check.threshold} ({_points(check.max_drop)})"
    return _points(check.max_drop)


# Computation ---------------------------------------------------------------------------------


def baseline_view(
    baseline: Baseline, queries: Sequence[Query], slices: Mapping[str, IntArray]
) -> tuple[dict[str, FloatArray], dict[str, IntArray]]:
    """The baseline's scores of the labelled queries it has, in the labelled set's order, and
    the slices renumbered to them (queries the baseline lacks leave every slice). With a
    comparable baseline nothing is left out."""
    position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
    rows = np.array([position.get(query.id, -1) for query in queries], dtype=np.int64)
    kept = np.flatnonzero(rows >= 0)
    renumber = np.full(len(queries), -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size, dtype=np.int64)
    scores = {metric: np.asarray(values)[rows[kept]] for metric, values in baseline.scores.items()}
    view = {}
    for name, members in slices.items():
        moved = renumber[np.asarray(members, dtype=np.int64)]
        view[name] = moved[moved >= 0]
    return scores, view


def estimate(
    scores: Mapping[str, FloatArray],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    *,
    runs: Sequence[Mapping[str, FloatArray]] = (),
    current_runs: int = 1,
    sd_factors: Mapping[tuple[str, str], float] | None = None,
    checks: Sequence[Comparison] | None = None,
) -> tuple[CheckPower, ...]:
    """What each check with a max_drop can see, in `compare`'s order.

    `runs` are the baseline's repeated runs (aligned with `scores`), when it has them: each
    check then carries the run-to-run noise `check` will allow for, with `current_runs` runs
    of the change (gate.repeats) beside them.

    `scores` are the baseline's per-query values (one array per metric of `thresholds`) and
    `slices` index them. The checks, their sizes, which are gated and at what level come from
    `compare` itself, run on the baseline against itself (the null case): a check's family,
    level and reason depend only on the slice sizes, so they are exactly what `check` will use.
    `sd_factors` scale each (metric, slice)'s sd and `checks`, when given, replace `compare`'s
    (prediction-powered checks: `assisted.power_view`).
    """
    comparisons = (
        checks
        if checks is not None
        else compare(scores, scores, slices, thresholds, overrides, settings, strict=False)
    )
    t_test = settings.test == "t"
    found = []
    for c in comparisons:
        threshold = overrides.get(c.slice, {}).get(c.metric, thresholds[c.metric])
        if threshold.max_drop is None or c.max_drop is None:
            continue  # report-only or a floor alone: never tested for a drop
        values = np.asarray(scores[c.metric])[slices[c.slice]]
        sd = float(values.std(ddof=1)) if values.size >= 2 else None
        if sd is not None and sd_factors:
            sd *= sd_factors.get((c.metric, c.slice), 1.0)
        detectable = needed = None
        chances: tuple[float, ...] | None = (0.0,) * len(MULTIPLES)
        if c.gated and not (sd is not None and sd > 0):
            chances = None
        elif c.gated and sd is not None:
            noise = _expected_noise(runs, c.metric, slices[c.slice], current_runs)
            common: dict[str, Any] = {
                "sd": sd,
                "level": c.level if settings.require_significance else None,
                "max_drop": c.max_drop,
                "resamples": settings.resamples,
                "t_test": t_test,
                "run_variance": noise.variance if noise else 0.0,
                "run_df": noise.df if noise else None,
            }
            detectable = detectable_drop(n=c.n, power=settings.power, **common)
            # Run-wide noise does not shrink with more queries: no honest count to give.
            needed = None if noise else queries_needed(power=settings.power, **common)
            chances = tuple(fail_probability(m * c.max_drop, n=c.n, **common) for m in MULTIPLES)
        text = f"{threshold.max_drop * 100:g}" + ("%" if threshold.relative else "pt")
        found.append(
            CheckPower(
                metric=c.metric,
                slice=c.slice,
                n=c.n,
                threshold=text,
                max_drop=c.max_drop,
                sd=sd,
                level=c.level,
                detectable_drop=detectable,
                fail_probability=chances,
                queries_needed=needed,
                gated=c.gated,
                reason=c.reason,
            )
        )
    return tuple(found)


def _expected_noise(
    runs: Sequence[Mapping[str, FloatArray]], metric: str, rows: IntArray, current_runs: int
) -> RunNoise | None:
    """The noise `check` will find with `current_runs` runs of the change beside the
    baseline's `runs`: the baseline's run-to-run spread, the variance it adds to the mean
    delta, and the degrees of freedom both sides' runs will give."""
    found = run_spread((runs,), metric, rows)
    if found is None:
        return None
    spread, df = found
    return RunNoise.of(
        spread, df + max(0, current_runs - 1), reference_runs=len(runs), current_runs=current_runs
    )


def power_report(
    config: GateConfig, dataset: Dataset, baseline: Baseline, baseline_path: str | Path
) -> PowerReport:
    """What `config`'s gate can see on `dataset`, estimated from `baseline`.

    Raises NotComparableError (exit 2) naming `baseline_path` when `check` could not compare
    with it; when only the judgments changed, it is re-scored as `check` would and a warning
    says so.
    """
    from retrieval_gate.gate.policy import gate_settings, gate_thresholds
    from retrieval_gate.gate.slicing import same_as_all, same_as_all_warning, slice_queries

    baseline, warnings = _comparable(config, dataset, baseline, baseline_path)
    slicing = config.slices
    slices = slice_queries(dataset.queries, slicing.by, slicing.combine, slicing.query_length.bins)
    thresholds, overrides = gate_thresholds(config)
    unknown = sorted(set(overrides) - set(slices))
    if unknown:
        warnings.append(f"slices.overrides names slices that do not exist: {', '.join(unknown)}")
    again = same_as_all(slices)
    if again:
        warnings.append(same_as_all_warning(again, len(dataset.queries)))
    scores, view = baseline_view(baseline, dataset.queries, slices)
    runs = []
    if baseline.repeats is not None:
        for run in baseline.repeats.runs:
            aligned, _ = baseline_view(
                dataclasses.replace(baseline, scores=run), dataset.queries, {}
            )
            runs.append(aligned)
        warnings.append(
            f"the figures include the retriever's run-to-run noise, measured on the baseline's "
            f"{len(runs)} runs, with gate.repeats = {config.gate.repeats} run"
            f"{'s' if config.gate.repeats != 1 else ''} of the change"
        )
    settings = gate_settings(config)
    assisted = None
    if config.gate.labels == "human+llm":
        from retrieval_gate.gate.assisted import power_view

        assisted = power_view(
            config, dataset, baseline, scores, view, (thresholds, overrides, settings)
        )
        scores, view = assisted.scores, assisted.slices
        warnings.append(assisted.note)
        runs = []  # the assisted checks leave run-to-run noise out
        if assisted.checks is not None:
            settings = dataclasses.replace(settings, test="t")
    checks = estimate(
        scores,
        view,
        thresholds,
        overrides,
        settings,
        runs=runs,
        current_runs=config.gate.repeats,
        sd_factors=assisted.factors if assisted else None,
        checks=assisted.checks if assisted else None,
    )
    tested = {c.metric for c in checks}
    return PowerReport(
        config=str(config.path),
        baseline=str(baseline_path),
        settings=settings,
        checks=checks,
        untested=tuple(m for m in thresholds if m not in tested),
        warnings=tuple(warnings),
    )


def _comparable(
    config: GateConfig, dataset: Dataset, baseline: Baseline, path: str | Path
) -> tuple[Baseline, list[str]]:
    """`baseline` as `check` would compare with it: `gate.comparable_baseline` against what a
    run of `config` on `dataset` would record (its fingerprints; no retriever is called)."""
    from retrieval_gate.core.version import __version__
    from retrieval_gate.errors import NotComparableError
    from retrieval_gate.gate.baseline.record import Fingerprints, fingerprint_slices, make_baseline
    from retrieval_gate.gate.comparable import comparable_baseline
    from retrieval_gate.gate.slicing import slice_definition

    slicing = config.slices
    definition = slice_definition(
        slicing.by, slicing.combine, slicing.query_length.bins, slicing.min_size
    )
    metrics = tuple(str(parse_metric(key)) for key in config.metrics)
    ids = [query.id for query in dataset.queries]
    expected = make_baseline(
        fingerprints=Fingerprints(
            dataset=dataset.fingerprint,
            k=config.k,
            metrics=metrics,
            slices=fingerprint_slices(definition),
            retriever="",
            queries=dataset.queries_fingerprint,
        ),
        retriever={},
        slice_definition=definition,
        query_ids=ids,
        scores={metric: np.zeros(len(ids)) for metric in metrics},
        top_k={},
        tool_version=__version__,
        repo_dir=None,
    )
    try:
        usable, note = comparable_baseline(baseline, expected, dataset)
    except NotComparableError as error:
        raise NotComparableError(f"{path}: {error}") from None
    return usable, [note] if note else []


def enforceable_drop(check: CheckPower, settings: ComparisonSettings) -> float | None:
    """The smallest max_drop (points) with which `check`, its size and level unchanged, catches
    TARGET x max_drop with the settings' power; None when it can catch no drop.

    Its detectable drop is max(max_drop + z se, D), D the drop the test alone catches, so the
    answer is max(z se / (TARGET - 1), D / TARGET); at max_drop 0 `detectable_drop` gives z se
    without the test and max(z se, D) with it.
    """
    if check.sd is None or check.unknown or not check.gated:
        return None
    common: dict[str, Any] = {
        "sd": check.sd,
        "n": check.n,
        "max_drop": 0.0,
        "resamples": settings.resamples,
        "t_test": settings.test == "t",
        "power": settings.power,
    }
    spread = detectable_drop(level=None, **common)
    tested = detectable_drop(level=check.level if settings.require_significance else None, **common)
    if spread is None or tested is None:
        return None
    return max(spread / (TARGET - 1.0), tested / TARGET)
