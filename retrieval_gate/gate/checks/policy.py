"""The gate's policy from the config: comparison settings and each metric's threshold."""

from __future__ import annotations

from collections.abc import Mapping

from retrieval_gate.config.check_keys import canonical_name
from retrieval_gate.config.columns import RELEVANCE, Column, in_column_units, operational_column
from retrieval_gate.config.evaluators import EvaluatorConfig, evaluator_column
from retrieval_gate.config.schema import GateConfig, MetricGate
from retrieval_gate.datasets import Dataset
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold


def gate_settings(config: GateConfig, dataset: Dataset | None = None) -> ComparisonSettings:
    """The comparison settings `config` gates with; given the labelled set, at the level each
    check is tested at: half of gate.alpha when its corpus is chunked and
    dataset.other_level gates both levels (as `decide` splits it)."""
    gate = config.gate
    both = (
        dataset is not None
        and config.dataset.other_level == "gate"
        and dataset.anchors is not None
        and bool(dataset.anchors.sources)
    )
    return ComparisonSettings(
        alpha=gate.alpha / 2 if both else gate.alpha,
        correction=gate.correction,
        test=gate.test,
        resamples=gate.resamples,
        seed=gate.seed,
        require_significance=gate.require_significance,
        min_size=config.slices.min_size,
        on_inconclusive=gate.on_inconclusive,
        overall_share=gate.overall_share,
        rule=gate.rule,
    )


def gate_thresholds(
    config: GateConfig,
) -> tuple[dict[str, Threshold], dict[str, dict[str, Threshold]]]:
    """Canonical metric -> threshold, and slice -> canonical metric -> override."""
    thresholds = {
        canonical_name(key): _threshold(gate, column_of(key, config.evaluators))
        for key, gate in config.metrics.items()
    }
    overrides = {
        name: {
            canonical_name(key): _threshold(gate, column_of(key, config.evaluators))
            for key, gate in gates.items()
        }
        for name, gates in config.slices.overrides.items()
    }
    return thresholds, overrides


def column_of(key: str, evaluators: Mapping[str, EvaluatorConfig] | None = None) -> Column:
    """The direction and unit of the check column a `metrics:` key names (an evaluator's
    score: as `evaluators` says)."""
    return operational_column(key) or evaluator_column(key, evaluators or {}) or RELEVANCE


def _threshold(gate: MetricGate, column: Column) -> Threshold:
    worse = gate.worse_by
    return Threshold(
        max_drop=in_column_units(worse.value, worse.unit, column.unit) if worse else None,
        relative=bool(worse and worse.relative),
        floor=gate.bound,
        direction=column.direction,
        unit=column.unit,
    )
