"""The forest plot: each gated check's delta and interval against 0 and its threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval_gate.core.wording import one_line
from retrieval_gate.gate.checks.compare import Comparison

_ORDER = {"regressed": 0, "below_floor": 0, "inconclusive": 1, "pass": 2, "improved": 3}


@dataclass(frozen=True, kw_only=True)
class Row:
    """One check on the plot, its numbers in points and its x positions on the plot's scale."""

    check: Comparison
    label: str
    delta: float
    low: float | None
    high: float | None
    threshold: float | None
    """-max_drop in points: the line a drop must cross to fail."""


@dataclass(frozen=True, kw_only=True)
class Axis:
    """The plot's range in points and its ticks."""

    low: float
    high: float
    ticks: tuple[float, ...]

    def position(self, value: float, width: float) -> float:
        """`value` (points) as a distance from the left edge of a plot `width` wide."""
        return (value - self.low) / (self.high - self.low) * width


def forest_rows(comparisons: Sequence[Comparison], limit: int | None = None) -> list[Row]:
    """The gated checks with a max_drop, failing first, then inconclusive, then the rest;
    within each, overall checks first, then the farthest past (or nearest to) its
    threshold. `limit` keeps the top rows, overall checks always among them."""
    # One axis in points, worse to the left: checks in their own units or where lower is
    # better (latency, cost) are in the tables only.
    checks = [
        c
        for c in comparisons
        if c.gated and c.max_drop is not None and c.n and not c.unit and c.direction == "higher"
    ]
    checks.sort(
        key=lambda c: (not c.failed, _ORDER.get(str(c.verdict), 4), c.slice != "all", _margin(c))
    )
    if limit is not None and len(checks) > limit:
        overall = [c for c in checks if c.slice == "all"]
        rest = [c for c in checks if c.slice != "all"][: max(0, limit - len(overall))]
        kept = {id(c) for c in overall + rest}
        checks = [c for c in checks if id(c) in kept]
    return [
        Row(
            check=c,
            label=c.metric if c.slice == "all" else f"{c.metric} {c.slice}",
            delta=c.delta * 100,
            low=None if c.ci_low is None else c.ci_low * 100,
            high=None if c.ci_high is None else c.ci_high * 100,
            threshold=None if c.max_drop is None else -c.max_drop * 100,
        )
        for c in checks
    ]


def _margin(c: Comparison) -> float:
    """How far the drop is past the threshold, negated (sorts the farthest first)."""
    return c.gain + (c.max_drop or 0.0)


def forest_axis(rows: Sequence[Row]) -> Axis:
    """A range holding 0, every threshold and interval, with round ticks."""
    values = [0.0]
    for row in rows:
        values += [v for v in (row.delta, row.low, row.high, row.threshold) if v is not None]
    low, high = min(values), max(values)
    step = _tick_step(high - low)
    low = math.floor(low / step) * step
    high = math.ceil(high / step) * step
    if high - low < step:
        high = low + step
    count = round((high - low) / step)
    return Axis(
        low=low, high=high, ticks=tuple(round(low + i * step, 10) for i in range(count + 1))
    )


def _tick_step(span: float) -> float:
    """1, 2 or 5 times a power of ten, giving 3 to 8 ticks over `span` points."""
    if span <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(span / 4))
    for factor in (1, 2, 5, 10):
        if span / (factor * power) <= 8:
            return factor * power
    return 10 * power


def forest_text(rows: Sequence[Row], *, width: int = 40, label: int = 30) -> list[str]:
    """The plot as monospace lines for a code block: per row its label, then `width` columns
    with the interval `─`, the delta `●`, 0 `│` and the threshold `┊`, then the verdict.
    Labels are put on one line and cut to `label` characters, controls made visible and backticks
    replaced, so nothing in them can end the code block."""
    if not rows:
        return []
    axis = forest_axis(rows)
    scale = width - 1

    def column(value: float) -> int:
        return max(0, min(scale, round(axis.position(value, scale))))

    header = [" "] * width
    for tick in axis.ticks:
        text = f"{tick:+g}" if tick else "0"
        start = min(max(0, column(tick) - len(text) // 2), width - len(text))
        if all(ch == " " for ch in header[max(0, start - 1) : start + len(text) + 1]):
            header[start : start + len(text)] = text
    lines = [f"{'':<{label}}  {''.join(header).rstrip()}".rstrip()]
    for row in rows:
        cells = [" "] * width
        if row.low is not None and row.high is not None:
            for i in range(column(row.low), column(row.high) + 1):
                cells[i] = "─"
        if row.threshold is not None:
            cells[column(row.threshold)] = "┊"
        cells[column(0.0)] = "│"
        cells[column(row.delta)] = "●"
        name = one_line(row.label).replace("`", "'")
        name = name if len(name) <= label else name[: label - 1] + "…"
        verdict = str(row.check.verdict).replace("_", " ")
        lines.append(f"{name:<{label}}  {''.join(cells)}  {verdict}")
    lines.append(f"{'':<{label}}  ● delta  ─ 95% CI  │ 0  ┊ threshold (points)")
    return lines
