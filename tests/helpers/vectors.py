"""Vectors for store tests: an embedding that reads a vector written as the text itself, and
seeded unit vectors to fill a store with."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

WIDTH = 8
"""The width of a text that is not numbers (the embedder's dimension probe)."""


def literal(texts: Sequence[str]) -> list[list[float]]:
    """Each text's vector: the text is its numbers, space-separated ("0.6 0.8 0"); other
    text is a unit vector of WIDTH."""
    return [_numbers(text) for text in texts]


def _numbers(text: str) -> list[float]:
    try:
        return [float(part) for part in text.split()]
    except ValueError:
        return [1.0] + [0.0] * (WIDTH - 1)


def unit_rows(count: int, width: int, seed: int) -> np.ndarray:
    """`count` seeded random unit vectors of `width` (float32)."""
    rows = np.random.default_rng(seed).normal(size=(count, width)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def as_text(vector: np.ndarray) -> str:
    """The text `literal` reads back as `vector`."""
    return " ".join(repr(float(x)) for x in vector)


def cosine_top(rows: np.ndarray, query: np.ndarray, k: int, allowed: Sequence[int]) -> list[int]:
    """Positions in `allowed` of the `k` rows nearest `query` by cosine, nearest first."""
    chosen = np.asarray(allowed)
    sims = rows[chosen] @ query / (np.linalg.norm(rows[chosen], axis=1) * np.linalg.norm(query))
    return [int(chosen[i]) for i in np.argsort(-sims, kind="stable")[:k]]
