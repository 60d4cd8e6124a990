"""Simulate the drift budget over a whole history: false trips without a change, delay with one.

`history drift` compares the newest main record with a fixed reference after every merge. One
gated metric, the whole set as its one check, a 3-point budget, gate.alpha 0.05, a horizon of
50 merges; both rules trip only when the mean drop since the reference is past the budget:

- before (issue 29's rule): look t tested by `compare()`, the gate's sign-flip test (10,000
  resamples, seed 0), at its share of alpha, alpha / (2 horizon) within the horizon;
- after (the e-detector): the largest e-value of a drop after the reference or a later record
  (`history.drift.drop_evidence`: that record against the newest, and the mean of the
  records up to it against the mean of those after) reaches horizon / alpha.

Data, per trial, all seeded:

- walk: reference ~ Beta(2, 2); each merge moves every query by its own N(0, 0.12), clipped
  to [0, 1]: a random walk per query, the noise accumulates;
- ties: scores on {0, .25, .5, .75, 1} with P (.4, .1, .1, .1, .3); each merge re-draws
  a query's score with probability 0.2 (most per-query deltas are exactly 0);
- skewed: reference ~ Beta(2, 5); each merge moves a query by 0.12 (1 - Exp(1)): mean 0,
  most queries gain a little, a few lose a lot;
- run rho: record = the query's fixed score ~ Beta(2, 2) + 0.1 e_t, the run noise e_t
  stationary N(0, 1) with correlation rho between consecutive records (0.3, 0.9): the noise
  does not accumulate.

A true loss L_t is taken off each record's queries alike (or, "concentrated", off a fixed 10%
of the queries, 10 L_t each), from merge 5 on:

- none: L_t = 0: P(a false trip within 50 merges), both rules, and for the e-detector the
  share tripped within `--long` merges and the mean run length cut there (a lower bound of
  the average run length);
- step: L_t = `--drop` (1.5 x the budget by default) from merge 5;
- creeping: L_t grows by drop / 4 a merge from merge 5, then stays at `--drop`;
- random walk: from merge 5 each merge adds N(drop / 6, drop / 6): a loss that accumulates
  and wanders, 0.75 pt a merge on average.

The delay counts merges from the crossing (the first merge whose true loss passes the budget)
to the trip; its median and 90th percentile are over the trials that tripped within 50 merges;
"within K" is the share of all trials tripped by the crossing + K (`--within`), "never" the
share not tripped within 50 merges, "early" the trials tripped before the crossing (a measured
drop past the budget and evidence of a drop: the pull request's rule). Shares carry Wilson 95%
intervals (the Monte Carlo error). Prints Markdown tables.

    python benchmarks/simulations/bench_drift.py  # 200 trials per row
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
from retrieval_gate.history.drift import drop_evidence
from retrieval_gate.stats.edetector import log_bar

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


SCENARIOS = ("none", "step", "creeping", "random walk", "concentrated")
DEFAULT_SCENARIOS = ("none", "step", "random walk")


def losses(rng: np.random.Generator, scenario: str, drop: float, merges: int) -> list[float]:
    """The true mean loss of each record, the reference's (0) first."""
    out = [0.0]
    for merge in range(1, merges + 1):
        if scenario == "none" or merge < START:
            out.append(0.0)
        elif scenario == "creeping":
            out.append(min(drop, drop / 4 * (merge - START + 1)))
        elif scenario == "random walk":
            out.append(out[-1] + rng.normal(drop / 6, drop / 6))
        else:
            out.append(drop)
    return out


def history(
    rng: np.random.Generator, data: Noise, n: int, scenario: str, drop: float, merges: int
) -> tuple[list[np.ndarray], list[float]]:
    records = data(rng, n, merges)
    loss = losses(rng, scenario, drop, merges)
    if scenario == "concentrated":
        hit = np.zeros(n)
        hit[rng.choice(n, max(1, n // 10), replace=False)] = n / max(1, n // 10)
    else:
        hit = np.ones(n)
    return [r - hit * lost for r, lost in zip(records, loss, strict=True)], loss


def old_level(alpha: float, horizon: int, look: int) -> float:
    """The level issue 29's rule tested look `look` at (`look_level` before issue 45)."""
    look = max(look, 1)
    if look <= horizon:
        return alpha / (2 * horizon)
    return alpha * horizon / (2 * look * (look - 1))


def old_trip(
    records: Sequence[np.ndarray], budget: float, alpha: float, horizon: int, last: int
) -> int | None:
    """The first look up to `last` the rule before trips at; None: none."""
    reference = records[0]
    slices = {"all": np.arange(reference.size, dtype=np.int64)}
    thresholds = {METRIC: Threshold(max_drop=budget)}
    for look in range(1, last + 1):
        current = records[look]
        if float((reference - current).mean()) <= budget:
            continue
        settings = ComparisonSettings(alpha=old_level(alpha, horizon, look))
        (check,) = compare({METRIC: reference}, {METRIC: current}, slices, thresholds, {}, settings)
        if check.failed:
            return look
    return None


def new_trip(
    records: Sequence[np.ndarray], budget: float, alpha: float, horizon: int, last: int
) -> int | None:
    """The first look up to `last` the e-detector trips at; None: none."""
    reference, bar = records[0], log_bar(horizon, alpha)
    stack = np.stack(records[: last + 1])
    for look in range(1, last + 1):
        current = stack[look]
        if float((reference - current).mean()) <= budget:
            continue
        if float(drop_evidence(stack[: look + 1], bar).max()) >= bar:
            return look
    return None


def quantile(values: Sequence[int], q: float) -> str:
    return f"{np.quantile(values, q, method='inverted_cdf'):.0f}" if values else "-"


def delays(
    trips: Sequence[int | None], crossings: Sequence[int | None], within: int
) -> tuple[list[int], int, int, int]:
    """The delays of the trials that tripped, how many tripped by crossing + `within`, never,
    and before the crossing."""
    lags = [t - c for t, c in zip(trips, crossings, strict=True) if t is not None and c is not None]
    caught = sum(1 for lag in lags if lag <= within)
    never = sum(1 for t in trips if t is None)
    early = sum(1 for lag in lags if lag < 0)
    return lags, caught, never, early


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40,150,500")
    parser.add_argument("--data", default="walk,run rho 0.3")
    parser.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS))
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--budget", type=float, default=0.03)
    parser.add_argument("--drop", type=float, default=0.045, help="the true drop, 0-1 scale")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--horizon", type=int, default=50)
    parser.add_argument("--long", type=int, default=200, help="merges of the run-length rows")
    parser.add_argument("--within", type=int, default=5, help="the delay a trip is counted by")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = args.data.split(",")
    scenarios = args.scenarios.split(",")
    horizon, t = args.horizon, args.trials
    began = time.perf_counter()
    print(
        f"budget {args.budget * 100:g} pt, gate.alpha {args.alpha:g}, horizon {horizon} merges "
        f"(before: each look at {old_level(args.alpha, horizon, 1):.2g}; after: e-values to "
        f"{math.exp(log_bar(horizon, args.alpha)):g}), true drop {args.drop * 100:g} pt from "
        f"merge {START}, {t} trials per row, seed {args.seed}"
    )
    null_rows, lag_rows = [], []
    for d, name in enumerate(names):
        for n in sizes:
            for scenario in scenarios:
                s = SCENARIOS.index(scenario)
                rng = np.random.default_rng([args.seed, d, n, s])
                merges = args.long if scenario == "none" else horizon
                old, new, crossings = [], [], []
                for _ in range(t):
                    records, loss = history(rng, DATA[name], n, scenario, args.drop, merges)
                    crossings.append(next((i for i, x in enumerate(loss) if x > args.budget), None))
                    old.append(old_trip(records, args.budget, args.alpha, horizon, horizon))
                    new.append(new_trip(records, args.budget, args.alpha, horizon, merges))
                if scenario == "none":
                    runs = [args.long if trip is None else trip for trip in new]
                    null_rows.append(
                        [
                            name,
                            f"{n:,}",
                            rate(sum(trip is not None for trip in old), t),
                            rate(sum(trip is not None and trip <= horizon for trip in new), t),
                            rate(sum(trip is not None for trip in new), t),
                            f"{np.mean(runs):.0f}",
                        ]
                    )
                else:
                    within = [trip if trip is None or trip <= horizon else None for trip in new]
                    row = [name, f"{n:,}", scenario, quantile([c for c in crossings if c], 0.5)]
                    for trips in (old, within):
                        lags, caught, never, early = delays(trips, crossings, args.within)
                        row += [
                            f"{quantile(lags, 0.5)}, {quantile(lags, 0.9)}",
                            rate(caught, t),
                            rate(never, t),
                            str(early),
                        ]
                    lag_rows.append(row)
                print(f"  done: {name}, {n} queries, {scenario}", file=sys.stderr, flush=True)
    if null_rows:
        print()
        print(
            f"No change: P(a false trip within {horizon} merges), before and after; after, "
            f"within {args.long} merges and the mean run length cut at {args.long}"
        )
        print()
        header = ["data", "queries", f"before, within {horizon}", f"after, within {horizon}",
                  f"after, within {args.long}", "after: run length >="]  # fmt: skip
        print(table(header, null_rows, {1, 2, 3, 4, 5}))
    if lag_rows:
        print()
        print(
            f"A true loss: merges from the crossing to the trip (median, 90th pct), the share "
            f"tripped within {args.within} merges of the crossing, never within {horizon} merges, "
            "and the trials tripped before the crossing"
        )
        print()
        header = ["data", "queries", "loss", "crossing",
                  "before: delay", f"before: within {args.within}", "before: never",
                  "before: early", "after: delay", f"after: within {args.within}",
                  "after: never", "after: early"]  # fmt: skip
        print(table(header, lag_rows, set(range(1, 12)) - {2}))
    print()
    print(f"{time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
