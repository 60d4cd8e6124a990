"""The `qdrant` retriever: a Qdrant collection searched with the embedded query, in-process
(local mode) or on a server."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from retrieval_gate.adapters.http import public_url
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
from retrieval_gate.core import redaction
from retrieval_gate.core.model import Document, Hit, Query

UPSERT_BATCH = 256


class QdrantConfig(StoreSettings):
    """A Qdrant collection: in-process (path or :memory:) or on a server (url)."""

    type: Literal["qdrant"] = Field(default="qdrant", description="A Qdrant collection.")
    url: str | None = Field(
        default=None, description="Server URL, e.g. http://localhost:6333 (REST)."
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the server's API key."
    )
    path: str | None = Field(
        default=None,
        description="Local mode: the folder qdrant-client keeps a collection in, relative to "
        "the config; it must exist (local mode would create an empty one).",
    )
    location: Literal[":memory:"] | None = Field(
        default=None,
        description="':memory:': local mode in memory (with index: {from: corpus}, rebuilt "
        "every run).",
    )
    collection: str = Field(description="The collection's name.")
    vector: str | None = Field(
        default=None, description="The named vector to search; null: the collection's only one."
    )
    query: Literal["dense"] = Field(
        default="dense", description="dense: nearest neighbours of the embedded query text."
    )
    hnsw_ef: int | None = Field(
        default=None,
        ge=1,
        description="The HNSW search breadth on a server (SearchParams.hnsw_ef); null: the "
        "collection's. Local mode always searches exactly.",
    )

    @model_validator(mode="after")
    def _one_connection(self) -> QdrantConfig:
        given = [name for name in ("url", "path", "location") if getattr(self, name) is not None]
        if self.index is not None:
            if self.url is not None or self.path is not None:
                raise ValueError(
                    "index: {from: corpus} keeps its collection in index.path: remove url "
                    "and path (or location: ':memory:' to build it in memory)"
                )
        elif len(given) != 1:
            raise ValueError("give exactly one of url (a server), path or location (local mode)")
        if self.embedding is None:
            raise ValueError("query: dense needs an embedding block")
        return self


class QdrantRetriever(Adapter[QdrantConfig]):
    """Nearest neighbours of the embedded query in a Qdrant collection. `exact` asks a server
    for a brute-force search (`SearchParams(exact=True)`); local mode always searches
    exactly. Local mode is one in-process store: queries go through one at a time."""

    config_class = QdrantConfig

    def __init__(
        self,
        config: QdrantConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.where = f"retriever (qdrant, collection {config.collection!r})"
        require_module("qdrant_client", "pip install 'retrieval-gate[qdrant]'", self.where)
        from qdrant_client import models

        self.base = base_dir or Path(".")
        assert config.embedding is not None
        self.embed: Embedder = embedder(config.embedding, self.base, where="retriever")
        self.index_key: str | None = None
        self._lock = _LOCAL_QUERIES if config.url is None else None
        try:
            self.filter = None if config.filter is None else models.Filter(**config.filter)
        except (TypeError, ValueError) as error:
            raise store_error(
                self.where,
                f"filter is not a Qdrant filter: {error}",
                "write it as Qdrant's JSON filter, e.g. {must: [{key: lang, match: {value: en}}]}",
            ) from None
        self.client = self._connect(corpus)
        try:
            self.vector_name = self._check_collection()
        except BaseException:
            self.close()
            raise
        self.id_field, self.text_field = config.keys()

    def describe(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "type": "qdrant",
            "url": None if config.url is None else public_url(config.url),
            "path": config.path,
            "location": config.location,
            "index": self.index_key,
            "collection": config.collection,
            "vector": config.vector,
            "query": config.query,
            "hnsw_ef": config.hnsw_ef,
            "embedding": self.embed.describe(),
            **config.common_description(),
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        from qdrant_client import models

        config = self.config
        vector = self.embed([query.text])[0].tolist()
        wanted = [name for name in (self.id_field, self.text_field) if name is not None]
        params = None
        if config.url is not None:  # local mode warns that it ignores search params
            params = models.SearchParams(exact=config.exact, hnsw_ef=config.hnsw_ef)
        with user_errors(self.where), self._locked():
            answer = self.client.query_points(
                config.collection,
                query=vector,
                using=self.vector_name,
                limit=config.k or k,
                query_filter=self.filter,
                search_params=params,
                with_payload=wanted or False,
            )
        hits = [
            hit_from(
                point.id
                if self.id_field is None
                else payload_id(point.payload, self.id_field, self.where, point.id),
                point.score if config.score else None,
                point.payload,
                self.text_field,
            )
            for point in answer.points
        ]
        return ranked(hits)[:k]

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            _release(client)
            self.client = None
        self.embed.close()

    def _locked(self) -> Any:
        from contextlib import nullcontext

        return self._lock if self._lock is not None else nullcontext()

    def _connect(self, corpus: Mapping[str, Document] | None) -> Any:
        from qdrant_client import QdrantClient

        config = self.config
        if config.index is not None:
            return self._built(corpus)
        if config.location is not None:
            return QdrantClient(location=config.location)
        if config.path is not None:
            folder = self.base / config.path
            if not folder.is_dir():
                raise store_error(
                    self.where,
                    f"path {config.path!r} is not a folder",
                    "point path at the folder qdrant-client wrote the collection to (relative "
                    "to the config), or use url for a server",
                )
            return _local(folder, self.where)
        key = None
        password = urlsplit(config.url or "").password
        if password:
            redaction.register(password)
        if config.api_key_env:
            key = redaction.secret_from_env(
                f"{self.where}: api_key_env", config.api_key_env, os.environ
            )
        # check_compatibility asks the server its version from a background thread.
        return QdrantClient(
            url=config.url,
            api_key=key,
            timeout=max(1, int(config.timeout)),
            check_compatibility=False,
        )

    def _built(self, corpus: Mapping[str, Document] | None) -> Any:
        """A client on the collection built from the corpus (cached on disk unless :memory:)."""
        from qdrant_client import QdrantClient

        config = self.config
        assert config.index is not None
        ids, texts = corpus_rows(corpus, config.index, self.where)
        folder, self.index_key = index_folder(
            self.base,
            config.index,
            "qdrant",
            ids,
            texts,
            {"collection": config.collection, "embedding": self.embed.describe()},
        )
        if config.location is not None:
            client = QdrantClient(location=config.location)
            _populate(client, config.collection, ids, texts, self.embed)
            return client

        def build(scratch: Path) -> None:
            client = QdrantClient(path=str(scratch))
            try:
                _populate(client, config.collection, ids, texts, self.embed)
            finally:
                client.close()

        build_once(folder, build, self.where)
        return _local(folder, self.where)

    def _check_collection(self) -> str | None:
        """The vector name to search, once the collection is known to exist and to hold
        vectors as wide as the embedding's."""
        config = self.config
        try:
            with self._locked():
                exists = self.client.collection_exists(config.collection)
                info = self.client.get_collection(config.collection) if exists else None
                names = (
                    [c.name for c in self.client.get_collections().collections]
                    if not exists
                    else []
                )
        except Exception as error:
            raise store_error(
                self.where,
                f"cannot reach Qdrant at {public_url(config.url or '')}: "
                f"{type(error).__name__}: {redaction.redacted(str(error))}",
                "start the server or fix url (and api_key_env)",
            ) from None
        if info is None:
            raise store_error(
                self.where,
                f"no collection {config.collection!r}; the store has "
                + (", ".join(repr(name) for name in sorted(names)) or "none"),
                "fix collection, or build it first (index: {from: corpus} builds one from "
                "the dataset's corpus)",
            )
        vectors = info.config.params.vectors
        if isinstance(vectors, Mapping):
            name = config.vector
            if name is None and len(vectors) == 1:
                name = next(iter(vectors))
            if name not in vectors:
                raise store_error(
                    self.where,
                    f"the collection's named vectors are {', '.join(map(repr, vectors))}",
                    "set vector to the one to search",
                )
            size = vectors[name].size
        else:
            if config.vector is not None:
                raise store_error(
                    self.where,
                    f"the collection has one unnamed vector, not {config.vector!r}",
                    "remove vector",
                )
            name, size = None, vectors.size
        if size != self.embed.dimension():
            raise dimension_error(self.where, config.collection, size, self.embed.dimension())
        return name


_LOCAL_QUERIES = threading.Lock()
"""Local mode is one in-process store with no promise of thread safety: its calls take turns."""
_OPEN: dict[str, list[Any]] = {}
"""Local-mode clients by folder, with how many retrievers use each: qdrant-client lets one
client open a folder, and a gate may search one store twice (as configured and exactly)."""


def _local(folder: Path, where: str) -> Any:
    from qdrant_client import QdrantClient

    key = str(folder.resolve())
    with _LOCAL_QUERIES:
        held = _OPEN.get(key)
        if held is None:
            try:
                held = _OPEN[key] = [QdrantClient(path=key), 0]
            except RuntimeError as error:  # its lock: another process holds the folder
                raise store_error(
                    where,
                    f"cannot open {folder.name}: {error}",
                    "local mode lets one process use a folder at a time: stop the other "
                    "one, or run a Qdrant server",
                ) from None
        held[1] += 1
        return held[0]


def _release(client: Any) -> None:
    """Close `client` once no retriever uses it."""
    with _LOCAL_QUERIES:
        for key, held in _OPEN.items():
            if held[0] is client:
                held[1] -= 1
                if held[1] > 0:
                    return
                del _OPEN[key]
                break
        client.close()


def _populate(
    client: Any, collection: str, ids: list[str], texts: list[str], embed: Embedder
) -> None:
    """A cosine collection of the documents, point i the i-th id in sorted order."""
    from qdrant_client import models

    client.create_collection(
        collection,
        vectors_config=models.VectorParams(size=embed.dimension(), distance=models.Distance.COSINE),
    )
    for start in range(0, len(ids), UPSERT_BATCH):
        vectors = embed(texts[start : start + UPSERT_BATCH])
        client.upsert(
            collection,
            points=[
                models.PointStruct(
                    id=start + i,
                    vector=vector.tolist(),
                    payload={BUILT_ID_FIELD: doc, BUILT_TEXT_FIELD: text},
                )
                for i, (doc, text, vector) in enumerate(
                    zip(
                        ids[start : start + UPSERT_BATCH],
                        texts[start : start + UPSERT_BATCH],
                        vectors,
                        strict=True,
                    )
                )
            ],
        )
