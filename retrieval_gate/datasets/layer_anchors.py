"""The judge's layer in a chunked corpus: each row anchored to the text the judge read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.datasets.llm_layer import LlmJudgment


def stamped(rows: Iterable[LlmJudgment], anchors: Mapping[str, Anchor]) -> list[LlmJudgment]:
    """`rows` each anchored to its doc's anchor in `anchors` (the corpus the judge was sent
    the text of), where it has none yet: the grade is of that text, whatever chunk holds it
    later."""
    return [
        dataclasses.replace(row, anchor=anchors[row.doc])
        if row.anchor is None and row.doc in anchors
        else row
        for row in rows
    ]


def of_chunking(
    rows: Iterable[LlmJudgment], anchors: Mapping[str, Anchor] | None
) -> list[LlmJudgment]:
    """The rows grading the text each chunk of `anchors` holds (None: the corpus is not
    chunked, every row), one a (query, chunk, judge): an anchored row grades each chunk
    whose whole text is the text it read, whatever its id now (a copy of the row, the
    judge's grade still), and no chunk holding other text. Where several grade one chunk,
    the row graded under that id wins, then one graded under another id, then one written
    before anchors were (taken as graded on this text); then the first."""
    holding: dict[tuple[str, int, str], list[str]] = {}
    for chunk, anchor in (anchors or {}).items():
        holding.setdefault(_text(anchor), []).append(chunk)
    kept: dict[tuple[str, str, str, str], tuple[int, LlmJudgment]] = {}

    def keep(row: LlmJudgment, rank: int) -> None:
        key = (row.query, row.doc, row.model, row.prompt_sha256)
        if key not in kept or rank > kept[key][0]:
            kept[key] = (rank, row)

    for row in rows:
        if anchors is None or row.anchor is None:
            keep(row, 0)
            continue
        for chunk in sorted(holding.get(_text(row.anchor), ())):
            keep(
                row if chunk == row.doc else dataclasses.replace(row, doc=chunk),
                1 + (chunk == row.doc),
            )
    return [row for _, row in kept.values()]


def _text(anchor: Anchor) -> tuple[str, int, str]:
    """What names an anchor's text: its source, length and hash (`same_text`)."""
    return (anchor.source, anchor.end - anchor.start, anchor.hash)


def anchor_of(row: LlmJudgment, fallback: Mapping[str, Anchor]) -> Anchor | None:
    """The text `row` graded: its recorded anchor, else (a row written before anchors were
    recorded) where `fallback`, the baseline's chunking, had its doc; None when neither."""
    return row.anchor if row.anchor is not None else fallback.get(row.doc)
