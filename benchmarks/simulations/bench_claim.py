"""Simulate `retrieval-gate power --claim`'s detectable change: how often the gate's own test of
one check, at alpha, shows a true change of exactly that size, on seeded data of three shapes."""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table  # noqa: E402
from retrieval_gate.core.ids import FloatArray  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare  # noqa: E402
from retrieval_gate.gate.power.claim import audit  # noqa: E402

SD = 0.2
"""The per-query sd of the paired changes the claim is audited with (`--sd`)."""
SIZES = (30, 100, 500)


def changes(shape: str, n: int, mean: float, rng: np.random.Generator) -> FloatArray:
    """n paired changes with sd SD and mean `mean` (negative: a drop)."""
    if shape == "normal":
        return rng.normal(mean, SD, n)
    if shape == "half tied":
        # Half the queries did not move; the others carry the change and the whole spread.
        moved = rng.random(n) < 0.5
        out = np.zeros(n)
        spread = SD / np.sqrt(0.5)  # sd over all n stays SD (mean^2 terms aside)
        out[moved] = rng.normal(2.0 * mean, spread, int(moved.sum()))
        return out
    # skewed: centred exponential, a long tail of large losses.
    return mean - SD * (rng.exponential(1.0, n) - 1.0)


def shown(diffs: FloatArray, settings: ComparisonSettings) -> bool:
    """Whether the gate's one-sided test of a single check at alpha shows the drop."""
    base = np.full(diffs.size, 0.5)
    (check,) = compare(
        {"m": base},
        {"m": base + diffs},
        {"all": np.arange(diffs.size)},
        {"m": Threshold(max_drop=0.0)},
        {},
        settings,
    )
    return check.failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args()
    settings = ComparisonSettings()
    started = time.process_time()
    print(
        f"# power --claim's detectable change, simulated: per-query sd {SD}, alpha "
        f"{settings.alpha}, the gate's sign-flip test ({settings.resamples} resamples), "
        f"{args.trials} trials a row, seed {args.seed}\n"
    )
    body = []
    for shape in ("normal", "half tied", "skewed"):
        for n in SIZES:
            claim = audit(-0.01, n, SD, "--sd", settings)
            assert claim.detectable is not None
            rng = np.random.default_rng([args.seed, n, len(shape)])
            hits = sum(
                shown(changes(shape, n, -claim.detectable, rng), settings)
                for _ in range(args.trials)
            )
            body.append(
                [shape, str(n), f"{claim.detectable * 100:.2f}", rate(hits, args.trials), "0.80"]
            )
    header = ["changes", "queries", "stated detectable pt", "P(shown) [95% MC]", "stated"]
    print(table(header, body, right={1, 2, 3, 4}))
    print(f"\n({time.process_time() - started:.0f} s CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
