"""The built-in bm25 adapter on a tiny corpus."""

from __future__ import annotations

import threading

import pytest

from retrieval_gate.adapters import BM25Config, Document, Query, fingerprint
from retrieval_gate.adapters.bm25 import BM25Retriever
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import GateError
from tests.helpers.waiting import GUARD

DOCS = [
    Document("d01", "Running shoes", "Lightweight shoes for marathon training."),
    Document("d02", "Trail run", "A guide to the best mountain trails near the city."),
    Document("d03", "Espresso", "How to pull a perfect espresso shot at home."),
    Document("d04", "Sourdough", "Baking sourdough bread with a wild yeast starter."),
    Document("d05", "Python tips", "Generators, context managers and type hints in Python."),
    Document("d06", "Tax returns", "Filing your tax return before the April deadline."),
    Document("d07", "Houseplants", "Watering schedules for ferns, cacti and monstera."),
    Document("d08", "Chess openings", "The Sicilian defence and the Queen's gambit."),
    Document("d09", "Twin A", "identical twin text about violins"),
    Document("d10", "Twin A", "identical twin text about violins"),
]
CORPUS = {doc.id: doc for doc in DOCS}


def ids(hits: list[Hit]) -> list[str]:
    return [hit.doc_id for hit in hits]


@pytest.fixture(scope="module")
def bm25() -> BM25Retriever:
    return BM25Retriever(BM25Config(), corpus=CORPUS)


@pytest.mark.parametrize(
    ("text", "best"),
    [
        ("espresso at home", "d03"),
        ("sourdough starter", "d04"),
        ("python type hints", "d05"),
        ("chess gambit", "d08"),
    ],
)
def test_the_right_document_ranks_first(bm25: BM25Retriever, text: str, best: str) -> None:
    hits = bm25.search(Query("q", text), 3)
    assert hits[0].doc_id == best
    assert all(hit.score is not None and hit.score > 0 for hit in hits)


def test_only_matching_documents_and_nothing_for_unknown_words(bm25: BM25Retriever) -> None:
    assert ids(bm25.search(Query("q", "espresso"), 10)) == ["d03"]
    assert bm25.search(Query("q", "zeppelin"), 10) == []
    assert bm25.search(Query("q", "the and of"), 10) == []  # stopwords only


def test_stemming_matches_run_and_running() -> None:
    stemmed = BM25Retriever(BM25Config(), corpus=CORPUS)
    exact = BM25Retriever(BM25Config(stemmer=None), corpus=CORPUS)
    assert set(ids(stemmed.search(Query("q", "run"), 10))) == {"d01", "d02"}
    assert ids(exact.search(Query("q", "run"), 10)) == ["d02"]


def test_fields_choose_what_is_indexed() -> None:
    titles = BM25Retriever(BM25Config(fields=["title"]), corpus=CORPUS)
    assert titles.search(Query("q", "marathon"), 10) == []


def test_ties_rank_by_doc_id_descending_whatever_the_corpus_order(bm25: BM25Retriever) -> None:
    hits = bm25.search(Query("q", "violins"), 10)
    assert ids(hits) == ["d10", "d09"]
    assert hits[0].score == hits[1].score
    reversed_corpus = {doc.id: doc for doc in reversed(DOCS)}
    again = BM25Retriever(BM25Config(), corpus=reversed_corpus)
    assert again.search(Query("q", "trail running shoes"), 5) == bm25.search(
        Query("q", "trail running shoes"), 5
    )


def test_batches_match_single_queries_and_threads_agree(bm25: BM25Retriever) -> None:
    queries = [Query(str(i), text) for i, text in enumerate(["run", "tax", "bread", "ferns"])]
    singles = [bm25.search(query, 2) for query in queries]
    assert bm25.search_batch(queries, 2) == singles
    results: list[list[list[Hit]]] = []
    threads = [
        threading.Thread(target=lambda: results.append(bm25.search_batch(queries, 2)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=GUARD)
    assert results == [singles] * 4


def test_batch_size_and_description() -> None:
    retriever = BM25Retriever(BM25Config(batch_size=64), corpus=CORPUS)
    assert retriever.batch_size() == 64
    changed = dict(CORPUS, d03=Document("d03", "Espresso", "Changed text."))
    other = BM25Retriever(BM25Config(), corpus=changed)
    assert fingerprint(retriever.describe()) != fingerprint(other.describe())
    assert fingerprint(retriever.describe()) != fingerprint(
        BM25Retriever(BM25Config(k1=0.9), corpus=CORPUS).describe()
    )


def test_configuration_errors() -> None:
    with pytest.raises(GateError, match=r"the bm25 retriever needs dataset\.corpus"):
        BM25Retriever(BM25Config())
    with pytest.raises(GateError, match=r"no stemmer for 'klingon'; available: .*english"):
        BM25Retriever(BM25Config(stemmer="klingon"), corpus=CORPUS)
    with pytest.raises(GateError, match=r"retriever\.stopwords"):
        BM25Retriever(BM25Config(stopwords="klingon"), corpus=CORPUS)


@pytest.mark.parametrize("field", ["k1", "b"])
def test_bm25_parameters_take_no_booleans(field: str) -> None:
    from pydantic import ValidationError

    from retrieval_gate.adapters.bm25 import BM25Config

    with pytest.raises(ValidationError, match=field):
        BM25Config(**{field: True})


_IMPORTS = """
import json, sys
{before}
from retrieval_gate.adapters import BM25Config, Document, Query
from retrieval_gate.adapters.bm25 import BM25Retriever
docs = [Document("a", "Running shoes", "For a marathon."), Document("b", "Racks", "A shoe rack.")]
corpus = {{doc.id: doc for doc in docs}}
hits = BM25Retriever(BM25Config(), corpus=corpus).search(Query("q", "run shoes"), 2)
print(json.dumps({{"hits": [h.doc_id for h in hits],
                  "loaded": sorted(m for m in ("numba", "scipy.sparse") if m in sys.modules)}}))
"""


@pytest.mark.parametrize(("before", "loaded"), [("", []), ("import numba", ["numba"])])
def test_bm25s_starts_without_the_backends_it_is_not_asked_for(
    before: str, loaded: list[str]
) -> None:
    """bm25s imports numba and scipy.sparse whenever they are installed (this environment
    has both), for backends the retriever never selects; hidden from it, a start costs
    about 0.3 s less, and a process that imported numba itself keeps it."""
    import importlib.util
    import json
    import subprocess
    import sys

    assert importlib.util.find_spec("numba")
    assert importlib.util.find_spec("scipy")
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS.format(before=before)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"hits": ["a", "b"], "loaded": loaded}
