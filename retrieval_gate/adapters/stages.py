"""The `stages` retriever: a first-stage retriever's candidates, reranked by a second stage."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from retrieval_gate.adapters.bm25 import BM25Config
from retrieval_gate.adapters.command import CommandConfig
from retrieval_gate.adapters.frameworks import HaystackConfig, LangchainConfig, LlamaIndexConfig
from retrieval_gate.adapters.hits import shown, to_hits
from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
from retrieval_gate.adapters.interface import Adapter, Retriever
from retrieval_gate.adapters.python import PythonConfig, user_exits
from retrieval_gate.adapters.run_file import RunFileConfig
from retrieval_gate.adapters.settings import AdapterSettings, redact
from retrieval_gate.adapters.stores.chroma import ChromaConfig
from retrieval_gate.adapters.stores.lancedb import LanceDBConfig
from retrieval_gate.adapters.stores.pgvector import PgvectorConfig
from retrieval_gate.adapters.stores.qdrant import QdrantConfig
from retrieval_gate.adapters.targets import load_target, user_errors
from retrieval_gate.core.model import MAX_CANDIDATES, Document, Hit, Query, StagedHits
from retrieval_gate.errors import GateError, RetrieverError

FirstStageConfig = (
    PythonConfig
    | HttpConfig
    | CommandConfig
    | RunFileConfig
    | LangchainConfig
    | LlamaIndexConfig
    | HaystackConfig
    | BM25Config
    | QdrantConfig
    | ChromaConfig
    | LanceDBConfig
    | PgvectorConfig
)
"""Every retriever block but `stages`: what a first stage may be (`AdapterConfig` adds it)."""
FirstStage = Annotated[FirstStageConfig, Field(discriminator="type")]
RERANK_EXPECTED = "a function f(query, candidates, k) returning the reranked results"


class PythonRerankConfig(BaseModel):
    """A Python reranker called in this process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["python"] = Field(default="python", description="A Python function.")
    target: str = Field(
        description=(
            "'module:attribute' naming a function f(query, candidates, k): the query text, "
            "the candidates as a list of {id, score, text} dicts (best first; text from the "
            "hit, else the corpus's title and text, else null) and k. It returns the "
            "reranked results, best first, in any shape a python retriever may return."
        )
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Extra keyword arguments on every call."
    )


def _rerank_kind(value: Any) -> str:
    """A rerank block's type; python when it names none (`{target: m:f}`)."""
    kind = value.get("type", "python") if isinstance(value, dict) else getattr(value, "type", "")
    return str(kind)


RerankConfig = Annotated[
    Annotated[PythonRerankConfig, Tag("python")] | Annotated[HttpConfig, Tag("http")],
    Discriminator(_rerank_kind),
]


class StagesConfig(AdapterSettings):
    """A first stage's candidates reranked by a second stage."""

    type: Literal["stages"] = Field(
        default="stages", description="Two stages: candidates, then a reranker."
    )
    candidates: FirstStage = Field(
        description="The first stage: any retriever block (python, http, bm25, ...)."
    )
    candidates_k: int = Field(
        default=100,
        ge=1,
        le=MAX_CANDIDATES,
        description="Candidates asked of the first stage per query, all given to the reranker.",
    )
    rerank: RerankConfig = Field(
        description=(
            "The second stage: {type: python, target: 'module:f'} with f(query, candidates, "
            "k), or an http block whose body sends '{candidates}' (a list of {id, score, "
            "text} objects) and whose results path reads the reranked hits. It may only "
            "return ids among the candidates: any other id fails the query."
        )
    )


class StagesRetriever(Adapter[StagesConfig]):
    """Asks the first stage for `candidates_k` candidates, gives them to the reranker and
    keeps its top k; the answer carries the candidates (`StagedHits`) for `candidates:`
    checks and for naming the stage that lost a document. Never cached: a python stage's
    code can change without its description changing."""

    config_class = StagesConfig

    def __init__(
        self,
        config: StagesConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
        build: Callable[..., Retriever] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        if build is None:
            raise GateError("the stages retriever is built by build_retriever")
        self.corpus = corpus or {}
        self.first = build(config.candidates, base_dir=base_dir, corpus=corpus)
        try:
            self.second = _reranker(config.rerank, base_dir)
        except BaseException:
            self.first.close()
            raise

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "stages",
            "candidates": dict(self.first.describe()),
            "candidates_k": self.config.candidates_k,
            "rerank": self.second.describe(),
        }

    def search(self, query: Query, k: int) -> list[Hit]:
        found = list(self.first.search(query, self.config.candidates_k))
        candidates = [
            {"id": hit.doc_id, "score": hit.score, "text": self._text(hit)} for hit in found
        ]
        ranked = self.second.rerank(query, candidates, k)
        known = {hit.doc_id for hit in found}
        stray = next((hit.doc_id for hit in ranked if hit.doc_id not in known), None)
        if stray is not None:
            raise RetrieverError(
                f"retriever.rerank returned doc {shown(stray)}, which is not among the "
                f"{len(found)} candidates of the first stage; a reranker reorders the "
                "candidates it is given"
            )
        return StagedHits(ranked[:k], found)

    def _text(self, hit: Hit) -> str | None:
        if hit.text is not None:
            return hit.text
        document = self.corpus.get(hit.doc_id)
        if document is None:
            return None
        return " ".join(part for part in (document.title, document.text) if part)

    def close(self) -> None:
        try:
            self.first.close()
        finally:
            self.second.close()


class _PythonRerank:
    """A python reranker: `f(query, candidates, k)`."""

    def __init__(self, config: PythonRerankConfig, base_dir: Path | None) -> None:
        self.config = config
        self.where = f"retriever.rerank.target {config.target!r}"
        named = f"retriever stages (rerank {config.target})"
        with user_exits(named, "the module", "while importing"):
            self.function = load_target(config.target, RERANK_EXPECTED, search_dir=base_dir)
        if not callable(self.function):
            raise GateError(f"{self.where} is not callable; expected {RERANK_EXPECTED}")
        self.named = named

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "python",
            "target": self.config.target,
            "kwargs": redact(self.config.kwargs),
        }

    def rerank(self, query: Query, candidates: Sequence[Mapping[str, Any]], k: int) -> list[Hit]:
        exits = user_exits(self.named, "the reranker", "while reranking", RetrieverError)
        with exits, user_errors(self.where):
            result = self.function(
                query.text, [dict(c) for c in candidates], k, **self.config.kwargs
            )
        return to_hits(result, k, self.where)

    def close(self) -> None:
        return None


class _HttpRerank:
    """An http reranker: the http retriever's request, with `{candidates}` filled."""

    def __init__(self, config: HttpConfig, base_dir: Path | None) -> None:
        if "{candidates}" not in str(config.body) + config.url + str(config.params):
            raise GateError(
                "retriever.rerank: an http reranker must send the candidates: put "
                "'{candidates}' in its body, e.g. body: {query: '{query}', candidates: "
                "'{candidates}', k: '{k}'}"
            )
        if config.batch_size > 1 or config.candidates is not None:
            raise GateError(
                "retriever.rerank: an http reranker is sent one query's candidates and answers "
                "with its reranked hits: drop its batch_size and candidates settings"
            )
        self.client = HttpRetriever(config, base_dir=base_dir)

    def describe(self) -> Mapping[str, Any]:
        return dict(self.client.describe())

    def rerank(self, query: Query, candidates: Sequence[Mapping[str, Any]], k: int) -> list[Hit]:
        return self.client.rerank(query, candidates, k)

    def close(self) -> None:
        self.client.close()


def _reranker(config: PythonRerankConfig | HttpConfig, base_dir: Path | None) -> Any:
    if isinstance(config, PythonRerankConfig):
        return _PythonRerank(config, base_dir)
    return _HttpRerank(config, base_dir)
