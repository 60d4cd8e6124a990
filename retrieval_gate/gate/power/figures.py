"""What `retrieval-gate power` states for each check, and how it prints it: text and JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.core.wording import aligned, one_line, plural
from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.gate.power.spread import (
    ASSUMED_CORRELATION,
    RANGE,
    SHARE,
    Kind,
    RunCorrelation,
    correlations_for,
    source_note,
)
from retrieval_gate.stats.detectability import (
    OPERATING,
    TARGET,
    fails_closed,
    stated_chance,
    stated_points,
)

SCHEMA = "retrieval-gate/power"
SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Correlated:
    """A check's figures had the two runs correlated at `correlation`, from the baseline's sd."""

    correlation: float
    sd: float
    detectable_drop: float | None
    fail_probability: tuple[float, ...] | None
    """P(fail) at each of OPERATING x max_drop."""
    queries_needed: int | None
    concentrated_drop: float | None


@dataclass(frozen=True, kw_only=True)
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
    """The sd taken as that of the paired differences (from `source`); None below 2
    queries."""
    level: float | None
    """The alpha this check is tested at when it alone moves; None outside the family."""
    detectable_drop: float | None
    """The true drop (points) caught with the gate's power; None when not gated, when none
    is, or without spread to estimate from."""
    fail_probability: tuple[float, ...] | None
    """P(the check fails) at each of OPERATING x max_drop: 0 when it is not gated, None
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
    source: Kind = "assumption"
    """Where `sd` comes from: the report's data source, or the assumption when the data
    have no spread on this check."""
    concentrated_drop: float | None = None
    """The true mean drop caught with the gate's power when SHARE of the queries carry it."""
    by_correlation: tuple[Correlated, ...] = ()
    """The figures at CORRELATIONS, when `sd` is not read from real changes."""
    correlation: RunCorrelation | None = None
    """How the two sides of the source's pairs correlate on this check, when it has data."""
    fail_range: tuple[tuple[float, float], ...] | None = None
    """Under the assumption: P(fail) at each of OPERATING x max_drop, lowest and highest over
    the runs' correlations of RANGE (the single-valued figures are those at 0.5)."""

    def span(self, figure: str) -> tuple[Any, Any]:
        """A figure of `Correlated`, lowest and highest over `by_correlation` (each grows or
        falls with the correlation, so the range's ends bound it); None, where no drop is
        caught or no count given, is past every number."""
        values = [getattr(row, figure) for row in self.by_correlation]
        return min(values, key=_past_all), max(values, key=_past_all)


def _past_all(value: float | None) -> float:
    return math.inf if value is None else value


@dataclass(frozen=True, kw_only=True)
class PowerReport:
    """Every check with a max_drop, in the gate's order, and what the estimate rests on."""

    config: str
    baseline: str
    settings: ComparisonSettings
    checks: tuple[CheckPower, ...]
    untested: tuple[str, ...]
    """Metrics without a max_drop anywhere: never tested for a drop."""
    warnings: tuple[str, ...]
    source: Kind = "assumption"
    source_label: str = ""
    """What the data source is (a file, main's merges, the baseline's runs); "" for none."""

    @property
    def note(self) -> str:
        """What the figures rest on."""
        return source_note(self.source, self.source_label)

    def document(self) -> dict[str, Any]:
        """The JSON document: settings, the assumption, one object per check."""
        settings = self.settings
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "config": self.config,
            "baseline": self.baseline,
            "assumption": self.note,
            "spread": {
                "source": self.source,
                "from": self.source_label or None,
                "assumed_correlation": ASSUMED_CORRELATION,
                "range": list(RANGE) if self.source == "assumption" else None,
                "correlations": list(correlations_for(self.source)),
                "concentrated_share": SHARE,
            },
            "power": settings.power,
            "multiples": list(OPERATING),
            "settings": {
                "alpha": settings.alpha,
                "correction": settings.correction,
                "test": settings.test,
                "resamples": settings.resamples,
                "require_significance": settings.require_significance,
                "min_size": settings.min_size,
                "overall_share": settings.overall_share,
                "rule": settings.rule,
                "on_inconclusive": settings.on_inconclusive,
            },
            "checks": [
                {
                    "metric": c.metric,
                    "slice": c.slice,
                    "n": c.n,
                    "threshold": c.threshold,
                    "max_drop": c.max_drop,
                    "sd": c.sd,
                    "sd_source": c.source,
                    "level": c.level,
                    "detectable_drop": c.detectable_drop,
                    "detectable_drop_concentrated": c.concentrated_drop,
                    "correlation": _correlation_document(c.correlation),
                    "range": _range_document(c),
                    "by_correlation": [
                        {
                            "correlation": r.correlation,
                            "sd": r.sd,
                            "detectable_drop": r.detectable_drop,
                            "detectable_drop_concentrated": r.concentrated_drop,
                            "queries_needed": r.queries_needed,
                            "fail_probability": _chances_document(r.fail_probability),
                        }
                        for r in c.by_correlation
                    ],
                    "fail_probability": None
                    if c.fail_probability is None
                    else [
                        {"multiple": m, "drop": m * c.max_drop, "probability": p}
                        for m, p in zip(OPERATING, c.fail_probability, strict=True)
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
            f"sd of the differences: {_source_line(self.source, self.source_label)}",
            *_run_correlation_line(self.source, gated),
            "",
        ]
        if gated:
            header = ["metric", "slice", "n", "max_drop", "level", "sd", f"detects ({power})"]
            header.append(f"if {SHARE:.0%} carry it")
            header += [
                f"P(fail) {_times(m)}" if i == 0 else _times(m) for i, m in enumerate(OPERATING)
            ]
            header.append(f"queries for {_times(TARGET)}")
            rows = [header]
            rows += [_row(c, settings, "*" if c.source != self.source else "") for c in gated]
            lines += aligned(rows, right_from=2)
            if any(c.source != self.source for c in gated):
                lines.append(
                    "(*: the data do not vary on that check: its figures are the assumption's "
                    "ranges)"
                )
            if any(c.fail_range is not None for c in gated):
                lines.append(
                    f"(each figure is its range over runs correlating {RANGE[0]:g} to "
                    f"{RANGE[1]:g}: no data to read how they correlate from)"
                )
            if any(c.concentrated_drop is None and c.detectable_drop is not None for c in gated):
                lines.append(
                    f"(- if {SHARE:.0%} carry it: no drop those queries can lose is caught with "
                    f"{power} power)"
                )
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
            lines += _correlation_lines(gated, settings.power, self.source)
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
        lines += ["", *_explanation(settings, one_line(self.note))]
        return "\n".join(lines) + "\n"


def _correlation_document(found: RunCorrelation | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "value": found.value,
        "pairs": found.pairs,
        "lowest": found.lowest,
        "highest": found.highest,
    }


def _chances_document(chances: tuple[float, ...] | None) -> list[dict[str, float]] | None:
    if chances is None:
        return None
    return [{"multiple": m, "probability": p} for m, p in zip(OPERATING, chances, strict=True)]


def _range_document(check: CheckPower) -> dict[str, Any] | None:
    """Under the assumption, each figure's lowest and highest over RANGE."""
    if check.fail_range is None or not check.by_correlation:
        return None
    return {
        "correlations": list(RANGE),
        "sd": list(check.span("sd")),
        "detectable_drop": list(check.span("detectable_drop")),
        "detectable_drop_concentrated": list(check.span("concentrated_drop")),
        "queries_needed": list(check.span("queries_needed")),
        "fail_probability": [
            {"multiple": m, "lowest": low, "highest": high}
            for m, (low, high) in zip(OPERATING, check.fail_range, strict=True)
        ],
    }


def _row(check: CheckPower, settings: ComparisonSettings, marker: str) -> list[str]:
    """A gated check's cells: its figures, or under the assumption their ranges."""
    c, power = check, settings.power
    cells = [
        one_line(c.metric),
        one_line(c.slice),
        str(c.n),
        _threshold_text(c),
        f"{c.level:.2g}" if c.level and settings.require_significance else "-",
    ]
    if c.fail_range is not None and c.by_correlation:
        low, high = c.span("sd")
        drops = [_drop(value, c.max_drop) for value in c.span("detectable_drop")]
        carried = [_points(value) for value in c.span("concentrated_drop")]
        needed = ["-" if value is None else str(value) for value in c.span("queries_needed")]
        return [
            *cells,
            f"{low * 100:.1f}-{_points(high)}{marker}",
            _between(*drops),
            _between(*carried),
            *(_between(_chance(a, power), _chance(b, power)) for a, b in c.fail_range),
            _between(*needed),
        ]
    return [
        *cells,
        _points(c.sd) + marker,
        _drop(c.detectable_drop, c.max_drop),
        _points(c.concentrated_drop),
        *(_chance(p, power) for p in c.fail_probability or (None,) * len(OPERATING)),
        "-" if c.queries_needed is None else str(c.queries_needed),
    ]


def _drop(value: float | None, max_drop: float) -> str:
    return "-" if value is None else f"{stated_points(value, max_drop)}pt"


def _between(low: str, high: str) -> str:
    """Two cells' range: one when they read alike, `-` (none) kept as `none` at the top."""
    if low == high:
        return low
    if high == "-":
        return f"{low}-none"
    if high == ">99%" and low[0].isdigit():
        return f"{low}+"  # from `low` to nearly certain
    unit = next((u for u in ("pt", "%") if low.endswith(u) and low[0].isdigit()), "")
    return f"{low.removesuffix(unit) if high.endswith(unit) else low}-{high}"


def _run_correlation_line(kind: Kind, gated: Sequence[CheckPower]) -> list[str]:
    """How the data's runs correlate query by query on each overall check, when measured."""
    found = [(c.metric, c.correlation) for c in gated if c.slice == "all" and c.correlation]
    if not found:
        return []
    items = []
    for metric, r in found:
        spread = f" ({r.lowest:.2f}-{r.highest:.2f})" if r.pairs > 1 else ""
        items.append(f"{one_line(metric)} {r.value:.2f}{spread}")
    pairs = max(r.pairs for _, r in found)
    what = {
        "run": "the run and the baseline",
        "history": f"consecutive records, pooled over {plural(pairs, 'pair')} (single pairs' "
        "range in brackets)",
        "repeats": f"the baseline's runs, pooled over {plural(pairs, 'pair')}: a change "
        "correlates less",
    }.get(kind, "the runs")
    return [f"correlation of {what}: {', '.join(items)}"]


def _source_line(kind: Kind, label: str) -> str:
    if kind == "run":
        return f"measured between {one_line(label)} and the baseline"
    if kind == "history":
        return f"measured between {one_line(label)}"
    if kind == "repeats":
        return f"measured between {one_line(label)} (the noise floor: a lower bound)"
    return (
        f"not measured: the baseline's sd x sqrt(2 (1 - correlation)) for runs correlating "
        f"{RANGE[0]:g} to {RANGE[1]:g}"
    )


def _correlation_lines(gated: Sequence[CheckPower], power: float, kind: Kind) -> list[str]:
    """The overall checks' figures at each of CORRELATIONS, when the sd was not measured on
    real changes (the JSON has every check's)."""
    shown = [c for c in gated if c.by_correlation and c.slice == "all"]
    if not shown:
        return []
    header = ["metric", "slice"] + [
        f"correlation {r.correlation:g}" for r in shown[0].by_correlation
    ]
    rows = [header]
    at = OPERATING.index(TARGET)
    for c in shown:
        cells = [one_line(c.metric), one_line(c.slice)]
        for r in c.by_correlation:
            chance = None if r.fail_probability is None else r.fail_probability[at]
            cells.append(f"{_drop(r.detectable_drop, c.max_drop)} ({_chance(chance, power)})")
        rows.append(cells)
    if kind == "assumption":
        lead = "at each correlation of the runs"
    else:
        lead = "with the sd the baseline's scores give at each correlation of the runs"
    return [
        "",
        f"{lead}: the drop detected with {power:.0%} power (P(fail) at {_times(TARGET)} max_drop):",
        *aligned(rows, right_from=2),
    ]


def _explanation(settings: ComparisonSettings, note: str) -> list[str]:
    import textwrap

    power = f"{settings.power:.0%}"
    share = f"at the check's level (its share of alpha {settings.alpha:g} when it alone moves)"
    if not settings.require_significance:
        rule = "its measured mean drop is past max_drop (gate.require_significance is off: no test)"
    elif settings.rule == "evidence-of-excess":
        rule = (
            f"a one-sided paired test shows the drop is past max_drop {share} (evidence-of-excess)"
        )
    elif fails_closed(settings.rule, settings.on_inconclusive):
        rule = (
            f"a one-sided paired test does not show the drop is within max_drop {share} "
            "(non-inferiority, on_inconclusive: fail); as other checks show theirs its level "
            "grows, so `detects` and P(fail) are stated at the most it can get, the least it "
            "fails"
        )
    elif settings.rule == "non-inferiority":
        rule = f"a one-sided paired test shows the drop is past max_drop {share} (non-inferiority)"
    else:
        rule = (
            "its measured mean drop is past max_drop and the one-sided paired test shows a "
            f"drop {share}"
        )
    text = (
        f"What the numbers mean: a check fails when {rule}. "
        f"`sd` is the per-query sd of the paired differences the figures use. `detects` is the "
        f"true drop the check catches with {power} power when every query moves alike, `if "
        f"{SHARE:.0%} carry it` when {SHARE:.0%} of the queries carry the whole drop (it widens "
        f"the differences, so the test needs more); `P(fail) 0x` to `2x` are the least chances "
        f"it fails when the true drop is 0 to 2 times max_drop (0x: its false alarm alone; at "
        f"most 50% at 1x: half the measurements of a true drop of exactly max_drop fall short of "
        f"it); `queries for 1.5x` is how many queries the slice needs to catch 1.5x max_drop "
        f"with {power} power. The sd: {note}."
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
    if 0 < p <= 0.005:  # 0.005 itself rounds to 0%
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
