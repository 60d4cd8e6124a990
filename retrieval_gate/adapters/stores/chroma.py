"""The `chroma` retriever: a Chroma collection (persistent client, or a server) searched with
the embedded query."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.stores.common import (
    BUILT_ID_FIELD,
    BUILT_TEXT_FIELD,
    StoreSettings,
    build_once,
    corpus_rows,
    dimension_error,
    hit_from,
    index_folder,
    payload_id,
    ranked,
    require_module,
    store_error,
)
from retrieval_gate.adapters.stores.embeddings import Embedder, embedder
from retrieval_gate.adapters.targets import user_errors
from retrieval_gate.core.model import Document, Hit, Query

ADD_BATCH = 1000


class ChromaConfig(StoreSettings):
    """A Chroma collection: on disk (path) or on a server (host, port)."""

    type: Literal["chroma"] = Field(default="chroma", description="A Chroma collection.")
    path: str | None = Field(
        default=None,
        description="The PersistentClient's folder, relative to the config; it must exist.",
    )
    host: str | None = Field(default=None, description="A Chroma server's host (HttpClient).")
    port: int = Field(default=8000, ge=1, le=65535, description="The server's port.")
    collection: str = Field(description="The collection's name.")
    query: Literal["dense"] = Field(
        default="dense", description="dense: nearest neighbours of the embedded query text."
    )

    @model_validator(mode="after")
    def _one_connection(self) -> ChromaConfig:
        if self.index is not None:
            if self.path is not None or self.host is not None:
                raise ValueError(
                    "index: {from: corpus} keeps its collection in index.path: remove path and host"
                )
        elif (self.path is None) == (self.host is None):
            raise ValueError("give exactly one of path (on disk) or host (a server)")
        if self.embedding is None:
            raise ValueError("query: dense needs an embedding block")
        return self


class ChromaRetriever(Adapter[ChromaConfig]):
    """Nearest neighbours of the embedded query in a Chroma collection. Chroma's query has no
    brute-force switch, so `exact` reads the collection's vectors once (filtered by `where`)
    and ranks them all by the collection's own distance in numpy: the exact answer the HNSW
    index approximates."""

    config_class = ChromaConfig

    def __init__(
        self,
        config: ChromaConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.where = f"retriever (chroma, collection {config.collection!r})"
        require_module("chromadb", "pip install 'retrieval-gate[chroma]'", self.where)
        self.base = base_dir or Path(".")
        assert config.embedding is not None
        self.embed: Embedder = embedder(config.embedding, self.base, where="retriever")
        self.index_key: str | None = None
        self._lock = threading.Lock()
        self._all: tuple[list[str], Any, list[Any]] | None = None
        self.client = self._connect(corpus)
        self.collection = self._open()
        self.id_field, self.text_field = config.keys()

    def describe(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "type": "chroma",
            "path": config.path,
            "host": config.host,
            "port": config.port if config.host is not None else None,
            "index": self.index_key,
            "collection": config.collection,
            "query": config.query,
            "embedding": self.embed.describe(),
            **config.common_description(),
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        config = self.config
        vector = self.embed([query.text])
        limit = config.k or k
        with user_errors(self.where), self._lock:
            if config.exact:
                found = self._exact(vector[0], limit)
            else:
                answer = self.collection.query(
                    query_embeddings=vector.tolist(),
                    n_results=limit,
                    where=config.filter,
                    include=["distances", "metadatas"],
                )
                found = list(
                    zip(
                        answer["ids"][0],
                        answer["distances"][0],
                        answer["metadatas"][0],
                        strict=True,
                    )
                )
        hits = [
            hit_from(
                record
                if self.id_field is None
                else payload_id(meta, self.id_field, self.where, record),
                -float(distance) if config.score else None,
                meta,
                self.text_field,
            )
            for record, distance, meta in found
        ]
        return ranked(hits)[:k]

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None
        self.embed.close()

    def _exact(self, vector: Any, limit: int) -> list[tuple[str, float, Any]]:
        """Every vector's distance to `vector` by the collection's space, nearest first."""
        import numpy as np

        if self._all is None:
            got = self.collection.get(where=self.config.filter, include=["embeddings", "metadatas"])
            self._all = (
                list(got["ids"]),
                np.asarray(got["embeddings"], dtype=np.float32),
                list(got["metadatas"]),
            )
        ids, matrix, metas = self._all
        if not ids:
            return []
        space = (self.collection.configuration.get("hnsw") or {}).get("space") or "l2"
        if space == "cosine":
            norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(vector))
            distances = 1.0 - (matrix @ vector) / np.where(norms == 0, 1.0, norms)
        elif space == "ip":
            distances = 1.0 - matrix @ vector
        else:
            distances = ((matrix - vector) ** 2).sum(axis=1)
        order = np.argsort(distances, kind="stable")[:limit]
        return [(ids[i], float(distances[i]), metas[i]) for i in order.tolist()]

    def _connect(self, corpus: Mapping[str, Document] | None) -> Any:
        import chromadb
        from chromadb.config import Settings

        config = self.config
        # Chroma's telemetry would call out to the network from every run.
        settings = Settings(anonymized_telemetry=False)
        if config.index is not None:
            return chromadb.PersistentClient(path=str(self._built(corpus)), settings=settings)
        if config.path is not None:
            folder = self.base / config.path
            if not folder.is_dir():
                raise store_error(
                    self.where,
                    f"path {config.path!r} is not a folder",
                    "point path at the PersistentClient's folder (relative to the config), "
                    "or use host for a server",
                )
            return chromadb.PersistentClient(path=str(folder), settings=settings)
        try:
            return chromadb.HttpClient(host=config.host or "", port=config.port, settings=settings)
        except Exception as error:
            raise store_error(
                self.where,
                f"cannot reach Chroma at {config.host}:{config.port}: {error}",
                "start the server or fix host and port",
            ) from None

    def _built(self, corpus: Mapping[str, Document] | None) -> Path:
        import chromadb
        from chromadb.config import Settings

        config = self.config
        assert config.index is not None
        ids, texts = corpus_rows(corpus, config.index, self.where)
        folder, self.index_key = index_folder(
            self.base,
            config.index,
            "chroma",
            ids,
            texts,
            {"collection": config.collection, "embedding": self.embed.describe()},
        )

        def build(scratch: Path) -> None:
            client = chromadb.PersistentClient(
                path=str(scratch), settings=Settings(anonymized_telemetry=False)
            )
            collection = client.create_collection(
                config.collection, metadata={"hnsw:space": "cosine"}, embedding_function=None
            )
            for start in range(0, len(ids), ADD_BATCH):
                chunk = ids[start : start + ADD_BATCH]
                words = texts[start : start + ADD_BATCH]
                collection.add(
                    ids=chunk,
                    embeddings=self.embed(words),
                    metadatas=[
                        {BUILT_ID_FIELD: doc, BUILT_TEXT_FIELD: text}
                        for doc, text in zip(chunk, words, strict=True)
                    ],
                )

        build_once(folder, build, self.where)
        return folder

    def _open(self) -> Any:
        config = self.config
        try:
            collection = self.client.get_collection(config.collection, embedding_function=None)
        except Exception as error:
            if type(error).__name__ != "NotFoundError":
                raise store_error(
                    self.where, f"{type(error).__name__}: {error}", "check path or host"
                ) from None
            names = sorted(c.name for c in self.client.list_collections())
            raise store_error(
                self.where,
                f"no collection {config.collection!r}; the store has "
                + (", ".join(map(repr, names)) or "none"),
                "fix collection, or build it first (index: {from: corpus} builds one from "
                "the dataset's corpus)",
            ) from None
        sample = collection.get(limit=1, include=["embeddings"])["embeddings"]
        if sample is not None and len(sample):
            width = len(sample[0])
            if width != self.embed.dimension():
                raise dimension_error(self.where, config.collection, width, self.embed.dimension())
        return collection
