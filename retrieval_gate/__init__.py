"""retrieval-gate: a CI regression gate for retrieval and RAG systems."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_gate.config import DEFAULT_CONFIG
from retrieval_gate.core.version import __version__

if TYPE_CHECKING:
    from retrieval_gate.config.loader import load as load_config
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.gate.checks.compare import Comparison
    from retrieval_gate.gate.result import GateResult
    from retrieval_gate.metrics import Scores, evaluate, parse_metric
    from retrieval_gate.pipeline.check import check
    from retrieval_gate.readers import read_qrels, read_run

# Imported on first use so that `retrieval-gate --help` does not pay for numpy.
_LAZY = {
    "check": "retrieval_gate.pipeline.check",
    "GateResult": "retrieval_gate.gate.result",
    "Comparison": "retrieval_gate.gate.checks.compare",
    "GateConfig": "retrieval_gate.config.schema",
    "load_config": "retrieval_gate.config.loader:load",
    "evaluate": "retrieval_gate.metrics",
    "parse_metric": "retrieval_gate.metrics",
    "Scores": "retrieval_gate.metrics",
    "read_qrels": "retrieval_gate.readers",
    "read_run": "retrieval_gate.readers",
}

__all__ = [
    "DEFAULT_CONFIG",
    "Comparison",
    "GateConfig",
    "GateResult",
    "Scores",
    "__version__",
    "check",
    "evaluate",
    "load_config",
    "parse_metric",
    "read_qrels",
    "read_run",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, _, attribute = _LAZY[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    raise AttributeError(f"module 'retrieval_gate' has no attribute {name!r}")
