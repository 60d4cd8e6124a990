"""What the gate prints about a mean latency or cost check, against what its rule does.

Every gated check prints `fail_chances`: P(it fails) at true changes of 0, 0.5, 1, 1.5 and 2
times its threshold, from the spread of the change's per-query differences. bench_rules.py
checks them for metrics on [0, 1]; this script checks them for the lower-is-better columns
in their own units, whose differences are skewed: `latency_mean` (`max_increase: 10%`) and
`cost_mean` (`max_increase: 20%`).

The data: N queries, each with a base latency ~ lognormal(log 100 ms, 0.6) measured on both
sides with lognormal(0, 0.25) noise (the interleaved case: no run-wide factor), the current
side slowed by a true factor so its mean rises by m x the threshold; cost per query ~
tokens 200 + Poisson(800 x lognormal(0, 0.5)) on both sides, the current side's times the
same factor. For each m the table gives the simulated P(fail) with its Wilson interval and the
mean printed chance at that m over trials of m = 0 (the chances a reviewer sees before a
change lands, from the spread of an unchanged run).

    python benchmarks/simulations/bench_operational_power.py [--trials 400] [--queries 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.stats.detectability import OPERATING

COLUMNS = {
    "latency_mean": (0.10, "ms"),
    "cost_mean": (0.20, "cost"),
}


def _sides(
    column: str, rng: np.random.Generator, n: int, factor: float
) -> tuple[np.ndarray, np.ndarray]:
    if column == "latency_mean":
        base = rng.lognormal(np.log(100.0), 0.6, n)
        return (
            base * rng.lognormal(0.0, 0.25, n),
            base * factor * rng.lognormal(0.0, 0.25, n),
        )
    scale = rng.lognormal(0.0, 0.5, n)
    return (
        200.0 + rng.poisson(800.0 * scale).astype(float),
        (200.0 + rng.poisson(800.0 * scale).astype(float)) * factor,
    )


def _check(base: np.ndarray, cur: np.ndarray, column: str, seed: int) -> tuple[bool, tuple]:
    share, unit = COLUMNS[column]
    found = compare(
        {column: base},
        {column: cur},
        {"all": np.arange(base.size)},
        {column: Threshold(max_drop=share, relative=True, direction="lower", unit=unit)},
        {},
        ComparisonSettings(seed=seed),
    )[0]
    return found.failed, found.fail_chances or ()


def simulate(trials: int, n: int) -> list[list[str]]:
    rows = []
    for column, (share, _) in COLUMNS.items():
        printed = np.zeros(len(OPERATING))
        counted = 0
        fails = dict.fromkeys(OPERATING, 0)
        for multiple in OPERATING:
            for trial in range(trials):
                rng = np.random.default_rng([n, trial, int(multiple * 10), len(column)])
                # Both means scale with the factor exactly (the latency's noise has the same
                # mean on both sides).
                base, cur = _sides(column, rng, n, 1.0 + multiple * share)
                failed, chances = _check(base, cur, column, trial)
                fails[multiple] += failed
                if multiple == 0 and chances:
                    printed += np.asarray(chances)
                    counted += 1
        mean_printed = printed / max(counted, 1)
        for i, multiple in enumerate(OPERATING):
            rows.append(
                [
                    column,
                    f"{multiple:g}x",
                    rate(fails[multiple], trials),
                    f"{mean_printed[i]:.3f}",
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(
        f"{args.queries} queries, {args.trials} trials a row, alpha 0.05, one check "
        "(its whole alpha), sign-flip test of the per-query differences"
    )
    print()
    header = ["check", "true increase", "simulated P(fail)", "printed (mean, from m = 0)"]
    print(table(header, simulate(args.trials, args.queries), {2, 3}))


if __name__ == "__main__":
    main()
