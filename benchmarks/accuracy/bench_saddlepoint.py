"""Benchmark the saddlepoint p-values of the sign-flip test against its Monte Carlo ones.

From `SADDLEPOINT_FROM` (1,000) non-zero differences a gate check takes the saddlepoint
approximation of the sign-flip distribution instead of 10,000 random sign vectors. Three
tables check that choice:

1. agreement: on five shapes of per-query differences (continuous, 60% ties, recall@10's
   lattice of tenths, a skewed one, a drop carried by 10% of the queries), sized so the exact
   p-value is near 0.05, 0.01 and 0.001, the saddlepoint p-value beside the gate's own Monte
   Carlo one (10,000 draws, sequential) and a reference of --reference draws; the ratio to the
   reference and how many of the reference's standard errors it is away;
2. validity: under no change (differences symmetric about 0, the same five magnitudes), how
   often the saddlepoint p-value is at most 0.05, 0.01 and 0.001, with Wilson intervals;
3. cost: CPU seconds of `sign_flip` on a 20,000 x 135 matrix (check's shape in issue 31) with
   and without the saddlepoint.

    python benchmarks/accuracy/bench_saddlepoint.py [--reference 400000] [--trials 20000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.stats import significance
from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM, sign_flip_tails
from retrieval_gate.stats.significance import sign_flip

Shape = Callable[[np.random.Generator, int], np.ndarray]


def _continuous(rng: np.random.Generator, n: int) -> np.ndarray:
    base = rng.beta(2.0, 2.0, n)
    return np.clip(base + rng.normal(0.0, 0.15, n), 0.0, 1.0) - base


def _ties(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.6, 0.0, rng.normal(0.0, 0.2, n))


def _lattice(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice([-0.2, -0.1, 0.0, 0.1, 0.2], n, p=[0.12, 0.2, 0.36, 0.2, 0.12])


def _skewed(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.exponential(0.1, n) * rng.choice([-1.0, 1.0], n)


def _concentrated(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.normal(0.0, 0.1, n)


SHAPES: dict[str, Shape] = {
    "continuous": _continuous,
    "60% ties": _ties,
    "lattice of tenths": _lattice,
    "skewed": _skewed,
    "10% carry it": _concentrated,
}


def _symmetric(d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`d`'s magnitudes under random signs: no change."""
    return np.abs(d) * rng.choice([-1.0, 1.0], d.size)


def _moved(name: str, d: np.ndarray, z: float, rng: np.random.Generator) -> np.ndarray:
    """`d` symmetrised, then moved down until its sum is z sds (of sum*) below 0: its normal
    p-value is then 1 - Phi(z)."""
    d = _symmetric(d, rng)
    if name == "lattice of tenths":  # stay on the lattice: turn rises into drops
        while d.sum() > -z * math.sqrt(float(np.square(d).sum())):
            up = np.flatnonzero(d > 0)
            d[up[rng.integers(up.size)]] *= -1.0
        return d
    rows = (
        rng.choice(d.size, d.size // 10, replace=False)
        if name == "10% carry it"
        else np.flatnonzero(d != 0)
    )
    for _ in range(20):  # the sd grows with the shift: a few rounds settle it
        gap = float(d.sum()) + z * math.sqrt(float(np.square(d).sum()))
        if abs(gap) < 1e-9:
            break
        d[rows] -= gap / rows.size
    return d


def _reference(d: np.ndarray, draws: int, rng: np.random.Generator) -> tuple[float, float]:
    """P(sum* <= S) from `draws` random sign vectors, and its standard error."""
    total = float(d.sum())
    hits = 0
    block = max(1, 2_000_000 // d.size)
    done = 0
    while done < draws:
        size = min(block, draws - done)
        signs = rng.integers(0, 2, (size, d.size), dtype=np.int8).astype(np.float64) * 2 - 1
        hits += int(np.count_nonzero(signs @ d <= total + 1e-9))
        done += size
    p = hits / draws
    return p, math.sqrt(max(p * (1 - p), 1.0 / draws) / draws)


def agreement(reference: int, sizes: list[int]) -> str:
    rows = []
    for n in sizes:
        for name, shape in SHAPES.items():
            for z in (1.645, 2.326, 3.09):
                rng = np.random.default_rng([n, int(z * 1000), len(name)])
                d = _moved(name, shape(rng, n), z, rng)
                saddle = float(sign_flip_tails(d)[0][0])
                previous = significance.SADDLEPOINT_FROM
                significance.SADDLEPOINT_FROM = 10**9  # the gate's own Monte Carlo, as before
                try:
                    gate = float(sign_flip(d, resamples=10_000, rng=rng).drop[0])
                finally:
                    significance.SADDLEPOINT_FROM = previous
                p, se = _reference(d, reference, rng)
                rows.append(
                    [
                        str(n),
                        name,
                        f"{saddle:.5f}",
                        f"{gate:.5f}",
                        f"{p:.5f} ± {se:.5f}",
                        f"{saddle / p:.3f}" if p else "-",
                        f"{(saddle - p) / se:+.1f}",
                    ]
                )
    header = ["n", "shape", "saddlepoint", "MC 10,000", f"MC {reference:,}", "ratio", "z"]
    return table(header, rows, {0, 2, 3, 4, 5, 6})


def validity(trials: int, n: int) -> str:
    rows = []
    for name, shape in SHAPES.items():
        rng = np.random.default_rng([n, len(name), 7])
        magnitudes = shape(rng, n)
        batch = 200
        hits = dict.fromkeys((0.05, 0.01, 0.001), 0)
        for _ in range(trials // batch):
            signs = rng.choice([-1.0, 1.0], (n, batch))
            columns = np.abs(magnitudes)[:, None] * signs
            p = sign_flip_tails(columns)[0]
            for level in hits:
                hits[level] += int(np.count_nonzero(p <= level))
        done = trials // batch * batch
        rows.append([name, *(rate(hits[level], done) for level in hits)])
    header = ["shape (no change)", "P(p ≤ 0.05)", "P(p ≤ 0.01)", "P(p ≤ 0.001)"]
    return table(header, rows, {1, 2, 3})


def cost() -> str:
    rng = np.random.default_rng(31)
    n, checks = 20_000, 135
    base = rng.beta(2.0, 2.0, n)
    diffs = np.asfortranarray(
        np.stack([np.clip(base + rng.normal(-0.005, 0.15, n), 0, 1) - base for _ in range(checks)])
    ).T.copy(order="F")
    rows = []
    for label, threshold in (("Monte Carlo (before)", 10**9), ("saddlepoint", SADDLEPOINT_FROM)):
        previous = significance.SADDLEPOINT_FROM
        significance.SADDLEPOINT_FROM = threshold
        try:
            start = time.process_time()
            wall = time.perf_counter()
            sign_flip(diffs, resamples=10_000, rng=np.random.default_rng(0))
            rows.append(
                [label, f"{time.process_time() - start:.2f}", f"{time.perf_counter() - wall:.2f}"]
            )
        finally:
            significance.SADDLEPOINT_FROM = previous
    return table(["sign_flip, 20,000 queries x 135 checks", "CPU s", "wall s"], rows, {1, 2})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=int, default=400_000)
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 3_000])
    args = parser.parse_args()
    print(f"## Agreement (normal p-value 0.05, 0.01, 0.001; reference {args.reference:,} draws)\n")
    print(agreement(args.reference, args.sizes))
    print(f"\n## Validity under no change ({args.trials:,} trials, n = {SADDLEPOINT_FROM:,})\n")
    print(validity(args.trials, SADDLEPOINT_FROM))
    print("\n## Cost\n")
    print(cost())


if __name__ == "__main__":
    main()
