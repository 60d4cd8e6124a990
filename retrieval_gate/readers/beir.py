"""BEIR qrels: tab-separated `query-id corpus-id score` with a header line."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.errors import InputError
from retrieval_gate.qrels import Qrels
from retrieval_gate.readers.text import numbered, numbers, open_text

LAYOUT = "'query-id<TAB>corpus-id<TAB>score'"


def read_beir_qrels(path: str | Path) -> Qrels:
    """BEIR `qrels/<split>.tsv`; the header is optional, extra columns are an error."""
    source = str(path)
    queries: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    lines: list[int] = []
    seen_content = False
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
            text = line.rstrip("\r\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            parts = [part.strip() for part in text.split("\t")]
            if len(parts) != 3 or not all(parts):
                raise InputError(
                    f"expected {LAYOUT}, got {text.strip()[:80]!r}", source=source, line=number
                )
            if not seen_content:
                seen_content = True
                if _is_header(parts):
                    continue
            queries.append(parts[0])
            docs.append(parts[1])
            grades.append(parts[2])
            lines.append(number)
    values = numbers(grades, lines, source, "score (the grade)", "an integer grade such as 1")
    return Qrels.from_rows(queries, docs, values, source=source, lines=lines)


def _is_header(parts: list[str]) -> bool:
    try:
        float(parts[2])
    except ValueError:
        return True
    return False
