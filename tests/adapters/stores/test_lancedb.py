"""The lancedb retriever on a real embedded table: an IVF index against bypass_vector_index,
full-text and hybrid queries, SQL filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from retrieval_gate.adapters import AdapterConfig, Query, build_retriever
from retrieval_gate.errors import GateError
from tests.helpers.vectors import as_text, cosine_top, unit_rows

CONFIGS: TypeAdapter[Any] = TypeAdapter(AdapterConfig)
ROWS = unit_rows(600, 8, seed=13)
EMBED = {"python": "tests.helpers.vectors:literal"}
WORDS = ["invoice", "password", "calendar", "export"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS, IvfFlat

    folder = tmp_path_factory.mktemp("lance") / "db"
    data = pa.table(
        {
            "doc": [f"kb-{i:03d}" for i in range(len(ROWS))],
            "body": [f"how to {WORDS[i % 4]} item {i}" for i in range(len(ROWS))],
            "lang": ["en" if i % 3 else "fr" for i in range(len(ROWS))],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(ROWS.reshape(-1)), 8),
        }
    )
    table = lancedb.connect(str(folder)).create_table("docs", data=data)
    table.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=4))
    table.create_index("body", config=FTS())
    return folder


def retriever(folder: Path, **fields: Any) -> Any:
    block = {"type": "lancedb", "uri": folder.name, "table": "docs", "id_field": "doc"}
    return build_retriever(CONFIGS.validate_python(block | fields), base_dir=folder.parent)


def test_a_faithful_ivf_index_and_brute_force_agree(store: Path) -> None:
    """Every partition probed (nprobes = num_partitions): the index search is exact too."""
    ann = retriever(store, embedding=EMBED, nprobes=4, filter="lang = 'en'")
    exact = retriever(store, embedding=EMBED, exact=True, filter="lang = 'en'")
    english = [i for i in range(len(ROWS)) if i % 3]
    try:
        for seed in range(10):
            query = unit_rows(1, 8, seed=300 + seed)[0]
            truth = [f"kb-{i:03d}" for i in cosine_top(ROWS, query, 10, english)]
            for search in (ann, exact):
                assert [h.doc_id for h in search.search(Query("q", as_text(query)), 10)] == truth
    finally:
        ann.close()
        exact.close()


def test_full_text_and_hybrid_queries(store: Path) -> None:
    fts = retriever(store, query="fts", text_field="body")
    hybrid = retriever(store, query="hybrid", embedding=EMBED)
    try:
        hits = fts.search(Query("q", "password"), 10)
        assert len(hits) == 10
        assert all("password" in (hit.text or "") for hit in hits)
        scores = [hit.score for hit in hits]
        assert scores == sorted(scores, reverse=True)
        # Fused: the query's nearest vector and the text's matches both rank.
        both = hybrid.search(Query("q", "calendar"), 10)
        assert len(both) == 10
        assert len({hit.doc_id for hit in both}) == 10
    finally:
        fts.close()
        hybrid.close()


def test_a_filter_must_be_sql_and_a_table_needs_its_id_column(store: Path) -> None:
    with pytest.raises(GateError, match="write it as a SQL predicate"):
        retriever(store, query="fts", filter={"lang": "en"})
    with pytest.raises(GateError, match="no vector column 'nope'"):
        retriever(store, embedding=EMBED, vector_column="nope")
    search = retriever(store, query="fts", id_field="missing")
    try:
        with pytest.raises(GateError):
            search.search(Query("q", "invoice"), 3)
    finally:
        search.close()
