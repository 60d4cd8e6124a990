"""The document-level view of a chunked corpus, on records small enough to score by hand."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.anchors import Anchor, CorpusAnchors
from retrieval_gate.datasets.label_drift import Drift, LabelDrift
from retrieval_gate.gate.baseline.document_level import ROLLED, document_level
from retrieval_gate.gate.baseline.rechunk import BEFORE
from tests.helpers.baselines import make
from tests.helpers.builders import queue_dataset


def chunked(judgments: dict[str, dict[str, float]], sources: dict[str, str]) -> Dataset:
    """A labelled set whose current chunking names these sources (chunk -> source)."""
    anchors = CorpusAnchors(anchors={}, unanchored=(), sources=sources)
    return dataclasses.replace(queue_dataset(judgments), anchors=anchors)


def record(top_k: dict[str, list[str]], **changes: Any) -> Any:
    """One query's record; its scores are replaced when rolled up."""
    scores = {"ndcg@10": [0.0], "recall@10": [0.0]}
    return make(query_ids=("q1",), scores=scores, top_k=top_k, **changes)


def test_a_baseline_chunk_rolls_up_to_the_source_its_own_anchor_names() -> None:
    # The current chunking no longer has old-1: only the baseline's anchor knows it is of A.
    dataset = chunked({"q1": {"old-1": 2}}, {"new-1": "A", "new-2": "B"})
    baseline = record({"q1": ["old-1"]}, chunk_anchors={"old-1": Anchor("A", 0, 5, "0" * 16)})
    current = record({"q1": ["new-2", "new-1"]})
    before, after, both, notes = document_level(baseline, current, dataset, None)
    assert both.qrels.judgments_of("q1") == {"A": 2.0}
    assert before.top_k["q1"] == ("A",)
    assert after.top_k["q1"] == ("B", "A")
    # A is found by both sides: recall 1, and at rank 1 and 2 an nDCG of 1 and 1/log2(3).
    assert before.scores["recall@10"].tolist() == after.scores["recall@10"].tolist() == [1.0]
    assert before.scores["ndcg@10"].tolist() == [1.0]
    np.testing.assert_allclose(after.scores["ndcg@10"], [1 / np.log2(3)], rtol=1e-15)
    assert notes == (ROLLED,)


def test_a_document_s_grade_is_its_judged_chunks_highest_on_both_sides() -> None:
    dataset = chunked({"q1": {"c1": 1, "c2": 2, "c3": 0}}, {"c1": "A", "c2": "A", "c3": "B"})
    baseline = record({"q1": ["c1"]})
    current = record({"q1": ["c3", "c2"]})
    before, after, both, notes = document_level(baseline, current, dataset, None)
    # Both sides grade A 2: no label differs, so nothing is renamed and no hole is noted.
    assert both.qrels.judgments_of("q1") == {"A": 2.0, "B": 0.0}
    assert (before.top_k["q1"], after.top_k["q1"]) == (("A",), ("B", "A"))
    assert notes == (ROLLED,)


def test_a_document_whose_judged_text_is_gone_is_a_hole_on_the_current_side() -> None:
    dataset = chunked({"q1": {"old-1": 2}}, {"new-1": "A"})
    baseline = record({"q1": ["old-1"]}, chunk_anchors={"old-1": Anchor("A", 0, 5, "0" * 16)})
    current = record({"q1": ["new-1"]})
    orphaned = LabelDrift("q1", "old-1", 2.0, Drift("orphaned"))
    before, after, both, notes = document_level(baseline, current, dataset, [orphaned])
    # The reference's A keeps its grade under another name; the current A is judged by nobody.
    assert both.qrels.judgments_of("q1") == {f"A{BEFORE}": 2.0}
    assert (before.top_k["q1"], after.top_k["q1"]) == ((f"A{BEFORE}",), ("A",))
    assert (before.scores["recall@10"].tolist(), after.scores["recall@10"].tolist()) == (
        [1.0],
        [0.0],
    )
    assert notes == (
        ROLLED,
        "1 (query, document) label lost judged text on the current side (orphaned chunks): "
        "label holes for it there",
    )
