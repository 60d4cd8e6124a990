"""The qdrant retriever on qdrant-client's local mode: a real collection written by the client,
searched through the adapter with filters, payload ids and named vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from retrieval_gate.adapters import AdapterConfig, Query, build_retriever
from retrieval_gate.errors import GateError
from tests.helpers.vectors import as_text, cosine_top, unit_rows

CONFIGS: TypeAdapter[Any] = TypeAdapter(AdapterConfig)
ROWS = unit_rows(200, 8, seed=7)
EMBED = {"python": "tests.helpers.vectors:literal"}


def payload(i: int) -> dict[str, str]:
    return {"doc": f"kb-{i:03d}", "lang": "en" if i % 3 else "fr", "body": f"article {i}"}


def write_store(folder: Path, *, named: bool = False) -> None:
    from qdrant_client import QdrantClient, models

    params = models.VectorParams(size=8, distance=models.Distance.COSINE)
    client = QdrantClient(path=str(folder))
    try:
        client.create_collection(
            "docs", vectors_config={"a": params, "b": params} if named else params
        )
        client.upsert(
            "docs",
            points=[
                models.PointStruct(
                    id=i,
                    vector={"a": row.tolist(), "b": (-row).tolist()} if named else row.tolist(),
                    payload=payload(i),
                )
                for i, row in enumerate(ROWS)
            ],
        )
    finally:
        client.close()


def retriever(folder: Path, **fields: Any) -> Any:
    block = {"type": "qdrant", "path": folder.name, "collection": "docs", "embedding": EMBED}
    return build_retriever(CONFIGS.validate_python(block | fields), base_dir=folder.parent)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    write_store(tmp_path / "q")
    return tmp_path / "q"


def test_hits_are_the_nearest_vectors_by_payload_id_with_the_filter(store: Path) -> None:
    search = retriever(
        store,
        id_field="doc",
        text_field="body",
        filter={"must": [{"key": "lang", "match": {"value": "en"}}]},
    )
    try:
        for seed in range(5):
            query = unit_rows(1, 8, seed=100 + seed)[0]
            hits = search.search(Query("q", as_text(query)), 10)
            english = [i for i in range(len(ROWS)) if i % 3]
            assert [h.doc_id for h in hits] == [
                f"kb-{i:03d}" for i in cosine_top(ROWS, query, 10, english)
            ]
            assert hits[0].text == f"article {int(hits[0].doc_id[3:])}"
            scores = [hit.score for hit in hits]
            assert scores == sorted(scores, reverse=True)
        assert search.describe()["filter"] == {"must": [{"key": "lang", "match": {"value": "en"}}]}
    finally:
        search.close()


def test_the_point_id_is_the_default_id_and_exact_agrees(store: Path) -> None:
    query = Query("q", as_text(ROWS[5]))
    plain, exact = retriever(store), None
    try:
        first = plain.search(query, 5)
    finally:
        plain.close()
    exact = retriever(store, exact=True, score=False)
    try:
        second = exact.search(query, 5)
    finally:
        exact.close()
    assert first[0].doc_id == "5"
    assert [h.doc_id for h in first] == [h.doc_id for h in second]
    assert all(h.score is None for h in second)


def test_a_named_vector_is_chosen(tmp_path: Path) -> None:
    write_store(tmp_path / "q", named=True)
    with pytest.raises(GateError, match="named vectors are 'a', 'b'"):
        retriever(tmp_path / "q")
    search = retriever(tmp_path / "q", vector="b")
    try:
        hits = search.search(Query("q", as_text(-ROWS[9])), 3)
    finally:
        search.close()
    assert hits[0].doc_id == "9"


def test_a_bad_filter_and_a_missing_id_field_are_clear(store: Path) -> None:
    with pytest.raises(GateError, match="filter is not a Qdrant filter"):
        retriever(store, filter={"must": [{"kez": "lang"}]})
    search = retriever(store, id_field="nope")
    try:
        with pytest.raises(GateError, match="has no 'nope' field"):
            search.search(Query("q", as_text(ROWS[0])), 3)
    finally:
        search.close()


def test_two_retrievers_share_one_local_folder(store: Path) -> None:
    """The ANN check searches one store twice; local mode lets one client open a folder."""
    configured, exact = retriever(store), retriever(store, exact=True)
    query = Query("q", as_text(ROWS[3]))
    try:
        assert configured.search(query, 3) == exact.search(query, 3)
        configured.close()
        assert exact.search(query, 1)[0].doc_id == "3"
    finally:
        configured.close()
        exact.close()
    again = retriever(store)  # the folder was released: a new client opens it
    again.close()
