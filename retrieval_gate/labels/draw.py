"""Which queries a label queue lists: a uniform or an active draw of whole queries, each
row stating its probability, or a targeted queue (probability unknown)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence

import numpy as np

from retrieval_gate.datasets.draws import DrawKind
from retrieval_gate.labels.queue import QueueItem
from retrieval_gate.stats.ppi import active_probabilities

FLOOR = 0.2
"""An active draw's floor: no candidate's weight is below 0.2 of the uniform one, so no
query's probability is tiny and no weight 1/p huge (Zrnic and Candes mix with the uniform
rule for the same reason)."""
UNSURE = 0.5
"""The judge's doubt of a pair it graded without a confidence (log-probabilities off)."""


def query_doubt(
    current: Sequence[str],
    baseline: Sequence[str] | None,
    doubts: Mapping[str, float],
    k: int,
) -> float:
    """How much of a query's metric difference rests on grades the judge is unsure of:
    sum over the documents of either top k of |w_current(d) - w_baseline(d)| * doubt(d),
    w(rank) = 1 / log2(rank + 1) (a document's weight in DCG) and 0 outside the top k.

    `doubts`: per document, 1 - the judge's confidence of its grade, UNSURE without one;
    a document the judge has not graded counts 1. Without a baseline every w_baseline is 0.
    A query both runs rank alike has doubt 0: its delta is 0 whatever the grades."""
    weights: dict[str, float] = {}
    for sign, ranked in ((1.0, current), (-1.0, baseline or ())):
        for rank, doc in enumerate(list(dict.fromkeys(ranked))[:k], 1):
            weights[doc] = weights.get(doc, 0.0) + sign / math.log2(rank + 1)
    return float(sum(abs(w) * doubts.get(doc, 1.0) for doc, w in sorted(weights.items())))


def round_id(kind: DrawKind, seed: int, size: int, candidates: Sequence[str]) -> str:
    """A draw's id: the same draw (kind, seed, size, candidates) has the same id."""
    text = json.dumps([kind, seed, size, sorted(candidates)], ensure_ascii=False)
    return f"{kind}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def uniform_draw(
    items: Sequence[QueueItem], candidates: Sequence[str], size: int, seed: int
) -> list[QueueItem]:
    """The items of `size` of `candidates` drawn uniformly with `seed`, each row recording
    its probability size / len(candidates)."""
    ordered = sorted(candidates)
    taken = min(size, len(ordered))
    if not taken:
        return []
    chosen = set(random.Random(seed).sample(ordered, taken))
    rate = taken / len(ordered)
    name = round_id("sample", seed, size, ordered)
    return [
        dataclasses.replace(item, draw="sample", round=name, rate=rate, weight=1.0, p=rate)
        for item in items
        if item.query_id in chosen
    ]


def active_draw(
    items: Sequence[QueueItem],
    doubt: Mapping[str, float],
    size: int,
    seed: int,
    floor: float = FLOOR,
) -> list[QueueItem]:
    """The items of the candidates (`doubt`'s queries) drawn independently, each with
    probability min(1, rate * weight) rising with its doubt (`active_probabilities`):
    `size` of them on average. Seeded; each row records its rate, weight and probability."""
    ordered = sorted(doubt)
    if not ordered:
        return []
    probabilities, rate, weights = active_probabilities(
        np.array([doubt[q] for q in ordered], dtype=np.float64), size, floor
    )
    draws = np.random.default_rng(seed).random(len(ordered))
    name = round_id("active", seed, size, ordered)
    chosen = {
        q: (float(w), float(p))
        for q, p, w, u in zip(ordered, probabilities, weights, draws, strict=True)
        if u < p
    }
    return [
        dataclasses.replace(
            item,
            draw="active",
            round=name,
            rate=rate,
            weight=chosen[item.query_id][0],
            p=chosen[item.query_id][1],
        )
        for item in items
        if item.query_id in chosen
    ]


def targeted(items: Sequence[QueueItem], order: str) -> list[QueueItem]:
    """`items` marked as a targeted draw (chosen by `order`: probability unknown)."""
    return [dataclasses.replace(item, draw="targeted", round=order) for item in items]
