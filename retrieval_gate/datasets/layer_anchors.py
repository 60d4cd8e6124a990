"""The judge's layer in a chunked corpus: each row anchored to the text the judge read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.datasets.label_drift import same_text
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
    """The rows that grade the text their doc holds in the chunking of `anchors` (None: the
    corpus is not chunked, every row): an anchored row whose doc holds other text now graded
    another chunking's chunk. A row without an anchor is taken as graded on this text, as
    before anchors were recorded; where a pair has both, the anchored row is kept."""
    kept: dict[tuple[str, str, str, str], LlmJudgment] = {}
    for row in rows:
        if anchors is not None and row.anchor is not None:
            now = anchors.get(row.doc)
            if now is None or not same_text(now, row.anchor):
                continue
        key = (row.query, row.doc, row.model, row.prompt_sha256)
        if key not in kept or kept[key].anchor is None:
            kept[key] = row
    return list(kept.values())


def anchor_of(row: LlmJudgment, fallback: Mapping[str, Anchor]) -> Anchor | None:
    """The text `row` graded: its recorded anchor, else (a row written before anchors were
    recorded) where `fallback`, the baseline's chunking, had its doc; None when neither."""
    return row.anchor if row.anchor is not None else fallback.get(row.doc)
