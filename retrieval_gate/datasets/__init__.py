"""Labelled sets: a registry of layouts (BEIR, TREC, JSON Lines) loaded into a Dataset."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.model import Query
from retrieval_gate.datasets.anchors import dataset_anchors
from retrieval_gate.datasets.dataset import Dataset, DataWarning, Labels, assemble
from retrieval_gate.datasets.draws import draws_path, read_draws
from retrieval_gate.datasets.files import (
    JUDGMENT_KEYS,
    QueryIds,
    existing_path,
    field_corpus,
    field_path,
    query_from_json,
    read_corpus,
    read_json_queries,
    read_trec_topics,
    read_tsv_queries,
)
from retrieval_gate.datasets.ir_datasets_source import load_ir_datasets
from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_judgments
from retrieval_gate.readers.subtopics import read_subtopics
from retrieval_gate.readers.text import json_lines, logical_name, open_text

if TYPE_CHECKING:
    from retrieval_gate.config.schema import DatasetConfig


def load(spec: DatasetConfig, base_dir: Path, *, keep_unjudged: bool = False) -> Dataset:
    """The labelled set `spec` describes; relative paths resolve against `base_dir`.
    `keep_unjudged` (gate.labels: human+llm) keeps queries without judgments (`assemble`)."""
    labels = load_labels(spec, base_dir, judgments_required=not keep_unjudged)
    return assemble(labels, combine=spec.annotators.combine, keep_unjudged=keep_unjudged)


def qrels_file(spec: DatasetConfig, base_dir: Path) -> Path | None:
    """The qrels file `spec` reads (dataset.qrels, else a BEIR folder's split); None when
    its judgments are inline or come from ir_datasets."""
    if spec.ir_datasets is not None:
        return None
    if spec.qrels:
        return field_path(spec.qrels, base_dir, "dataset.qrels")
    folder = field_path(spec.path, base_dir, "dataset.path") if spec.path else None
    default = folder / "qrels" / f"{spec.split}.tsv" if folder is not None else None
    return default if default is not None and default.is_file() else None


def load_labels(spec: DatasetConfig, base_dir: Path, *, judgments_required: bool = True) -> Labels:
    """The labelled set's files as read (every judgment row kept), before any check; with
    the subtopic qrels of `dataset.subtopics` when given.

    Without `judgments_required` (`judge`, gate.labels: human+llm), a set of queries with no
    qrels yet is read with no judgments: a team starts from zero labels there. A qrels file
    the config names must still exist."""
    if spec.ir_datasets is not None:
        labels = load_ir_datasets(spec, base_dir)
    else:
        layout = spec.format if spec.format != "auto" else _detect(spec)
        try:
            labels = LOADERS[layout](spec, base_dir)
        except _NoJudgmentsError as missing:
            if judgments_required:
                raise InputError(str(missing), source=missing.source) from None
            labels = missing.labels
    if spec.subtopics:
        path = field_path(spec.subtopics, base_dir, "dataset.subtopics")
        labels = dataclasses.replace(labels, subtopics=read_subtopics(path))
    if labels.corpus is not None:
        anchors = dataset_anchors(spec, base_dir, labels.corpus)
        labels = dataclasses.replace(labels, anchors=anchors if anchors.chunked else None)
    qrels = qrels_file(spec, base_dir)
    record = read_draws(draws_path(qrels)) if qrels is not None else None
    return dataclasses.replace(labels, draws=record) if record is not None else labels


def _load_beir(spec: DatasetConfig, base_dir: Path) -> Labels:
    folder = field_path(spec.path, base_dir, "dataset.path") if spec.path else None
    queries = (
        field_path(spec.queries, base_dir, "dataset.queries")
        if spec.queries
        else (existing_path(folder / "queries.jsonl", "dataset.path") if folder else None)
    )
    default_qrels = folder / "qrels" / f"{spec.split}.tsv" if folder else None
    qrels = (
        field_path(spec.qrels, base_dir, "dataset.qrels")
        if spec.qrels
        else (default_qrels if default_qrels is not None and default_qrels.exists() else None)
    )
    corpus = (
        field_path(spec.corpus, base_dir, "dataset.corpus")
        if spec.corpus
        else (folder / "corpus.jsonl" if folder and (folder / "corpus.jsonl").exists() else None)
    )
    if queries is None or (qrels is None and default_qrels is None):
        raise InputError("dataset: give `path` (a BEIR folder) or both `queries` and `qrels`")
    labels = Labels(
        read_json_queries(queries),
        read_judgments(qrels) if qrels is not None else _no_judgments(str(default_qrels)),
        read_corpus(corpus) if corpus else None,
        source=str(folder or queries),
        layout="beir",
    )
    if qrels is None:  # checked as before: the same error when judgments are required
        raise _NoJudgmentsError(
            f"dataset.split: {default_qrels} does not exist; check the path (relative paths "
            "start at the config file's folder)",
            labels,
        )
    return labels


def _load_trec(spec: DatasetConfig, base_dir: Path) -> Labels:
    if not spec.queries or not spec.qrels:
        raise InputError("dataset: the trec layout needs `queries` (topics or .tsv) and `qrels`")
    queries_path = field_path(spec.queries, base_dir, "dataset.queries")
    name = logical_name(queries_path)
    queries = (
        read_tsv_queries(queries_path)
        if name.endswith((".tsv", ".txt")) and "<top>" not in _head(queries_path)
        else read_trec_topics(queries_path, spec.query_field)
    )
    return Labels(
        queries,
        read_judgments(field_path(spec.qrels, base_dir, "dataset.qrels")),
        field_corpus(spec, base_dir),
        source=str(queries_path),
        layout="trec",
    )


def _load_jsonl(spec: DatasetConfig, base_dir: Path) -> Labels:
    """Queries as JSON Lines, each optionally carrying its judgments inline
    (`"qrels": {"doc": grade}` or a list of `{"doc_id", "relevance"[, "annotator"]}`)."""
    if not spec.queries:
        raise InputError("dataset: the jsonl layout needs `queries`")
    path = field_path(spec.queries, base_dir, "dataset.queries")
    queries: list[Query] = []
    judged_queries: list[str] = []
    docs: list[str] = []
    grades: list[float] = []
    annotators: list[str | None] = []
    lines: list[int] = []
    seen = QueryIds(str(path))
    for line, row in json_lines(path):
        query = seen.first(query_from_json(row, str(path), line), line)
        queries.append(query)
        for doc, grade, annotator in _inline_judgments(row, str(path), line):
            judged_queries.append(query.id)
            docs.append(doc)
            grades.append(grade)
            annotators.append(annotator)
            lines.append(line)
    if spec.qrels:
        if judged_queries:
            raise InputError(
                "judgments are both inline and in dataset.qrels; keep one", source=str(path)
            )
        judgments = read_judgments(field_path(spec.qrels, base_dir, "dataset.qrels"))
    elif judged_queries:
        named = [a for a in annotators if a is not None]
        if named and len(named) != len(annotators):
            raise InputError(
                "some inline judgments name an annotator and some do not; name one on every "
                "judgment or on none",
                source=str(path),
            )
        judgments = Judgments.from_rows(
            judged_queries, docs, grades, annotators=named or None, source=str(path), lines=lines
        )
    else:
        raise _NoJudgmentsError(
            "no judgments: add `qrels` to each query line or set dataset.qrels",
            Labels(
                queries,
                _no_judgments(str(path)),
                field_corpus(spec, base_dir),
                source=str(path),
                layout="jsonl",
            ),
            source=str(path),
        )
    return Labels(
        queries, judgments, field_corpus(spec, base_dir), source=str(path), layout="jsonl"
    )


def _load_impressions(spec: DatasetConfig, base_dir: Path) -> Labels:
    """An impression log as the labelled set: its queries (or users), clicks as grades."""
    from retrieval_gate.readers.impressions import read_impressions

    if not spec.impressions:
        raise InputError("dataset: the impressions layout needs `impressions` (the log file)")
    others = [name for name in ("path", "queries", "qrels", "corpus") if getattr(spec, name)]
    if others:
        raise InputError(
            f"dataset: `impressions` is the whole labelled set; remove {', '.join(others)}"
        )
    path = field_path(spec.impressions, base_dir, "dataset.impressions")
    log = read_impressions(path)
    return Labels(list(log.queries), log.judgments, None, source=str(path), layout="impressions")


class _NoJudgmentsError(Exception):
    """A set of queries with no judgments yet: an error, unless the caller takes `labels`."""

    def __init__(self, message: str, labels: Labels, source: str | None = None) -> None:
        super().__init__(message)
        self.labels = labels
        self.source = source


def _no_judgments(source: str) -> Judgments:
    return Judgments.from_rows([], [], [], source=source)


LOADERS: dict[str, Callable[[DatasetConfig, Path], Labels]] = {
    "beir": _load_beir,
    "trec": _load_trec,
    "jsonl": _load_jsonl,
    "impressions": _load_impressions,
}


def _detect(spec: DatasetConfig) -> str:
    if spec.impressions:
        return "impressions"
    if spec.path:
        return "beir"
    if spec.queries and logical_name(Path(spec.queries)).endswith(".jsonl"):
        return "jsonl" if not spec.qrels else "beir"
    return "trec"


def _inline_judgments(
    row: dict[str, Any], source: str, line: int
) -> list[tuple[str, float, str | None]]:
    raw = next((row[key] for key in JUDGMENT_KEYS if key in row), None)
    if raw is None:
        return []
    pairs: list[tuple[Any, Any, Any]]
    if isinstance(raw, Mapping):
        pairs = [(doc, grade, None) for doc, grade in raw.items()]
    elif isinstance(raw, list) and all(isinstance(item, Mapping) for item in raw):
        pairs = [
            (
                item.get("doc_id", item.get("id")),
                item.get("relevance", item.get("grade")),
                item.get("annotator"),
            )
            for item in raw
        ]
    else:
        raise InputError(
            "judgments must be {doc: grade} or a list of {doc_id, relevance}",
            source=source,
            line=line,
        )
    out = []
    for doc, grade, annotator in pairs:
        if (
            not isinstance(doc, str | int)
            or isinstance(grade, bool)
            or not isinstance(grade, int | float)
            or not isinstance(annotator, str | int | None)
        ):
            raise InputError(
                f"bad judgment {doc!r}: {grade!r}; expected a doc id and a number",
                source=source,
                line=line,
            )
        out.append((str(doc), float(grade), None if annotator is None else str(annotator)))
    return out


def _head(path: Path) -> str:
    with open_text(path) as handle:
        return handle.read(4096)


__all__ = ["LOADERS", "DataWarning", "Dataset", "Labels", "assemble", "load", "load_labels"]
