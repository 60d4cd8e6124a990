"""The baseline record: per-query scores, top-k ids and fingerprints, and when two compare."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.gate.baseline.provenance import git_state

SCHEMA_VERSION = 1
# Still 1 with `fingerprints.queries` and `judged_documents`: both are optional, files without
# them read as before.

RECREATE = "recreate it with `retrieval-gate baseline --force`"


@dataclass(frozen=True, kw_only=True)
class Fingerprints:
    """What a baseline must share with a run to be compared with it (all but `retriever`)."""

    dataset: str
    """`Dataset.fingerprint` of the labelled set (sha256 hex)."""
    k: int
    metrics: tuple[str, ...]
    """Canonical metric names, in config order."""
    slices: str
    """sha256 of the canonical slice definition JSON."""
    retriever: str
    """Fingerprint of the retriever's description: provenance only, it is what a PR changes."""
    queries: str | None = None
    """`Dataset.queries_fingerprint`, the queries without their judgments: equal on both sides
    when only the judgments changed, so the baseline's rankings can be re-scored. None in files
    made before it was recorded."""


def _same_columns(a: Mapping[str, FloatArray], b: Mapping[str, FloatArray]) -> bool:
    """Whether two metric -> per-query arrays mappings hold equal values (NaN, undefined,
    equal to NaN)."""
    return a.keys() == b.keys() and all(np.array_equal(a[m], b[m], equal_nan=True) for m in a)


@dataclass(frozen=True, eq=False, kw_only=True)
class Repeats:
    """A record made of repeated runs of one retriever: each run's per-query scores (the
    record's scores are their mean) and the queries whose top k differed between runs."""

    runs: tuple[Mapping[str, FloatArray], ...]
    """Metric -> per-query values aligned with the record's `query_ids`, one mapping per run."""
    varying: tuple[str, ...]
    """Sorted ids of the queries whose top k was not the same in every run."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Repeats):
            return NotImplemented
        return (
            self.varying == other.varying
            and len(self.runs) == len(other.runs)
            and all(_same_columns(a, b) for a, b in zip(self.runs, other.runs, strict=True))
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class Baseline:
    """A retriever's per-query record on the labelled set, and where it came from.

    Equality compares every field, the score arrays by value.
    """

    schema_version: int
    tool_version: str
    created_at: str
    """ISO 8601 UTC, seconds precision; empty in a record read back without a clock."""
    git_commit: str | None
    git_dirty: bool | None
    fingerprints: Fingerprints
    retriever: Mapping[str, Any]
    """The retriever's description (no secrets), for the report footer."""
    slice_definition: Mapping[str, Any]
    query_ids: tuple[str, ...]
    """Sorted labelled query ids."""
    scores: Mapping[str, FloatArray]
    """Metric -> per-query values aligned with `query_ids` (read-only arrays)."""
    top_k: Mapping[str, tuple[str, ...]]
    """Query id -> doc ids as ranked (at most k); absent queries retrieved nothing. The first
    run's, in a record of repeated runs."""
    repeats: Repeats | None = None
    """The runs `scores` is the mean of, when the record repeated the retriever."""
    judged_documents: Mapping[str, str] | None = None
    """Doc id -> content hash (`corpus_changes.document_hash`) of each judged document the
    corpus held, sorted by id; None when the labelled set had no corpus, or in files made
    before it was recorded: then corpus changes are not checked."""
    candidates: Mapping[str, tuple[str, ...]] | None = None
    """Query id -> a two-stage retriever's first candidates, as deep as its `candidates:`
    checks read (pipeline/candidates.py); None without such checks."""
    chunk_anchors: Mapping[str, Anchor] | None = None
    """Chunk id -> its anchor (source document, span, hash) for each chunk judged or in a top
    k, sorted by id: what a later chunking's labels are found by (`gate/baseline/rechunk.py`).
    None when the corpus is not chunked, or in files made before it was recorded."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Baseline):
            return NotImplemented
        plain = [f.name for f in dataclasses.fields(self) if f.name != "scores"]
        return all(getattr(self, name) == getattr(other, name) for name in plain) and _same_columns(
            self.scores, other.scores
        )


def make_baseline(
    *,
    fingerprints: Fingerprints,
    retriever: Mapping[str, Any],
    slice_definition: Mapping[str, Any],
    query_ids: Sequence[str],
    scores: Mapping[str, npt.ArrayLike],
    top_k: Mapping[str, Sequence[str]],
    tool_version: str,
    repo_dir: Path | None,
    now: datetime | None = None,
    judged_documents: Mapping[str, str] | None = None,
    candidates: Mapping[str, Sequence[str]] | None = None,
    chunk_anchors: Mapping[str, Anchor] | None = None,
) -> Baseline:
    """A baseline of these scores, stamped with `now` (UTC) and the git state of `repo_dir`.

    `top_k` keeps the labelled queries only, each cut to k; queries that retrieved nothing
    are left out. A naive `now` is taken as local time. Raises ValueError when `query_ids`
    are not sorted and unique, or the scores do not match them and the metrics.
    """
    ids = tuple(str(q) for q in query_ids)
    problem = order_problem(ids)
    if problem:
        raise ValueError(f"query_ids {problem}")
    if set(scores) != set(fingerprints.metrics):
        raise ValueError(
            f"scores has metrics {sorted(scores)}, fingerprints {list(fingerprints.metrics)}"
        )
    arrays = {}
    for metric in fingerprints.metrics:
        values = np.array(scores[metric], dtype=np.float64)
        if values.shape != (len(ids),):
            raise ValueError(f"scores[{metric!r}] has shape {values.shape}, not ({len(ids)},)")
        values.flags.writeable = False
        arrays[metric] = values
    labelled = set(ids)
    if isinstance(top_k, TopKIds) and top_k.within(labelled, fingerprints.k):
        ranked = top_k
    else:
        ranked = TopKIds.of(
            {
                q: tuple(map(str, docs[: fingerprints.k]))
                for q, docs in top_k.items()
                if q in labelled
            }
        )
    commit, dirty = git_state(repo_dir) if repo_dir is not None else (None, None)
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return Baseline(
        schema_version=SCHEMA_VERSION,
        tool_version=tool_version,
        created_at=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        git_commit=commit,
        git_dirty=dirty,
        fingerprints=fingerprints,
        retriever=canonical(retriever),
        slice_definition=canonical(slice_definition),
        query_ids=ids,
        scores=arrays,
        top_k=ranked,
        judged_documents=None
        if judged_documents is None
        else dict(sorted(judged_documents.items())),
        candidates=None
        if candidates is None
        else TopKIds.of({q: tuple(map(str, d)) for q, d in candidates.items() if q in labelled}),
        chunk_anchors=None if chunk_anchors is None else dict(sorted(chunk_anchors.items())),
    )


def restricted_record(record: Baseline, keep: Sequence[str]) -> Baseline:
    """`record` on the queries `keep` alone (each one of its query ids), repeats included."""
    position = {query_id: i for i, query_id in enumerate(record.query_ids)}
    ids = tuple(sorted(keep))
    rows = np.asarray([position[query_id] for query_id in ids], dtype=np.int64)

    def columns(scores: Mapping[str, FloatArray]) -> dict[str, FloatArray]:
        return {metric: values[rows] for metric, values in scores.items()}

    kept = set(ids)
    repeats = record.repeats
    if repeats is not None:
        repeats = Repeats(
            runs=tuple(columns(run) for run in repeats.runs),
            varying=tuple(q for q in repeats.varying if q in kept),
        )
    return dataclasses.replace(
        record,
        query_ids=ids,
        scores=columns(record.scores),
        top_k={query_id: record.top_k[query_id] for query_id in ids if query_id in record.top_k},
        repeats=repeats,
        candidates=None
        if record.candidates is None
        else {q: record.candidates[q] for q in ids if q in record.candidates},
    )


def comparability_problems(baseline: Fingerprints, current: Fingerprints) -> list[str]:
    """Why a run cannot be compared with the baseline, as sentences; empty when it can.

    The retriever fingerprint is not a problem: a change of retriever is what is gated.
    """
    problems = []
    if baseline.dataset != current.dataset:
        change = f"({baseline.dataset[:12]} -> {current.dataset[:12]})"
        if baseline.queries is None or current.queries is None:
            what = "judgments or queries changed"
        elif baseline.queries == current.queries:
            what = "only the judgments changed"
        else:
            what = "the queries changed (ids, text or metadata)"
        problems.append(
            f"the labelled set differs from the baseline's {change}: {what}; recreate the baseline"
        )
    if baseline.k != current.k:
        problems.append(f"k: baseline {baseline.k}, now {current.k}")
    added = [m for m in current.metrics if m not in baseline.metrics]
    removed = [m for m in baseline.metrics if m not in current.metrics]
    if added or removed:
        parts = [f"now also {', '.join(added)}"] if added else []
        parts += [f"no longer {', '.join(removed)}"] if removed else []
        problems.append(f"metrics: {'; '.join(parts)}")
    if baseline.slices != current.slices:
        problems.append(
            f"the slice definition differs from the baseline's ({baseline.slices[:12]} -> "
            f"{current.slices[:12]}): slices.by, slices.combine, the query-length bins or "
            "min_size changed"
        )
    return problems


def fingerprint_slices(definition: Mapping[str, Any]) -> str:
    """sha256 hex of the slice definition as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def top_k_problems(
    top_k: Mapping[str, Sequence[str]], labelled: set[str], k: int, where: str
) -> list[str]:
    """What is wrong with top-k ids (at `where` in a file): unknown queries, lists longer
    than k, a doc listed twice."""
    problems = []
    unknown = sorted(set(top_k) - labelled)
    if unknown:
        problems.append(f"{where}: {some_of(unknown)} not in query_ids")
    lists = top_k.values()
    # In C first (a record holds a list per query): the loop below only names what is wrong.
    if max(map(len, lists), default=0) <= k and sum(map(len, map(set, lists))) == sum(
        map(len, lists)
    ):
        return problems
    for query_id, docs in sorted(top_k.items()):
        if len(docs) > k:
            problems.append(f"{where}.{query_id}: {len(docs)} doc ids, more than k = {k}")
        if len(set(docs)) != len(docs):
            twice = next(doc for i, doc in enumerate(docs) if doc in docs[:i])
            problems.append(
                f"{where}.{query_id}: lists {twice!r} twice (a ranking holds a doc once)"
            )
    return problems


def order_problem(ids: Sequence[str]) -> str | None:
    """Where query ids first break their sorted, unique order; None when they keep it."""
    for position in range(1, len(ids)):
        if ids[position] <= ids[position - 1]:
            what = "a duplicate" if ids[position] == ids[position - 1] else "out of order"
            return f"{ids[position]!r} at position {position} is {what} (ids are sorted, unique)"
    return None


def some_of(values: Sequence[str], shown: int = 5) -> str:
    """The first `shown` values, and how many more."""
    text = ", ".join(repr(v) for v in values[:shown])
    return text + (f" and {len(values) - shown} more" if len(values) > shown else "")


def canonical(value: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON values with keys sorted at every depth, so the file is the same every time;
    what JSON cannot hold becomes its string form, as in the retriever fingerprint."""
    result: dict[str, Any] = json.loads(json.dumps(value, sort_keys=True, default=str))
    return result
