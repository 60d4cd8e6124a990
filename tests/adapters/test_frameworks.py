"""The langchain, llamaindex and haystack adapters over real framework objects."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrieval_gate.adapters import (
    HaystackConfig,
    LangchainConfig,
    LlamaIndexConfig,
    Query,
    RetrieverError,
)
from retrieval_gate.adapters.frameworks import (
    HaystackRetriever,
    LangchainRetriever,
    LlamaIndexRetriever,
)
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import GateError

QUERY = Query("q1", "cats")
Writer = Callable[[str], str]

LANGCHAIN = """
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class Chunks(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [
            Document(page_content=query, id="chunk-1", metadata={"doc_id": "D1"}),
            Document(page_content="b", id="chunk-2", metadata={"doc_id": "D1"}),
            Document(page_content="c", id="chunk-3", metadata={"doc_id": "D2"}),
            Document(page_content="d", id="chunk-4", metadata={}),
        ]


def make():
    return Chunks()


retriever = Chunks()
"""

LLAMAINDEX = """
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode


class Nodes(BaseRetriever):
    def _retrieve(self, query_bundle):
        return [
            NodeWithScore(node=TextNode(text="a", id_="n1", metadata={"doc_id": "A"}), score=0.9),
            NodeWithScore(node=TextNode(text="b", id_="n2", metadata={"doc_id": "B"}), score=0.4),
        ]


retriever = Nodes()
"""

HAYSTACK = """
from haystack import Document, Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

store = InMemoryDocumentStore()
store.write_documents(
    [
        Document(id="h1", content="cats purr and sleep", meta={"doc_id": "C1"}),
        Document(id="h2", content="dogs bark at cats", meta={"doc_id": "C2"}),
        Document(id="h3", content="fish swim", meta={"doc_id": "C3"}),
    ]
)
bm25 = InMemoryBM25Retriever(store)


@component
class Echo:
    @component.output_types(documents=list[Document])
    def run(self, text: str):
        return {"documents": [Document(id=f"echo-{text}", content=text, score=1.0)]}


pipeline = Pipeline()
pipeline.add_component("retriever", InMemoryBM25Retriever(store, top_k=1))
echo = Echo()
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Writer]:
    """Writes a module of helpers into tmp_path, importable under a fresh name."""
    name = f"rg_frameworks_{len(sys.modules)}"

    def write(source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    sys.modules.pop(name, None)


def test_langchain_reads_metadata_ids_and_dedupes_chunks(module: Writer) -> None:
    pytest.importorskip("langchain_core")
    name = module(LANGCHAIN)
    config = LangchainConfig(target=f"{name}:retriever", id_field="doc_id")
    retriever = LangchainRetriever(config)
    with pytest.raises(RetrieverError, match=r"result 4: Document has no metadata\['doc_id'\]"):
        retriever.search(QUERY, 10)
    assert retriever.search(QUERY, 2) == [Hit("D1"), Hit("D2")]


def test_langchain_default_id_and_factory(module: Writer) -> None:
    pytest.importorskip("langchain_core")
    name = module(LANGCHAIN)
    for target in ("retriever", "make", "Chunks"):
        retriever = LangchainRetriever(LangchainConfig(target=f"{name}:{target}"))
        assert [hit.doc_id for hit in retriever.search(QUERY, 3)] == [
            "chunk-1",
            "chunk-2",
            "chunk-3",
        ]


def test_llamaindex_node_ids_metadata_and_scores(module: Writer) -> None:
    pytest.importorskip("llama_index.core")
    name = module(LLAMAINDEX)
    native = LlamaIndexRetriever(LlamaIndexConfig(target=f"{name}:retriever"))
    assert native.search(QUERY, 5) == [Hit("n1", 0.9), Hit("n2", 0.4)]
    by_doc = LlamaIndexRetriever(LlamaIndexConfig(target=f"{name}:retriever", id_field="doc_id"))
    assert by_doc.search(QUERY, 1) == [Hit("A", 0.9)]


def test_haystack_component_gets_top_k(module: Writer) -> None:
    pytest.importorskip("haystack")
    name = module(HAYSTACK)
    retriever = HaystackRetriever(HaystackConfig(target=f"{name}:bm25", id_field="doc_id"))
    hits = retriever.search(QUERY, 2)
    assert [hit.doc_id for hit in hits] == ["C1", "C2"]
    assert all(hit.score is not None for hit in hits)
    assert len(retriever.search(QUERY, 1)) == 1


def test_haystack_pipeline_and_custom_input(module: Writer) -> None:
    pytest.importorskip("haystack")
    name = module(HAYSTACK)
    pipeline = HaystackRetriever(HaystackConfig(target=f"{name}:pipeline"))
    assert [hit.doc_id for hit in pipeline.search(Query("q", "fish"), 5)] == ["h3"]
    echo = HaystackRetriever(HaystackConfig(target=f"{name}:echo", input="text"))
    assert echo.search(QUERY, 5) == [Hit("echo-cats", 1.0)]


def test_wrong_objects_are_clear_errors(module: Writer) -> None:
    pytest.importorskip("langchain_core")
    name = module(LANGCHAIN)
    with pytest.raises(GateError, match="is a Chunks; expected a LlamaIndex retriever object"):
        LlamaIndexRetriever(LlamaIndexConfig(target=f"{name}:retriever"))
    with pytest.raises(GateError, match="could not import module 'rg_absent'"):
        LangchainRetriever(LangchainConfig(target="rg_absent:retriever"))
