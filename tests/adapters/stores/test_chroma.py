"""The chroma retriever on a real persistent collection: HNSW against the adapter's exact
search, metadata ids and filters."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from retrieval_gate.adapters import AdapterConfig, Query, build_retriever
from tests.helpers.local_server import free_port, listening
from tests.helpers.paths import REPO
from tests.helpers.vectors import as_text, cosine_top, unit_rows
from tests.helpers.waiting import GUARD, wait_for

CONFIGS: TypeAdapter[Any] = TypeAdapter(AdapterConfig)
ROWS = unit_rows(400, 8, seed=11)
EMBED = {"python": "tests.helpers.vectors:literal"}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path / "c"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "docs", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    collection.add(
        ids=[f"row{i}" for i in range(len(ROWS))],
        embeddings=ROWS,
        metadatas=[{"doc": f"kb-{i:03d}", "lang": "en" if i % 3 else "fr"} for i in range(400)],
    )
    return tmp_path / "c"


def retriever(folder: Path, **fields: Any) -> Any:
    block = {"type": "chroma", "path": folder.name, "collection": "docs", "embedding": EMBED}
    return build_retriever(CONFIGS.validate_python(block | fields), base_dir=folder.parent)


@pytest.mark.parametrize("where", [None, {"lang": "en"}])
def test_hnsw_and_exact_give_the_brute_force_hits(store: Path, where: Any) -> None:
    """On 400 vectors HNSW with ef_search 100 is faithful: both searches find the true top 10."""
    allowed = [i for i in range(len(ROWS)) if where is None or i % 3]
    ann = retriever(store, id_field="doc", filter=where)
    exact = retriever(store, id_field="doc", filter=where, exact=True)
    try:
        for seed in range(10):
            query = unit_rows(1, 8, seed=200 + seed)[0]
            truth = [f"kb-{i:03d}" for i in cosine_top(ROWS, query, 10, allowed)]
            for search in (ann, exact):
                hits = search.search(Query("q", as_text(query)), 10)
                assert [hit.doc_id for hit in hits] == truth
            near = ann.search(Query("q", as_text(query)), 10)
            far = exact.search(Query("q", as_text(query)), 10)
            assert [h.score for h in near] == pytest.approx([h.score for h in far], abs=1e-5)
    finally:
        ann.close()
        exact.close()


def test_the_record_id_is_the_default_id(store: Path) -> None:
    search = retriever(store)
    try:
        hits = search.search(Query("q", as_text(ROWS[42])), 3)
    finally:
        search.close()
    assert hits[0].doc_id == "row42"
    assert hits[0].score == pytest.approx(0.0, abs=1e-5)  # minus the cosine distance


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """A real Chroma server (`chroma run`, shipped in the chromadb wheel) on a free port."""
    chroma = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if chroma is None:
        pytest.skip("the chroma command is not installed beside this Python")
    port = free_port()
    process = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "served"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # A loaded machine starts it slowly: it listens, or it has exited.
        wait_for(lambda: listening(port) or process.poll() is not None)
        assert process.poll() is None, f"chroma run exited with {process.returncode}"
        assert listening(port), "chroma run did not listen"
        yield port
    finally:
        process.terminate()
        process.wait(timeout=GUARD)


SERVED = """
import sys
from pathlib import Path

import chromadb
from chromadb.config import Settings
from pydantic import TypeAdapter

from retrieval_gate.adapters import AdapterConfig, Query, build_retriever
from tests.adapters.stores.test_chroma import EMBED, ROWS, retriever
from tests.helpers.vectors import as_text, unit_rows

port, store = int(sys.argv[1]), Path(sys.argv[2])
client = chromadb.HttpClient(
    host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
)
served = client.create_collection(
    "docs", metadata={"hnsw:space": "cosine"}, embedding_function=None
)
served.add(ids=[f"row{i}" for i in range(len(ROWS))], embeddings=ROWS)
block = {"type": "chroma", "host": "127.0.0.1", "port": port, "collection": "docs"}
remote = build_retriever(
    TypeAdapter(AdapterConfig).validate_python(block | {"embedding": EMBED}),
    base_dir=store.parent,
)
local = retriever(store)
for seed in range(5):
    query = Query("q", as_text(unit_rows(1, 8, seed=400 + seed)[0]))
    near, far = remote.search(query, 10), local.search(query, 10)
    assert [h.doc_id for h in near] == [h.doc_id for h in far], (near, far)
    assert all(abs(a.score - b.score) < 1e-6 for a, b in zip(near, far)), (near, far)
print("agree")
"""


def test_a_server_answers_as_the_persistent_client_does(store: Path, server: int) -> None:
    """In a subprocess: chromadb 1.5's HttpClient never closes its HTTP session, and the
    sockets it leaves would surface as warnings in whichever test runs next."""
    done = subprocess.run(
        [sys.executable, "-c", SERVED, str(server), str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agree"
