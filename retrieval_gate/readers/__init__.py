"""Readers for qrels and runs: a registry of formats, detected from the file when not named."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError
from retrieval_gate.qrels import Qrels
from retrieval_gate.readers.beir import read_beir_qrels
from retrieval_gate.readers.dicts import (
    qrels_from_dict,
    read_json_qrels,
    read_json_run,
    run_from_dict,
)
from retrieval_gate.readers.jsonl import read_jsonl_qrels, read_jsonl_run
from retrieval_gate.readers.text import first_content_line, logical_name
from retrieval_gate.readers.trec import read_trec_qrels, read_trec_run
from retrieval_gate.run import Run

QRELS_FORMATS: dict[str, Callable[[Path], Qrels]] = {
    "trec": read_trec_qrels,
    "beir": read_beir_qrels,
    "jsonl": read_jsonl_qrels,
    "json": read_json_qrels,
}
RUN_FORMATS: dict[str, Callable[[Path], Run]] = {
    "trec": read_trec_run,
    "jsonl": read_jsonl_run,
    "json": read_json_run,
}


def read_qrels(
    source: str | Path | Mapping[str, Mapping[str, float]] | Qrels, format: str | None = None
) -> Qrels:
    """Qrels from a file (format detected unless named) or a `{query: {doc: grade}}` mapping."""
    if isinstance(source, Qrels):
        return source
    if isinstance(source, Mapping):
        return qrels_from_dict(source)
    path = Path(source)
    name = format or detect_qrels_format(path)
    qrels: Qrels = _reader(QRELS_FORMATS, name, "qrels")(path)
    if len(qrels) == 0:
        raise InputError(
            f"no judgments found (read as {name}); a labelled set needs at least one "
            "'query doc grade' row",
            source=str(path),
        )
    return qrels


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
    """`jsonl`/`json` by suffix or content, `beir` for 3 tab-separated fields, else `trec`."""
    json_format, line = _json_format(path)
    if json_format or line is None:
        return json_format or "trec"
    if len(line.split("\t")) == 3:
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
    "read_qrels",
    "read_run",
    "run_from_dict",
]
