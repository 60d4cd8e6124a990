"""Seeded vectors for vector-store tests: an embedding function whose answers are known."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

DIMENSION = 16


def vector_of(text: str, dimension: int = DIMENSION) -> np.ndarray:
    """A unit vector drawn from a generator seeded by the text's sha256: the same text, the
    same vector, in every process."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def embed(texts: Sequence[str]) -> np.ndarray:
    """`{python: "tests.helpers.seeded_vectors:embed"}`: one seeded vector per text."""
    return np.stack([vector_of(text) for text in texts])


def embed_wide(texts: Sequence[str]) -> np.ndarray:
    """The same, one dimension wider: a model that does not match the table."""
    return np.stack([vector_of(text, DIMENSION + 1) for text in texts])
