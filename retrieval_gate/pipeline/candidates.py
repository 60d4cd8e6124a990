"""A two-stage retriever's first stage scored: its `candidates:` check columns and kept ids."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.config.stages import candidates_checks
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.model import MAX_CANDIDATES
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.core.wording import excerpt, plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError
from retrieval_gate.execution.runner import RunResult, candidates_run


@dataclass(frozen=True, eq=False)
class StageScores:
    """The `candidates:` check columns of one run and the candidate ids the record keeps."""

    values: Mapping[str, FloatArray]
    """Canonical check name (`candidates:recall@100`) -> one value per labelled query."""
    top: TopKIds
    """Query -> its candidates (at most MAX_CANDIDATES), ranked as the metrics rank them:
    what re-scores the columns and names the stage that lost a document."""


def score_candidates(
    config: GateConfig, dataset: Dataset, result: RunResult, retriever: Mapping[str, Any]
) -> StageScores | None:
    """The `candidates:` checks of `config` on the run's first-stage candidates, and the
    candidates; None when the retriever gave none and no check reads them. A GateError when
    a check reads them and the retriever (`retriever`: its description) gave none for some
    answered query: a first-stage check of a retriever without a first stage measures
    nothing."""
    from retrieval_gate.metrics.top_k import top_k_ids

    if not candidates_checks(config.metrics) and not result.candidates:
        return None
    values = candidates_columns(config, dataset.qrels, dataset.subtopics, result, retriever)
    return StageScores(values, top_k_ids(candidates_run(result), MAX_CANDIDATES))


def candidates_columns(
    config: GateConfig,
    qrels: Qrels,
    subtopics: Any,
    result: RunResult,
    retriever: Mapping[str, Any],
) -> dict[str, FloatArray]:
    """The `candidates:` check columns of `config` on `result`'s candidates, one value per
    query of `qrels` (`evaluate`'s order); the GateError of `score_candidates`."""
    from retrieval_gate.metrics import evaluate

    checks = candidates_checks(config.metrics)
    if not checks:
        return {}
    lacking = [query for query in result.hits if query not in result.candidates]
    if lacking:
        raise GateError(
            f"metrics: {', '.join(checks)} read the first stage's candidates, but "
            f"{_named(retriever)} gave none for {plural(len(lacking), 'query', 'queries')} of "
            f"{len(result.hits)} (the first: {excerpt(lacking[0], 80)}); return "
            '{"hits": [...], "candidates": [...]} (python), set retriever.candidates (http) '
            "or use the stages retriever; or drop the candidates: checks"
        )
    scores = evaluate(candidates_run(result), qrels, list(checks.values()), subtopics)
    return {name: scores.values[str(spec)] for name, spec in checks.items()}


def _named(retriever: Mapping[str, Any]) -> str:
    """`retriever python (target m:f)`: its kind and what it calls, on one line."""
    kind = retriever.get("type", "?")
    what = next((retriever[key] for key in ("target", "url", "path") if key in retriever), None)
    shown = f" ({excerpt(str(what), 80)})" if what is not None else ""
    return f"retriever {excerpt(str(kind), 40)}{shown}"
