"""The one context dict every report template renders, built from a validated result."""

from __future__ import annotations

import dataclasses
from typing import Any

from retrieval_gate.config.schema import includes_llm
from retrieval_gate.config.unlabelled import PREFIX
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.explain.label_holes import LabelHole
from retrieval_gate.report.document import JudgeRecord, ResultRecord
from retrieval_gate.report.forest import forest_axis, forest_rows, forest_text
from retrieval_gate.report.trend import trend_views
from retrieval_gate.stats.detectability import short_of_target

FOREST_ROWS = 12
FAILURES_SHOWN = 20
"""Failing checks the Markdown report and the console list before counting the rest."""
"""Rows of the forest plot drawn as text in the Markdown report (the HTML draws them all)."""
NOT_COMPARABLE_SHOWN = 20
"""Queries left out for a corpus change that the reports list (the JSON result has all)."""
REASONS_SHOWN = 3
"""Changed documents named per query left out."""
SECTIONS = ("slices", "warnings", "chart", "queries", "stages")
"""Sections the Markdown may drop to fit a comment, in the order they are dropped: the slice
table first, the one that grows without bound (its failing rows are also listed above it)."""
_INF = float("inf")
HISTOGRAM_BINS = (
    (-_INF, -20.0),
    (-20.0, -10.0),
    (-10.0, -5.0),
    (-5.0, 0.0),
    (0.0, 0.0),
    (0.0, 5.0),
    (5.0, 10.0),
    (10.0, 20.0),
    (20.0, _INF),
)
"""Per-query change histogram bins in points; (0, 0) holds the unchanged queries."""
_VERDICT_ORDER = {
    "regressed": 0,
    "below_floor": 0,
    "inconclusive": 1,
    "pass": 2,
    "improved": 3,
    None: 4,  # report only
}
_GATE_DEFAULTS: dict[str, Any] = {
    "alpha": 0.05,
    "correction": "holm",
    "test": "randomization",
    "require_significance": True,
    "power": 0.8,
    "on_inconclusive": "pass",
    "overall_share": 0.5,
    "rule": "significant-drop",
}
"""Gate settings the reports describe, as ComparisonSettings defaults them."""


def report_context(result: ResultRecord) -> dict[str, Any]:
    """Everything the templates show, ordered as shown; values stay numbers and raw strings.
    Built once per record (a check renders four formats and a summary of one); each call
    gets its own `show` and `cut`, which Markdown's trimming changes."""
    if result._context is None:  # the record is frozen: what it shows cannot change
        result._context = _context(result)
    return {**result._context, "show": dict.fromkeys(SECTIONS, True), "cut": []}


def _context(result: ResultRecord) -> dict[str, Any]:
    comparisons = result.comparisons
    overall = [c for c in comparisons if c.slice == "all"]
    slices = _slice_rows(comparisons)
    inconclusive = [c for c in comparisons if _inconclusive(c) and not c.failed]
    primary = overall[0].metric if overall else None
    # The per-query chart shows the metric of the worst failure, else the first metric.
    labelled = [c for c in result.failures if not c.metric.startswith(PREFIX)]
    charted = labelled[0].metric if labelled else primary
    deltas = _query_deltas(result, charted)
    forest = forest_rows(comparisons)
    apart = {c.metric: c.reason for c in overall if not c.gated}
    gate = {**_GATE_DEFAULTS, **(result.config.gate if result.config else {})}
    return {
        "name": result.name,
        "status": result.status,
        "error": result.error,
        "comparisons": comparisons,
        "failures": result.failures,
        "worst": result.failures[0] if result.failures else None,
        "inconclusive": sorted(inconclusive, key=lambda c: c.gain),
        "overall": overall,
        "gains": {metric: _gain(metric) for metric in _metrics(result)},
        "slices": slices,
        "ungated": [c for c in slices if not c.gated and c.verdict is not None],
        # Slices of a metric whose overall check is not gated for the same reason (a latency
        # check against a baseline: report-only) are that reason's, already said, not small.
        "too_small": [
            c
            for c in slices
            if not c.gated and c.verdict is not None and apart.get(c.metric) != c.reason
        ],
        "overall_ungated": [c for c in overall if not c.gated and c.verdict is not None],
        "report_only": [c for c in slices if c.verdict is None],
        "underpowered": [c for c in comparisons if underpowered(c)],
        "gate": gate,
        "family": _family(comparisons),
        "caveats": _caveats(gate),
        "primary": primary,
        "charted": charted,
        "deltas": deltas,
        "chart": _chart(deltas),
        "groups": failure_groups(result.failures),
        "forest": forest,
        "forest_axis": forest_axis(forest) if forest else None,
        "forest_text": forest_text(forest[:FOREST_ROWS]),
        "forest_cut": max(0, len(forest) - FOREST_ROWS),
        "histogram": _histogram(deltas),
        "trend": trend_views(result),
        "query_changes": result.query_changes,
        "hits_lost": result.hits_lost,
        "hits_gained": result.hits_gained,
        "warnings": result.warnings,
        "unjudged": result.unjudged if _unjudged_rose(result.unjudged) else None,
        "holes": _holes(result),
        "noise": result.noise,
        "sequential": result.sequential,
        "label_free": result.label_free,
        "config": result.config,
        "baseline": result.baseline,
        "current": result.current,
        "tool_version": result.tool_version,
        "labels": labels_view(result),
        "corpus": result.corpus,
        "not_comparable": _not_comparable(result),
        "stages": stages_view(result),
        "other_level": other_level_view(result),
    }


def _metrics(result: ResultRecord) -> set[str]:
    """The metrics of every check, at either level."""
    other = result.other_level.comparisons if result.other_level is not None else []
    return {c.metric for c in (*result.comparisons, *other)}


def _slice_rows(comparisons: list[Comparison]) -> list[Comparison]:
    """The slice checks, failing first, then by verdict, gated before not, the worst first."""
    return sorted(
        (c for c in comparisons if c.slice != "all"),
        key=lambda c: (not c.failed, _VERDICT_ORDER[c.verdict], not c.gated, c.gain),
    )


def other_level_view(result: ResultRecord) -> dict[str, Any] | None:
    """What the reports show of a chunked corpus's other level: its overall checks, its slice
    rows the gate would judge other than pass, and whether it gates; None without one."""
    other = result.other_level
    if other is None:
        return None
    slices = _slice_rows(other.comparisons)
    return {
        "level": other.level,
        "gating_level": other.gating_level,
        "gated": other.gated,
        "comparisons": other.comparisons,
        "overall": [c for c in other.comparisons if c.slice == "all"],
        "slices": slices,
        "moved": [c for c in slices if c.gated and c.verdict not in ("pass", None)],
        "ungated": [c for c in slices if not c.gated and c.verdict is not None],
        "report_only": [c for c in slices if c.verdict is None],
    }


def stages_view(result: ResultRecord) -> dict[str, Any] | None:
    """What the reports say of the stage that lost each relevant document: the overall
    checks that lost any, and the queries that lost most; None when none was lost."""
    losses = result.stage_losses
    if losses is None or not any(q.first_stage or q.reranker for q in losses.queries):
        return None
    return {
        "overall": [c for c in losses.checks if c.slice == "all"],
        "queries": losses.queries,
        "more": max(0, losses.query_count - len(losses.queries)),
    }


def labels_view(result: ResultRecord) -> dict[str, Any] | None:
    """What the reports say of LLM labels: who decided, the card, and the other view's
    overall checks and failures (the would-be verdict when the judge is not trusted)."""
    labels = result.labels
    if labels is None:
        return None
    by_judge = includes_llm(labels.decided_by)
    other = labels.human if by_judge else labels.assisted
    card = labels.calibration
    return {
        "by_judge": by_judge,
        "reason": labels.provisional_reason,
        "model": one_line(labels.judge.model),
        "prompt": one_line(labels.judge.prompt_sha256[:12]),
        "answered": answered_phrase(labels.judge),
        "judges": len(labels.judge.answered_by),
        "mixed": labels.judge.mixed,
        "queries": labels.queries,
        "human_queries": labels.human_queries,
        "uncovered": len(labels.uncovered),
        "judging": labels.judging,
        "card": card,
        "grades": list(range(len(card.confusion))),
        "other": [c for c in other if c.slice == "all"],
        "other_failures": [c for c in other if c.failed],
        "other_title": "people's labels alone"
        if by_judge
        else "with the judge's labels (not used)",
    }


def answered_phrase(judge: JudgeRecord) -> str:
    """Which models answered under the judge, one line: `gpt-4o-2024-08-06 (fingerprint
    fp_1)`; with several, each with its pairs (`A on 120 pairs and B on 80 pairs`); "" in
    results of older versions, which did not record them."""
    names = []
    for answered in judge.answered_by:
        name = one_line(answered.model) if answered.model else "an unrecorded model"
        if answered.system_fingerprint:
            name += f" (fingerprint {one_line(answered.system_fingerprint)})"
        if len(judge.answered_by) > 1:
            name += f" on {plural(answered.pairs, 'pair')}"
        names.append(name)
    return " and ".join(names)


def failure_groups(failures: list[Comparison]) -> list[dict[str, Any]]:
    """The failing checks grouped: overall first, then by slice dimension (intent, segment,
    ...; in order of their worst check), each sorted by how far past its threshold."""
    groups: dict[str, list[Comparison]] = {}
    for c in sorted(failures, key=_past):
        title = "overall" if c.slice == "all" else f"by {c.slice.split('=', 1)[0]}"
        groups.setdefault(title, []).append(c)
    ordered = sorted(groups.items(), key=lambda item: item[0] != "overall")
    return [{"title": title, "checks": checks} for title, checks in ordered]


def _past(c: Comparison) -> float:
    """How far a failing check is past its threshold or floor (negated: farthest first)."""
    if c.verdict == "below_floor" and c.floor is not None:
        past = c.current_mean - c.floor
        return -past if c.direction == "lower" else past
    return c.gain + (c.max_drop or 0.0)


def _holes(result: ResultRecord) -> dict[str, dict[str, LabelHole]]:
    """The label-hole bounds by metric, then slice: `holes.get(c.view ~ c.metric,
    {}).get(c.slice)` (a check of the other level's is keyed by its level and metric)."""
    holes: dict[str, dict[str, LabelHole]] = {}
    found = [("", hole) for hole in result.label_holes]
    if result.other_level is not None:  # keyed by its level and the metric
        found += [(result.other_level.level, hole) for hole in result.other_level.label_holes]
    for view, hole in found:
        # A hand-edited result's reason must not break a line in any format (HTML too).
        shown = dataclasses.replace(hole, reason=one_line(hole.reason))
        holes.setdefault(view + hole.metric, {})[hole.slice] = shown
    return holes


def _gain(metric: str) -> str | None:
    """nDCG's and DCG's gain (exp or linear), which the report always names."""
    from retrieval_gate.metrics import parse_metric

    try:
        spec = parse_metric(metric)
    except GateError:  # a result from a newer version may name a metric this one lacks
        return None
    return str(spec.param("gain")) if spec.name in ("ndcg", "dcg") else None


def _inconclusive(c: Comparison) -> bool:
    """Gated and inconclusive under the gate's rule (failing or not)."""
    return c.gated and c.verdict == "inconclusive"


def underpowered(c: Comparison) -> bool:
    """Gated, not failing, and unable to catch 1.5 times its threshold with the reported
    power: its detectable drop is larger, or it can catch none (None). The yardstick is the
    one of `queries_needed` and of lint: no check catches a true drop of exactly its
    threshold more than half the time, so that one would flag every check. Differences
    without variation (every query moved alike: an interval of one point) also leave the
    detectable drop None, but say nothing about what the check can catch: not flagged; nor is
    a quantile check (latency_p95), whose test states no detectable change."""
    if not c.gated or c.failed or c.max_drop is None:
        return False
    if c.detectable_drop is None:
        # No interval either: a quantile check (latency_p95), which states neither.
        return c.ci_low is not None and c.ci_low != c.ci_high
    return short_of_target(c.detectable_drop, c.max_drop)


def _family(comparisons: list[Comparison]) -> dict[str, int]:
    """The checks the p-values are corrected across (those tested at a level), and how many
    others show a raw p-value."""
    # The label-free checks are a family of their own (they read other queries).
    comparisons = [c for c in comparisons if not c.metric.startswith(PREFIX)]
    members = [c for c in comparisons if c.level is not None]
    overall = sum(1 for c in members if c.slice == "all")
    raw = sum(1 for c in comparisons if c.level is None and c.p_value is not None)
    return {
        "size": len(members),
        "overall": overall,
        "slices": len(members) - overall,
        "raw": raw,
    }


def _caveats(gate: dict[str, Any]) -> list[str]:
    """Settings that give up the false-alarm control, which every report must state: the
    templates word them (macros.j2 `caveat`). The correction and `on_inconclusive` matter
    only when significance is required."""
    if gate["require_significance"] is False:
        return ["significance"]
    caveats = []
    if gate["correction"] == "none":
        caveats.append("correction")
    if gate["on_inconclusive"] == "fail":
        caveats.append("inconclusive")
    return caveats


CHART_BARS = 900
"""Most bars of the HTML per-query chart: about one per pixel of its 900-pixel plot area."""


def _query_deltas(result: ResultRecord, metric: str | None) -> list[dict[str, Any]]:
    """Per-query change of `metric`, most regressed first (ties by query id); a query the
    metric is undefined for on a side (null) has none, as the gate leaves it out. Under
    human+llm the record's scores are people's: the queries nobody judged are not charted."""
    if metric is None or result.current is None or result.baseline is None:
        return []
    after = result.current.scores.get(metric)
    before = result.baseline.scores.get(metric)
    ids = result.current.query_ids
    if after is None or before is None or not len(ids) == len(after) == len(before):
        return []
    out = {q.query_id for q in result.corpus.not_comparable} if result.corpus else set()
    if result.labels is not None:  # people's labels score only the queries people judged
        judged = set(result.labels.human_query_ids)
        out |= {q for q in ids if q not in judged}
    rows = [
        {"query_id": q, "before": b, "after": a, "delta": a - b}
        for q, b, a in zip(ids, before, after, strict=True)
        if q not in out  # left out of every check: the corpus changed under its labels
        and a is not None  # undefined on a side (a one-class query's auc): not compared
        and b is not None
    ]
    return sorted(rows, key=lambda row: (row["delta"], row["query_id"]))


def _not_comparable(result: ResultRecord) -> dict[str, Any] | None:
    """The first NOT_COMPARABLE_SHOWN queries left out, each with its first REASONS_SHOWN
    reasons, and how many are not shown; None when none was left out."""
    left_out = result.corpus.not_comparable if result.corpus else []
    if not left_out:
        return None
    rows = [
        {
            "query_id": q.query_id,
            "reasons": q.reasons[:REASONS_SHOWN],
            "more": max(0, len(q.reasons) - REASONS_SHOWN),
        }
        for q in left_out[:NOT_COMPARABLE_SHOWN]
    ]
    return {"count": len(left_out), "rows": rows, "more": len(left_out) - len(rows)}


def _chart(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-query chart: one bar per query, or past CHART_BARS queries one per run of
    consecutive queries (in chart order) holding their mean, so the HTML grows with what a
    960-pixel chart can show, not with the labelled set; and how many got worse or better."""
    changes = [row["delta"] for row in deltas]
    size = -(-len(deltas) // CHART_BARS) if deltas else 1
    if size == 1:
        bars = deltas
    else:
        bars = []
        for start in range(0, len(deltas), size):
            group = deltas[start : start + size]
            first, last = group[0]["query_id"], group[-1]["query_id"]
            bars.append(
                {
                    "query_id": f"{first} … {last} ({len(group)} queries, mean)",
                    "before": sum(row["before"] for row in group) / len(group),
                    "after": sum(row["after"] for row in group) / len(group),
                    "delta": sum(row["delta"] for row in group) / len(group),
                }
            )
    return {
        "bars": bars,
        "per_bar": size,
        "top": max((abs(bar["delta"]) for bar in bars), default=0.0),
        "worse": sum(1 for change in changes if change < 0),
        "unchanged": sum(1 for change in changes if change == 0),
        "better": sum(1 for change in changes if change > 0),
    }


def _histogram(deltas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Counts of per-query changes in points per HISTOGRAM_BINS; empty when none changed."""
    if not any(row["delta"] for row in deltas):
        return []
    counts = [0] * len(HISTOGRAM_BINS)
    for row in deltas:
        counts[_bin(row["delta"] * 100)] += 1
    return [
        {"low": low, "high": high, "count": count}
        for (low, high), count in zip(HISTOGRAM_BINS, counts, strict=True)
    ]


def _bin(change: float) -> int:
    """The HISTOGRAM_BINS index of a change: negative bins hold their upper edge."""
    zero = HISTOGRAM_BINS.index((0.0, 0.0))
    if change == 0:
        return zero
    if change < 0:
        return next(i for i, (_, high) in enumerate(HISTOGRAM_BINS) if change <= high)
    return next(
        i for i in range(len(HISTOGRAM_BINS) - 1, zero, -1) if change >= HISTOGRAM_BINS[i][0]
    )


def _unjudged_rose(unjudged: Any) -> bool:
    """Whether the unjudged share of the current top k rose (judged@k fell): only then can
    unjudged documents that entered it explain part of a drop. New unjudged documents in a
    top k that is better judged than the baseline's explain none."""
    if unjudged is None:
        return False
    # Rounded: means of k-ths miss exact values by a bit.
    return bool(round(unjudged.judged_before - unjudged.judged_after, 12) > 0)
