"""Label drift: each kind on a hand-made chunking, and counts equal to a brute-force
classification on seeded random chunkings."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from retrieval_gate.core.model import Document
from retrieval_gate.datasets.anchors import corpus_anchors
from retrieval_gate.datasets.label_drift import Chunking, drift_counts, label_drift
from retrieval_gate.readers.dicts import qrels_from_dict
from tests.helpers.chunkings import brute_force_kind, edited, random_chunks, random_text

TEXT = "Alpha beta. Gamma delta. Epsilon zeta."


def _chunks(*spans: tuple[str, int, int]) -> dict[str, Document]:
    return {cid: Document(cid, "", TEXT[s:e], {"source": "d1", "start": s}) for cid, s, e in spans}


def _drifts(
    old: dict[str, Document], new: dict[str, Document]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    qrels = qrels_from_dict({"q1": dict.fromkeys(old, 2)})
    found = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
    return {row.doc_id: (row.drift.kind, row.drift.chunks) for row in found}


def test_each_kind_on_a_hand_made_rechunk() -> None:
    old = _chunks(("a", 0, 11), ("b", 12, 24), ("c", 25, 38), ("d", 0, 24), ("e", 12, 38))
    new = _chunks(("a", 0, 11), ("x", 12, 24), ("y", 25, 33), ("z", 0, 30), ("w", 30, 38))
    assert _drifts(old, new) == {
        "a": ("valid", ("a",)),
        "b": ("re-anchorable", ("x",)),
        "c": ("split", ("z", "y", "w")),
        "d": ("merged", ("z",)),
        "e": ("split", ("z", "x", "y", "w")),
    }


def test_text_gone_or_changed_is_orphaned_and_keeps_its_grade() -> None:
    old = _chunks(("a", 0, 11), ("b", 12, 24))
    changed = {
        "n": Document("n", "", "Alpha BETA.", {"source": "d1", "start": 0}),
        "m": Document("m", "", TEXT[12:20], {"source": "d1", "start": 12}),
    }
    assert _drifts(old, changed) == {"a": ("orphaned", ()), "b": ("orphaned", ())}
    qrels = qrels_from_dict({"q1": {"a": 3}})
    (row,) = label_drift(
        qrels, corpus_anchors(old).anchors, Chunking(changed, corpus_anchors(changed))
    )
    assert (row.doc_id, row.grade) == ("a", 3.0)


def test_whitespace_a_splitter_dropped_between_chunks_is_no_loss_when_the_source_says_so() -> None:
    old = _chunks(("a", 0, 24))
    new = _chunks(("x", 0, 11), ("y", 12, 24))  # the space at 11 is in no chunk
    assert _drifts(old, new) == {"a": ("orphaned", ())}
    source = {"d1": Document("d1", "", TEXT)}
    qrels = qrels_from_dict({"q1": {"a": 1}})
    found = label_drift(
        qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new, source))
    )
    assert [(r.drift.kind, r.drift.chunks) for r in found] == [("split", ("x", "y"))]
    lost = {"d1": Document("d1", "", TEXT[:11] + "!" + TEXT[12:])}
    new_lost = {c: Document(c, "", d.text, d.metadata) for c, d in new.items()}
    found = label_drift(
        qrels, corpus_anchors(old).anchors, Chunking(new_lost, corpus_anchors(new_lost, lost))
    )
    assert [r.drift.kind for r in found] == ["orphaned"]


def test_a_document_that_is_no_chunk_is_valid_while_its_id_exists() -> None:
    plain = {"p": Document("p", "", "whole")}
    assert _drifts(plain, plain) == {"p": ("valid", ("p",))}
    assert _drifts(plain, _chunks(("a", 0, 11))) == {"p": ("orphaned", ())}


@pytest.mark.parametrize("seed", range(60))
def test_counts_match_a_brute_force_classification(seed: int) -> None:
    rng = random.Random(seed)
    old: dict[str, Document] = {}
    new: dict[str, Document] = {}
    sources: dict[str, Document] = {}
    for n in range(rng.randint(1, 4)):
        source = f"s{n}"
        text = random_text(rng, rng.randint(5, 60))
        old |= random_chunks(rng, source, text, "old-", gaps=False)
        if rng.random() < 0.15:
            continue  # the source is gone
        now = edited(rng, text) if rng.random() < 0.3 else text
        if rng.random() < 0.5:  # its text known: whitespace between chunks is no loss
            sources[source] = Document(source, "", now)
        # Same ids on both sides in some cases: a chunk id says nothing of its text.
        new |= random_chunks(rng, source, now, "old-" if rng.random() < 0.3 else "new-", gaps=True)
    labelled = rng.sample(sorted(old), k=rng.randint(1, len(old)))
    qrels = qrels_from_dict(
        {"q1": dict.fromkeys(labelled, 1), "q2": dict.fromkeys(labelled[:3], 2)}
    )
    before, after = corpus_anchors(old).anchors, corpus_anchors(new, sources)
    found = label_drift(qrels, before, Chunking(new, after))
    expected = Counter(
        brute_force_kind(doc, before.get(doc), new, dict(after.anchors), dict(after.texts))
        for doc in qrels.docs.tolist()
    )
    assert drift_counts(found) == {kind: expected.get(kind, 0) for kind in drift_counts(found)}
    assert all(
        row.drift.kind
        == brute_force_kind(
            row.doc_id, before.get(row.doc_id), new, dict(after.anchors), dict(after.texts)
        )
        for row in found
    )


def test_random_chunkings_reach_every_kind() -> None:
    """The seeded cases above are not all of one kind: each kind occurs in them."""
    seen: Counter[str] = Counter()
    for seed in range(60):
        rng = random.Random(seed)
        text = random_text(rng, 40)
        old = random_chunks(rng, "s", text, "o", gaps=False)
        new = random_chunks(rng, "s", edited(rng, text), "n", gaps=True)
        qrels = qrels_from_dict({"q": dict.fromkeys(old, 1)})
        found = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
        seen.update(row.drift.kind for row in found)
    assert set(seen) == {"re-anchorable", "merged", "split", "orphaned"}
