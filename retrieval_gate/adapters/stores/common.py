"""What every vector-store retriever shares: its settings, the index it can build from the
corpus, hits in a deterministic order, and the errors that name the block."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.adapters.stores.embeddings import EmbeddingConfig
from retrieval_gate.core.model import Document, Hit
from retrieval_gate.core.strict import StrictModel
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError

BUILT_ID_FIELD = "doc_id"
"""The payload field an index built from the corpus keeps each document's id in."""
BUILT_TEXT_FIELD = "text"
"""...and its indexed text (title and text, as embedded)."""


class IndexFromCorpus(StrictModel):
    """Build the collection from the labelled set's corpus when it is not there yet."""

    source: Literal["corpus"] = Field(
        alias="from", description="Where the documents come from: the dataset's corpus."
    )
    path: str = Field(
        default=".retrieval-gate/index",
        description="Folder (relative to the config) holding built indexes, one subfolder per "
        "corpus, embedding and store settings: a changed corpus builds a new one. Git-ignore it.",
    )
    fields: list[Literal["title", "text"]] = Field(
        default=["title", "text"], min_length=1, description="Document fields embedded, joined."
    )


class StoreSettings(AdapterSettings):
    """The fields every vector-store block has."""

    embedding: EmbeddingConfig | None = Field(
        default=None,
        description="How query text (and a corpus to index) becomes vectors: {python: "
        "'module:callable'}, {openai: {url, model, api_key_env, batch, dimensions}} or "
        "{wordllama: {dim: 256}}. Needed by dense and hybrid queries.",
    )
    k: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="Hits asked of the store per query; null: the gate's k. A larger limit "
        "widens an approximate search; the gate keeps its top k.",
    )
    filter: Any = Field(
        default=None, description="The store's own filter, passed through as written."
    )
    exact: bool = Field(
        default=False,
        description="Search by brute force instead of the approximate index: the reference "
        "the ANN check compares with.",
    )
    id_field: str | None = Field(
        default=None,
        description="The payload or metadata field holding the document id the qrels use; "
        "null: the store's own id (doc_id for an index built from the corpus).",
    )
    text_field: str | None = Field(
        default=None,
        description="The payload or metadata field holding the document's text, kept with "
        "each hit for an LLM judge; null: none (text for an index built from the corpus).",
    )
    score: bool = Field(
        default=True,
        description="Keep the store's score with each hit (a distance is negated, so higher "
        "is better); false: ranks only.",
    )
    index: IndexFromCorpus | None = Field(
        default=None,
        description="{from: corpus}: build the collection from dataset.corpus through the "
        "embedding when absent (offline, in a cache folder); null: the store already holds it.",
    )

    @model_validator(mode="after")
    def _embedding_for_an_index(self) -> StoreSettings:
        if self.index is not None and self.embedding is None:
            raise ValueError("index: {from: corpus} needs an embedding block to embed the corpus")
        return self

    def keys(self) -> tuple[str | None, str | None]:
        """The id and text fields hits are read from (the built index's by default)."""
        built = self.index is not None
        return (
            self.id_field or (BUILT_ID_FIELD if built else None),
            self.text_field or (BUILT_TEXT_FIELD if built else None),
        )

    def common_description(self) -> dict[str, Any]:
        """What every store's answers depend on, beside its connection and collection."""
        return {
            "k": self.k,
            "filter": self.filter,
            "exact": self.exact,
            "id_field": self.id_field,
            "text_field": self.text_field,
            "score": self.score,
        }


def require_module(module: str, install: str, where: str) -> None:
    """Import `module` (the store's client library) now, when the retriever is made; a
    GateError saying how to `install` it (the extra, written out) when it is missing, not a
    traceback later."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        raise store_error(where, f"{module} is not installed ({error})", install) from None


def store_error(where: str, problem: str, fix: str) -> GateError:
    """A GateError naming the block, what is wrong (one line) and what to do."""
    return GateError(f"{where}: {excerpt(problem, 300)}; {fix}")


def corpus_rows(
    corpus: Mapping[str, Document] | None, index: IndexFromCorpus, where: str
) -> tuple[list[str], list[str]]:
    """The corpus's ids (sorted) and each one's indexed text."""
    if not corpus:
        raise store_error(
            where,
            "index: {from: corpus} needs dataset.corpus, and none was given or it is empty",
            "point dataset at a BEIR folder or file with a corpus.jsonl",
        )
    ids = sorted(corpus)
    texts = [" ".join(getattr(corpus[doc], name) for name in index.fields) for doc in ids]
    return ids, texts


def index_folder(
    base_dir: Path,
    index: IndexFromCorpus,
    kind: str,
    ids: list[str],
    texts: list[str],
    settings: Mapping[str, Any],
) -> tuple[Path, str]:
    """Where the index of these documents under these settings lives, and its key: a hash of
    the documents, the embedding and the store's settings."""
    digest = hashlib.sha256(
        json.dumps([kind, dict(settings)], sort_keys=True, default=str).encode("utf-8")
    )
    for doc, text in zip(ids, texts, strict=True):
        digest.update(json.dumps([doc, text], ensure_ascii=False).encode("utf-8") + b"\n")
    key = digest.hexdigest()[:16]
    return base_dir / index.path / f"{kind}-{key}", key


def build_once(folder: Path, build: Callable[[Path], None], where: str) -> None:
    """Run `build` into a fresh sibling folder and move it to `folder` in one rename, unless
    `folder` exists: an interrupted build leaves no half index behind, and two runs racing
    keep one of two whole ones."""
    if folder.exists():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        build(scratch)
        try:
            os.rename(scratch, folder)
        except OSError:
            if not folder.exists():
                raise
    except GateError:
        raise
    except Exception as error:
        raise store_error(
            where,
            f"building the index from the corpus failed: {type(error).__name__}: {error}",
            f"check that {folder.parent} is writable, then run again",
        ) from error
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ranked(hits: Iterable[Hit]) -> list[Hit]:
    """`hits` best first, ties by doc id descending (trec_eval's order), so equal scores
    never depend on the store's internal order. Unscored hits keep the store's order."""
    listed = list(hits)
    if any(hit.score is None for hit in listed):
        return listed
    listed.sort(key=lambda hit: hit.doc_id, reverse=True)
    listed.sort(key=lambda hit: -(hit.score or 0.0))
    return listed


def hit_from(
    doc_id: Any, score: float | None, payload: Mapping[str, Any] | None, text_field: str | None
) -> Hit:
    """A hit; the text from `text_field` of the payload when there is one."""
    text = None
    if text_field is not None and payload is not None:
        value = payload.get(text_field)
        text = value if isinstance(value, str) else None
    return Hit(str(doc_id), score, text)


def payload_id(payload: Mapping[str, Any] | None, field: str, where: str, point: Any) -> str:
    """The document id in `field` of a hit's payload; a missing one is an error naming it."""
    value = None if payload is None else payload.get(field)
    if value is None or isinstance(value, (dict, list)):
        raise store_error(
            where,
            f"hit {point!r} has no {field!r} field holding a document id",
            "set id_field to the field that holds the id the qrels use (null: the store's own id)",
        )
    return str(value)


def dimension_error(where: str, collection: str, store: int, embedded: int) -> GateError:
    """The store's vectors and the embedding's differ in width."""
    return store_error(
        where,
        f"collection {collection!r} holds vectors of dimension {store}, the embedding gives "
        f"{embedded}",
        "use the embedding the collection was built with (or its dimension)",
    )
