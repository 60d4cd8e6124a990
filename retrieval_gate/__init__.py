"""retrieval-gate: a CI regression gate for retrieval and RAG systems."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
DEFAULT_CONFIG = "retrieval-gate.yaml"
"""The config file commands read when no -c is given."""

if TYPE_CHECKING:
    from retrieval_gate.gate import GateResult, check
    from retrieval_gate.metrics import Scores, evaluate, parse_metric
    from retrieval_gate.readers import read_qrels, read_run

# Imported on first use so that `retrieval-gate --help` does not pay for numpy.
_LAZY = {
    "check": "retrieval_gate.gate",
    "GateResult": "retrieval_gate.gate",
    "evaluate": "retrieval_gate.metrics",
    "parse_metric": "retrieval_gate.metrics",
    "Scores": "retrieval_gate.metrics",
    "read_qrels": "retrieval_gate.readers",
    "read_run": "retrieval_gate.readers",
}

__all__ = [
    "GateResult",
    "Scores",
    "__version__",
    "check",
    "evaluate",
    "parse_metric",
    "read_qrels",
    "read_run",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'retrieval_gate' has no attribute {name!r}")
