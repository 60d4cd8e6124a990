"""The document level worked by hand on five chunks of three documents: a document ranks where
its first chunk does, its later chunks leave the ranking, and its grade is its chunks' highest."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate import datasets
from retrieval_gate.config.loader import load
from retrieval_gate.gate.baseline.document_level import ROLLED, document_level
from tests.helpers.baselines import FINGERPRINTS, make
from tests.helpers.builders import labelled_set

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
