"""`evaluate(run, qrels, metrics)`: per-query metric values aligned to the labelled queries."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.errors import MetricError
from retrieval_gate.metrics.diversity import (
    DIVERSITY,
    NEEDS_SUBTOPICS,
    SubtopicsLike,
    diversity_scores,
)
from retrieval_gate.metrics.parse import parse_metrics
from retrieval_gate.metrics.ranking import rank_judgments
from retrieval_gate.metrics.spec import MetricSpec

RunLike = Run | Mapping[str, Mapping[str, float]]
QrelsLike = Qrels | Mapping[str, Mapping[str, float]]

_NO_MATRIX = frozenset({"num_rel", "num_ret"})


@dataclass(frozen=True, eq=False)
class Scores:
    """One float64 array per metric (canonical name), aligned to the sorted labelled query ids."""

    query_ids: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    values: dict[str, FloatArray]
    missing_queries: tuple[str, ...]
    """Labelled queries the run retrieved nothing for; they score 0 (judged@k: 1)."""
    ignored_queries: tuple[str, ...]
    """Run queries absent from the qrels; not scored."""

    def mean(self) -> dict[str, float]:
        """Mean of each metric over the labelled queries it is defined for (NaN values, as a
        one-class query's `auc`, are left out); 0.0 when there are none."""
        means = {}
        for name, values in self.values.items():
            defined = values[~np.isnan(values)]
            means[name] = float(defined.mean()) if len(defined) else 0.0
        return means

    def of_queries(self, keep: npt.NDArray[np.bool_]) -> Scores:
        """These scores restricted to the queries `keep` marks (aligned to `query_ids`)."""
        kept = [
            query for query, wanted in zip(self.query_ids, keep.tolist(), strict=True) if wanted
        ]
        chosen = set(kept)
        return dataclasses.replace(
            self,
            query_ids=tuple(kept),
            values={name: values[keep] for name, values in self.values.items()},
            missing_queries=tuple(q for q in self.missing_queries if q in chosen),
        )

    def undefined(self) -> dict[str, int]:
        """How many labelled queries each metric is undefined (NaN) for, and so left out of
        its mean; only metrics with some."""
        counts = {name: int(np.isnan(values).sum()) for name, values in self.values.items()}
        return {name: count for name, count in counts.items() if count}

    def per_query(self) -> dict[str, dict[str, float]]:
        """`{query: {metric: value}}` in query order."""
        columns = {name: values.tolist() for name, values in self.values.items()}
        return {
            qid: {name: column[i] for name, column in columns.items()}
            for i, qid in enumerate(self.query_ids)
        }


def evaluate(
    run: RunLike,
    qrels: QrelsLike,
    metrics: Iterable[str | MetricSpec],
    subtopics: SubtopicsLike | None = None,
) -> Scores:
    """Score every labelled query of `qrels` on `metrics`; a query missing from `run` scores 0.

    Metrics follow trec_eval (see DESIGN): ranking by score descending with ties broken by
    doc id descending, grades < 0 judged-unjudged, R from all the qrels rows. The diversity
    measures (alpha_ndcg, err_ia, ...: metrics/diversity.py) need `subtopics`, the
    per-intent qrels; a labelled query absent from them scores 0 on those.
    """
    from retrieval_gate.readers.dicts import qrels_from_dict, run_from_dict, scored_mapping

    specs = parse_metrics(metrics)
    mapping = None if isinstance(run, Run) else scored_mapping(run)
    results = run if isinstance(run, Run) else mapping or run_from_dict(run)
    qrels = qrels if isinstance(qrels, Qrels) else qrels_from_dict(qrels)
    diverse = [spec for spec in specs if spec.name in DIVERSITY]
    if diverse and subtopics is None:
        raise MetricError(f"{', '.join(map(str, diverse))}: {NEEDS_SUBTOPICS}")
    plain = [spec for spec in specs if spec.name not in DIVERSITY]
    scored = any(spec.measure.needs_scores for spec in plain)
    ranked = rank_judgments(results, qrels, _depth(plain), scores=scored)
    values = {str(spec): spec.measure.compute(spec, ranked) for spec in plain}
    if diverse and subtopics is not None:
        values.update(diversity_scores(results, ranked.query_ids, subtopics, diverse))
        values = {str(spec): values[str(spec)] for spec in specs}
    return Scores(
        tuple(str(q) for q in ranked.query_ids),
        specs,
        values,
        ranked.missing_queries,
        ranked.ignored_queries,
    )


def _depth(specs: Iterable[MetricSpec]) -> int | None:
    """How many ranks the metrics look at; None means every retrieved doc."""
    deepest = 0
    for spec in specs:
        if spec.name in _NO_MATRIX:
            continue
        if spec.k is None or spec.measure.full_list:
            return None
        deepest = max(deepest, spec.k)
    return deepest
