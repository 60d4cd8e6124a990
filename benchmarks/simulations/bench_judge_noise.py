"""A/A runs under a judge whose answers differ on a re-ask: does the gate still hold alpha?

A judge sampled at temperature above 0 answers a pair differently from one call to the next.
The judgment layer keeps one grade per (query, document) pair, and both sides of a check
score a shared pair with that one grade; the question is whether the draw's noise, which no
term of the estimate names, makes an A/A run fail more often than alpha.

`bench_ppi.py`'s worlds (2,000 queries, pools of 20 graded 0-3, two systems ranking by grade
plus noise, 10 checks: ndcg@10 and recall@10, overall and on four slices, one family under
weighted Holm) with the candidate as noisy as the reference (A/A, true delta 0):

- `equivalent`: the two systems draw their own ranking noise, so their top 10 differ;
- `identical`: the candidate ranks exactly as the reference (the same top 10).

The judge grades every pair from the truth, then each call moves the grade one level up or
down (at random, clipped to 0-3) with probability `noise` (0, 0.3, 0.6): a fresh draw per
call. Two ways of keeping the draws:

- `shared` (what the layer does): one draw per pair, both sides score a shared pair with it;
- `per side` (a contrast): each side's top 10 is graded by calls of its own, so a pair both
  sides retrieve carries two draws, as if each record were judged apart.

The check's delta is the gate's own prediction-powered estimate (`stats.ppi.ppi_mean` as
`gate/modes/assisted._estimates` calls it: people's per-query deltas on n = 100 or 200
random queries, rectifying the judge-scored deltas of the rest), and the family's decision is
`family_levels` and `adjust_p_values` as in the gate, max_drop 0 (the strictest rule). Each
row prints the family-wise false alarm, the coverage of the overall ndcg@10 delta (0) by the
95% interval, the mean lambda, and the re-ask spread: the share of 200 pairs whose grade
differs between two calls (what `calibrate --probes` reports of a real judge).

    python benchmarks/simulations/bench_judge_noise.py            # 1,000 replications: 3-4 min
    python benchmarks/simulations/bench_judge_noise.py --quick    # 100 replications: 20 s
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.simulations.bench_ppi import (
    ALPHA,
    METRICS,
    QUERIES,
    SLICES,
    Tally,
    World,
    _interval,
    draw_world,
    scores,
    slice_masks,
)
from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.gate.checks.family import family_levels
from retrieval_gate.stats.ppi import PpiEstimate, ppi_mean
from retrieval_gate.stats.significance import adjust_p_values

NOISES = (0.0, 0.3, 0.6)
HUMAN_COUNTS = (100, 200)
WORLDS = ("equivalent", "identical")
KEEPING = ("shared", "per side")
REASKED = 200
"""Pairs graded twice for the re-ask spread."""


def drawn(grades: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """One call per pair: the true grade moved a level up or down with probability `noise`."""
    step = np.where(rng.random(grades.shape) < 0.5, -1, 1) * (rng.random(grades.shape) < noise)
    return np.clip(grades + step, 0, 3)


def judged_deltas(
    world: World, noise: float, keeping: str, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Per-query candidate - reference of each metric under the judge's draws."""
    first = drawn(world.grades, noise, rng)
    second = first if keeping == "shared" else drawn(world.grades, noise, rng)
    # The ideal ranking (ndcg's denominator) uses each side's own grades of the pool, as the
    # gate scores each record with the labels it has.
    before, after = scores(first, world.top_a), scores(second, world.top_b)
    return {m: after[m] - before[m] for m in METRICS}


def family_rejects(found: list[PpiEstimate], settings: ComparisonSettings) -> bool:
    checks = [(m, s) for m in METRICS for s in SLICES]
    sizes = [(name, int(e.n)) for (_, name), e in zip(checks, found, strict=True)]
    levels, _ = family_levels(sizes, settings)
    family = sorted(levels)
    adjusted = adjust_p_values(
        [found[i].p_drop for i in family], "holm", [levels[i] for i in family]
    )
    return any(p <= ALPHA for p in adjusted)


def replicate(rng: np.random.Generator, tally: Tally, settings: ComparisonSettings) -> None:
    """One world of each kind, judged at every noise and keeping, gated at every n."""
    base = draw_world(rng, QUERIES, 0.0)
    order = rng.permutation(QUERIES)
    for kind in WORLDS:
        world = (
            base
            if kind == "equivalent"
            else World(base.hard, base.segment, base.grades, base.top_a, base.top_a)
        )
        human = {m: scores(world.grades, world.top_b)[m] - scores(world.grades, world.top_a)[m]
                 for m in METRICS}  # fmt: skip
        masks = slice_masks(world)
        for noise in NOISES:
            pairs = world.grades.reshape(-1)[rng.choice(world.grades.size, REASKED)]
            differ = drawn(pairs, noise, rng) != drawn(pairs, noise, rng)
            tally.add(f"{kind}|{noise}|spread", float(differ.mean()))
            for keeping in KEEPING:
                judged = judged_deltas(world, noise, keeping, rng)
                for n in HUMAN_COUNTS:
                    labelled = np.zeros(QUERIES, dtype=bool)
                    labelled[order[:n]] = True
                    found = []
                    for metric in METRICS:
                        for name in SLICES:
                            ours, theirs = labelled & masks[name], ~labelled & masks[name]
                            found.append(
                                ppi_mean(
                                    human[metric][ours],
                                    judged[metric][ours],
                                    judged[metric][theirs],
                                )
                            )
                    cell = f"{kind}|{noise}|{keeping}|{n}"
                    tally.count(f"{cell}|false_alarm", family_rejects(found, settings))
                    if found[0].se > 0:
                        low, high = _interval(found[0])
                        tally.count(f"{cell}|cover", low <= 0.0 <= high)
                    else:  # identical systems, a shared grade: every delta is exactly 0
                        tally.count(f"{cell}|cover", found[0].estimate == 0.0)
                    tally.add(f"{cell}|lam", found[0].lam)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="100 replications")
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    replications = 100 if args.quick else args.replications
    started = time.perf_counter()
    settings = ComparisonSettings(alpha=ALPHA, test="t", overall_share=0.5)
    tally = Tally()
    rng = np.random.default_rng([args.seed, 44])
    for _ in range(replications):
        replicate(rng, tally, settings)
    print(
        f"{QUERIES} queries, {replications} A/A replications, alpha {ALPHA}, "
        f"{len(METRICS) * len(SLICES)} checks in one family; [.] = Wilson 95% interval\n"
    )
    print(
        "| systems | judge noise | re-ask spread | grades kept | n human | false alarm "
        "(family) | coverage ndcg@10 | mean lambda |"
    )
    print("|" + "---|" * 8)
    broken = []
    for kind in WORLDS:
        for noise in NOISES:
            spread = tally.mean(f"{kind}|{noise}|spread")
            for keeping in KEEPING:
                for n in HUMAN_COUNTS:
                    cell = f"{kind}|{noise}|{keeping}|{n}"
                    print(
                        f"| {kind} | {noise:.1f} | {spread:.3f} | {keeping} | {n} | "
                        f"{tally.rate(f'{cell}|false_alarm')} | {tally.rate(f'{cell}|cover')} | "
                        f"{tally.mean(f'{cell}|lam'):.2f} |"
                    )
                    key = f"{cell}|false_alarm"
                    if tally.hits[key] / tally.trials[key] > ALPHA:
                        broken.append(f"{cell}: false alarm {tally.rate(key)}")
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.quick:
        print("\n--quick: too few replications to test the claim")
        return 0
    for claim in broken:
        print(f"does not hold: {claim}")
    if not broken:
        print("\nclaim holds: A/A family-wise false alarm <= alpha at every judge noise")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
