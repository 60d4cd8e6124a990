"""A record's compact top k reads as the dict of tuples it holds, and writes as one."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from retrieval_gate.core import redaction
from retrieval_gate.core.ids import ByteIds, object_array
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.core.wording import json_file_pieces, json_text
from retrieval_gate.metrics.top_k import listed_run

# NUL at either end, a line separator, a terminal escape, a workflow command, non-ASCII.
POOL = ["d1", "d22", "a\x00", "\x00b", "é", "中文", "x\u2028y", "\x1b[31m", "::error::x", "d333"]


def random_lists(seed: int) -> dict[str, tuple[str, ...]]:
    rng = random.Random(seed)
    queries = rng.sample([f"q{i}" for i in range(30)] + ["é", "q\x00"], rng.randint(0, 20))
    return {q: tuple(rng.sample(POOL, rng.randint(0, 6))) for q in queries}


@pytest.mark.parametrize("seed", range(12))
def test_it_reads_as_the_dict_of_its_non_empty_lists(seed: int) -> None:
    lists = random_lists(seed)
    expected = {q: docs for q, docs in sorted(lists.items()) if docs}
    top_k = TopKIds.of(lists)
    assert list(top_k) == list(expected)
    assert dict(top_k.items()) == expected
    assert {q: top_k[q] for q in top_k} == expected
    assert len(top_k) == len(expected)
    for query in [*lists, "absent"]:
        assert (query in top_k) == (query in expected)
        assert top_k.get(query, ()) == expected.get(query, ())
    with pytest.raises(KeyError):
        top_k["absent"]
    assert top_k == expected
    assert top_k == TopKIds.of(dict(reversed(list(lists.items()))))
    assert TopKIds.of(top_k) is top_k


@pytest.mark.parametrize("seed", range(12))
def test_rows_grouped_by_query_make_the_same_top_k(seed: int) -> None:
    expected = {q: docs for q, docs in sorted(random_lists(seed).items()) if docs}
    query_ids = object_array(sorted({*expected, "never"}))
    code = {q: i for i, q in enumerate(query_ids.tolist())}
    query = np.asarray([code[q] for q, docs in expected.items() for _ in docs], dtype=np.int64)
    docs = ByteIds.from_strings([d for ids in expected.values() for d in ids])
    assert TopKIds.from_rows(query_ids, query, docs) == TopKIds.of(expected)


def test_unequal_top_ks_are_unequal() -> None:
    one = TopKIds.of({"q1": ("a", "b"), "q2": ("c",)})
    assert one != TopKIds.of({"q1": ("a", "b"), "q2": ("d",)})
    assert one != TopKIds.of({"q1": ("a",), "q2": ("b", "c")})
    assert one != TopKIds.of({"q1": ("a", "b"), "q3": ("c",)})
    assert one != {"q1": ("a", "b")}


def test_within_checks_the_queries_and_the_depth() -> None:
    top_k = TopKIds.of({"q1": ("a", "b", "c"), "q2": ("d",)})
    assert top_k.within({"q1", "q2", "q3"}, 3)
    assert not top_k.within({"q1", "q2"}, 2)
    assert not top_k.within({"q1"}, 3)
    assert TopKIds.of({}).within(set(), 0)


@pytest.mark.parametrize("seed", range(12))
def test_a_listed_run_is_the_same_from_the_compact_form(seed: int) -> None:
    lists = random_lists(seed)
    rng = random.Random(seed)
    # Some queries of the lists are not asked for; some asked for have no list.
    query_ids = sorted(rng.sample(sorted({*lists, "q90", "q91"}), rng.randint(0, len(lists) + 2)))
    plain = listed_run(lists, query_ids)
    compact = listed_run(TopKIds.of(lists), query_ids)
    expected = [  # (query code, doc, minus the rank), query by query
        (code, doc, -float(rank))
        for code, query in enumerate(query_ids)
        for rank, doc in enumerate(lists.get(query, ()), 1)
    ]
    for run in (plain, compact):
        assert run.query_ids.tolist() == query_ids
        rows = zip(run.query.tolist(), run.docs.tolist(), run.score.tolist(), strict=True)
        assert list(rows) == expected


@pytest.mark.parametrize("seed", range(6))
def test_a_document_holding_it_encodes_as_the_plain_document(seed: int) -> None:
    lists = random_lists(seed)
    plain = {"current": {"top_k": {q: list(d) for q, d in sorted(lists.items()) if d}}}
    compact = {"current": {"top_k": TopKIds.of(lists)}}
    assert json_text(compact) == json_text(plain)
    assert "".join(json_file_pieces(compact)) == json_text(plain) + "\n"
    assert json.loads(json_text(compact, indent=None)) == plain


def test_a_registered_secret_in_an_id_is_redacted() -> None:
    redaction.register("tok-5e3c7a9b1d")
    try:
        text = json_text({"top_k": TopKIds.of({"q1": ("d tok-5e3c7a9b1d", "d2")})})
    finally:
        redaction.forget()
    assert "tok-5e3c7a9b1d" not in text
    assert json.loads(text) == {"top_k": {"q1": ["d <redacted>", "d2"]}}


def test_json_dumps_refuses_it_rather_than_writing_something_else() -> None:
    with pytest.raises(TypeError, match="TopKIds is not JSON serializable"):
        json.dumps({"top_k": TopKIds.of({"q1": ("a",)})})


def test_reading_a_query_of_ids_of_one_width_builds_no_offsets() -> None:
    top_k = TopKIds.of({"q1": ("d01", "d02"), "q2": ("d03",), "q3": ("d04", "d05", "d06")})
    docs = top_k.columns.docs
    assert docs.width == 3
    docs._offsets = None  # as ids of one width are read: the rows say where each id is
    assert top_k["q3"] == ("d04", "d05", "d06")
    assert top_k.get("q2") == ("d03",)
    assert docs._offsets is None  # 8 bytes an id, never made for one query's
