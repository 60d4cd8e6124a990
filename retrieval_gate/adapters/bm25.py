"""The built-in `bm25` retriever over the dataset's corpus, with bm25s and PyStemmer."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.core.strict import no_bool_for_numbers
from retrieval_gate.errors import GateError


class BM25Config(AdapterSettings):
    """Okapi BM25 over dataset.corpus, indexed in memory when the gate starts."""

    type: Literal["bm25"] = Field(default="bm25", description="Built-in BM25 over dataset.corpus.")
    k1: float = Field(default=1.2, ge=0, description="Term-frequency saturation.")
    b: float = Field(default=0.75, ge=0, le=1, description="Document-length normalisation.")
    stemmer: str | None = Field(
        default="english", description="Snowball stemmer language (PyStemmer); null for none."
    )
    stopwords: str | None = Field(
        default="en", description="Stopword list (bm25s: en, de, fr, es, ...); null for none."
    )
    fields: list[Literal["title", "text"]] = Field(
        default=["title", "text"],
        min_length=1,
        description="Document fields indexed, joined with a space.",
    )

    @field_validator("k1", "b", mode="before")
    @classmethod
    def _no_bool_for_parameters(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_for_numbers(cls, value, info)


class BM25Retriever(Adapter[BM25Config]):
    """Lucene-style BM25 (bm25s). Only documents sharing a term with the query are returned,
    ranked by score descending, doc id descending on ties, so results never depend on
    the order of the corpus. Queries are scored under a lock (neither bm25s nor PyStemmer
    promises thread safety, and scoring is fast)."""

    config_class = BM25Config
    cacheable = True

    def __init__(
        self,
        config: BM25Config,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        if not corpus:
            raise GateError(
                "the bm25 retriever needs dataset.corpus (a corpus.jsonl of "
                '{"_id", "title", "text"} lines); none was given or it is empty'
            )
        bm25s = _bm25s()
        self._stemmer = _stemmer(config.stemmer)
        self._stopwords: str | list[str] = config.stopwords or []
        # Doc ids sorted descending: position order is the tie order, so argsort can use it.
        self.ids = sorted(corpus, reverse=True)
        texts = [" ".join(getattr(corpus[doc], name) for name in config.fields) for doc in self.ids]
        self.corpus_sha256 = _corpus_digest(corpus, self.ids, config.fields)
        try:
            tokens = self._tokenize(texts, return_ids=True)
        except ValueError as error:  # bm25s does not know the stopword list
            raise GateError(f"retriever.stopwords: {error}") from None
        self._model = bm25s.BM25(k1=config.k1, b=config.b)
        self._model.index(tokens, show_progress=False)
        self._lock = threading.Lock()

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "bm25",
            **self.config.model_dump(include={"k1", "b", "stemmer", "stopwords", "fields"}),
            "corpus_sha256": self.corpus_sha256,
        }

    def batch_size(self) -> int:
        return self.config.batch_size

    def search(self, query: Query, k: int) -> list[Hit]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        import numpy as np

        out: list[list[Hit]] = []
        with self._lock:  # PyStemmer's stemmers are not thread-safe either
            tokens = self._tokenize([query.text for query in queries], return_ids=False)
            for words in tokens:
                ids = self._model.get_tokens_ids(words)
                if not ids or k <= 0:
                    out.append([])
                    continue
                scores = self._model.get_scores_from_ids(ids)
                matched = np.flatnonzero(scores > 0)
                # Stable sort on -score over positions in doc-id-descending order: ties
                # come out doc id descending, as trec_eval ranks them.
                top = matched[np.argsort(-scores[matched], kind="stable")[:k]]
                out.append([Hit(self.ids[i], float(scores[i])) for i in top.tolist()])
        return out

    def _tokenize(self, texts: list[str], *, return_ids: bool) -> Any:
        return _bm25s().tokenize(
            texts,
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=return_ids,
            show_progress=False,
        )


_UNUSED_BY_BM25S = ("numba", "scipy.sparse")
"""What bm25s imports whenever it is installed, for backends this adapter never selects (it
scores with bm25s's numpy backend): 0.3 CPU s and 72 MiB of every start where they are
(benchmarks/timings/README.md)."""


def _bm25s() -> Any:
    """The bm25s module, imported with `_UNUSED_BY_BM25S` hidden from it unless something
    imported them already."""
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    hidden = [name for name in _UNUSED_BY_BM25S if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # importing it raises ImportError
    try:
        import bm25s
    finally:
        for name in hidden:
            sys.modules.pop(name, None)
    return bm25s


def _stemmer(language: str | None) -> Any:
    if language is None:
        return None
    import Stemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        available = ", ".join(sorted(Stemmer.algorithms()))
        raise GateError(
            f"retriever.stemmer: no stemmer for {language!r}; available: {available}"
        ) from None


def _corpus_digest(corpus: Mapping[str, Document], ids: list[str], fields: Sequence[str]) -> str:
    """A hash of the indexed text, so a changed corpus is a different retriever."""
    digest = hashlib.sha256()
    for doc in ids:
        row = [doc, *(getattr(corpus[doc], name) for name in fields)]
        digest.update(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()
