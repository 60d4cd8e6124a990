"""A small baseline built in memory, and its fingerprints, for the baseline file's tests."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import numpy as np

from retrieval_gate.gate.baseline.record import (
    Baseline,
    Fingerprints,
    fingerprint_slices,
    make_baseline,
)
from retrieval_gate.gate.checks.slicing import slice_definition

NOW = datetime(2024, 5, 1, 12, 30, 15, 987654, tzinfo=timezone.utc)
DEFINITION = slice_definition(["intent", "query_length"], [], [1, 3, 6], 30)
FINGERPRINTS = Fingerprints(
    dataset="a1b2c3d4e5f6" + "0" * 52,
    k=3,
    metrics=("ndcg@10", "recall@10"),
    slices=fingerprint_slices(DEFINITION),
    retriever="feedbeef00112233",
)


def make(**changes: Any) -> Baseline:
    """Three queries' baseline of two metrics, stamped at NOW; `changes` replace arguments."""
    arguments: dict[str, Any] = {
        "fingerprints": FINGERPRINTS,
        "retriever": {"type": "http", "url": "http://search/q", "body": {"z": 1, "a": [2, 3]}},
        "slice_definition": DEFINITION,
        "query_ids": ("q1", "q2", "q3"),
        "scores": {
            "ndcg@10": np.array([0.1, 1 / 3, 1.0]),
            "recall@10": np.array([0, 0.5, 1]),
        },
        "top_k": {"q3": ["d9", "d1", "d2", "d4"], "q1": ("d1",), "q2": [], "extra": ["d5"]},
        "tool_version": "0.1.0",
        "repo_dir": None,
        "now": NOW,
    }
    return make_baseline(**(arguments | changes))
