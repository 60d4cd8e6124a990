"""The `lancedb` retriever: an embedded LanceDB table searched by vector, full text (BM25) or
both (hybrid, reciprocal rank fusion)."""

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

SCORE_COLUMN = {"dense": "_distance", "fts": "_score", "hybrid": "_relevance_score"}


class LanceDBConfig(StoreSettings):
    """A LanceDB table, embedded (a folder)."""

    type: Literal["lancedb"] = Field(default="lancedb", description="A LanceDB table.")
    uri: str | None = Field(
        default=None,
        description="The database folder, relative to the config; it must exist.",
    )
    table: str = Field(description="The table's name.")
    vector_column: str | None = Field(
        default=None, description="The vector column; null: the table's only one."
    )
    query: Literal["dense", "fts", "hybrid"] = Field(
        default="dense",
        description="dense: nearest neighbours of the embedded query; fts: LanceDB's "
        "full-text (BM25) search, which needs an FTS index; hybrid: both, fused by LanceDB's "
        "reciprocal rank fusion.",
    )
    distance: Literal["cosine", "l2", "dot"] = Field(
        default="cosine", description="The vector distance (it must match the index's)."
    )
    nprobes: int | None = Field(
        default=None, ge=1, description="IVF partitions searched; null: LanceDB's default."
    )

    @model_validator(mode="after")
    def _one_source(self) -> LanceDBConfig:
        if self.index is not None and self.uri is not None:
            raise ValueError("index: {from: corpus} keeps its table in index.path: remove uri")
        if self.index is None and self.uri is None:
            raise ValueError("give uri (the database folder) or index: {from: corpus}")
        if self.index is None and self.id_field is None:
            raise ValueError("id_field: name the column holding the document id the qrels use")
        if self.query != "fts" and self.embedding is None:
            raise ValueError(f"query: {self.query} needs an embedding block")
        return self


class LanceDBRetriever(Adapter[LanceDBConfig]):
    """A LanceDB table's top k for the query. `exact` bypasses the vector index (brute
    force); `filter` is a SQL predicate applied before the search."""

    config_class = LanceDBConfig

    def __init__(
        self,
        config: LanceDBConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.where = f"retriever (lancedb, table {config.table!r})"
        require_module("lancedb", "pip install 'retrieval-gate[lancedb]'", self.where)
        self.base = base_dir or Path(".")
        self.embed: Embedder | None = (
            None
            if config.embedding is None
            else embedder(config.embedding, self.base, where="retriever")
        )
        if config.filter is not None and not isinstance(config.filter, str):
            raise store_error(
                self.where,
                f"filter is a {type(config.filter).__name__}",
                "write it as a SQL predicate string, e.g. \"lang = 'en'\"",
            )
        self.index_key: str | None = None
        self._lock = threading.Lock()
        id_field, self.text_field = config.keys()
        assert id_field is not None  # the config requires one unless the index is built
        self.id_field = id_field
        self.table = self._open(self._connect(corpus))

    def describe(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "type": "lancedb",
            "uri": config.uri,
            "index": self.index_key,
            "table": config.table,
            "vector_column": self.vector_column,
            "query": config.query,
            "distance": config.distance,
            "nprobes": config.nprobes,
            "embedding": None if self.embed is None else self.embed.describe(),
            **config.common_description(),
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        config = self.config
        limit = config.k or k
        vector = None if self.embed is None else self.embed([query.text])[0]
        with user_errors(self.where), self._lock:
            rows = self._query(query.text, vector, limit).to_list()
        column = SCORE_COLUMN[config.query]
        hits = [
            hit_from(
                payload_id(row, self.id_field, self.where, rank),
                _score(row.get(column), column) if config.score else None,
                row,
                self.text_field,
            )
            for rank, row in enumerate(rows, 1)
        ]
        return ranked(hits)[:k]

    def close(self) -> None:
        if self.embed is not None:
            self.embed.close()

    def _query(self, text: str, vector: Any, limit: int) -> Any:
        config = self.config
        wanted = [name for name in (self.id_field, self.text_field) if name is not None]
        if config.query == "fts":
            search = self.table.search(text, query_type="fts")
        elif config.query == "hybrid":
            search = (
                self.table.search(query_type="hybrid", vector_column_name=self.vector_column)
                .vector(vector)
                .text(text)
            )
        else:
            search = self.table.search(vector, vector_column_name=self.vector_column)
        if config.query != "fts":
            search = search.distance_type(config.distance)
            if config.nprobes is not None:
                search = search.nprobes(config.nprobes)
            if config.exact:
                search = search.bypass_vector_index()
        if config.filter is not None:
            search = search.where(config.filter, prefilter=True)
        if config.query != "hybrid":  # hybrid selects inside each of its two searches
            search = search.select([*wanted, SCORE_COLUMN[config.query]])
        return search.limit(limit)

    def _connect(self, corpus: Mapping[str, Document] | None) -> Any:
        import lancedb

        config = self.config
        if config.index is not None:
            return lancedb.connect(str(self._built(corpus)))
        assert config.uri is not None
        folder = self.base / config.uri
        if "://" not in config.uri and not folder.is_dir():
            raise store_error(
                self.where,
                f"uri {config.uri!r} is not a folder",
                "point uri at the database folder (relative to the config)",
            )
        try:
            return lancedb.connect(config.uri if "://" in config.uri else str(folder))
        except Exception as error:
            raise store_error(
                self.where, f"cannot connect to {config.uri!r}: {error}", "fix uri"
            ) from None

    def _built(self, corpus: Mapping[str, Document] | None) -> Path:
        import lancedb
        from lancedb.index import FTS

        config = self.config
        assert config.index is not None
        assert self.embed is not None
        embed = self.embed
        ids, texts = corpus_rows(corpus, config.index, self.where)
        folder, self.index_key = index_folder(
            self.base,
            config.index,
            "lancedb",
            ids,
            texts,
            {"table": config.table, "embedding": embed.describe()},
        )

        def build(scratch: Path) -> None:
            import pyarrow as pa

            vectors = embed(texts)
            data = pa.table(
                {
                    BUILT_ID_FIELD: pa.array(ids, pa.string()),
                    BUILT_TEXT_FIELD: pa.array(texts, pa.string()),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1]
                    ),
                }
            )
            table = lancedb.connect(str(scratch)).create_table(config.table, data=data)
            table.create_index(BUILT_TEXT_FIELD, config=FTS())

        build_once(folder, build, self.where)
        return folder

    def _open(self, db: Any) -> Any:
        config = self.config
        try:
            table = db.open_table(config.table)
        except Exception as error:
            try:
                names = sorted(db.list_tables().tables)
            except Exception:
                names = []
            if "not found" not in str(error) and "was not found" not in str(error):
                raise store_error(
                    self.where, f"{type(error).__name__}: {error}", "check uri"
                ) from None
            raise store_error(
                self.where,
                f"no table {config.table!r}; the database has "
                + (", ".join(map(repr, names)) or "none"),
                "fix table, or build it first (index: {from: corpus} builds one from the "
                "dataset's corpus)",
            ) from None
        self.vector_column = self._vector_column(table.schema)
        return table

    def _vector_column(self, schema: Any) -> str | None:
        """The vector column searched (checked against the embedding's width), or None for
        full-text queries."""
        import pyarrow as pa

        config = self.config
        vectors = {
            field.name: field.type.list_size
            for field in schema
            if pa.types.is_fixed_size_list(field.type)
        }
        if self.embed is None or config.query == "fts":
            return config.vector_column
        name = config.vector_column
        if name is None and len(vectors) == 1:
            name = next(iter(vectors))
        if name not in vectors:
            raise store_error(
                self.where,
                f"no vector column {name!r}; the table's vector columns are "
                + (", ".join(map(repr, vectors)) or "none"),
                "set vector_column to the column to search",
            )
        if vectors[name] != self.embed.dimension():
            raise dimension_error(self.where, config.table, vectors[name], self.embed.dimension())
        return name


def _score(value: Any, column: str) -> float | None:
    """Higher is better: a distance is negated."""
    if value is None:
        return None
    return -float(value) if column == "_distance" else float(value)
