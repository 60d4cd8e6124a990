"""The `fusion` retriever: named retriever blocks' rankings fused by RRF or weighted scores."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from retrieval_gate.adapters.hits import shown
from retrieval_gate.adapters.interface import Adapter, Retriever
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.adapters.stages import FirstStage
from retrieval_gate.core.model import MAX_CANDIDATES, Document, Hit, Query
from retrieval_gate.core.strict import no_bool_for_numbers
from retrieval_gate.errors import GateError, RetrieverError

INPUT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RRF_K = 60.0
"""Cormack, Clarke and Buettcher (SIGIR 2009): k = 60 in 1 / (k + rank)."""
Normalize = Literal["minmax", "zscore", "none"]


class FusionConfig(AdapterSettings):
    """Two or more retriever blocks, each asked for its top `depth`, fused into one ranking."""

    type: Literal["fusion"] = Field(
        default="fusion", description="Several retrievers' rankings fused into one."
    )
    retrievers: dict[str, FirstStage] = Field(
        min_length=2,
        description=(
            "The inputs: a name (letters, digits, '_', '.', '-') -> any retriever block but "
            "stages and fusion (python, http, bm25, ...). Each is asked in its own batch_size; "
            "its concurrency, timeout and retries are not used: the fusion block's apply to "
            "one fused query, all inputs together."
        ),
    )
    method: Literal["rrf", "weighted"] = Field(
        default="rrf",
        description=(
            "'rrf': reciprocal rank fusion, score = sum of weight / (k_rrf + rank) over the "
            "inputs that returned the document (rank 1 is the first). 'weighted': score = sum "
            "of weight x the input's score normalised per query (see normalize); a document "
            "an input did not return adds 0 from that input."
        ),
    )
    k_rrf: float = Field(
        default=RRF_K,
        ge=0,
        description="The rrf constant k in 1 / (k + rank); 60 as in Cormack et al. (2009).",
    )
    weights: dict[str, float] = Field(
        default_factory=dict,
        description="Input name -> its weight (>= 0, default 1); names not listed weigh 1.",
    )
    normalize: Normalize = Field(
        default="minmax",
        description=(
            "How 'weighted' scales each input's scores within one query before weighting: "
            "'minmax' to [0, 1] (all equal: 1), 'zscore' to mean 0 and population standard "
            "deviation 1 (all equal: 0), 'none' as returned. Every input must return scores."
        ),
    )
    depth: int = Field(
        default=100,
        ge=1,
        le=MAX_CANDIDATES,
        description="Results asked of each input per query; documents below it are not fused.",
    )
    k: int | None = Field(
        default=None,
        ge=1,
        description="Fused results kept per query; default: the gate's k (at most that).",
    )

    @field_validator("retrievers")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not INPUT_NAME.fullmatch(name):
                raise ValueError(
                    f"input name {shown(name, 40)} must be 1-64 letters, digits, '_', '.' or "
                    "'-', starting with a letter or digit"
                )
        return value

    @field_validator("k_rrf", "depth", "k", mode="before")
    @classmethod
    def _no_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_for_numbers(cls, value, info)

    @field_validator("weights", mode="before")
    @classmethod
    def _finite_weights(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            for name, weight in value.items():
                number = weight if isinstance(weight, (int, float)) else None
                if isinstance(weight, bool) or number is None or not 0 <= number < math.inf:
                    raise ValueError(
                        f"weight of {shown(name, 40)} is {shown(weight, 40)}; a weight is a "
                        "finite number >= 0"
                    )
        return value

    @model_validator(mode="after")
    def _weights_name_inputs(self) -> FusionConfig:
        unknown = [name for name in self.weights if name not in self.retrievers]
        if unknown:
            raise ValueError(
                f"weights names {shown(unknown[0], 40)}, which is not an input; the inputs: "
                f"{', '.join(self.retrievers)}"
            )
        if not any(self.weights.get(name, 1.0) > 0 for name in self.retrievers):
            raise ValueError("every weight is 0; give at least one input a weight above 0")
        return self


class FusionRetriever(Adapter[FusionConfig]):
    """Asks each input, in the order configured, for its top `depth` (one query at a time, or
    in the input's own batches), fuses the lists and keeps the top k. Inputs run one after
    another within a query; queries run concurrently as the fusion block's `concurrency`
    says. An input that fails fails the whole query, as any retriever error does: a ranking
    fused from fewer inputs is another retriever, and gating it would hide the outage. Ties
    are broken by doc id, descending, as trec_eval and the gate's metrics rank them, so the
    list returned is the list scored, and it never depends on the input order.
    Never cached: an input's code can change without its description changing."""

    config_class = FusionConfig

    def __init__(
        self,
        config: FusionConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
        build: Callable[..., Retriever] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        if build is None:
            raise GateError("the fusion retriever is built by build_retriever")
        self.inputs: dict[str, Retriever] = {}
        try:
            for name, block in config.retrievers.items():
                self.inputs[name] = build(block, base_dir=base_dir, corpus=corpus)
        except BaseException:
            self.close()
            raise
        self.weights = {name: config.weights.get(name, 1.0) for name in config.retrievers}

    def describe(self) -> Mapping[str, Any]:
        rrf = self.config.method == "rrf"
        return {
            "type": "fusion",
            "method": self.config.method,
            **({"k_rrf": self.config.k_rrf} if rrf else {"normalize": self.config.normalize}),
            "weights": self.weights,
            "depth": self.config.depth,
            "k": self.config.k,
            "retrievers": {name: dict(r.describe()) for name, r in self.inputs.items()},
        }

    def batch_size(self) -> int:
        return self.config.batch_size

    def search(self, query: Query, k: int) -> list[Hit]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        kept = k if self.config.k is None else min(k, self.config.k)
        lists = {name: self._ask(name, queries) for name in self.inputs}
        return [
            fuse(
                {name: found[i] for name, found in lists.items()},
                self.weights,
                kept,
                method=self.config.method,
                k_rrf=self.config.k_rrf,
                normalize=self.config.normalize,
            )
            for i in range(len(queries))
        ]

    def _ask(self, name: str, queries: Sequence[Query]) -> list[list[Hit]]:
        """Input `name`'s top `depth` for each query, in its own batch size."""
        retriever, depth = self.inputs[name], self.config.depth
        size = retriever.batch_size()
        try:
            if size <= 1:
                return [list(retriever.search(query, depth)) for query in queries]
            found: list[list[Hit]] = []
            for start in range(0, len(queries), size):
                found.extend(retriever.search_batch(queries[start : start + size], depth))
            return found
        except RetrieverError as error:  # named, and as retryable as it was
            where = f"retriever.retrievers.{name}: "
            raise RetrieverError(
                where + str(error),
                retryable=error.retryable,
                kind=where + error.kind,
                mapping=error.mapping,
            ) from error

    def close(self) -> None:
        errors: list[BaseException] = []
        for retriever in self.inputs.values():
            try:
                retriever.close()
            except BaseException as error:  # close the others before raising
                errors.append(error)
        if errors:
            raise errors[0]


def fuse(
    lists: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    k: int,
    *,
    method: Literal["rrf", "weighted"] = "rrf",
    k_rrf: float = RRF_K,
    normalize: Normalize = "minmax",
) -> list[Hit]:
    """The top `k` of the named ranked `lists` fused: each document's terms summed exactly
    (math.fsum, so equal sums are equal floats whatever the input order), best first, doc id
    descending on ties (trec_eval's order, which the metrics apply to equal scores anyway).
    A document listed twice in one list counts at its first place. RetrieverError when
    `weighted` meets a hit without a score, or a fused score overflows."""
    terms: dict[str, list[float]] = {}
    for name, hits in lists.items():
        weight = weights.get(name, 1.0)
        first = _first_places(hits)
        if method == "rrf":
            values = [1.0 / (k_rrf + rank) for rank in range(1, len(first) + 1)]
        else:
            values = _normalized(name, first, normalize)
        for hit, value in zip(first, values, strict=True):
            terms.setdefault(hit.doc_id, []).append(weight * value)
    scored = sorted(((_total(doc, parts), doc) for doc, parts in terms.items()), reverse=True)
    return [Hit(doc, total) for total, doc in scored[: max(k, 0)]]


def _total(doc: str, parts: Sequence[float]) -> float:
    """A document's fused score; RetrieverError when unnormalised scores overflow a float."""
    try:
        total = math.fsum(parts)
    except (OverflowError, ValueError):  # inf - inf is not a number either
        total = math.inf
    if not math.isfinite(total):
        raise RetrieverError(
            f"the fused score of doc {shown(doc)} overflows a float; scale the inputs' scores "
            "or use normalize: minmax"
        )
    return total


def _first_places(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[str] = set()
    first = []
    for hit in hits:
        if hit.doc_id not in seen:
            seen.add(hit.doc_id)
            first.append(hit)
    return first


def _normalized(name: str, hits: Sequence[Hit], normalize: Normalize) -> list[float]:
    """Input `name`'s scores scaled within this query as `normalize` says."""
    missing = next((hit for hit in hits if hit.score is None), None)
    if missing is not None:
        raise RetrieverError(
            f"retriever.retrievers.{name} returned doc {shown(missing.doc_id)} without a "
            "score; weighted fusion needs every input's scores: return (id, score) pairs, "
            "or use method: rrf, which reads only ranks"
        )
    scores = [float(hit.score) for hit in hits if hit.score is not None]
    if normalize == "none" or not scores:
        return scores
    # Both scalings ignore a common factor: dividing by the largest magnitude first keeps
    # differences and squares of scores near the float limit finite.
    largest = max(abs(score) for score in scores)
    if largest > 0:
        scores = [score / largest for score in scores]
    if normalize == "minmax":
        low, high = min(scores), max(scores)
        if high == low:
            return [1.0] * len(scores)
        return [(score - low) / (high - low) for score in scores]
    mean = math.fsum(scores) / len(scores)
    spread = math.sqrt(math.fsum((score - mean) ** 2 for score in scores) / len(scores))
    if spread == 0:
        return [0.0] * len(scores)
    return [(score - mean) / spread for score in scores]
