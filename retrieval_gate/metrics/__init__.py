"""The metric engine: trec_eval-exact measures computed as numpy reductions."""

from retrieval_gate.metrics import (  # noqa: F401  (their measures register on import)
    auc,
    diversity,
    incomplete,
    measures,
    set_measures,
)
from retrieval_gate.metrics.evaluate import Scores, evaluate
from retrieval_gate.metrics.parse import available_metrics, parse_metric, parse_metrics
from retrieval_gate.metrics.spec import REGISTRY, Measure, MetricSpec

__all__ = [
    "REGISTRY",
    "Measure",
    "MetricSpec",
    "Scores",
    "available_metrics",
    "evaluate",
    "parse_metric",
    "parse_metrics",
]
