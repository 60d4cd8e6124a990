"""The main branch's trend of a metric with this PR's value on it: sparkline, SVG, wording."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from markupsafe import Markup

if TYPE_CHECKING:
    from retrieval_gate.gate.checks.compare import Comparison
    from retrieval_gate.history.record import TrendPoint
    from retrieval_gate.report.document import ResultRecord, TrendPointRecord

__all__ = [
    "MARKERS_MAX",
    "SPARK_WIDTH",
    "TrendView",
    "describe",
    "sparkline",
    "trend_svg",
    "trend_views",
    "with_trend",
]

BLOCKS = "▁▂▃▄▅▆▇█"
"""The sparkline's eight levels, lowest first."""
GAP = "·"
"""A sparkline bar without a value (every point it stands for had none)."""
OUTSIDE = {"below": "↓", "above": "↑"}
"""This PR's mark on a sparkline when its value is outside main's range."""
SPARK_WIDTH = 60
"""Most bars of a Markdown sparkline: longer histories are averaged into this many, so a
PR comment stays small whatever the history's length."""
MARKERS_MAX = 120
"""Most main points the SVG marks one by one (each with its commit as a tooltip); longer
histories are drawn as the line alone."""
SHORT = 12
"""Characters of a commit shown, as in the report footer."""
PLACES = 4
"""Decimals of a metric value, as the reports show means (filters.mean)."""
Position = Literal["below", "above", "within", "unknown"]


@dataclass(frozen=True, kw_only=True)
class TrendView:
    """One metric's trend as every report shows it: numbers and raw strings (each template
    escapes them), the sparkline, and where this PR's value falls."""

    metric: str
    branch: str
    points: tuple[TrendPointRecord, ...]
    """Oldest first, as recorded; a point's value may be None (missing or not a number)."""
    values: tuple[float | None, ...]
    low: float | None
    """The lowest of main's values, None when none has one."""
    high: float | None
    current: float | None
    """This PR's overall mean of the metric, None when the run has none."""
    position: Position
    failing: bool
    """Whether the metric has a failing check in this result."""
    spark: str
    """Main's sparkline, oldest first, on the scale of main's own range."""
    spark_pr: str
    """This PR's bar on that scale, an OUTSIDE arrow off it, empty without a value."""
    per_bar: tuple[int, int]
    """Fewest and most points a bar stands for: (1, 1) when each bar is one point."""

    @property
    def count(self) -> int:
        """Points in the history shown."""
        return len(self.points)

    @property
    def missing(self) -> int:
        """Points without a value."""
        return sum(1 for v in self.values if v is None)

    @property
    def newest(self) -> TrendPointRecord | None:
        """The most recent point, None for an empty history."""
        return self.points[-1] if self.points else None

    @property
    def flat(self) -> bool:
        """Whether main's lowest and highest values read the same as shown (4 decimals)."""
        if self.low is None or self.high is None:
            return False
        return round(self.low, PLACES) == round(self.high, PLACES)

    @property
    def downsampled(self) -> bool:
        """Whether a sparkline bar stands for more than one point."""
        return self.per_bar[1] > 1


def with_trend(
    document: Mapping[str, Any],
    trend: Mapping[str, Sequence[TrendPoint | Mapping[str, Any]]],
    *,
    branch: str = "main",
    last: int | None = None,
) -> dict[str, Any]:
    """`document` (a result, `GateResult.document()`) with a `trend` section: per metric of
    `trend` that the result compares overall, its points on `branch`, oldest first (the last
    `last` of them when given). Values that are not finite numbers are kept as null (shown
    as missing). Without any such metric the document is returned without a `trend` key, so
    reports show none; the input is never modified."""
    compared = [
        c.get("metric")
        for c in document.get("comparisons") or []
        if isinstance(c, Mapping) and c.get("slice") == "all"
    ]
    given = {_canonical(str(metric)): points for metric, points in trend.items()}
    series = []
    for metric in dict.fromkeys(m for m in compared if isinstance(m, str)):
        points = given.get(_canonical(metric))
        if points is None:
            continue
        kept = list(points)[-last:] if last is not None and last > 0 else list(points)
        series.append({"metric": metric, "points": [_point(p) for p in kept]})
    out = {key: value for key, value in document.items() if key != "trend"}
    if series:
        out["trend"] = {"branch": str(branch), "series": series}
    return out


def _canonical(metric: str) -> str:
    """`metric` in its canonical form when it parses (`NDCG@10` -> `ndcg@10`), else as is."""
    from retrieval_gate.errors import GateError
    from retrieval_gate.metrics import parse_metric

    try:
        return str(parse_metric(metric))
    except GateError:
        return metric


def _point(point: TrendPoint | Mapping[str, Any]) -> dict[str, Any]:
    """One point as the document holds it: a non-finite or non-numeric value becomes null."""
    # history.record's TrendPoint (a frozen dataclass; not imported: reports never need the
    # history package), or the same fields as a mapping.
    fields: Mapping[str, Any] = point if isinstance(point, Mapping) else vars(point)
    commit, pr = fields.get("commit", ""), fields.get("pr")
    time, value = fields.get("time", ""), fields.get("value")
    number = _finite(value)
    return {
        "commit": str(commit),
        "pr": pr if isinstance(pr, int) and not isinstance(pr, bool) else None,
        "time": str(time),
        "value": number,
    }


def _finite(value: object) -> float | None:
    """`value` as a finite float, else None (NaN, infinities, None, text, booleans)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def trend_views(result: ResultRecord) -> list[TrendView]:
    """The trends a report shows: the primary metric (the first gated one) and each metric
    with a failing check, in that order; empty without a `trend` section."""
    if result.trend is None:
        return []
    overall = {c.metric: c for c in result.comparisons if c.slice == "all"}
    primary = _primary(result.comparisons)
    failing = list(dict.fromkeys(c.metric for c in result.failures))
    wanted = list(dict.fromkeys([*([primary] if primary else []), *failing]))
    series = {s.metric: s for s in result.trend.series}
    views = []
    for metric in wanted:
        if metric not in series:
            continue
        check = overall.get(metric)
        current = _finite(check.current_mean) if check is not None and check.n else None
        views.append(
            _view(metric, result.trend.branch, series[metric].points, current, metric in failing)
        )
    return views


def _primary(comparisons: Sequence[Comparison]) -> str | None:
    """The first gated overall metric, else the first overall one."""
    overall = [c for c in comparisons if c.slice == "all"]
    gated = [c for c in overall if c.gated and c.verdict is not None]
    chosen = gated or overall
    return chosen[0].metric if chosen else None


def _view(
    metric: str,
    branch: str,
    points: Sequence[TrendPointRecord],
    current: float | None,
    failing: bool,
) -> TrendView:
    values = tuple(_finite(p.value) for p in points)
    known = [v for v in values if v is not None]
    low, high = (min(known), max(known)) if known else (None, None)
    position: Position = "unknown"
    if current is not None and low is not None and high is not None:
        # Compared as shown (4 decimals): "0.5911, above 0.5911" would contradict itself.
        shown, bottom, top = round(current, PLACES), round(low, PLACES), round(high, PLACES)
        position = "below" if shown < bottom else "above" if shown > top else "within"
    bars, per_bar = _buckets(values, SPARK_WIDTH)
    # Main's own range is the scale, so its movement shows however far off this PR is; a PR
    # outside that range is an arrow (the sentence beside it gives the number).
    scale = [v for v in bars if v is not None]
    spark_pr = "" if current is None else OUTSIDE.get(position) or sparkline([current], scale=scale)
    return TrendView(
        metric=metric,
        branch=branch,
        points=tuple(points),
        values=values,
        low=low,
        high=high,
        current=current,
        position=position,
        failing=failing,
        spark=sparkline(bars, scale=scale),
        spark_pr=spark_pr,
        per_bar=per_bar,
    )


def _buckets(
    values: Sequence[float | None], width: int
) -> tuple[list[float | None], tuple[int, int]]:
    """`values` averaged into at most `width` consecutive buckets of near-equal size (a bucket
    without any value is None), and the fewest and most values a bucket holds."""
    count = len(values)
    if count <= width:
        return list(values), (1, 1) if count else (0, 0)
    edges = [i * count // width for i in range(width + 1)]
    bars: list[float | None] = []
    for start, end in itertools.pairwise(edges):
        known = [v for v in values[start:end] if v is not None]
        bars.append(math.fsum(known) / len(known) if known else None)
    sizes = [end - start for start, end in itertools.pairwise(edges)]
    return bars, (min(sizes), max(sizes))


def sparkline(values: Sequence[float | None], *, scale: Sequence[float] = ()) -> str:
    """`values` as block characters ▁..█ between the lowest and highest of `scale` (default:
    the values themselves); None is GAP; a flat scale gives the middle block."""
    known = [v for v in values if v is not None]
    bounds = list(scale) or known
    if not bounds:
        return GAP * len(values)
    low, high = min(bounds), max(bounds)
    top = len(BLOCKS) - 1
    out = []
    for value in values:
        if value is None:
            out.append(GAP)
        elif high - low <= 0:
            out.append(BLOCKS[top // 2])
        else:
            level = round((value - low) / (high - low) * top)
            out.append(BLOCKS[max(0, min(top, level))])
    return "".join(out)


# --------------------------------------------------------------------------------------------
# The HTML chart
# --------------------------------------------------------------------------------------------

WIDTH, HEIGHT = 880, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 150, 16, 44
"""Margins: y tick labels on the left; this PR's point and its label on the right."""
_COLOURS = {"below": "#d1242f", "above": "#1a7f37", "within": "#1f2328", "unknown": "#59636e"}
_MAIN = "#0969da"
NO_VALUE = "\u00d7"  # multiplication sign: a merge without a value, on the axis


@dataclass(frozen=True, kw_only=True)
class _Scale:
    """The y range of a chart and its round ticks."""

    low: float
    high: float
    ticks: tuple[float, ...]
    places: int

    def y(self, value: float) -> float:
        plot = HEIGHT - TOP - BOTTOM
        return TOP + (self.high - value) / (self.high - self.low) * plot


def _scale(values: Sequence[float]) -> _Scale:
    """A range holding `values` with 3 to 6 round ticks (a flat or empty one is widened)."""
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    # A margin, so no point sits on the frame (where the axis and its labels are).
    pad = (high - low) * 0.08 if high > low else max(abs(high) * 0.05, 0.01)
    low, high = low - pad, high + pad
    step = _tick_step(high - low)
    low = math.floor(low / step + 1e-9) * step
    high = math.ceil(high / step - 1e-9) * step
    if high - low < step:
        high = low + step
    count = round((high - low) / step)
    places = max(0, -math.floor(math.log10(step) + 1e-9))
    ticks = tuple(round(low + i * step, places + 2) for i in range(count + 1))
    return _Scale(low=low, high=high, ticks=ticks, places=places)


def _tick_step(span: float) -> float:
    """1, 2 or 5 times a power of ten, giving at most 6 steps over `span`."""
    power = 10.0 ** math.floor(math.log10(span / 3))
    for factor in (1, 2, 5, 10):
        if span / (factor * power) <= 6:
            return factor * power
    return 10 * power


def _num(value: float, places: int = PLACES) -> str:
    return f"{value:.{places}f}"


def _label(point: TrendPointRecord) -> str:
    """A point's commit (shortened) and pull request, as chart text (escaped by the caller)."""
    text = " ".join(point.commit.split())[:SHORT] or "?"
    return f"{text} #{point.pr}" if point.pr is not None else text


def trend_svg(view: TrendView, index: int = 0) -> Markup:
    """`view` as a self-contained inline SVG line chart: main's values oldest to newest, the
    band of main's range, and this PR's value as a distinct diamond past the newest. `index`
    keeps the ids of several charts on one page apart. Every text is escaped."""
    plot_w = WIDTH - LEFT - RIGHT
    known = [v for v in view.values if v is not None]
    scale = _scale([*known, *([view.current] if view.current is not None else [])])
    ident = f"trend-{index}"
    title = f"{view.metric} on {view.branch}: {_merges(view.count, 'the last ')}, and this PR"
    parts = [
        Markup(
            '<svg role="img" aria-labelledby="{0}-title {0}-desc" width="{1}" height="{2}" '
            'viewBox="0 0 {1} {2}" xmlns="http://www.w3.org/2000/svg">'
        ).format(ident, WIDTH, HEIGHT),
        Markup('<title id="{}-title">{}</title>').format(ident, title),
        Markup('<desc id="{}-desc">{}</desc>').format(ident, describe(view)),
    ]
    bottom = HEIGHT - BOTTOM
    for tick in scale.ticks:
        y = scale.y(tick)
        parts.append(
            Markup(
                '<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#eef1f4"/>'
                '<text x="{3}" y="{4:.1f}" text-anchor="end">{5}</text>'
            ).format(LEFT, y, WIDTH - RIGHT + 90, LEFT - 6, y + 4, _num(tick, scale.places))
        )
    parts.append(
        Markup(
            '<text transform="translate(12 {0:.1f}) rotate(-90)" text-anchor="middle" '
            'class="label">{1}</text>'
        ).format(TOP + (bottom - TOP) / 2, view.metric)
    )
    if view.low is not None and view.high is not None:
        top_y, low_y = scale.y(view.high), scale.y(view.low)
        parts.append(
            Markup(
                '<rect x="{0}" y="{1:.1f}" width="{2}" height="{3:.1f}" fill="#ddf4ff">'
                "<title>main's range: {4} to {5}</title></rect>"
            ).format(
                LEFT,
                top_y,
                WIDTH - RIGHT + 90 - LEFT,
                max(low_y - top_y, 1.0),
                _num(view.low),
                _num(view.high),
            )
        )
    xs = _xs(view.count, plot_w)
    for segment in _segments(view.values):
        coords = " ".join(f"{xs[i]:.1f},{scale.y(v):.1f}" for i, v in segment)
        if len(segment) == 1:
            continue  # a lone value between gaps gets its marker, or none when there are many
        parts.append(
            Markup('<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5"/>').format(
                coords, _MAIN
            )
        )
    if view.count <= MARKERS_MAX:
        for i, (point, value) in enumerate(zip(view.points, view.values, strict=True)):
            if value is None:
                parts.append(
                    Markup(
                        '<text x="{0:.1f}" y="{1}" text-anchor="middle">{2}<title>{3}'
                        "{4}: no value</title></text>"
                    ).format(xs[i], bottom - 4, NO_VALUE, _label(point), _when(point))
                )
                continue
            parts.append(
                Markup(
                    '<circle cx="{0:.1f}" cy="{1:.1f}" r="2.5" fill="{2}"><title>{3}{4}: {5}'
                    "</title></circle>"
                ).format(xs[i], scale.y(value), _MAIN, _label(point), _when(point), _num(value))
            )
    sep = LEFT + plot_w + 30
    parts.append(
        Markup(
            '<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#59636e" stroke-dasharray="3 3"/>'
        ).format(sep, TOP, bottom)
    )
    pr_x = sep + 30
    if view.current is not None:
        y = scale.y(view.current)
        colour = _COLOURS[view.position]
        parts.append(
            Markup(
                '<path d="M{0:.1f} {1:.1f} l7 7 l-7 7 l-7 -7 z" fill="{2}" stroke="#fff">'
                "<title>this PR: {3}, {4}</title></path>"
                '<text x="{5:.1f}" y="{6:.1f}" class="label" style="fill: {2}">{3}</text>'
            ).format(
                pr_x,
                y - 7,
                colour,
                _num(view.current),
                _where(view),
                pr_x + 11,
                y + 4,
            )
        )
    # The x axis: the oldest and newest commits under the line, this PR under its point.
    parts.append(
        Markup('<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#d1d9e0"/>').format(
            LEFT, bottom, WIDTH - RIGHT + 90
        )
    )
    if view.points:
        first, last = view.points[0], view.points[-1]
        lone = view.count == 1
        parts.append(
            Markup('<text x="{:.1f}" y="{}" text-anchor="{}">{}</text>').format(
                xs[0], bottom + 14, "middle" if lone else "start", _label(first)
            )
        )
        if view.count > 1:
            parts.append(
                Markup('<text x="{}" y="{}" text-anchor="end">{}</text>').format(
                    LEFT + plot_w, bottom + 14, _label(last)
                )
            )
    parts.append(
        Markup('<text x="{}" y="{}" text-anchor="middle">this PR</text>').format(pr_x, bottom + 14)
    )
    axis = (
        f"{_merges(view.count)} on {view.branch}, oldest to newest"
        if view.count
        else f"no merges recorded on {view.branch}"
    )
    parts.append(
        Markup('<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>').format(
            LEFT + plot_w / 2, bottom + 32, axis
        )
    )
    parts.append(Markup("</svg>"))
    return Markup("\n").join(parts)


def _merges(count: int, the_last: str = "") -> str:
    """`3 merges`, `the last 3 merges`; one is `1 merge`, `the last merge`."""
    if count == 1:
        return f"{the_last}merge" if the_last else "1 merge"
    return f"{the_last}{count} merges"


def _xs(count: int, width: float) -> list[float]:
    """x of each main point: spread over `width`, a single one in the middle."""
    if count == 1:
        return [LEFT + width / 2]
    return [LEFT + i * width / (count - 1) for i in range(count)]


def _segments(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Runs of consecutive values (index, value), split where a value is missing."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, value))
    return [run for run in runs if run]


def _when(point: TrendPointRecord) -> str:
    return f", {' '.join(point.time.split())}" if point.time.strip() else ""


def _where(view: TrendView) -> str:
    """Where this PR's value falls, as a phrase."""
    if view.position == "unknown":
        return "main has no value to compare with"
    if view.count == 1 or view.flat:
        return {"below": "below main", "above": "above main", "within": "equal to main"}[
            view.position
        ]
    return {"below": "below", "above": "above", "within": "within"}[view.position] + (
        " main's range"
    )


def describe(view: TrendView) -> str:
    """The trend in one plain sentence (the SVG's description; templates word their own)."""
    if view.low is None or view.high is None:
        main = f"{view.branch} has no recorded value of {view.metric}"
    elif view.count == 1:
        main = f"{view.branch} was {_num(view.low)} at its last merge"
    elif view.flat:
        main = f"{view.branch} stayed at {_num(view.low)} over {_merges(view.count, 'the last ')}"
    else:
        main = (
            f"{view.branch} moved within {_num(view.low)}-{_num(view.high)} over "
            f"{_merges(view.count, 'the last ')}"
        )
    pr = "no value" if view.current is None else f"{_num(view.current)}, {_where(view)}"
    return f"{view.metric}: {main}; this PR: {pr}"
