"""Label drift: each kind on a hand-made chunking, and counts equal to a brute-force
classification on seeded random chunkings."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from retrieval_gate.core.model import Document
from retrieval_gate.datasets.anchors import Anchor, corpus_anchors, span_hash
from retrieval_gate.datasets.label_drift import Chunking, drift_counts, label_drift
from retrieval_gate.readers.dicts import qrels_from_dict
from tests.helpers.chunkings import (
    brute_force_kind,
    edited,
    random_case,
    random_chunks,
    random_text,
    shifted,
)

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
    old, new, sources, labelled = random_case(random.Random(seed))
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


def _at(text: str, source: str, *spans: tuple[str, int, int]) -> dict[str, Document]:
    return {
        cid: Document(cid, "", text[s:e], {"source": source, "start": s}) for cid, s, e in spans
    }


@pytest.mark.parametrize("opening", ["A new opening line. ", "A long new opening. " * 8])
def test_a_sentence_added_at_the_top_moves_every_span_and_orphans_no_label(opening: str) -> None:
    """The anchor is the text: found again wherever the edit moved it, near its old offset
    or (past NEAR) anywhere in the source, its offset a hint."""
    edited_text = opening + TEXT
    shift = len(opening)
    old = _chunks(("a", 0, 11), ("b", 12, 24), ("c", 25, 38), ("d", 0, 24))
    new = _at(
        edited_text, "d1", ("a", shift, shift + 11), ("x", shift + 12, shift + 24),
        ("y", shift + 25, shift + 31), ("z", shift + 31, shift + 38), ("top", 0, shift + 24),
    )  # fmt: skip
    assert _drifts(old, new) == {
        "a": ("valid", ("a",)),
        "b": ("re-anchorable", ("x",)),
        "c": ("split", ("y", "z")),
        "d": ("merged", ("top",)),
    }


def test_a_repeated_text_resolves_to_the_occurrence_nearest_its_old_offset() -> None:
    text = "one two. one two. one two."
    old = _at(text, "d1", ("o", 9, 16))  # the second "one two"
    inserted = "xx " + text  # every occurrence moves by 3
    # Chunks holding the first and the third occurrence whole: the third starts at 21, the
    # first at 3; the old offset 9 is nearer the first.
    new = _at(inserted, "d1", ("first", 0, 11), ("third", 19, 29))
    qrels = qrels_from_dict({"q1": {"o": 1}})
    (row,) = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
    assert (row.drift.kind, row.drift.chunks) == ("merged", ("first",))
    # A chunk that is the whole text wins over a nearer occurrence inside a larger chunk.
    new["exact"] = Document("exact", "", inserted[21:28], {"source": "d1", "start": 21})
    (row,) = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
    assert (row.drift.kind, row.drift.chunks) == ("re-anchorable", ("exact",))


def test_a_text_occurring_ten_thousand_times_resolves_fast_and_the_same_way() -> None:
    text = "ab " * 10_000
    old = _at(text, "s", ("o", 15_000, 15_006))
    inserted = "z" + text
    # Chunks of 7 characters: none is the 6 judged ones whole.
    new = _at(inserted, "s", *((f"n{i}", i, i + 7) for i in range(0, 29_990, 7)))
    qrels = qrels_from_dict({"q1": {"o": 1}})
    started = time.perf_counter()
    first = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
    assert time.perf_counter() - started < 5
    again = label_drift(qrels, corpus_anchors(old).anchors, Chunking(new, corpus_anchors(new)))
    assert first == again
    ((row),) = first
    # "ab ab " at 15,000 moved to 15,001, which chunk n15001 (to 15,008) holds whole.
    assert (row.drift.kind, row.drift.chunks) == ("merged", ("n15001",))


def test_a_huge_or_impossible_span_is_orphaned_without_scanning_for_it() -> None:
    new = _chunks(("a", 0, 11))
    chunking = Chunking(new, corpus_anchors(new))
    for anchor in (
        Anchor("d1", 0, 10**12, "0" * 16),
        Anchor("d1", 10**12, 10**12 + 5, "0" * 16),
        Anchor("d1", 5, 5, span_hash("")),
        Anchor("gone", 0, 11, span_hash(TEXT[:11])),
    ):
        assert chunking.drift("x", anchor).kind == "orphaned"


@pytest.mark.parametrize("seed", range(40))
def test_insertions_before_and_after_labels_keep_every_kind_equal_to_brute_force(
    seed: int,
) -> None:
    rng = random.Random(seed)
    text = random_text(rng, 50)
    old = random_chunks(rng, "s", text, "o", gaps=False)
    now = shifted(rng, text)
    known = {"s": Document("s", "", now)} if seed % 2 else None
    new = random_chunks(rng, "s", now, "n", gaps=True)
    before, after = corpus_anchors(old).anchors, corpus_anchors(new, known)
    qrels = qrels_from_dict({"q": dict.fromkeys(old, 1)})
    for row in label_drift(qrels, before, Chunking(new, after)):
        assert row.drift.kind == brute_force_kind(
            row.doc_id, before[row.doc_id], new, dict(after.anchors), dict(after.texts)
        )
