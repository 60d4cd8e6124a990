"""Active labels against a uniform sample: labels saved at equal interval width, coverage.

bench_ppi's world (2,000 queries with pools of 20 graded documents, two systems ranking
them, 40% hard queries) and its three biased judges: *noisy* (one grade up or down on 30%
of pairs), *over-grading* (one grade up on 30% of pairs) and *attribute* (up on half of a
hard query's pairs, down on a fifth of an easy one's, so that the bias moves the delta
itself). The judge also states a confidence per
pair, lower where its grade is wrong but not only there: U(0.4, 0.8) on a wrong grade,
U(0.7, 1.0) on a right one. A query's doubt is the product's `query_doubt`: how much of
its ndcg@10 delta rests on grades the judge is unsure of (checked against the product's
function on one world at start).

Per replication, one world (A/A, or a true ndcg@10 drop of 3 or 5 points over the population),
and for the overall ndcg@10 check, the delta's 95% interval from:

- sample: n queries drawn uniformly (`label-queue --sample n`), PPI++ (`ppi_mean`);
- active: queries drawn independently with the product's probabilities
  (`active_probabilities`, floor 0.2), n on average (`label-queue --active n`), the
  weighted estimate (`weighted_ppi_mean`), at each n of a grid;
- targeted: the n queries the judge doubts most (a `--by judge-unsure` queue), fed to the
  PPI++ rectifier as if they were a uniform sample: what the gate refuses to do.

At equal mean interval width, `active n` is the grid's n (interpolated) whose mean width
equals the sample's at n = 100 and 200: the labels `--active` needs for the interval
`--sample` gives. Coverage is of the true delta (0 in A/A; from 200,000 queries for the
drops), pooled over the three effects for --sample and --active; for the targeted queue it is
given in A/A (where the judge's errors are alike for both systems, so a biased choice of
queries still centres on 0) and at the 5-point drop.

    python benchmarks/simulations/bench_active_labels.py          # 1,000 per effect: ~5 CPU min
    python benchmarks/simulations/bench_active_labels.py --quick  # 100 per effect: ~1 CPU min
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from benchmarks.simulations.bench_ppi import (
    DEPTH,
    JUDGES,
    POOL,
    QUERIES,
    World,
    deltas,
    draw_world,
    tuned_drop,
)
from retrieval_gate.labels.draw import FLOOR, query_doubt
from retrieval_gate.stats.ppi import (
    PpiEstimate,
    active_probabilities,
    ppi_mean,
    weighted_ppi_mean,
)
from retrieval_gate.stats.significance import t_quantile

SAMPLED = (100, 200)
ACTIVE_GRID = tuple(range(40, 221, 20))
DROPS = (0.0, 0.03, 0.05)
METRIC = "ndcg@10"
_WEIGHT = 1.0 / np.log2(np.arange(2, DEPTH + 2))


def confidences(true: np.ndarray, judged: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The judge's confidence per pair: lower where its grade is wrong, noisy everywhere."""
    wrong = judged != true
    return np.where(wrong, rng.uniform(0.4, 0.8, true.shape), rng.uniform(0.7, 1.0, true.shape))


def doubts(world: World, confidence: np.ndarray) -> np.ndarray:
    """`query_doubt` of every query, vectorised: sum over the pool of |w_b - w_a| * doubt."""
    rows = np.arange(world.grades.shape[0])[:, None]
    weights = np.zeros(world.grades.shape)
    np.add.at(weights, (rows, world.top_b), _WEIGHT)
    np.subtract.at(weights, (rows, world.top_a), _WEIGHT)
    return (np.abs(weights) * (1.0 - confidence)).sum(axis=1)


def check_doubts(seed: int) -> None:
    """The vectorised doubt equals the product's `query_doubt` on one small world."""
    rng = np.random.default_rng([seed, 98])
    world = draw_world(rng, 200, 0.5)
    confidence = rng.uniform(0.0, 1.0, world.grades.shape)
    mine = doubts(world, confidence)
    for i in range(200):
        docs = [f"d{j}" for j in range(POOL)]
        theirs = query_doubt(
            [docs[j] for j in world.top_b[i]],
            [docs[j] for j in world.top_a[i]],
            {docs[j]: 1.0 - float(confidence[i, j]) for j in range(POOL)},
            DEPTH,
        )
        if not math.isclose(theirs, float(mine[i]), rel_tol=1e-12, abs_tol=1e-12):
            raise SystemExit("the vectorised doubt differs from labels.draw.query_doubt")


def _interval(found: PpiEstimate) -> tuple[float, float]:
    half = t_quantile(0.975, max(1.0, found.df)) * found.se
    return found.estimate - half, found.estimate + half


class Tally:
    """Per named cell: coverage hits, trials and the sum of widths."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.trials: dict[str, int] = {}
        self.widths: dict[str, float] = {}
        self.labels: dict[str, float] = {}

    def add(self, name: str, found: PpiEstimate, truth: float) -> None:
        low, high = _interval(found)
        self.hits[name] = self.hits.get(name, 0) + int(low <= truth <= high)
        self.trials[name] = self.trials.get(name, 0) + 1
        self.widths[name] = self.widths.get(name, 0.0) + (high - low)
        self.labels[name] = self.labels.get(name, 0.0) + found.n

    def width(self, name: str) -> float:
        return self.widths[name] / self.trials[name]

    def coverage(self, name: str) -> str:
        return rate(self.hits[name], self.trials[name])

    def mean_labels(self, name: str) -> float:
        return self.labels[name] / self.trials[name]


def replicate(
    rng: np.random.Generator, extra: float, truth: float, drop: float, tally: Tally
) -> None:
    """One world, each judge, each draw; the targeted queue's cells per effect (`drop`)."""
    world = draw_world(rng, QUERIES, extra)
    human = deltas(world, world.grades)[METRIC]
    for name, judge in JUDGES.items():
        grades = judge(world.grades, world.hard, rng)
        judged = deltas(world, grades)[METRIC]
        doubt = doubts(world, confidences(world.grades, grades, rng))
        order = rng.permutation(QUERIES)
        unsure = np.argsort(-doubt, kind="stable")
        for n in SAMPLED:
            for label, chosen in (("sample", order[:n]), (f"targeted{drop}", unsure[:n])):
                labelled = np.zeros(QUERIES, dtype=bool)
                labelled[chosen] = True
                found = ppi_mean(human[labelled], judged[labelled], judged[~labelled])
                tally.add(f"{name}|{label}|{n}", found, truth)
        uniform = rng.random(QUERIES)
        for n in ACTIVE_GRID:
            pi, _, _ = active_probabilities(doubt, n, FLOOR)
            drawn = uniform < pi
            found = weighted_ppi_mean(human[drawn], judged[drawn], pi[drawn], judged[~drawn])
            tally.add(f"{name}|active|{n}", found, truth)


def equal_width(tally: Tally, judge: str, width: float) -> tuple[float, int]:
    """The grid's expected active n (interpolated) whose mean width is `width`, and the grid
    point nearest it."""
    widths = [tally.width(f"{judge}|active|{n}") for n in ACTIVE_GRID]
    for (n0, w0), (n1, w1) in zip(
        zip(ACTIVE_GRID, widths, strict=True),
        zip(ACTIVE_GRID[1:], widths[1:], strict=True),
        strict=False,
    ):
        if w0 >= width >= w1:
            found = n0 + (n1 - n0) * (w0 - width) / (w0 - w1)
            return found, min(ACTIVE_GRID, key=lambda n: abs(n - found))
    return math.nan, ACTIVE_GRID[-1] if width < widths[-1] else ACTIVE_GRID[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000, help="per effect")
    parser.add_argument("--quick", action="store_true", help="100 replications per effect")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    replications = 100 if args.quick else args.replications
    started = time.perf_counter()
    check_doubts(args.seed)
    tally = Tally()
    for drop in DROPS:
        extra, truths = tuned_drop(drop, args.seed)
        truth = truths[METRIC, "all"]
        rng = np.random.default_rng([args.seed, 3, round(drop * 1000)])
        for _ in range(replications):
            replicate(rng, extra, truth, drop, tally)
        print(f"drop {drop * 100:.0f} pt: true {METRIC} delta {truth:+.4f}", file=sys.stderr)
    print(
        f"{QUERIES} queries, {replications} replications per effect (A/A, 3- and 5-point "
        f"drops), the overall {METRIC} check; active floor {FLOOR}; [.] = Wilson 95% "
        "interval\n"
    )
    body = []
    broken = []
    for judge in JUDGES:
        for n in SAMPLED:
            sample = f"{judge}|sample|{n}"
            width = tally.width(sample)
            needed, nearest = equal_width(tally, judge, width)
            active = f"{judge}|active|{nearest}"
            body.append(
                [
                    judge,
                    str(n),
                    f"{width * 100:.2f}",
                    f"{needed:.0f}",
                    f"{1 - needed / n:.0%}",
                    tally.coverage(sample),
                    f"{tally.coverage(active)} at {nearest}",
                    tally.coverage(f"{judge}|targeted0.0|{n}"),
                    tally.coverage(f"{judge}|targeted0.05|{n}"),
                ]
            )
            for name in (sample, active):
                if tally.hits[name] / tally.trials[name] < 0.94:
                    broken.append(f"{name}: coverage {tally.coverage(name)}")
            if not needed < n:
                broken.append(f"{judge}, n {n}: --active needs {needed:.0f} labels")
    print(
        table(
            [
                "judge",
                "--sample n",
                "width (pt)",
                "--active n, same width",
                "labels saved",
                "coverage --sample",
                "coverage --active",
                "judge-unsure in the rectifier: coverage A/A",
                "at 5 pt",
            ],
            body,
            right={1, 2, 3, 4},
        )
    )
    print("\nmean interval width (pt) of --active by expected n:")
    for judge in JUDGES:
        cells = ", ".join(
            f"{n}: {tally.width(f'{judge}|active|{n}') * 100:.2f}" for n in ACTIVE_GRID
        )
        print(f"- {judge}: {cells}")
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.quick:
        print("\n--quick: too few replications to test the claims")
        return 0
    for claim in broken:
        print(f"does not hold: {claim}")
    if not broken:
        print("\nclaims hold: coverage >= 0.94 for both draws, --active needs fewer labels")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
