"""The calibration card's figures in the gate's units, against what each one claims.

The card (`stats/judge_units.py`, `gate/modes/assisted_units.py`) states, per check, on its
human-judged queries:

- the Bland-Altman bias and 95% limits of the per-query differences judge-scored minus
  people-scored (the current run's metric): the limits claim that 95% of the queries' own
  differences fall inside them. Measured: the share of the other queries of the same world
  (fresh queries, not used to draw the limits) whose difference falls inside.
- the sign agreement: of the queries whose people-scored delta reaches max_drop (2 points
  here), how many have a judge-scored delta of the same sign. It stands for that share over
  every query; measured: the card's share against the share over all the world's queries.
- the worth: human-judged queries the estimate is worth, var(people's deltas) / se^2. It
  claims that a uniform sample of that many human-judged queries gives the same standard
  error. Measured: across replications, the spread of the prediction-powered delta around
  the world's true delta, against the spread of people's mean delta over a uniform sample of
  `worth` queries of the same world.

Worlds are `bench_ppi.py`'s (2,000 queries, pools of 20 graded 0-3), the candidate 1.5 times
noisier in its ranking on hard queries (a drop of about 2-3 points of ndcg@10), judged by
`bench_ppi`'s three judges (noisy, over-grading, attribute) with n = 50, 100 or 200 random
human-judged queries; the metric is ndcg@10 over all queries.

    python benchmarks/simulations/bench_judge_card.py           # 2,000 replications: 2 min
    python benchmarks/simulations/bench_judge_card.py --quick   # 50 replications
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.simulations.bench_ppi import JUDGES, QUERIES, draw_world, scores
from retrieval_gate.stats.judge_units import bland_altman, effective_queries, sign_agreement
from retrieval_gate.stats.ppi import ppi_mean

HUMAN_COUNTS = (50, 100, 200)
EXTRA = 1.5
"""The candidate's extra ranking noise (bench_ppi's `extra`): a drop of a few points."""
MAX_DROP = 0.02
METRIC = "ndcg@10"


class Cell:
    """What the replications of one (judge, n) found."""

    def __init__(self) -> None:
        self.inside: list[float] = []
        self.card_share: list[float] = []
        self.world_share: list[float] = []
        self.ppi_error: list[float] = []
        self.uniform_error: list[float] = []
        self.worth: list[float] = []
        self.capped = 0


def replicate(rng: np.random.Generator, cells: dict[tuple[str, int], Cell]) -> None:
    world = draw_world(rng, QUERIES, EXTRA)
    human_a, human_b = (
        scores(world.grades, world.top_a)[METRIC],
        scores(world.grades, world.top_b)[METRIC],
    )
    people = human_b - human_a
    truth = float(people.mean())
    order = rng.permutation(QUERIES)
    for name, judge in JUDGES.items():
        grades = judge(world.grades, world.hard, rng)
        judge_a, judge_b = scores(grades, world.top_a)[METRIC], scores(grades, world.top_b)[METRIC]
        machine = judge_b - judge_a
        everyone = sign_agreement(people, machine, MAX_DROP)
        for n in HUMAN_COUNTS:
            cell = cells[name, n]
            ours, theirs = order[:n], order[n:]
            _, low, high = bland_altman(judge_b[ours], human_b[ours])
            fresh = judge_b[theirs] - human_b[theirs]
            cell.inside.append(float(((fresh >= low) & (fresh <= high)).mean()))
            decisive, agree = sign_agreement(people[ours], machine[ours], MAX_DROP)
            if decisive and everyone[0]:
                cell.card_share.append(agree / decisive)
                cell.world_share.append(everyone[1] / everyone[0])
            estimate = ppi_mean(people[ours], machine[ours], machine[theirs])
            worth = effective_queries(people[ours], estimate.se, QUERIES)
            if worth is None:
                continue
            cell.capped += worth >= QUERIES
            cell.worth.append(worth)
            cell.ppi_error.append(estimate.estimate - truth)
            uniform = rng.choice(QUERIES, size=max(2, round(worth)), replace=False)
            cell.uniform_error.append(float(people[uniform].mean()) - truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="50 replications")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    replications = 50 if args.quick else args.replications
    started = time.perf_counter()
    cells = {(name, n): Cell() for name in JUDGES for n in HUMAN_COUNTS}
    rng = np.random.default_rng([args.seed, 45])
    for _ in range(replications):
        replicate(rng, cells)
    print(
        f"{QUERIES} queries, {replications} replications, {METRIC}, max_drop {MAX_DROP:g}; "
        "inside limits: mean and 5th percentile over replications of the share of fresh "
        "queries inside the card's 95% limits\n"
    )
    print(
        "| judge | n human | inside limits (mean) | inside limits (p5) | same sign: card "
        "| same sign: all queries | mean worth | sd PPI delta | sd uniform sample of worth | "
        "ratio |"
    )
    print("|" + "---|" * 10)
    for (name, n), cell in cells.items():
        ppi_sd = float(np.sqrt(np.mean(np.square(cell.ppi_error))))
        uniform_sd = float(np.sqrt(np.mean(np.square(cell.uniform_error))))
        print(
            f"| {name} | {n} | {np.mean(cell.inside):.3f} | "
            f"{np.percentile(cell.inside, 5):.3f} | {np.mean(cell.card_share):.3f} | "
            f"{np.mean(cell.world_share):.3f} | {np.mean(cell.worth):.0f}"
            f"{f' ({cell.capped} capped)' if cell.capped else ''} | {ppi_sd:.4f} | "
            f"{uniform_sd:.4f} | {ppi_sd / uniform_sd:.2f} |"
        )
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
