"""Seeded cases of judgments and two top-k maps, and their scores and verdicts, for the
explain tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.metrics import evaluate
from retrieval_gate.readers import qrels_from_dict, run_from_dict

K = 5
METRICS = [
    "ndcg@5",
    "ndcg(gain=linear)@5",
    "ndcg(gains=0:1;2:5)@5",
    "recall@5",
    "recall(rel=2)@5",
    "precision@5",
    "precision@3",
    "rr@5",
    "rr(rel=2)@5",
    "ap@5",
    "hit_rate@5",
    "dcg@5",
]

Case = tuple[dict[str, dict[str, float]], list[str], dict[str, list[str]], dict[str, list[str]]]


def random_case(seed: int, queries: int = 6, docs: int = 9) -> Case:
    """Seeded graded qrels (-1 pooled-unjudged to 3, some queries with no relevant doc) and
    two top-5 maps sharing docs, some lists short, some docs nobody judged."""
    rng = np.random.default_rng(seed)
    query_ids = [f"q{i}" for i in range(queries)]
    top = int(rng.integers(1, 4))
    judgments = {
        q: {
            f"d{int(d)}": float(rng.integers(-1, top + 1))
            for d in rng.choice(docs, int(rng.integers(1, 6)), replace=False)
        }
        for q in query_ids
    }
    tops = [{q: ranked(rng, docs) for q in query_ids} for _ in range(2)]
    return judgments, query_ids, tops[0], tops[1]


def ranked(rng: np.random.Generator, docs: int) -> list[str]:
    """A top K of distinct docs, sometimes shorter or empty."""
    return [f"d{int(d)}" for d in rng.choice(docs, int(rng.integers(0, K + 1)), replace=False)]


def scored(case: Case, metrics: list[str], labels: Mapping[str, Mapping[str, float]]) -> Any:
    """Each side's per-query values of `metrics` (old top k, then new) judged by `labels`."""
    _, query_ids, old, new = case
    qrels = qrels_from_dict(labels)
    sides = [
        evaluate(run_from_dict({q: top[q] for q in query_ids}), qrels, metrics)
        for top in (old, new)
    ]
    return sides[0].values, sides[1].values


def decider(settings: ComparisonSettings, thresholds: dict[str, Threshold], slices: Any) -> Any:
    """compare() with these settings, as a function of the two sides' values."""

    def decide(base: Mapping[str, FloatArray], cur: Mapping[str, FloatArray]) -> Any:
        return compare(base, cur, slices, thresholds, {}, settings, strict=False)

    return decide


def random_records(seed: int) -> tuple[Any, list[str], dict[str, list[str]], dict[str, list[str]]]:
    """Seeded qrels (grades -1 to 3, some queries without judgments) and two top-10 maps that
    share docs, leave queries out and rank docs the qrels never name."""
    rng = np.random.default_rng(seed)
    query_ids = [f"q{i:03d}" for i in range(40)]
    judgments = {
        q: {f"d{int(d)}": float(rng.integers(-1, 4)) for d in rng.choice(30, 8, replace=False)}
        for q in query_ids
    }
    tops = []
    for _ in range(2):
        tops.append(
            {
                q: [f"d{int(d)}" for d in rng.choice(30, int(rng.integers(1, 11)), replace=False)]
                for q in query_ids
                if rng.random() < 0.85
            }
        )
    return qrels_from_dict(judgments), query_ids, tops[0], tops[1]
