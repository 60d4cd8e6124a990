"""How much two rankings of one query agree, with no labels: overlap@k, lost@k and RBO."""

from __future__ import annotations

from collections.abc import Sequence


def overlap_at_k(reference: Sequence[str], current: Sequence[str], k: int) -> float:
    """|reference top k ∩ current top k| / k: 1 when both rank the same k documents in any
    order (a list shorter than k cannot reach 1)."""
    _check_depth(k)
    return len(set(reference[:k]) & set(current[:k])) / k


def lost_at_k(reference: Sequence[str], current: Sequence[str], k: int) -> int:
    """How many of the reference's top k documents are not in the current top k."""
    _check_depth(k)
    kept = set(current[:k])
    return sum(1 for doc in dict.fromkeys(reference[:k]) if doc not in kept)


def recall_against(exact: Sequence[str], approximate: Sequence[str], k: int) -> float:
    """The share of the exact search's top k that the approximate search's top k holds (1 when
    the exact search found nothing: nothing was there to miss)."""
    _check_depth(k)
    truth = set(exact[:k])
    return len(truth & set(approximate[:k])) / len(truth) if truth else 1.0


def rbo_ext(first: Sequence[str], second: Sequence[str], p: float, k: int | None = None) -> float:
    """Rank-biased overlap, extrapolated (Webber, Moffat and Zobel 2010, equation 32): the
    agreement of two rankings read to depth `k` (whole when None), the deeper ranks weighted
    by the persistence `p` (at 0.9 the top 10 carry 86% of the weight), assuming the
    agreement seen at the end of the shorter list goes on. 1 for identical rankings, 0 for
    disjoint ones, 1 when both are empty. Duplicate ids count once, at their first rank."""
    if not 0 < p < 1:
        raise ValueError(f"rbo: p must be within (0, 1), got {p}")
    if k is not None:
        _check_depth(k)
    a = list(dict.fromkeys(first[:k] if k is not None else first))
    b = list(dict.fromkeys(second[:k] if k is not None else second))
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    s, depth = len(short), len(long)
    if s == 0:
        return 1.0 if depth == 0 else 0.0
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    overlap = 0
    overlaps = [0] * (depth + 1)  # overlaps[d]: |short[:d] ∩ long[:d]|
    for d in range(1, depth + 1):
        item = long[d - 1]
        if d <= s:
            extra = short[d - 1]
            if extra == item:
                overlap += 1
            else:
                overlap += (extra in seen_long) + (item in seen_short)
            seen_short.add(extra)
        elif item in seen_short:
            overlap += 1
        seen_long.add(item)
        overlaps[d] = overlap
    x_s, x_l = overlaps[s], overlaps[depth]
    total = sum(overlaps[d] / d * p**d for d in range(1, depth + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, depth + 1))
    return (1 - p) / p * total + ((x_l - x_s) / depth + x_s / s) * p**depth


def _check_depth(k: int) -> None:
    if k < 1:
        raise ValueError(f"a depth k must be 1 or more, got {k}")
