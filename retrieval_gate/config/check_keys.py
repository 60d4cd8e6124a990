"""What a `metrics:` key names: a ranking metric, a first-stage one, an operational measure or
an evaluator's score."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable
from typing import Literal

from retrieval_gate.config.columns import operational_column
from retrieval_gate.config.evaluators import evaluator_key
from retrieval_gate.config.stages import check_metric, stage_metric
from retrieval_gate.core.reported import MAX_MEASURE
from retrieval_gate.errors import MetricError

Kind = Literal["ranking", "candidates", "operational", "evaluator"]


def kind_of(key: str) -> Kind:
    """Which kind of check `key` names: `ranking` scores the final list (ndcg@10),
    `candidates` the first stage's (candidates:recall@100), `operational` is latency or cost
    (latency_p95), `evaluator` an evaluator's per-query score (ragas:faithfulness)."""
    if operational_column(key) is not None:
        return "operational"
    if evaluator_key(key) is not None:
        return "evaluator"
    if stage_metric(key) is not None:
        return "candidates"
    return "ranking"


def ranking_keys(keys: Iterable[str]) -> list[str]:
    """The keys of `keys` that score the final ranking, in order."""
    return [key for key in keys if kind_of(key) == "ranking"]


def ranked_keys(keys: Iterable[str]) -> list[str]:
    """The keys of `keys` that score a ranked list, the final one or the first stage's."""
    return [key for key in keys if kind_of(key) in ("ranking", "candidates")]


def canonical_name(key: str) -> str:
    """The canonical name of the check `key` names (`ndcg@10` for `NDCG@10`); operational
    and evaluator keys as written. Raises MetricError for a metric that does not parse."""
    if kind_of(key) in ("operational", "evaluator"):
        return key
    return check_metric(key)[1]


@functools.lru_cache(maxsize=1024)  # asked once per column of every record read
def value_bounds(key: str) -> tuple[float, float]:
    """The lowest and highest per-query value the check column `key` can hold: its metric's
    (`MetricSpec.bounds`), 0 to MAX_MEASURE for latency and cost, and within MAX_MEASURE
    either way for an evaluator's score or a column no metric of ours reads."""
    kind = kind_of(key)
    if kind == "operational":
        return 0.0, MAX_MEASURE
    if kind != "evaluator":
        with contextlib.suppress(MetricError):  # a column no metric of ours reads
            return check_metric(key)[0].bounds
    return -MAX_MEASURE, MAX_MEASURE
