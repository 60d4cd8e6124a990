"""bench_gate's synthetic retriever: seeded per-query scores of four correlated metrics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.gate.checks.compare import Threshold

METRICS = ("ndcg@10", "recall@10", "rr@10", "ap@10")
THRESHOLDS = {
    "ndcg@10": Threshold(max_drop=0.02),
    "recall@10": Threshold(max_drop=0.05),
    "rr@10": Threshold(max_drop=0.03, relative=True),
    "ap@10": Threshold(),
}
TIMING_METRICS = (*METRICS, "precision@10")
GATED = "ndcg@10"
"""The metric whose true drop the rows name; the latent shift is calibrated on it."""
MIN_SIZE = 30
SLICE = "segment=enterprise"
SLICE_SIZE = 60
"""The slice of the confined drops: 60 queries at every size (60% of a set under 100)."""

# (label, share, offset of the latent quality): intent and query length make slices that
# differ in difficulty; segment and source are independent of everything.
INTENT = (("lookup", 0.60, 0.3), ("howto", 0.28, -0.2), ("billing", 0.12, -0.6))
LENGTH = (("1-2", 0.35, 0.2), ("3-5", 0.45, 0.0), ("6+", 0.20, -0.4))
OTHER_SEGMENTS = (("pro", 0.40), ("free", 0.60))
SOURCE = (("web", 0.50), ("app", 0.30), ("api", 0.20))
SIM_GROUPS = (("intent",), ("segment",), ("length",))

QUALITY_SD = 1.0
"""sd of the query's latent quality, shared by baseline and current and by the 4 metrics."""
RUN_SD = 0.88
"""sd of a run's own latent noise (baseline and current draw it independently)."""
METRIC_SD = 0.3
"""sd of each metric's own noise on top: the metrics correlate about 0.9, not 1."""
TIE_SHARE = 0.25
"""Queries whose ranking did not change: every current score equals the baseline exactly."""


def _counts(n: int, shares: Sequence[float]) -> list[int]:
    """Exact counts for `shares` of `n` (largest remainder): slice sizes are the same in
    every trial of a size, so every check's level is too."""
    raw = [n * s for s in shares]
    counts = [math.floor(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def _labels(n: int, shares: Sequence[float], rng: np.random.Generator) -> IntArray:
    counts = _counts(n, shares)
    return rng.permutation(np.repeat(np.arange(len(counts), dtype=np.int64), counts))


def slice_size(n: int) -> int:
    return min(SLICE_SIZE, round(0.6 * n))


def attributes(n: int, rng: np.random.Generator) -> dict[str, IntArray]:
    """Each query's intent, segment (0 = enterprise), length bucket and source, by exact
    counts in random order."""
    enterprise = slice_size(n)
    rest = _counts(n - enterprise, [share for _, share in OTHER_SEGMENTS])
    segment = rng.permutation(np.repeat(np.arange(3, dtype=np.int64), [enterprise, *rest]))
    return {
        "intent": _labels(n, [share for _, share, _ in INTENT], rng),
        "segment": segment,
        "length": _labels(n, [share for _, share, _ in LENGTH], rng),
        "source": _labels(n, [share for _, share in SOURCE], rng),
    }


def _names(field: str) -> list[str]:
    table: Mapping[str, Sequence[tuple[Any, ...]]] = {
        "intent": INTENT,
        "segment": (("enterprise",), *OTHER_SEGMENTS),
        "length": LENGTH,
        "source": SOURCE,
    }
    return [row[0] for row in table[field]]


def slices_of(
    attrs: Mapping[str, IntArray], groups: Sequence[tuple[str, ...]]
) -> dict[str, IntArray]:
    n = next(iter(attrs.values())).size
    out: dict[str, IntArray] = {"all": np.arange(n, dtype=np.int64)}
    for group in groups:
        codes = np.zeros(n, dtype=np.int64)
        sizes = [len(_names(field)) for field in group]
        for field, size in zip(group, sizes, strict=True):
            codes = codes * size + attrs[field]
        for flat in range(math.prod(sizes)):
            parts, rest = [], flat
            for field, size in reversed(list(zip(group, sizes, strict=True))):
                parts.append(f"{field}={_names(field)[rest % size]}")
                rest //= size
            out["&".join(reversed(parts))] = np.flatnonzero(codes == flat).astype(np.int64)
    return out


class Noise(NamedTuple):
    """Every random draw of one set of queries, drawn before any change is applied: rows that
    differ only in the change see the same queries (common random numbers)."""

    quality: FloatArray
    base_run: FloatArray
    current_run: FloatArray
    base_metric: FloatArray
    """Queries x metrics."""
    current_metric: FloatArray
    tie: np.ndarray[Any, np.dtype[np.bool_]]
    relevant: FloatArray
    """Relevant documents of the query (1-4): recall@10 is a multiple of 1 / relevant."""


def draw_noise(attrs: Mapping[str, IntArray], rng: np.random.Generator) -> Noise:
    n = attrs["intent"].size
    offset = np.asarray([o for _, _, o in INTENT])[attrs["intent"]]
    offset = offset + np.asarray([o for _, _, o in LENGTH])[attrs["length"]]
    k = len(TIMING_METRICS)
    return Noise(
        quality=offset + rng.normal(0.0, QUALITY_SD, n),
        base_run=rng.normal(0.0, RUN_SD, n),
        current_run=rng.normal(0.0, RUN_SD, n),
        base_metric=rng.normal(0.0, METRIC_SD, (n, k)),
        current_metric=rng.normal(0.0, METRIC_SD, (n, k)),
        tie=rng.random(n) < TIE_SHARE,
        relevant=rng.integers(1, 5, n).astype(np.float64),
    )


def score(metric: str, latent: FloatArray, relevant: FloatArray) -> FloatArray:
    """A metric's per-query score from its latent quality: clipping makes point masses at
    0 and 1; recall@10, rr@10 and precision@10 take their few possible values only."""
    if metric == "ndcg@10":
        return np.clip(0.5 + 0.285 * latent, 0.0, 1.0)
    if metric == "recall@10":
        return np.round(np.clip(0.6 + 0.3 * latent, 0.0, 1.0) * relevant) / relevant
    if metric == "rr@10":
        found = np.clip(0.7 + 0.4 * latent, 0.0, 1.0)
        rank = np.ceil(1.0 / np.maximum(found, 0.1))
        return np.where(found < 0.1, 0.0, 1.0 / rank)
    if metric == "ap@10":
        return np.clip(0.4 + 0.28 * latent, 0.0, 1.0)
    if metric == "precision@10":
        return np.round(np.clip(0.35 + 0.25 * latent, 0.0, 1.0) * 10.0) / 10.0
    raise ValueError(metric)
