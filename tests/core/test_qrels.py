"""Qrels: one query's judgments without building every query's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.readers import read_qrels


@pytest.mark.parametrize("seed", range(5))
def test_one_querys_judgments_equal_its_by_query_entry(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lines = []
    for query in rng.permutation(40).tolist():  # queries interleaved, not grouped
        for doc in rng.choice(200, size=int(rng.integers(1, 8)), replace=False).tolist():
            lines.append(f"q{query} 0 d{doc} {int(rng.integers(-1, 4))}\n")
    order = rng.permutation(len(lines))
    path = tmp_path / "qrels.txt"
    path.write_text("".join(lines[i] for i in order), encoding="utf-8")
    fresh = read_qrels(path)
    alone = {query: fresh.judgments_of(query) for query in fresh.query_ids.tolist()}
    assert "by_query" not in fresh.__dict__  # it did not build every query's
    built = read_qrels(path)
    expected = dict(zip(built.query_ids.tolist(), built.by_query, strict=True))
    assert alone == expected
    assert all(list(alone[q]) == list(expected[q]) for q in alone)  # row order too
    assert all(built.judgments_of(q) is expected[q] for q in expected)


def test_qrels_read_as_bytes_build_their_strings_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d22 0\nq2 0 é 2\n", encoding="utf-8")
    qrels = read_qrels(path)
    assert not qrels._ids.has_strings  # the reader's bytes only
    assert qrels.doc_bytes.strings().tolist() == ["d1", "d22", "é"]
    assert qrels.docs.tolist() == ["d1", "d22", "é"]
    assert qrels.to_dict() == {"q1": {"d1": 1.0, "d22": 0.0}, "q2": {"é": 2.0}}


@pytest.mark.parametrize("doc", ["d7", "é", "a\x00"])
def test_a_doc_judged_twice_is_named_from_the_bytes(doc: str) -> None:
    from retrieval_gate.core.ids import ByteIds, object_array
    from retrieval_gate.core.qrels import Qrels
    from retrieval_gate.errors import InputError

    docs = ByteIds.from_strings(["x", doc, "y", doc])
    query = np.asarray([0, 0, 1, 0], dtype=np.int64)
    with pytest.raises(InputError) as caught:
        Qrels.checked(object_array(["q1", "q2"]), query, docs, [1, 1, 1, 1], "qrels.txt", None)
    assert f"query 'q1', doc {doc!r} (entries 2 and 4)" in str(caught.value)


def test_judgments_and_their_qrels_decode_the_doc_ids_once(tmp_path: Path) -> None:
    from retrieval_gate.readers import read_judgments

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d22 0\nq2 0 é 2\n", encoding="utf-8")
    judgments = read_judgments(path)
    strings = judgments.docs  # lint reads them from the judgments
    qrels = judgments.qrels()
    assert qrels.docs is strings  # the dataset's fingerprint, from the qrels: not built again
    assert qrels.doc_bytes is judgments.ids.bytes
