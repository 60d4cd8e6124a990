"""The baseline file: per-query scores, top-k ids, fingerprints and provenance, as stable JSON."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.top_k_ids import TopKColumns, TopKIds
from retrieval_gate.core.wording import json_file_pieces, json_id_lists
from retrieval_gate.errors import InputError

SCHEMA_VERSION = 1
# Still 1 with `fingerprints.queries`: the field is optional, files without it read as before.
GIT_TIMEOUT = 10.0
"""Seconds a git call may take; provenance is not worth stalling a CI job for."""

RECREATE = "recreate it with `retrieval-gate baseline --force`"

TOP_K_INLINE = 1000
"""Most queries whose top-k ids the JSON holds itself; past it they go to a side file
`NAME.top_k.jsonl` beside it (one line per query), read only when used, so that the JSON stays
small to write, read and diff (benchmarks/bench_check.py)."""


@dataclass(frozen=True)
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
    """Whether two metric -> per-query arrays mappings hold equal values."""
    return a.keys() == b.keys() and all(np.array_equal(a[m], b[m]) for m in a)


@dataclass(frozen=True, eq=False)
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


@dataclass(frozen=True, eq=False)
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
) -> Baseline:
    """A baseline of these scores, stamped with `now` (UTC) and the git state of `repo_dir`.

    `top_k` keeps the labelled queries only, each cut to k; queries that retrieved nothing
    are left out. A naive `now` is taken as local time. Raises ValueError when `query_ids`
    are not sorted and unique, or the scores do not match them and the metrics.
    """
    ids = tuple(str(q) for q in query_ids)
    problem = _order_problem(ids)
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
        retriever=_canonical(retriever),
        slice_definition=_canonical(slice_definition),
        query_ids=ids,
        scores=arrays,
        top_k=ranked,
    )


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
    columns = {metric: _finite(baseline.scores[metric], metric, ids).tolist() for metric in metrics}
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
        "retriever": _canonical(baseline.retriever),
        "slice_definition": _canonical(baseline.slice_definition),
        "query_ids": list(ids),
        "scores": columns,
        "top_k": (
            TopKIds.of(baseline.top_k)
            if compact
            else {q: list(docs) for q, docs in sorted(baseline.top_k.items())}
        ),
    }
    if baseline.repeats is not None:
        document["repeats"] = {
            "runs": [
                {metric: _finite(run[metric], metric, ids).tolist() for metric in metrics}
                for run in baseline.repeats.runs
            ],
            "varying": list(baseline.repeats.varying),
        }
    return document


def _finite(scores: npt.ArrayLike, metric: str, ids: Sequence[str]) -> FloatArray:
    values = np.asarray(scores, dtype=np.float64)
    if values.shape != (len(ids),):
        raise ValueError(f"scores[{metric!r}] has shape {values.shape}, not ({len(ids)},)")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(
            f"scores[{metric!r}] of query {ids[bad[0]]!r} is {values[bad[0]]}; "
            "a baseline holds finite scores only"
        )
    return values


def write_baseline(baseline: Baseline, path: Path) -> None:
    """Write `baseline` to `path` atomically (a temporary file beside it, then a rename).

    The JSON is indented and key-ordered so its git diff reads well, and equal baselines give
    equal bytes. Serialisation happens first: a ValueError (non-finite score) leaves any
    existing file untouched.
    """
    path = Path(path)
    document = with_top_k_file(baseline_document(baseline), path)
    write_text_atomic(path, json_file_pieces(document))


def top_k_path(path: Path) -> Path:
    """The side file holding the top-k ids of the JSON at `path`."""
    return path.with_name(path.name.removesuffix(".json") + ".top_k.jsonl")


def with_top_k_file(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """`document` (a baseline, or a result holding one as `current`) as written to `path`:
    with more than TOP_K_INLINE queries, the top-k ids are written to `top_k_path(path)`
    (atomically, first) and the document names that file and its sha256 instead.

    The two files are replaced one after the other: a crash between the two renames leaves
    a JSON whose side file does not match, which reading refuses (exit 2), never uses."""
    inner = document.get("current") if "current" in document else document
    if not isinstance(inner, dict):
        return document
    top_k = inner.get("top_k")
    if not isinstance(top_k, Mapping) or len(top_k) <= TOP_K_INLINE:
        return document
    side = top_k_path(path)
    text = json_id_lists(top_k.items())
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    write_text_atomic(side, text)
    reference = {"file": side.name, "sha256": digest, "queries": len(top_k)}
    if inner is document:
        return {**document, "top_k": reference}
    return {**document, "current": {**inner, "top_k": reference}}


def read_baseline(path: Path, *, config: str | Path | None = None) -> Baseline:
    """The baseline at `path`; every problem is an InputError (exit 2) saying what to do.

    `config` names the config file in the hint shown when the baseline does not exist.
    """
    path = Path(path)
    command = f"retrieval-gate baseline -c {config or 'CONFIG'}"
    data = _read_json(
        path, f"no baseline at {path}; create one with `{command}` on the main branch"
    )
    return _from_document(data, str(path), "", clock=True)


def read_record(path: Path) -> Baseline:
    """The current record inside a `check` JSON result (its `current` part), or a baseline."""
    path = Path(path)
    return record_of(_read_json(path, f"no result or baseline file at {path}"), str(path))


def record_of(document: Any, source: str) -> Baseline:
    """The current record of a parsed `check` result (its `current` part), or a baseline."""
    if isinstance(document, dict) and isinstance(document.get("current"), dict):
        return _from_document(document["current"], source, "current", clock=False)
    return _from_document(document, source, "", clock=True)


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


def git_state(repo_dir: Path) -> tuple[str | None, bool | None]:
    """HEAD's commit and whether tracked files have uncommitted changes; (None, None) outside a
    git work tree or without git. A repository with no commit yet gives (None, dirty)."""
    # Untracked files do not count: the cache and reports beside the config are untracked,
    # and would mark every baseline dirty.
    status = _git(repo_dir, "status", "--porcelain", "--untracked-files=no")
    if status is None:
        return None, None
    head = _git(repo_dir, "rev-parse", "--verify", "--quiet", "HEAD")
    return (head.strip() or None) if head else None, bool(status.strip())


def _git(repo_dir: Path, *args: str) -> str | None:
    from retrieval_gate.core.git import git_output

    return git_output(repo_dir, *args, timeout=GIT_TIMEOUT)


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
    runs: list[dict[str, list[float]]] = Field(min_length=2)
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
    scores: dict[str, list[float]]
    top_k: Annotated[
        Annotated[dict[str, list[str]], Tag("inline")] | Annotated[_TopKFile, Tag("side")],
        Discriminator(_top_k_kind),
    ]
    repeats: _RepeatsFile | None = None


def _read_json(path: Path, missing: str) -> Any:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(missing) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the file: {error}", source=source) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # json's messages read "Expecting value", "Unterminated string starting at": the
        # position completes the sentence.
        what = error.msg.removesuffix(" at")
        raise InputError(
            f"not valid JSON: {what[:1].lower()}{what[1:]} at line {error.lineno}, "
            f"column {error.colno}; "
            f"the file was cut short or edited by hand: restore it from git or {RECREATE}",
            source=source,
            line=error.lineno,
        ) from None
    except RecursionError:
        raise InputError(
            f"nested too deeply to be a baseline or a result; {RECREATE}", source=source
        ) from None


def _from_document(data: Any, source: str, where: str, *, clock: bool) -> Baseline:
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
    repeats = None
    if model.repeats is not None:
        repeats = Repeats(
            tuple(_read_only(run, fp.metrics) for run in model.repeats.runs),
            tuple(model.repeats.varying),
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
            else SideTopK(Path(source).parent, model.top_k, set(model.query_ids), fp.k, source)
        ),
        repeats=repeats,
    )


class SideTopK(TopKIds):
    """The top-k ids of a JSON file kept in its side file, read and checked on first use."""

    def __init__(
        self, folder: Path, reference: _TopKFile, labelled: set[str], k: int, source: str
    ) -> None:
        super().__init__(None)
        self._path = folder / reference.file
        self._reference = reference
        self._labelled = labelled
        self._k = k
        self._source = source

    def _columns(self) -> TopKColumns:
        if self._loaded_columns is None:
            self._loaded_columns = TopKIds.of(self._read()).columns
        return self._loaded_columns

    def _read(self) -> dict[str, tuple[str, ...]]:
        side = str(self._path)
        fix = f"the two files belong together: restore both from git, or {RECREATE}"
        try:
            data = self._path.read_bytes()
        except OSError as error:
            raise InputError(
                f"cannot read the top-k side file {self._path.name} that {self._source} names "
                f"({error.strerror or error}); {fix}",
                source=self._source,
            ) from None
        if hashlib.sha256(data).hexdigest() != self._reference.sha256:
            raise InputError(
                f"the top-k side file {self._path.name} does not match {self._source} (its "
                f"sha256 differs from the one recorded): one was replaced without the other; "
                f"{fix}",
                source=self._source,
            )
        top_k: dict[str, tuple[str, ...]] = {}
        try:
            # "\n" alone ends a row: ids may hold U+2028 or U+2029, which json writes raw and
            # str.splitlines would split on.
            lines = data.decode("utf-8").removesuffix("\n").split("\n") if data else []
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", source=side) from None
        count = len(lines)
        try:  # one parse of the whole file: JSON escapes newlines inside strings
            rows = json.loads("[" + ",".join(lines) + "]")
        except (json.JSONDecodeError, RecursionError):
            rows = None
        if rows is not None and len(rows) != len(lines):
            rows = None  # a line held more or less than one row: read them one by one
        if rows is not None and _plain_rows(rows):
            top_k = {row[0]: tuple(row[1]) for row in rows if row[1]}
            lines = []  # every line is a well-formed row: nothing to name
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line) if rows is None else rows[number - 1]
            except json.JSONDecodeError as error:
                raise InputError(f"not valid JSON: {error.msg}", source=side, line=number) from None
            except RecursionError:
                raise InputError("nested too deeply", source=side, line=number) from None
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
                raise InputError("expected [query id, [doc ids]]", source=side, line=number)
            docs = row[1]
            if not (isinstance(docs, list) and all(isinstance(d, str) for d in docs)):
                raise InputError("expected a list of doc ids", source=side, line=number)
            if len(set(docs)) != len(docs):
                problem = _top_k_problems({row[0]: docs}, {row[0]}, len(docs), "top_k")[0]
                raise InputError(problem, source=side, line=number)
            if docs:
                top_k[row[0]] = tuple(docs)
        problems = _top_k_problems(top_k, self._labelled, self._k, "top_k")
        if count != self._reference.queries:
            problems.append(f"{count} queries, {self._reference.queries} recorded")
        if problems:
            raise InputError("invalid top-k side file:\n  " + "\n  ".join(problems), source=side)
        return top_k


def _read_only(columns: Mapping[str, list[float]], metrics: Sequence[str]) -> dict[str, FloatArray]:
    arrays = {}
    for metric in metrics:
        values = np.array(columns[metric], dtype=np.float64)
        values.flags.writeable = False
        arrays[metric] = values
    return arrays


def _consistency_problems(model: _BaselineFile, prefix: str) -> list[str]:
    """What the schema cannot say: lengths, id order, and keys that must match each other."""
    problems = []
    fp = model.fingerprints
    ids = model.query_ids
    order = _order_problem(ids)
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
                mean = np.mean([run[metric] for run in model.repeats.runs], axis=0)
                if not np.allclose(mean, model.scores[metric], rtol=0, atol=1e-9):
                    problems.append(f"{prefix}scores.{metric}: not the mean of {where}.runs")
        strays = sorted(set(model.repeats.varying) - labelled)
        if strays:
            problems.append(f"{where}.varying: {_some(strays)} not in query_ids")
    if isinstance(model.top_k, dict):
        problems += _top_k_problems(model.top_k, labelled, fp.k, f"{prefix}top_k")
    return problems


def _plain_rows(rows: list[Any]) -> bool:
    """Whether every row of a side file is [query id, [doc ids]] with no doc twice."""
    if not all(
        type(row) is list and len(row) == 2 and type(row[0]) is str and type(row[1]) is list
        for row in rows
    ):
        return False
    lists = [row[1] for row in rows]
    if not set(map(type, itertools.chain.from_iterable(lists))) <= {str}:
        return False
    return sum(map(len, map(set, lists))) == sum(map(len, lists))


def _top_k_problems(
    top_k: Mapping[str, Sequence[str]], labelled: set[str], k: int, where: str
) -> list[str]:
    problems = []
    unknown = sorted(set(top_k) - labelled)
    if unknown:
        problems.append(f"{where}: {_some(unknown)} not in query_ids")
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


def _column_problems(
    columns: Mapping[str, list[float]], metrics: Sequence[str], size: int, where: str
) -> list[str]:
    problems = [f"{where}: no scores for {metric}" for metric in metrics if metric not in columns]
    for metric, values in columns.items():
        if metric not in metrics:
            problems.append(f"{where}.{metric}: not one of fingerprints.metrics")
        elif len(values) != size:
            problems.append(f"{where}.{metric}: {len(values)} values for {size} query_ids")
    return problems


def _order_problem(ids: Sequence[str]) -> str | None:
    for position in range(1, len(ids)):
        if ids[position] <= ids[position - 1]:
            what = "a duplicate" if ids[position] == ids[position - 1] else "out of order"
            return f"{ids[position]!r} at position {position} is {what} (ids are sorted, unique)"
    return None


def _some(values: Sequence[str], shown: int = 5) -> str:
    text = ", ".join(repr(v) for v in values[:shown])
    return text + (f" and {len(values) - shown} more" if len(values) > shown else "")


def _describe(item: Any, prefix: str) -> str:
    path = ""
    for part in item["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    given = item.get("input")
    shown = (
        "" if item["type"] == "missing" or isinstance(given, dict | list) else f" (got {given!r})"
    )
    return f"{prefix}{path or '(top level)'}: {item['msg']}{shown}"


def _canonical(value: Mapping[str, Any]) -> dict[str, Any]:
    """Plain JSON values with keys sorted at every depth, so the file is the same every time;
    what JSON cannot hold becomes its string form, as in the retriever fingerprint."""
    result: dict[str, Any] = json.loads(json.dumps(value, sort_keys=True, default=str))
    return result
