"""Text forms of evaluated scores for `retrieval-gate evaluate`: table, json, trec."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from retrieval_gate.core.wording import aligned, aligned_columns, json_text, plural
from retrieval_gate.metrics import REGISTRY, Scores

UNDEFINED = "-"
"""A per-query cell whose metric is undefined for that query (a one-class query's auc)."""
PREVIEW = 5
"""Query ids listed in a coverage note before it says `and N more`."""


def summary_values(scores: Scores) -> dict[str, float]:
    """trec_eval's `all`: the mean, except counts (num_ret, ...), which are summed."""
    means = scores.mean()
    return {
        str(spec): float(scores.values[str(spec)].sum())
        if spec.measure.integer
        else means[str(spec)]
        for spec in scores.metrics
    }


def format_table(scores: Scores, per_query: bool) -> str:
    """An aligned table: one row per metric (or per query with `per_query`), then `all`."""
    names = [str(spec) for spec in scores.metrics]
    integer = {str(spec): spec.measure.integer for spec in scores.metrics}

    def cell(name: str, value: float) -> str:
        return str(round(value)) if integer[name] else f"{value:.4f}"

    overall = summary_values(scores)
    if not per_query:
        rows = [["metric", "all"], *([name, cell(name, overall[name])] for name in names)]
        lines = aligned(rows, right_from=1)
    else:
        # Column by column: a query per row is 10^5 rows and more, so a cell costs one format.
        columns = [["query", *scores.query_ids, "all"]]
        for name in names:
            values = scores.values[name].tolist()
            cells = map(round, values) if integer[name] else map(_cell, values)
            columns.append([name, *map(str, cells), cell(name, overall[name])])
        lines = aligned_columns(columns, right_from=1)
    footer = f"{len(scores.query_ids)} labelled queries; `all` is the mean"
    if any(integer.values()):
        footer += " (num_* are totals)"
    if scores.undefined():
        footer += f"; {UNDEFINED} marks an undefined value, left out of the mean"
    return "\n".join([*lines, "", footer]) + "\n"


def _cell(value: float) -> str:
    return UNDEFINED if math.isnan(value) else f"{value:.4f}"


def format_trec(scores: Scores, per_query: bool) -> str:
    """`measure<TAB>qid<TAB>value` lines as `trec_eval -q` prints them, `all` last."""
    integer = {str(spec): spec.measure.integer for spec in scores.metrics}

    def line(name: str, qid: str, value: float) -> str:
        text = str(round(value)) if integer[name] else f"{value:.4f}"
        return f"{name:<22}\t{qid}\t{text}"

    lines = []
    if per_query:  # an undefined value has no line, as trec_eval prints none for it
        for qid, values in scores.per_query().items():
            lines += [line(name, qid, v) for name, v in values.items() if not math.isnan(v)]
    lines += [line(name, "all", value) for name, value in summary_values(scores).items()]
    return "\n".join(lines) + "\n"


def format_json(scores: Scores, per_query: bool) -> str:
    """`{"metrics", "mean", "per_query", ...}` with full float precision, stable order."""
    document = {
        "metrics": [str(spec) for spec in scores.metrics],
        "num_queries": len(scores.query_ids),
        "mean": scores.mean(),
        # JSON has no NaN: an undefined value (a one-class query's auc) is null.
        "per_query": {
            qid: {name: None if math.isnan(v) else v for name, v in values.items()}
            for qid, values in scores.per_query().items()
        },
        "missing_queries": list(scores.missing_queries),
        "ignored_queries": list(scores.ignored_queries),
        "undefined_queries": {
            name: [scores.query_ids[i] for i in np.flatnonzero(np.isnan(scores.values[name]))]
            for name in scores.undefined()
        },
    }
    return json_text(document) + "\n"


FORMATS: dict[str, Callable[[Scores, bool], str]] = {
    "table": format_table,
    "json": format_json,
    "trec": format_trec,
}


def coverage_notes(scores: Scores) -> list[str]:
    """One line each for labelled queries without results, run queries without labels, and
    each metric undefined for some queries."""
    notes = []
    missing, ignored = scores.missing_queries, scores.ignored_queries
    if missing:
        notes.append(
            f"{len(missing)} of {plural(len(scores.query_ids), 'labelled query')} "
            f"retrieved nothing: {'it scores' if len(missing) == 1 else 'they score'} as under "
            "trec_eval -c (0; 1 for judged@k, as nothing unjudged came back): "
            f"{_preview(missing)}"
        )
    if ignored:
        notes.append(
            f"{plural(len(ignored), 'run query')} without judgments "
            f"{'is' if len(ignored) == 1 else 'are'} ignored: {_preview(ignored)}"
        )
    for name, count in scores.undefined().items():
        undefined = tuple(
            scores.query_ids[i] for i in np.flatnonzero(np.isnan(scores.values[name]))
        )
        notes.append(
            f"{name} is undefined for {count} of {plural(len(scores.query_ids), 'labelled query')}"
            " (one class among their scored documents: no relevant or no non-relevant one) and "
            f"left out of its mean: {_preview(undefined)}"
        )
    return notes


def format_metric_list() -> str:
    """Every registered metric with its aliases, cutoff rule and parameters."""
    blocks = []
    for measure in REGISTRY.values():
        cutoff = {"required": "@k required", "optional": "@k optional", "none": "no @k"}
        title = f"{measure.name}  ({cutoff[measure.cutoff]}"
        title += f"; aliases: {', '.join(measure.aliases)})" if measure.aliases else ")"
        lines = [title, f"    {measure.help}", f"    e.g. {measure.example}"]
        lines += [f"    {param.describe()}" for param in measure.params]
        blocks.append("\n".join(lines))
    return "\n".join(blocks) + "\n"


def _preview(ids: tuple[str, ...]) -> str:
    shown = ", ".join(ids[:PREVIEW])
    return shown if len(ids) <= PREVIEW else f"{shown} and {len(ids) - PREVIEW} more"
