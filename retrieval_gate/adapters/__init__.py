"""Retriever adapters: a registry of config models and classes, one file per kind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from retrieval_gate.adapters.bm25 import BM25Config, BM25Retriever
from retrieval_gate.adapters.command import CommandConfig, CommandRetriever
from retrieval_gate.adapters.frameworks import (
    HaystackConfig,
    HaystackRetriever,
    LangchainConfig,
    LangchainRetriever,
    LlamaIndexConfig,
    LlamaIndexRetriever,
)
from retrieval_gate.adapters.fusion import FusionConfig, FusionRetriever
from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
from retrieval_gate.adapters.interface import Adapter, Retriever, fingerprint
from retrieval_gate.adapters.python import PythonConfig, PythonRetriever
from retrieval_gate.adapters.run_file import RunFileConfig, RunFileRetriever
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.adapters.stages import FirstStageConfig, StagesConfig, StagesRetriever
from retrieval_gate.adapters.stores.chroma import ChromaConfig, ChromaRetriever
from retrieval_gate.adapters.stores.lancedb import LanceDBConfig, LanceDBRetriever
from retrieval_gate.adapters.stores.pgvector import PgvectorRetriever
from retrieval_gate.adapters.stores.qdrant import QdrantConfig, QdrantRetriever
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.errors import GateError, RetrieverError

# Each module imports its heavy dependency (httpx, bm25s, numpy) only when built.
ADAPTERS: dict[str, type[Adapter[Any]]] = {
    "python": PythonRetriever,
    "http": HttpRetriever,
    "command": CommandRetriever,
    "run_file": RunFileRetriever,
    "langchain": LangchainRetriever,
    "llamaindex": LlamaIndexRetriever,
    "haystack": HaystackRetriever,
    "bm25": BM25Retriever,
    "stages": StagesRetriever,
    "qdrant": QdrantRetriever,
    "chroma": ChromaRetriever,
    "lancedb": LanceDBRetriever,
    "fusion": FusionRetriever,
    "pgvector": PgvectorRetriever,
}

AdapterConfig = Annotated[
    FirstStageConfig | StagesConfig | FusionConfig, Field(discriminator="type")
]


def build_retriever(
    config: AdapterConfig,
    *,
    base_dir: Path,
    corpus: Mapping[str, Document] | None = None,
) -> Retriever:
    """The retriever `config` describes. `base_dir` (the config file's folder) anchors
    relative paths and imports; `corpus` feeds the built-in bm25. Raises GateError."""
    kind = getattr(config, "type", None)
    adapter = ADAPTERS.get(kind) if isinstance(kind, str) else None
    if adapter is None or not isinstance(config, adapter.config_class):
        raise GateError(
            f"unknown retriever type {kind!r} ({type(config).__name__}); available: "
            f"{', '.join(ADAPTERS)}"
        )
    if isinstance(config, StagesConfig):  # it builds its first stage with this function
        return StagesRetriever(config, base_dir=base_dir, corpus=corpus, build=build_retriever)
    if isinstance(config, FusionConfig):  # and fusion its inputs
        return FusionRetriever(config, base_dir=base_dir, corpus=corpus, build=build_retriever)
    return adapter(config, base_dir=base_dir, corpus=corpus)


__all__ = [
    "ADAPTERS",
    "AdapterConfig",
    "AdapterSettings",
    "BM25Config",
    "ChromaConfig",
    "CommandConfig",
    "Document",
    "FusionConfig",
    "HaystackConfig",
    "Hit",
    "HttpConfig",
    "LanceDBConfig",
    "LangchainConfig",
    "LlamaIndexConfig",
    "PythonConfig",
    "QdrantConfig",
    "Query",
    "Retriever",
    "RetrieverError",
    "RunFileConfig",
    "StagesConfig",
    "build_retriever",
    "fingerprint",
]
