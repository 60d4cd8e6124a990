"""The main branch's history of results, kept in a git branch of the repository."""

# record: a line's format; store: the branch (append, read); drift: the drift budget;
# trend: what a pull request's check shows of the trend. Loaded when first used, so the
# command line (completion, --help) does not import numpy to name the defaults.
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_gate.history.record import TrendPoint
    from retrieval_gate.history.store import BranchSource, HistorySource
    from retrieval_gate.history.trend import load_trend

_WHERE = {
    "TrendPoint": "record",
    "BranchSource": "store",
    "HistorySource": "store",
    "load_trend": "trend",
}
__all__ = ["BranchSource", "HistorySource", "TrendPoint", "load_trend"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
