"""Simulate the drift budget over a whole history: false trips without a change, lag with one.

`history drift` compares the newest main record with a fixed reference after every merge.
Look t (merges since the reference) is decided as `compare()` decides it with max_drop = the
budget and alpha = `look_level(gate.alpha, horizon, t)`, the gate's default test (sign-flip
randomization, 10,000 resamples, seed 0); "old" is the rule before issue 29, every look at
alpha. One gated metric, the whole set as its one check. Data, per trial, all seeded:

- walk (the generator before issue 29): reference ~ Beta(2, 2); each merge moves every
  query by its own N(0, 0.12), clipped to [0, 1]: a random walk per query;
- ties: scores on {0, .25, .5, .75, 1} with P (.4, .1, .1, .1, .3); each merge re-draws
  a query's score with probability 0.2 (most per-query deltas are exactly 0);
- skewed: reference ~ Beta(2, 5); each merge moves a query by 0.12 (1 - Exp(1)): mean 0,
  most queries gain a little, a few lose a lot;
- run rho: record = the query's fixed score ~ Beta(2, 2) + 0.1 e_t, the run noise e_t
  stationary N(0, 1) with correlation rho between consecutive records (0.3, 0.9).

A true drop is added to each record from merge 5 on (population mean loss L_t), to every
query alike or, "concentrated", to a fixed 10% of the queries (10 L_t each):

- none: L_t = 0, the false trip: P(any trip within 20 and within the horizon's 50 merges);
- at once: L_t = `--drop` (1.5 x budget by default) from merge 5;
- creeping: L_t grows by drop / 4 a merge from merge 5, then stays at `--drop`.

The lag is the merges from the crossing (the first merge whose true loss passes the budget)
to the trip; its median and 90th percentile are over the trials that tripped, and a trial
that never trips within the horizon is counted as never, not as late. A trip before the
crossing (a drop still below the budget, measured past it with evidence of a drop: the
pull request's rule) is a negative lag, and counted in its own column.
Shares carry Wilson 95% intervals (the Monte Carlo error). Prints Markdown tables.

    python benchmarks/simulations/bench_drift.py  # 200 trials per row: about 15 minutes
    python benchmarks/simulations/bench_drift.py --trials 50 --sizes 40,150 --data walk,ties
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.history.drift import look_level

METRIC = "ndcg@10"
START = 5
"""The merge a true drop arrives at."""
GRID = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
GRID_P = np.array([0.4, 0.1, 0.1, 0.1, 0.3])
Noise = Callable[[np.random.Generator, int, int], list[np.ndarray]]


def walk(rng: np.random.Generator, n: int, merges: int) -> list[np.ndarray]:
    records = [rng.beta(2.0, 2.0, n)]
    for _ in range(merges):
        records.append(np.clip(records[-1] + rng.normal(0.0, 0.12, n), 0.0, 1.0))
    return records


def ties(rng: np.random.Generator, n: int, merges: int) -> list[np.ndarray]:
    records = [rng.choice(GRID, n, p=GRID_P)]
    for _ in range(merges):
        redrawn = rng.random(n) < 0.2
        records.append(np.where(redrawn, rng.choice(GRID, n, p=GRID_P), records[-1]))
    return records


def skewed(rng: np.random.Generator, n: int, merges: int) -> list[np.ndarray]:
    records = [rng.beta(2.0, 5.0, n)]
    for _ in range(merges):
        records.append(records[-1] + 0.12 * (1.0 - rng.exponential(1.0, n)))
    return records


def runs(rho: float) -> Noise:
    def noise(rng: np.random.Generator, n: int, merges: int) -> list[np.ndarray]:
        truth = rng.beta(2.0, 2.0, n)
        e = rng.normal(0.0, 1.0, n)
        records = [truth + 0.1 * e]
        for _ in range(merges):
            e = rho * e + math.sqrt(1.0 - rho * rho) * rng.normal(0.0, 1.0, n)
            records.append(truth + 0.1 * e)
        return records

    return noise


DATA: dict[str, Noise] = {
    "walk": walk,
    "ties": ties,
    "skewed": skewed,
    "run rho 0.3": runs(0.3),
    "run rho 0.9": runs(0.9),
}
SCENARIOS = ("none", "at once", "creeping", "concentrated")


def losses(scenario: str, drop: float, merges: int) -> list[float]:
    """The true mean loss of each record, the reference's (0) first."""
    out = [0.0]
    for merge in range(1, merges + 1):
        if scenario == "none" or merge < START:
            out.append(0.0)
        elif scenario == "creeping":
            out.append(min(drop, drop / 4 * (merge - START + 1)))
        else:
            out.append(drop)
    return out


def history(
    rng: np.random.Generator, data: Noise, n: int, scenario: str, drop: float, merges: int
) -> tuple[list[np.ndarray], list[float]]:
    records = data(rng, n, merges)
    loss = losses(scenario, drop, merges)
    if scenario == "concentrated":
        hit = np.zeros(n)
        hit[rng.choice(n, max(1, n // 10), replace=False)] = n / max(1, n // 10)
    else:
        hit = np.ones(n)
    return [r - hit * lost for r, lost in zip(records, loss, strict=True)], loss


def trips(
    records: Sequence[np.ndarray], budget: float, alpha: float, horizon: int, stop: bool
) -> tuple[int | None, int | None]:
    """The first look each rule trips at (new, old); None: not within the records. With
    `stop`, the looks end at the new rule's trip (the old one, at a higher level with the same
    p-values, has tripped by then)."""
    reference = records[0]
    slices = {"all": np.arange(reference.size, dtype=np.int64)}
    thresholds = {METRIC: Threshold(max_drop=budget)}
    new = old = None
    for look, current in enumerate(records[1:], 1):
        # Neither rule trips unless the mean drop is past the budget: no test needed.
        if float((current - reference).mean()) >= -budget:
            continue
        settings = ComparisonSettings(alpha=look_level(alpha, horizon, look))
        (check,) = compare({METRIC: reference}, {METRIC: current}, slices, thresholds, {}, settings)
        if check.failed and new is None:
            new = look
        if check.verdict in ("regressed", "inconclusive") and (check.p_value or 1.0) <= alpha:
            old = look if old is None else old
        if new is not None and (stop or old is not None):
            break
    return new, old


def quantile(values: Sequence[int], q: float) -> str:
    return f"{np.quantile(values, q, method='inverted_cdf'):.0f}" if values else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40,150,500")
    parser.add_argument("--data", default=",".join(DATA))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--budget", type=float, default=0.03)
    parser.add_argument("--drop", type=float, default=0.045, help="the true drop, 0-1 scale")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--horizon", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = args.data.split(",")
    scenarios = args.scenarios.split(",")
    merges = args.horizon
    began = time.perf_counter()
    print(
        f"budget {args.budget * 100:g} pt, gate.alpha {args.alpha:g}, horizon {merges} merges "
        f"(each look at {look_level(args.alpha, merges, 1):.2g}), true drop "
        f"{args.drop * 100:g} pt from merge {START}, {args.trials} trials per row, "
        f"seed {args.seed}"
    )
    null_rows, lag_rows = [], []
    for d, name in enumerate(names):
        for n in sizes:
            for s, scenario in enumerate(scenarios):
                rng = np.random.default_rng([args.seed, d, n, s])
                lags, never, new_hits, old_hits, old_early = [], 0, 0, 0, 0
                old_lags, old_never = [], 0
                crossing = None
                for _ in range(args.trials):
                    records, loss = history(rng, DATA[name], n, scenario, args.drop, merges)
                    crossing = next((t for t, x in enumerate(loss) if x > args.budget), None)
                    new, old = trips(
                        records, args.budget, args.alpha, args.horizon, scenario != "none"
                    )
                    new_hits += new is not None
                    old_hits += old is not None
                    old_early += old is not None and old <= 20
                    if crossing is not None:
                        if new is None:
                            never += 1
                        else:
                            lags.append(new - crossing)
                        if old is None:
                            old_never += 1
                        else:
                            old_lags.append(old - crossing)
                t = args.trials
                if scenario == "none":
                    null_rows.append(
                        [name, f"{n:,}", rate(old_early, t), rate(old_hits, t), rate(new_hits, t)]
                    )
                else:
                    early = sum(1 for lag in lags if lag < 0)
                    lag_rows.append(
                        [
                            name,
                            f"{n:,}",
                            scenario,
                            str(crossing),
                            quantile(lags, 0.5),
                            quantile(lags, 0.9),
                            rate(never, t),
                            str(early),
                            quantile(old_lags, 0.5),
                            rate(old_never, t),
                        ]
                    )
                print(f"  done: {name}, {n} queries, {scenario}", file=sys.stderr, flush=True)
    if null_rows:
        print()
        print("No true change: P(any false trip); old = every look at alpha, new = look_level")
        print()
        header = ["data", "queries", "old, within 20", "old, within 50", "new, within 50"]
        print(table(header, null_rows, {1, 2, 3, 4}))
    if lag_rows:
        print()
        print(
            "A true drop: merges from the crossing to the trip within the horizon (new rule; "
            "old: every look at alpha)"
        )
        print()
        header = ["data", "queries", "drop", "crossing", "median lag", "90th pct lag",
                  "never tripped", "tripped before crossing", "old: median lag",
                  "old: never tripped"]  # fmt: skip
        print(table(header, lag_rows, {1, 3, 4, 5, 6, 7, 8, 9}))
    print()
    print(f"{time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
