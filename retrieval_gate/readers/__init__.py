"""Readers for qrels and runs: a registry of formats, detected from the file when not named."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from retrieval_gate.core.judgments import Combine, Judgments
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.errors import InputError
from retrieval_gate.readers.beir import ANNOTATOR_HEADERS, read_beir_judgments
from retrieval_gate.readers.dicts import (
    qrels_from_dict,
    read_json_judgments,
    read_json_run,
    run_from_dict,
)
from retrieval_gate.readers.impressions import read_impressions_judgments, read_impressions_run
from retrieval_gate.readers.jsonl import read_jsonl_judgments, read_jsonl_run
from retrieval_gate.readers.text import first_content_line, logical_name
from retrieval_gate.readers.trec import read_trec_judgments, read_trec_run

QRELS_FORMATS: dict[str, Callable[[Path], Judgments]] = {
    "trec": read_trec_judgments,
    "beir": read_beir_judgments,
    "jsonl": read_jsonl_judgments,
    "json": read_json_judgments,
    "impressions": read_impressions_judgments,
}
RUN_FORMATS: dict[str, Callable[[Path], Run]] = {
    "trec": read_trec_run,
    "jsonl": read_jsonl_run,
    "json": read_json_run,
    "impressions": read_impressions_run,
}


def read_qrels(
    source: str | Path | Mapping[str, Mapping[str, float]] | Qrels,
    format: str | None = None,
    *,
    combine: Combine = "median",
) -> Qrels:
    """Qrels from a file (format detected unless named) or a `{query: {doc: grade}}` mapping;
    several annotators' grades of one (query, doc) become one by `combine`."""
    if isinstance(source, Qrels):
        return source
    if isinstance(source, Mapping):
        return qrels_from_dict(source)
    return read_judgments(source, format).qrels(combine)


def read_judgments(source: str | Path, format: str | None = None) -> Judgments:
    """Every judgment row of a qrels file (format detected unless named), with annotators."""
    path = Path(source)
    name = format or detect_qrels_format(path)
    judgments: Judgments = _reader(QRELS_FORMATS, name, "qrels")(path)
    if len(judgments) == 0:
        raise InputError(
            f"no judgments found (read as {name}); a labelled set needs at least one "
            "'query doc grade' row",
            source=str(path),
        )
    return judgments


def read_run(source: str | Path | Mapping[str, Any] | Run, format: str | None = None) -> Run:
    """A run from a file (format detected unless named) or a `{query: {doc: score}}` mapping."""
    if isinstance(source, Run):
        return source
    if isinstance(source, Mapping):
        return run_from_dict(source)
    path = Path(source)
    name = format or detect_run_format(path)
    run: Run = _reader(RUN_FORMATS, name, "run")(path)
    return run


def detect_qrels_format(path: Path) -> str:
    """`jsonl`/`json` by suffix or content, `beir` for 3 tab-separated fields (or a header
    with an annotator column), else `trec`."""
    json_format, line = _json_format(path)
    if json_format or line is None:
        return json_format or "trec"
    fields = line.split("\t")
    if len(fields) == 3 or (len(fields) == 4 and fields[3].strip().lower() in ANNOTATOR_HEADERS):
        return "beir"
    if len(line.split()) == 4:
        return "trec"
    raise InputError(
        f"cannot tell the qrels format from its first line {line[:80]!r}; expected TREC "
        "'qid iter docno rel', BEIR 'query-id<TAB>corpus-id<TAB>score' or JSON Lines. "
        f"Name it with --qrels-format ({', '.join(QRELS_FORMATS)})",
        source=str(path),
    )


def detect_run_format(path: Path) -> str:
    """`jsonl`/`json` by suffix or content, else `trec`."""
    return _json_format(path)[0] or "trec"


def _json_format(path: Path) -> tuple[str | None, str | None]:
    """`jsonl` or `json` when the suffix or the first content line says so, and that line."""
    name = logical_name(path)
    if name.endswith((".jsonl", ".json")):
        return name.rsplit(".", 1)[1], None
    line = first_content_line(path)
    return ("jsonl" if line is not None and line.startswith("{") else None), line


def _reader(registry: Mapping[str, Callable[[Path], Any]], name: str, what: str) -> Any:
    if name not in registry:
        raise InputError(f"unknown {what} format {name!r}; available: {', '.join(registry)}")
    return registry[name]


__all__ = [
    "QRELS_FORMATS",
    "RUN_FORMATS",
    "qrels_from_dict",
    "read_judgments",
    "read_qrels",
    "read_run",
    "run_from_dict",
]
