"""The gate's policy from the config: comparison settings and each metric's threshold."""

from __future__ import annotations

from retrieval_gate.config.schema import GateConfig, MetricGate
from retrieval_gate.gate.compare import ComparisonSettings, Threshold
from retrieval_gate.metrics import parse_metric


def gate_settings(config: GateConfig) -> ComparisonSettings:
    """The comparison settings `config` gates with."""
    gate = config.gate
    return ComparisonSettings(
        alpha=gate.alpha,
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
    thresholds = {_canonical(key): _threshold(gate) for key, gate in config.metrics.items()}
    overrides = {
        name: {_canonical(key): _threshold(gate) for key, gate in gates.items()}
        for name, gates in config.slices.overrides.items()
    }
    return thresholds, overrides


def _canonical(name: str) -> str:
    return str(parse_metric(name))


def _threshold(gate: MetricGate) -> Threshold:
    drop = gate.max_drop
    return Threshold(
        max_drop=drop.value if drop else None,
        relative=bool(drop and drop.relative),
        floor=gate.min,
    )
