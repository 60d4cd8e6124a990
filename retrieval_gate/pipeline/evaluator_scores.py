"""Evaluator exports joined to the labelled queries: one check column per `<evaluator>:<score>`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrieval_gate.config.evaluators import EvaluatorConfig, evaluator_key
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.model import Query
from retrieval_gate.core.wording import plural
from retrieval_gate.errors import CoverageError, GateError, InputError
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.readers.evaluators import EvaluatorExport, EvaluatorRow, read_evaluator_scores
from retrieval_gate.readers.text import quoted

Side = Literal["current", "reference"]
SHOWN = 5
"""Query ids or rows quoted in a warning or an error."""


@dataclass(frozen=True)
class EvaluatorColumns:
    """Check column -> one value per query (aligned with the queries given), and what to know."""

    values: Mapping[str, FloatArray]
    warnings: tuple[str, ...]
    unscored: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Column -> the queries it holds no score of (filled with the mean of the others)."""


def gated_evaluators(config: GateConfig) -> dict[str, list[str]]:
    """Evaluator -> the scores its `metrics:` keys gate, in config order."""
    gated: dict[str, list[str]] = {}
    for key in config.metrics:
        named = evaluator_key(key)
        if named is not None:
            gated.setdefault(named[0], []).append(named[1])
    return gated


def evaluator_columns(
    config: GateConfig, queries: Sequence[Query], side: Side = "current"
) -> EvaluatorColumns:
    """Every gated evaluator score of `side`'s export (`current`, or `reference` for the
    evaluators that name one) as a column over `queries`.

    A row matches its query by id or by text (`match`); rows that match no labelled query
    are counted in the warnings. A score on fewer than `gate.min_coverage` of the queries is
    a CoverageError (exit 2); the queries it leaves unscored hold the mean of the scored ones
    (never 0), are counted in the warnings and listed in `unscored`, for `check` to count
    them as unchanged (`unscored_unchanged`)."""
    values: dict[str, FloatArray] = {}
    warnings: list[str] = []
    unscored: dict[str, tuple[str, ...]] = {}
    for name, scores in gated_evaluators(config).items():
        settings = config.evaluators[name]
        path = settings.current if side == "current" else settings.reference
        if path is None:
            continue
        export = read_evaluator_scores(config.resolve(path), settings.format, scores)
        columns, notes, holes = _joined(export, settings, scores, queries, config.gate.min_coverage)
        values |= {f"{name}:{score}": column for score, column in columns.items()}
        unscored |= {f"{name}:{score}": missing for score, missing in holes.items()}
        warnings += [f"evaluator {name} ({path}): {note}" for note in notes]
    return EvaluatorColumns(values, tuple(warnings), unscored)


def with_reference_scores(
    baseline: Baseline, config: GateConfig, queries: Sequence[Query]
) -> tuple[Baseline, EvaluatorColumns]:
    """`baseline` with the columns of every evaluator that names a `reference:` export read
    from it instead of the stored ones (added when the baseline has none), and those columns
    with the warnings saying so."""
    columns = evaluator_columns(config, queries, "reference")
    if not columns.values:
        return baseline, columns
    if tuple(q.id for q in queries) != baseline.query_ids:
        raise InputError(
            "the baseline's queries are not the labelled set's: recreate it with "
            "`retrieval-gate baseline --force`"
        )
    scores = {**baseline.scores, **columns.values}
    metrics = baseline.fingerprints.metrics
    metrics += tuple(m for m in columns.values if m not in metrics)
    fingerprints = dataclasses.replace(baseline.fingerprints, metrics=metrics)
    repeats = baseline.repeats
    if repeats is not None:  # every run of the reference saw the same export
        runs = tuple({**run, **columns.values} for run in repeats.runs)
        repeats = dataclasses.replace(repeats, runs=runs)
    replaced = dataclasses.replace(
        baseline, fingerprints=fingerprints, scores=scores, repeats=repeats
    )
    names = sorted({key.split(":", 1)[0] for key in columns.values})
    told = [
        f"evaluator {name}: the reference side's scores are read from "
        f"{config.evaluators[name].reference}, not the baseline's stored ones"
        for name in names
    ]
    return replaced, dataclasses.replace(columns, warnings=(*told, *columns.warnings))


def unscored_unchanged(
    reference: Baseline,
    current: Baseline,
    unscored: tuple[Mapping[str, Sequence[str]], Mapping[str, Sequence[str]]],
) -> tuple[Baseline, Baseline]:
    """The two records with every query an evaluator left unscored on one side counted as
    unchanged: it takes the other side's value (`unscored` is (reference's, current's) column
    -> query ids), so the paired test sees the scored pairs alone."""
    reference_holes, current_holes = unscored
    columns = sorted({*reference_holes, *current_holes} & set(current.scores))
    if not columns or reference.query_ids != current.query_ids:
        return reference, current
    position = {query: i for i, query in enumerate(current.query_ids)}
    before, after = dict(reference.scores), dict(current.scores)
    for column in columns:
        holes = [[position[q] for q in sides.get(column, ())] for sides in unscored]
        before[column], after[column] = unchanged_where_unscored(
            reference.scores[column], current.scores[column], holes[0], holes[1]
        )
    return _with_scores(reference, before), _with_scores(current, after)


def unchanged_where_unscored(
    before: FloatArray, after: FloatArray, before_holes: Sequence[int], after_holes: Sequence[int]
) -> tuple[FloatArray, FloatArray]:
    """`before` and `after` with each query unscored on one side given the other side's value
    (unscored on both: `before`'s, the mean its side was filled with), read-only."""
    before, after = before.copy(), after.copy()
    after[list(after_holes)] = before[list(after_holes)]
    only_before = sorted(set(before_holes) - set(after_holes))
    before[only_before] = after[only_before]
    before.flags.writeable = after.flags.writeable = False
    return before, after


def _with_scores(record: Baseline, scores: Mapping[str, FloatArray]) -> Baseline:
    """`record` holding `scores`; a repeated record's runs hold the evaluator columns too
    (every run read the same export)."""
    repeats = record.repeats
    if repeats is not None:
        runs = tuple({**run, **{m: scores[m] for m in run}} for run in repeats.runs)
        repeats = dataclasses.replace(repeats, runs=runs)
    return dataclasses.replace(record, scores=scores, repeats=repeats)


def evaluators_at(head: GateConfig, at_ref: GateConfig) -> dict[str, EvaluatorConfig]:
    """`head`'s evaluators as the reference side of `check --against` reads them: each gated
    one's `current` export is its `reference:` when set, else the export the config at the
    reference commit names (as an absolute path into that checkout)."""
    evaluators = dict(head.evaluators)
    for name in gated_evaluators(head):
        settings = head.evaluators[name]
        if settings.reference is not None:
            path = str(head.resolve(settings.reference))
        elif name in at_ref.evaluators:
            path = str(at_ref.resolve(at_ref.evaluators[name].current))
        else:
            raise GateError(
                f"evaluator {name}: the config at the reference commit has no such evaluator, "
                f"so the reference side has no {name} scores; set evaluators.{name}.reference "
                "to its export"
            )
        evaluators[name] = settings.model_copy(update={"current": path, "reference": None})
    return evaluators


def _joined(
    export: EvaluatorExport,
    settings: EvaluatorConfig,
    scores: Sequence[str],
    queries: Sequence[Query],
    min_coverage: float,
) -> tuple[dict[str, FloatArray], list[str], dict[str, tuple[str, ...]]]:
    """Score -> column over `queries`, the notes on unmatched rows and unscored queries, and
    score -> the queries it leaves unscored."""
    source = export.source
    held = {s for row in export.rows for s in row.scores}
    for score in scores:
        if score not in held:
            names = ", ".join(quoted(n) for n in export.names[:20]) or "none"
            raise InputError(
                f"no score {score!r} in this {settings.format} export (its scores: {names}); "
                "fix the metrics key or export that metric",
                source=source,
            )
    matched, unmatched = _matched(export, settings.match, queries)
    notes = []
    if unmatched:
        shown = "; ".join(row.where for row in unmatched[:SHOWN])
        notes.append(
            f"{plural(len(unmatched), 'row')} matched no labelled query and were left out "
            f"({shown}{'; ...' if len(unmatched) > SHOWN else ''})"
        )
    columns: dict[str, FloatArray] = {}
    holes: dict[str, tuple[str, ...]] = {}
    for score in scores:
        unit = settings.units.get(score)
        column = np.full(len(queries), np.nan)
        for index, row in matched.items():
            if score in row.scores:
                value = row.scores[score]
                if unit is None and not 0 <= value <= 1:
                    raise InputError(
                        f"{row.where}: score {score} {value:g} is outside [0, 1]; a score on "
                        f"another scale needs its unit: evaluators.<name>.units: "
                        f"{{{score}: points}}",
                        source=source,
                        line=row.line,
                    )
                column[index] = value
        missing = [queries[int(i)].id for i in np.flatnonzero(np.isnan(column))]
        covered = 1 - len(missing) / len(queries) if queries else 0.0
        if missing and covered < min_coverage:
            raise CoverageError(
                f"score {score} covers {len(queries) - len(missing)} of {len(queries)} labelled "
                f"queries ({covered:.0%}), below gate.min_coverage {min_coverage:.0%}; none for "
                f"{_ids(missing)}. Score every labelled query, or check evaluators.*.match",
                source=source,
            )
        if missing:
            column = mean_filled(column)
            holes[score] = tuple(missing)
            notes.append(
                f"{score}: {plural(len(missing), 'labelled query', 'labelled queries')} "
                f"unscored ({_ids(missing)}), each counted as unchanged against the other side"
            )
        column.flags.writeable = False
        columns[score] = column
    return columns, notes, holes


def mean_filled(column: FloatArray) -> FloatArray:
    """`column` with each NaN (an unscored query) replaced by the mean of the other values,
    so its mean is theirs."""
    filled: FloatArray = column.copy()
    filled[np.isnan(filled)] = float(np.nanmean(column))
    return filled


def _matched(
    export: EvaluatorExport, match: str, queries: Sequence[Query]
) -> tuple[dict[int, EvaluatorRow], list[EvaluatorRow]]:
    """Query index -> its row, and the rows that match no query; a query matched by two
    rows, a row without what `match` reads, or a text several queries share is an error."""
    source = export.source
    if match == "auto":
        match = "id" if all(row.query_id is not None for row in export.rows) else "text"
    by_key: dict[str, int] = {}
    shared: set[str] = set()
    for position, query in enumerate(queries):
        text = query.id if match == "id" else " ".join(query.text.split())
        if text in by_key:
            shared.add(text)
        by_key[text] = position
    matched: dict[int, EvaluatorRow] = {}
    unmatched: list[EvaluatorRow] = []
    for row in export.rows:
        key = row.query_id if match == "id" else row.text
        if key is None:
            what = "query id" if match == "id" else "query text"
            raise InputError(
                f"{row.where}: no {what} to match a labelled query by (match: {match}); "
                "give every row one, or set the evaluator's match",
                source=source,
                line=row.line,
            )
        if key in shared:
            raise InputError(
                f"{row.where}: several labelled queries have the text {quoted(key)}; match "
                "rows by id (a query_id on each row, match: id)",
                source=source,
                line=row.line,
            )
        index = by_key.get(key)
        if index is None:
            unmatched.append(row)
            continue
        if index in matched:
            raise InputError(
                f"{row.where}: a second row for query {quoted(queries[index].id)} (the first "
                f"is {matched[index].where}); keep one row per query",
                source=source,
                line=row.line,
            )
        matched[index] = row
    return matched, unmatched


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(quoted(q) for q in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
