"""BEIR qrels: tab-separated `query-id corpus-id score`, a header, maybe an annotator column."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import numbered, numbers, open_text

LAYOUT = "'query-id<TAB>corpus-id<TAB>score' (a 4th column when the header names it annotator)"
ANNOTATOR_HEADERS = ("annotator", "assessor", "judge")


def read_beir_judgments(path: str | Path) -> Judgments:
    """BEIR `qrels/<split>.tsv`; the header is optional, and a 4th column is read as the
    annotator when the header names it so. Other extra columns are an error."""
    source = str(path)
    queries: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    annotators: list[str] = []
    lines: list[int] = []
    seen_content = False
    width = 3
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
            text = line.rstrip("\r\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            parts = [part.strip() for part in text.split("\t")]
            if not seen_content:
                seen_content = True
                if len(parts) == 4 and parts[3].lower() in ANNOTATOR_HEADERS:
                    width = 4
                if len(parts) == width and all(parts) and _is_header(parts):
                    continue
            if len(parts) != width or not all(parts):
                raise InputError(
                    f"expected {LAYOUT}, got {text.strip()[:80]!r}", source=source, line=number
                )
            queries.append(parts[0])
            docs.append(parts[1])
            grades.append(parts[2])
            if width == 4:
                annotators.append(parts[3])
            lines.append(number)
    values = numbers(grades, lines, source, "score (the grade)", "an integer grade such as 1")
    return Judgments.from_rows(
        queries,
        docs,
        values,
        annotators=annotators if width == 4 else None,
        source=source,
        lines=lines,
    )


def _is_header(parts: list[str]) -> bool:
    try:
        float(parts[2])
    except ValueError:
        return True
    return False
