"""A baseline as a JSON document: the one written, and the validated read of one parsed."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    Tag,
    ValidationError,
)

from retrieval_gate.config.check_keys import value_bounds
from retrieval_gate.config.columns import operational_column
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.model import MAX_CANDIDATES
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.record import (
    RECREATE,
    SCHEMA_VERSION,
    Baseline,
    Fingerprints,
    Repeats,
    canonical,
    order_problem,
    some_of,
    top_k_problems,
)
from retrieval_gate.gate.baseline.repeats import mean_of_runs
from retrieval_gate.gate.baseline.side_file import SideTopK
from retrieval_gate.metrics.parse import may_be_undefined

_DOCUMENT_HASH = re.compile(r"[0-9a-f]{16}")
"""A judged document's content hash as written: `corpus_changes.document_hash`."""
_ROUNDING = 1e-9
"""How far past its bound a stored value may be: a value computed on the bound may pass it by
a rounding error, never by more."""


def _document_hash(value: str) -> str:
    if not _DOCUMENT_HASH.fullmatch(value):
        raise ValueError("a judged document's hash is 16 lowercase hex digits")
    return value


def _span_hash(value: str) -> str:
    if not _DOCUMENT_HASH.fullmatch(value):
        raise ValueError("a chunk anchor's hash is 16 lowercase hex digits")
    return value


def _ordered_span(span: tuple[str, int, int, str]) -> tuple[str, int, int, str]:
    if span[2] < span[1]:
        raise ValueError("a chunk anchor's end is before its start")
    return span


def baseline_document(
    baseline: Baseline, *, clock: bool = True, compact: bool = False
) -> dict[str, Any]:
    """The JSON document of `baseline`, keys in the file's order; `clock=False` leaves out
    `created_at` so equal records give equal bytes. Raises ValueError on a non-finite score.

    `compact=True` leaves the top k as the record holds it (a mapping, not a dict: 2 MB, not
    the 13 MB of lists and strings at 20,000 queries), for a document only `wording.json_text`
    and `json_file_pieces` encode; json.dumps refuses it."""
    fp = baseline.fingerprints
    ids = baseline.query_ids
    metrics = [m for m in fp.metrics if m in baseline.scores]
    metrics += sorted(set(baseline.scores) - set(metrics))
    columns = {metric: _column(baseline.scores[metric], metric, ids) for metric in metrics}
    document: dict[str, Any] = {
        "schema_version": baseline.schema_version,
        "tool_version": baseline.tool_version,
    }
    if clock:
        document["created_at"] = baseline.created_at
    document |= {
        "git_commit": baseline.git_commit,
        "git_dirty": baseline.git_dirty,
        "fingerprints": {
            "dataset": fp.dataset,
            **({"queries": fp.queries} if fp.queries is not None else {}),
            "k": fp.k,
            "metrics": list(fp.metrics),
            "slices": fp.slices,
            "retriever": fp.retriever,
        },
        "retriever": canonical(baseline.retriever),
        "slice_definition": canonical(baseline.slice_definition),
        "query_ids": list(ids),
        "scores": columns,
        "top_k": (
            TopKIds.of(baseline.top_k)
            if compact
            else {q: list(docs) for q, docs in sorted(baseline.top_k.items())}
        ),
    }
    if baseline.candidates is not None:
        document["candidates"] = {q: list(docs) for q, docs in sorted(baseline.candidates.items())}
    if baseline.repeats is not None:
        document["repeats"] = {
            "runs": [
                {metric: _column(run[metric], metric, ids) for metric in metrics}
                for run in baseline.repeats.runs
            ],
            "varying": list(baseline.repeats.varying),
        }
    if baseline.judged_documents is not None:
        document["judged_documents"] = dict(baseline.judged_documents)
    if baseline.chunk_anchors is not None:
        document["chunk_anchors"] = {
            chunk: [a.source, a.start, a.end, a.hash] for chunk, a in baseline.chunk_anchors.items()
        }
    return document


def _column(scores: npt.ArrayLike, metric: str, ids: Sequence[str]) -> list[float | None]:
    """A score column as JSON values: null for a query the metric is undefined for (JSON has
    no NaN), which only a metric that may be undefined has (`may_be_undefined`), or a latency
    or cost nobody measured (cached, failed, warm-up)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.shape != (len(ids),):
        raise ValueError(f"scores[{metric!r}] has shape {values.shape}, not ({len(ids)},)")
    undefined = np.isnan(values) if _nullable(metric) else np.zeros(len(ids), bool)
    bad = np.flatnonzero(~np.isfinite(values) & ~undefined)
    if len(bad):
        raise ValueError(
            f"scores[{metric!r}] of query {ids[bad[0]]!r} is {values[bad[0]]}; "
            "a baseline holds finite scores only"
        )
    column: list[float | None] = values.tolist()
    for i in np.flatnonzero(undefined).tolist():
        column[i] = None
    return column


def _nullable(metric: str) -> bool:
    """Whether a column may hold null: a metric undefined for some queries, or a latency or
    cost not measured for some."""
    return may_be_undefined(metric) or operational_column(metric) is not None


def record_of(document: Any, source: str) -> Baseline:
    """The current record of a parsed `check` result (its `current` part), or a baseline."""
    if isinstance(document, dict) and isinstance(document.get("current"), dict):
        sequential = document.get("sequential")
        if isinstance(sequential, dict) and sequential.get("stopped") is True:
            run, total = sequential.get("queries_run"), sequential.get("queries_total")
            counts = (
                f" after {run} of {total} queries"
                if all(isinstance(v, int) and not isinstance(v, bool) for v in (run, total))
                else ""
            )
            raise InputError(
                f"sequential: the check stopped early{counts}, so its record holds only the "
                "queries it ran: use a result of `check` without --sequential (or "
                "gate.sequential)",
                source=source,
            )
        return from_document(document["current"], source, "current", clock=False)
    return from_document(document, source, "", clock=True)


def from_document(data: Any, source: str, where: str, *, clock: bool) -> Baseline:
    """Validate a parsed baseline document (at `where` inside the file) into a Baseline."""
    prefix = f"{where}." if where else ""
    if not isinstance(data, dict):
        raise InputError(
            f"{where or 'the file'} is not a baseline: expected a JSON object with "
            f"schema_version, fingerprints, query_ids, scores, ...; {RECREATE}",
            source=source,
        )
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version != SCHEMA_VERSION:
        age = "newer" if version > SCHEMA_VERSION else "older"
        raise InputError(
            f"made by a {age} retrieval-gate (schema {version}; this one reads schema "
            f"{SCHEMA_VERSION}); {RECREATE}",
            source=source,
        )
    if not clock:
        data = {"created_at": "", **data}
    try:
        model = _BaselineFile.model_validate(data)
    except ValidationError as error:
        lines = [_describe(item, prefix) for item in error.errors()]
        raise InputError(
            "invalid baseline:\n  " + "\n  ".join(lines) + f"\n{RECREATE}", source=source
        ) from None
    problems = _consistency_problems(model, prefix)
    if problems:
        raise InputError(
            "invalid baseline:\n  " + "\n  ".join(problems) + f"\n{RECREATE}", source=source
        )
    fp = model.fingerprints
    scores = _read_only(model.scores, fp.metrics)
    problems = _range_problems(scores, model.query_ids, f"{prefix}scores")
    repeats = None
    if model.repeats is not None:
        repeats = Repeats(
            runs=tuple(_read_only(run, fp.metrics) for run in model.repeats.runs),
            varying=tuple(model.repeats.varying),
        )
        for r, run in enumerate(repeats.runs):
            problems += _range_problems(run, model.query_ids, f"{prefix}repeats.runs[{r}]")
    if problems:
        raise InputError(
            "invalid baseline:\n  " + "\n  ".join(problems) + f"\n{RECREATE}", source=source
        )
    return Baseline(
        schema_version=model.schema_version,
        tool_version=model.tool_version,
        created_at=model.created_at,
        git_commit=model.git_commit,
        git_dirty=model.git_dirty,
        fingerprints=Fingerprints(
            dataset=fp.dataset,
            k=fp.k,
            metrics=tuple(fp.metrics),
            slices=fp.slices,
            retriever=fp.retriever,
            queries=fp.queries,
        ),
        retriever=model.retriever,
        slice_definition=model.slice_definition,
        query_ids=tuple(model.query_ids),
        scores=scores,
        top_k=(
            TopKIds.of(model.top_k)
            if isinstance(model.top_k, dict)
            else SideTopK(
                Path(source).parent / model.top_k.file,
                model.top_k.sha256,
                model.top_k.queries,
                set(model.query_ids),
                fp.k,
                source,
            )
        ),
        repeats=repeats,
        judged_documents=model.judged_documents,
        candidates=None if model.candidates is None else TopKIds.of(model.candidates),
        chunk_anchors=None
        if model.chunk_anchors is None
        else {chunk: Anchor(*span) for chunk, span in model.chunk_anchors.items()},
    )


def _read_only(
    columns: Mapping[str, list[float | None]], metrics: Sequence[str]
) -> dict[str, FloatArray]:
    arrays = {}
    for metric in metrics:
        values = np.array(columns[metric], dtype=np.float64)  # null (undefined) reads as NaN
        values.flags.writeable = False
        arrays[metric] = values
    return arrays


def range_problem(
    metric: str, values: Sequence[float | None] | FloatArray
) -> tuple[int, str] | None:
    """The first of a column's per-query values that `metric` cannot take (past
    `check_keys.value_bounds`), by index, and what is wrong with it; None when every value
    is within them (null and NaN, undefined, are not checked here)."""
    low, high = value_bounds(metric)
    column = np.asarray(values, dtype=np.float64)
    outside = np.flatnonzero((column < low - _ROUNDING) | (column > high + _ROUNDING))
    if not outside.size:
        return None
    at = int(outside[0])
    return at, f"{float(column[at])!r} is outside [{low:g}, {high:g}], the values {metric} takes"


def _range_problems(columns: Mapping[str, FloatArray], ids: Sequence[str], where: str) -> list[str]:
    problems = []
    for metric, values in columns.items():
        found = range_problem(metric, values)
        if found is not None:
            at, what = found
            problems.append(f"{where}.{metric}[{at}] (query {ids[at]!r}): {what}")
    return problems


def _consistency_problems(model: _BaselineFile, prefix: str) -> list[str]:
    """What the schema cannot say: lengths, id order, and keys that must match each other."""
    problems = []
    fp = model.fingerprints
    ids = model.query_ids
    order = order_problem(ids)
    if order:
        problems.append(f"{prefix}query_ids: {order}")
    repeated = sorted({m for m in fp.metrics if fp.metrics.count(m) > 1})
    if repeated:
        problems.append(f"{prefix}fingerprints.metrics: {', '.join(repeated)} listed twice")
    problems += _column_problems(model.scores, fp.metrics, len(ids), f"{prefix}scores")
    labelled = set(ids)
    if model.repeats is not None:
        where = f"{prefix}repeats"
        for r, run in enumerate(model.repeats.runs):
            problems += _column_problems(run, fp.metrics, len(ids), f"{where}.runs[{r}]")
        if not problems:
            for metric in fp.metrics:
                mean = mean_of_runs(
                    [np.array(run[metric], dtype=np.float64) for run in model.repeats.runs]
                )
                stored = np.array(model.scores[metric], dtype=np.float64)
                if not np.allclose(mean, stored, rtol=0, atol=1e-9, equal_nan=True):
                    problems.append(f"{prefix}scores.{metric}: not the mean of {where}.runs")
        strays = sorted(set(model.repeats.varying) - labelled)
        if strays:
            problems.append(f"{where}.varying: {some_of(strays)} not in query_ids")
    if isinstance(model.top_k, dict):
        problems += top_k_problems(model.top_k, labelled, fp.k, f"{prefix}top_k")
    if model.candidates is not None:
        where = f"{prefix}candidates"
        problems += top_k_problems(model.candidates, labelled, MAX_CANDIDATES, where)
    return problems


def _column_problems(
    columns: Mapping[str, list[float | None]], metrics: Sequence[str], size: int, where: str
) -> list[str]:
    problems = [f"{where}: no scores for {metric}" for metric in metrics if metric not in columns]
    for metric, values in columns.items():
        if metric not in metrics:
            problems.append(f"{where}.{metric}: not one of fingerprints.metrics")
        elif len(values) != size:
            problems.append(f"{where}.{metric}: {len(values)} values for {size} query_ids")
        elif None in values and not _nullable(metric):
            problems.append(
                f"{where}.{metric}[{values.index(None)}]: null, but {metric} is defined for "
                "every query (only a metric such as auc, or latency and cost, may be null)"
            )
    return problems


def _describe(item: Any, prefix: str) -> str:
    path = ""
    for part in item["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    given = item.get("input")
    shown = (
        "" if item["type"] == "missing" or isinstance(given, dict | list) else f" (got {given!r})"
    )
    return f"{prefix}{path or '(top level)'}: {item['msg']}{shown}"


class _FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class _FingerprintsFile(_FileModel):
    dataset: str
    queries: str | None = None  # optional: older files lack it (schema_version stays 1)
    k: int = Field(ge=1)
    metrics: list[str] = Field(min_length=1)
    slices: str
    retriever: str


class _RepeatsFile(_FileModel):
    runs: list[dict[str, list[float | None]]] = Field(min_length=2)
    varying: list[str]


def _top_k_kind(value: Any) -> str:
    """Which `top_k` a file holds: the ids, or where they are (a string sha256: no id list)."""
    return "side" if isinstance(value, dict) and isinstance(value.get("sha256"), str) else "inline"


class _TopKFile(_FileModel):
    """Where the top-k ids are when the JSON does not hold them (`with_top_k_file`)."""

    file: str = Field(pattern=r"^[^/\\]+\.top_k\.jsonl$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    queries: int = Field(ge=0)


class _BaselineFile(_FileModel):
    """The file layout; field order is the order written."""

    schema_version: int
    tool_version: str
    created_at: str
    git_commit: str | None
    git_dirty: bool | None
    fingerprints: _FingerprintsFile
    retriever: dict[str, Any]
    slice_definition: dict[str, Any]
    query_ids: list[str]
    scores: dict[str, list[float | None]]
    top_k: Annotated[
        Annotated[dict[str, list[str]], Tag("inline")] | Annotated[_TopKFile, Tag("side")],
        Discriminator(_top_k_kind),
    ]
    candidates: dict[str, list[str]] | None = None  # a two-stage retriever's, when checked
    repeats: _RepeatsFile | None = None
    judged_documents: dict[str, Annotated[str, AfterValidator(_document_hash)]] | None = None
    """Optional (files made before it read as before, unchecked for corpus changes)."""
    chunk_anchors: (
        dict[
            str,
            Annotated[
                tuple[
                    Annotated[StrictStr, StringConstraints(min_length=1, max_length=1000)],
                    Annotated[StrictInt, Field(ge=0)],
                    Annotated[StrictInt, Field(ge=0)],
                    Annotated[StrictStr, AfterValidator(_span_hash)],
                ],
                Field(strict=False),  # a JSON array: lax for the tuple alone, strict inside
                AfterValidator(_ordered_span),
            ],
        ]
        | None
    ) = None
    """Optional: [source, start, end, hash] per chunk (files without it: no re-chunk gated)."""
