"""Simulate an evaluator check (a Ragas-like faithfulness score) through the gate's compare():
how often it fails at true drops of 0 to 2x max_drop, with every query scored and with 10% of
the queries unscored on each side (the most gate.min_coverage 0.9 lets through), each counted
as unchanged as `check` counts it (`evaluator_scores.unchanged_where_unscored`).

The data: per query a latent faithfulness p ~ Beta(8, 2) (mean 0.8) and an answer of n claims,
n uniform in 3..8; each side's score is k/n with k ~ Binomial(n, p), drawn independently (a
regenerated answer), so scores are discrete and tie often, as Ragas's are. A true drop of D
lowers every query's p by D (floored at 0). The check: max_drop 3pt, the gate's defaults
(sign-flip test, alpha 0.05, significant-drop), the overall check alone.

    python benchmarks/simulations/bench_evaluators.py  # 2,000 trials a cell, about 2 minutes
    python benchmarks/simulations/bench_evaluators.py --trials 200  # a quick look
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.pipeline.evaluator_scores import (
    mean_filled,
    unchanged_where_unscored,
)

MAX_DROP = 0.03
SIZES = (131, 500)
"""The bundled example's 131 queries, and a larger set."""
MULTIPLES = (0.0, 1.0, 1.5, 2.0)
UNSCORED = (0.0, 0.10)
CHECK = "ragas:faithfulness"


def side(p: FloatArray, claims: np.ndarray, rng: np.random.Generator) -> FloatArray:
    """One side's scores: the share of each answer's claims supported."""
    return rng.binomial(claims, np.clip(p, 0.0, 1.0)) / claims


def unscored(
    values: FloatArray, share: float, rng: np.random.Generator
) -> tuple[FloatArray, list[int]]:
    """`values` with `share` of them unscored (at random) and filled with the mean of the
    others, as a record holds them, and the unscored queries."""
    count = round(share * len(values))
    holes = sorted(rng.choice(len(values), size=count, replace=False).tolist())
    with_holes = values.copy()
    with_holes[holes] = np.nan
    return (mean_filled(with_holes) if holes else values), holes


def trial(n: int, drop: float, share: float, seed: int) -> tuple[bool, bool]:
    """(the check failed, its test alone was significant at alpha) on one seeded draw."""
    rng = np.random.default_rng(seed)
    p = rng.beta(8, 2, size=n)
    claims = rng.integers(3, 9, size=n)
    before, before_holes = unscored(side(p, claims, rng), share, rng)
    after, after_holes = unscored(side(np.maximum(p - drop, 0.0), claims, rng), share, rng)
    before, after = unchanged_where_unscored(before, after, before_holes, after_holes)
    settings = ComparisonSettings(seed=seed)
    (check,) = compare(
        {CHECK: before},
        {CHECK: after},
        {"all": np.arange(n)},
        {CHECK: Threshold(max_drop=MAX_DROP)},
        {},
        settings,
    )
    significant = check.p_value is not None and check.p_value <= settings.alpha
    return check.failed, significant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="trials per cell (2000)")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    body = []
    for n in SIZES:
        for share in UNSCORED:
            for multiple in MULTIPLES:
                drop = multiple * MAX_DROP
                failed = significant = 0
                for t in range(args.trials):
                    seed = args.seed * 1_000_003 + n * 10_007 + int(share * 100) * 101 + t
                    seed += int(multiple * 10) * 7_919_000
                    f, s = trial(n, drop, share, seed)
                    failed += f
                    significant += s
                body.append(
                    [
                        str(n),
                        f"{share:.0%}",
                        f"{multiple:g}x ({drop * 100:.1f}pt)",
                        rate(failed, args.trials),
                        rate(significant, args.trials),
                    ]
                )
    print(
        f"Evaluator check, max_drop {MAX_DROP * 100:g}pt, {args.trials} trials a cell "
        f"(seed {args.seed}); P(fail) and P(test p <= alpha), Wilson 95% intervals\n"
    )
    header = ["queries", "unscored", "true drop", "P(fail)", "P(p <= 0.05)"]
    print(table(header, body, right={0, 1, 3, 4}))


if __name__ == "__main__":
    main()
