"""Interleaved turns of two sides' queries: their size, which side goes first, the warm-up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

_COIN_STREAM = 7
"""The stream of the turn coins among the generators seeded with gate.seed."""


@dataclass(frozen=True)
class Turns:
    """Both sides run the same queries in the same order, `size` at a time, one side's turn
    then the other's; a seeded coin per turn says which side goes first. The first `warmup`
    queries (in run order) are run and scored on both sides, but their latency is not kept:
    cold caches and connection set-up are not what a change does."""

    size: int
    warmup: int
    seed: int

    def __post_init__(self) -> None:
        if self.size < 1 or self.warmup < 0:
            raise ValueError(f"turns of {self.size} queries, {self.warmup} warm-up: out of range")

    def reference_first(self, turn: int) -> bool:
        """Whether the reference side runs turn `turn` (from 0) first: a fair coin, not a
        fixed alternation, so that under no change the two sides of a turn are exchangeable
        whatever the machine's load does over time."""
        rng = np.random.default_rng([self.seed, _COIN_STREAM, turn])
        return bool(rng.random() < 0.5)

    def of(self, order: Sequence[str]) -> Mapping[str, int]:
        """Query id -> its turn, for queries run in `order`."""
        return {query: position // self.size for position, query in enumerate(order)}

    def warm(self, order: Sequence[str]) -> tuple[str, ...]:
        """The warm-up queries of a run in `order`."""
        return tuple(order[: self.warmup])
