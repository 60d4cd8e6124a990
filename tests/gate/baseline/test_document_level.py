"""The document level by hand: a document ranks where its first chunk does, its later chunks
leave the ranking, its grade is its chunks' highest, and a baseline chunk rolls up by its anchor."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate import datasets
from retrieval_gate.config.loader import load
from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.anchors import Anchor, CorpusAnchors
from retrieval_gate.datasets.label_drift import Drift, LabelDrift
from retrieval_gate.gate.baseline.document_level import ROLLED, document_level
from retrieval_gate.gate.baseline.rechunk import BEFORE
from retrieval_gate.gate.baseline.record import Repeats
from tests.helpers.baselines import FINGERPRINTS, make
from tests.helpers.builders import labelled_set, queue_dataset

METRICS = ("ndcg@10", "recall@10", "rr@10")


def _rolled(tmp_path: Path, before: list[str], after: list[str]) -> tuple[object, ...]:
    """Query q1's chunk rankings on both sides, rolled up; q2 judges C alone and both sides
    rank one chunk for it (C#0 before, A#0 after)."""
    corpus = [
        {"_id": chunk, "title": "", "text": chunk, "metadata": {"source": chunk[0]}}
        for chunk in ("A#0", "A#1", "B#0", "B#1", "C#0")
    ]
    path = labelled_set(
        tmp_path,
        qrels=[("q1", "A#1", 1), ("q1", "B#0", 2), ("q1", "B#1", 1), ("q2", "C#0", 1)],
        queries=[
            {"_id": "q1", "text": "x", "intent": "a"},
            {"_id": "q2", "text": "y", "intent": "a"},
        ],
        corpus=corpus,
    )
    dataset = datasets.load(load(path).dataset, path.parent)
    fingerprints = dataclasses.replace(
        FINGERPRINTS, k=10, metrics=METRICS, dataset=dataset.fingerprint
    )
    zeros = {metric: np.zeros(2) for metric in METRICS}

    def record(q1: list[str], q2: list[str]) -> object:
        top = {"q1": q1, "q2": q2}
        return make(fingerprints=fingerprints, query_ids=("q1", "q2"), scores=zeros, top_k=top)

    return document_level(record(before, ["C#0"]), record(after, ["A#0"]), dataset, None)


def test_a_document_ranks_where_its_first_chunk_does_graded_its_chunks_highest(
    tmp_path: Path,
) -> None:
    reference, current, dataset, notes = _rolled(
        tmp_path, ["C#0", "A#0", "B#1", "A#1", "B#0"], ["B#0", "A#1", "C#0"]
    )
    assert notes == (ROLLED,)
    # A ranks 2nd on its unjudged first chunk A#0; A#1 and B#0 leave the ranking.
    assert reference.top_k == {"q1": ("C", "A", "B"), "q2": ("C",)}
    assert current.top_k == {"q1": ("B", "A", "C"), "q2": ("A",)}
    qrels = dataset.qrels
    rows = zip(
        qrels.query_ids[qrels.query].tolist(),
        qrels.docs.tolist(),
        qrels.grade.tolist(),
        strict=True,
    )
    # B's chunks are graded 2 and 1: B is graded 2. A's ungraded A#0 leaves A at A#1's 1.
    assert list(rows) == [("q1", "A", 1.0), ("q1", "B", 2.0), ("q2", "C", 1.0)]
    # nDCG@10 with exp gain (2^g - 1) and log2(rank + 1) discounts, by hand:
    # before C(0), A(1), B(3): 1/log2(3) + 3/log2(4); ideal B, A: 3 + 1/log2(3).
    ndcg = (1 / math.log2(3) + 3 / math.log2(4)) / (3 + 1 / math.log2(3))
    assert reference.scores["ndcg@10"].tolist() == pytest.approx([ndcg, 1.0], abs=1e-15)
    assert current.scores["ndcg@10"].tolist() == [1.0, 0.0]  # B, A is the ideal order
    # Two relevant documents (A, B), both found on q1; q2's C found before, not after.
    assert reference.scores["recall@10"].tolist() == [1.0, 1.0]
    assert current.scores["recall@10"].tolist() == [1.0, 0.0]
    assert reference.scores["rr@10"].tolist() == [0.5, 1.0]  # C first: A at rank 2
    assert current.scores["rr@10"].tolist() == [1.0, 0.0]


def test_the_chunks_after_a_document_s_first_move_nothing(tmp_path: Path) -> None:
    first = _rolled(tmp_path / "a", ["C#0", "A#0", "B#1"], ["B#0", "A#1", "C#0"])
    more = _rolled(
        tmp_path / "b", ["C#0", "A#0", "A#1", "B#1", "B#0"], ["B#0", "B#1", "A#1", "A#0", "C#0"]
    )
    for one, other in zip(first[:2], more[:2], strict=True):
        assert one.top_k == other.top_k
        assert {m: v.tolist() for m, v in one.scores.items()} == {
            m: v.tolist() for m, v in other.scores.items()
        }


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


def test_repeated_runs_that_differed_are_said_to_lose_their_noise_when_rolled_up() -> None:
    # Only the first run's top k is kept: the rolled-up record has no runs to measure noise by.
    dataset = chunked({"q1": {"new-1": 2}}, {"new-1": "A", "new-2": "B"})
    runs = ({"ndcg@10": np.asarray([0.5]), "recall@10": np.asarray([1.0])},) * 2
    noisy = Repeats(runs=runs, varying=("q1",))
    steady = Repeats(runs=runs, varying=())
    baseline = dataclasses.replace(record({"q1": ["new-1"]}), repeats=steady)
    current = dataclasses.replace(record({"q1": ["new-2", "new-1"]}), repeats=noisy)
    *_, notes = document_level(baseline, current, dataset, None)
    assert notes[1] == (
        "the current side's repeated runs are rolled up from the first run's top k (the others "
        "keep no top k): the run noise they showed is not allowed for at the document level; "
        "gate at dataset.level chunk to allow for it"
    )
    *_, quiet = document_level(
        baseline, dataclasses.replace(current, repeats=steady), dataset, None
    )
    assert quiet == (ROLLED,)
