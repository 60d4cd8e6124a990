"""The label-free checks of a config: read the unlabelled sample, run the retriever on it (and
an exact search for the ANN check), keep the reference's top k beside the baseline, compare."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.config.unlabelled import UnlabelledConfig
from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.model import Document, Query
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.checks.policy import gate_settings
from retrieval_gate.gate.checks.slicing import slice_queries
from retrieval_gate.gate.modes.label_free import (
    LabelFreeRun,
    Lists,
    ann_columns,
    checks_of,
    label_free_comparisons,
    overlap_columns,
)
from retrieval_gate.readers.text import open_text

REFERENCE_VERSION = 1
RECREATE_REFERENCE = "recreate it with `retrieval-gate baseline --force` on the main branch"


@dataclass(frozen=True)
class LabelFreeChecks:
    """The label-free checks decided, what they read, and what to warn about."""

    comparisons: tuple[Comparison, ...]
    run: LabelFreeRun
    warnings: tuple[str, ...]


def reference_path(baseline: Path) -> Path:
    """Where the reference's top k of the unlabelled queries is kept: beside the baseline."""
    return baseline.with_name(baseline.name.removesuffix(".json") + ".unlabelled.jsonl")


def overlap_checked(config: GateConfig) -> bool:
    """Whether `config` has label-free checks against the reference (not only ANN ones)."""
    return config.unlabelled is not None and any(
        not key.startswith("ann_recall@") for key in config.unlabelled.checks
    )


def read_unlabelled(config: GateConfig, settings: UnlabelledConfig) -> tuple[list[Query], int]:
    """The sample of unlabelled queries (sorted by id) and how many the file holds.

    Each line is a JSON object with a string `id` and a non-empty string `text`; its other
    fields are metadata (the slices). Every problem is an InputError naming the file and line."""
    path = config.resolve(settings.queries)
    source = settings.queries
    if not path.is_file():
        raise InputError(
            "no such file: unlabelled.queries names a JSONL file of {id, text} lines",
            source=source,
        )
    handle = open_text(path)  # as every reader: a byte-order mark dropped, gzip read
    queries: list[Query] = []
    lines: dict[str, int] = {}
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                query = _query(line, source, number)
                if query.id in lines:
                    raise InputError(
                        f"query id {one_line(query.id)!r} again (first at line "
                        f"{lines[query.id]}); ids must be unique",
                        source=source,
                        line=number,
                    )
                lines[query.id] = number
                queries.append(query)
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text; save the file as UTF-8", source=source) from None
    if not queries:
        raise InputError("no queries: write one {id, text} object a line", source=source)
    total = len(queries)
    if settings.sample is not None and settings.sample < total:
        rng = np.random.default_rng(settings.seed)
        chosen = rng.choice(total, size=settings.sample, replace=False)
        queries = [queries[i] for i in sorted(chosen.tolist())]
    return sorted(queries, key=lambda q: q.id), total


def _query(line: str, source: str, number: int) -> Query:
    try:
        row = parsed_json(line)
    except (json.JSONDecodeError, RecursionError):
        raise InputError(
            "not a JSON object; write one {id, text} object a line", source=source, line=number
        ) from None
    if not isinstance(row, dict):
        raise InputError("not a JSON object {id, text}", source=source, line=number)
    query_id, text = row.get("id"), row.get("text")
    if isinstance(query_id, int) and not isinstance(query_id, bool):
        query_id = str(query_id)
    if not isinstance(query_id, str) or not query_id.strip():
        raise InputError('no "id": give each query a string id', source=source, line=number)
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            f'query {one_line(query_id)!r} has no "text" string', source=source, line=number
        )
    metadata = {key: value for key, value in row.items() if key not in ("id", "text")}
    return Query(query_id, text, metadata)


def run_lists(
    config: GateConfig,
    queries: Sequence[Query],
    *,
    exact: bool = False,
    corpus: Mapping[str, Document] | None = None,
    progress: TextIO | None = None,
    retriever_dir: Path | None = None,
) -> tuple[Lists, tuple[str, ...]]:
    """One uncached run of the configured retriever (with exact search when `exact`) on
    `queries`: each answered query's top-k doc ids, and the queries that failed (within the
    gate's error budget: more is a GateError). The retriever's relative paths start at
    `retriever_dir` (a checkout of another commit), else at the config's folder."""
    from retrieval_gate.adapters import build_retriever
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.execution.runner import check_budget, run_queries
    from retrieval_gate.pipeline.execute import run_settings

    settings = run_settings(config)
    block = exact_config(config) if exact else config.retriever
    retriever = build_retriever(block, base_dir=retriever_dir or config.base_dir, corpus=corpus)
    try:
        result = run_queries(
            retriever,
            queries,
            config.k,
            settings,
            progress=make_progress(progress, enabled=True) if progress is not None else None,
        )
    finally:
        retriever.close()
    check_budget(result, len(queries), settings.error_budget)
    lists = {query: tuple(hit.doc_id for hit in answer) for query, answer in result.hits.items()}
    return lists, tuple(failure.query_id for failure in result.failures)


def exact_config(config: GateConfig) -> Any:
    """The retriever block searching exactly, for the ANN check: a store's `exact: true`, or
    a python retriever called with the keyword argument exact=True. Raises GateError for a
    retriever that cannot say."""
    block = config.retriever
    if getattr(block, "query", None) == "fts":
        # A full-text search has no vector index: its exact twin is itself, so the check
        # would read 1.0 whatever the index does.
        raise GateError(
            f"unlabelled.checks: ann_recall compares the retriever's vector index with an "
            f"exact search, and a {block.type} retriever with query: fts searches no vector "
            "index: use query: dense or hybrid, or drop ann_recall"
        )
    if "exact" in type(block).model_fields:
        return block.model_copy(update={"exact": True})
    if block.type == "python":
        return block.model_copy(update={"kwargs": {**getattr(block, "kwargs", {}), "exact": True}})
    raise GateError(
        f"unlabelled.checks: ann_recall compares the retriever's index with an exact search, "
        f"and a {block.type} retriever has no exact switch: use a vector store retriever "
        "(exact: true) or a python one that takes exact=True, or drop ann_recall"
    )


def label_free_checks(
    config: GateConfig,
    *,
    runs: int,
    reference: Sequence[Lists] | None,
    reference_label: str,
    corpus: Mapping[str, Document] | None = None,
    progress: TextIO | None = None,
) -> LabelFreeChecks:
    """Run the current retriever `runs` times on the unlabelled sample (and once with exact
    search when there are ANN checks) and decide every label-free check. `reference`: the
    reference's runs on the same sample (kept beside the baseline, or run at another commit);
    None leaves the overlap checks out, with a warning (an ANN check needs no reference).
    Queries that failed on any run are left out."""
    settings = config.unlabelled
    if settings is None:
        raise GateError("the config has no unlabelled: block")
    queries, available = read_unlabelled(config, settings)
    checks = checks_of(settings)
    ann = [check for check in checks if check.measure == "ann_recall"]
    overlaps = [check for check in checks if check.measure != "ann_recall"]
    warnings: list[str] = []
    failed: set[str] = set()
    current = []
    for _ in range(runs):
        lists, failures = run_lists(config, queries, corpus=corpus, progress=progress)
        current.append(lists)
        failed.update(failures)
    exact: Lists | None = None
    if ann:
        exact, failures = run_lists(config, queries, exact=True, corpus=corpus, progress=progress)
        failed.update(failures)
    if overlaps and reference is None:
        warnings.append(
            f"unlabelled: {', '.join(c.name for c in overlaps)} not checked: they compare "
            "with the reference's top k, and none was given"
        )
        overlaps = []
    if failed:
        warnings.append(
            f"unlabelled: {plural(len(failed), 'query', 'queries')} failed on a run and "
            f"{'is' if len(failed) == 1 else 'are'} left out of the label-free checks: "
            + ", ".join(one_line(q) for q in sorted(failed)[:5])
        )
    kept = [query for query in queries if query.id not in failed]
    ids = [query.id for query in kept]
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if overlaps and reference is not None:
        b, a = overlap_columns(overlaps, ids, reference, current)
        before.update(b)
        after.update(a)
    if ann and exact is not None:
        b, a = ann_columns(ann, ids, exact, current)
        before.update(b)
        after.update(a)
    # Production queries need not carry the labelled set's fields: slice by those they have.
    present = {field for query in kept for field in query.metadata}
    absent = [field for field in config.slices.by if field not in present]
    if absent:
        warnings.append(
            f"unlabelled: no query of {settings.queries} has the slices.by "
            f"field{'s' if len(absent) > 1 else ''} {', '.join(absent)}: the label-free "
            "checks are not sliced by them"
        )
    by = [field for field in config.slices.by if field in present]
    combine = [group for group in config.slices.combine if all(f in present for f in group)]
    slices = slice_queries(kept, by, combine, config.slices.query_length.bins)
    decided = [c for c in checks if c.name in before]
    comparisons = label_free_comparisons(decided, (before, after), slices, gate_settings(config))
    run = LabelFreeRun(
        queries=len(kept),
        available=available,
        source=settings.queries,
        reference=reference_label if overlaps else "",
        exact=bool(ann),
    )
    return LabelFreeChecks(comparisons, run, tuple(warnings))


def write_reference(path: Path, config: GateConfig, runs: Sequence[Lists]) -> None:
    """Keep the reference's runs on the unlabelled sample beside the baseline at `path`: a
    header line, then one line a query with its top k of each run (k ids at most)."""
    settings = config.unlabelled
    if settings is None:
        raise GateError("the config has no unlabelled: block")
    queries, _ = read_unlabelled(config, settings)
    ids = [query.id for query in queries]
    header = {
        "unlabelled_reference": REFERENCE_VERSION,
        "k": config.k,
        "runs": len(runs),
        "queries_sha256": _ids_sha256(ids),
    }
    lines = [json.dumps(header, sort_keys=True)]
    for query in ids:
        top = [list(run.get(query, ()))[: config.k] for run in runs]
        lines.append(json.dumps({"id": query, "top_k": top}, ensure_ascii=False))
    write_text_atomic(path, "\n".join(lines) + "\n")


def read_reference(path: Path, config: GateConfig) -> list[Lists]:
    """The reference's runs kept by `write_reference`, checked against this config's sample
    and k. Every problem is an InputError saying what to do."""
    settings = config.unlabelled
    if settings is None:
        raise GateError("the config has no unlabelled: block")
    source = str(path)
    try:
        text = regular_file(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            f"no label-free reference at {path}: the unlabelled checks compare with the "
            "reference's top k, kept beside the baseline; " + RECREATE_REFERENCE
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the file: {error}", source=source) from None
    rows = text.splitlines()
    try:
        header = parsed_json(rows[0]) if rows else None
    except (json.JSONDecodeError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("unlabelled_reference") != REFERENCE_VERSION:
        raise InputError(f"not a label-free reference file; {RECREATE_REFERENCE}", source=source)
    queries, _ = read_unlabelled(config, settings)
    ids = [query.id for query in queries]
    if header.get("queries_sha256") != _ids_sha256(ids) or header.get("k") != config.k:
        raise InputError(
            "the unlabelled sample or k changed since the baseline (unlabelled.queries, "
            f"sample, seed or k): the reference's top k is of other queries; {RECREATE_REFERENCE}",
            source=source,
        )
    count = header.get("runs")
    if not isinstance(count, int) or count < 1:
        raise InputError(f"the header has no run count; {RECREATE_REFERENCE}", source=source)
    runs: list[dict[str, tuple[str, ...]]] = [{} for _ in range(count)]
    for number, line in enumerate(rows[1:], 2):
        try:
            row = parsed_json(line)
        except (json.JSONDecodeError, RecursionError):
            row = None
        top = row.get("top_k") if isinstance(row, dict) else None
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("id"), str)
            or not isinstance(top, list)
            or len(top) != count
            or not all(isinstance(ids_, list) and len(ids_) <= config.k for ids_ in top)
            or not all(isinstance(doc, str) for ids_ in top for doc in ids_)
        ):
            raise InputError(
                f"not a query's top k of {count} runs; {RECREATE_REFERENCE}",
                source=source,
                line=number,
            )
        for run, ranked in zip(runs, top, strict=True):
            if ranked:
                run[row["id"]] = tuple(ranked)
    return list(runs)


def _ids_sha256(ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
