"""CPU time of the gate's statistics (`compare()` on saved per-query scores) and its sign flips.

Seeded per-query scores for N queries, 5 metrics and 27 slices (`all` and overlapping
partitions of 8, 5, 10 and 3 values), one quarter of the queries unchanged (ties), metrics
correlated through a shared per-query change. Four cases:

- `none`: nothing changed (differences symmetric about 0);
- `uniform`: every query (tied ones too) drops by 0.3 sd of its differences;
- `slices`: the queries of a third of the slices (9 of the 26 partition slices) drop 2 points;
- `faint`: every query drops by 4 / sqrt(N) sd: the overall checks have z about 4 and the
  slices less, the Monte Carlo's worst case (every check moderate: run long, none decided by
  Hoeffding's bound).

For each size and case it prints the CPU seconds of `compare()` (the whole re-decision: tests,
intervals, detectable drops), of the `sign_flip` call inside it, and the failed checks.

    python benchmarks/timings/bench_statistics.py  # 20,000 and 200,000 queries
    python benchmarks/timings/bench_statistics.py --sizes 20000 --repeat 3 --save p.npz
"""

from __future__ import annotations

import os

# One BLAS thread: CPU seconds of one core, the same whatever else runs on the machine.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from retrieval_gate.core.ids import FloatArray, IntArray  # noqa: E402
from retrieval_gate.gate.checks import compare as compare_module  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare  # noqa: E402
from retrieval_gate.stats import significance  # noqa: E402

METRICS = ("ndcg@10", "recall@10", "mrr@10", "ap@10", "precision@10")
PARTITIONS = {"intent": 8, "segment": 5, "region": 10, "length": 3}
"""27 slices with `all`."""
CASES = ("none", "uniform", "slices", "faint")
TIE_SHARE = 0.25
UNIFORM_DROP_SD = 0.3
SLICE_DROP = 0.02
FAINT_Z = 4.0


def make_data(
    n: int, case: str, seed: int
) -> tuple[dict[str, FloatArray], dict[str, FloatArray], dict[str, IntArray]]:
    """Baseline and current scores per metric and the slices, seeded by (seed, n)."""
    rng = np.random.default_rng([seed, n])
    slices: dict[str, IntArray] = {"all": np.arange(n, dtype=np.int64)}
    labels = {field: rng.integers(0, size, n) for field, size in PARTITIONS.items()}
    for field, size in PARTITIONS.items():
        for value in range(size):
            slices[f"{field}={value}"] = np.flatnonzero(labels[field] == value).astype(np.int64)
    moved = rng.random(n) >= TIE_SHARE
    shared = rng.normal(0.0, 0.15, n)
    shift = np.zeros(n)
    if case == "slices":
        names = sorted(name for name in slices if name != "all")
        chosen = rng.choice(len(names), size=len(names) // 3, replace=False)
        hit = np.zeros(n, dtype=bool)
        for i in chosen:
            hit[slices[names[int(i)]]] = True
        shift = np.where(hit, -SLICE_DROP, 0.0)
    baseline, current = {}, {}
    for metric in METRICS:
        base = rng.beta(2.0, 3.0, n)
        diff = np.where(moved, shared + rng.normal(0.0, 0.05, n), 0.0)
        if case == "uniform":
            diff = diff - UNIFORM_DROP_SD * float(diff.std())
        elif case == "faint":
            diff = diff - FAINT_Z * float(diff.std()) / np.sqrt(n)
        baseline[metric] = base
        current[metric] = base + diff + np.where(moved, shift, 0.0)
    return baseline, current, slices


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,200000", help="comma-separated query counts")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="median of this many")
    parser.add_argument("--save", help="write every check's p-values to this .npz")
    args = parser.parse_args()
    settings = ComparisonSettings(resamples=args.resamples, seed=args.seed)
    thresholds = {metric: Threshold(max_drop=0.01) for metric in METRICS}
    # Time the sign flips inside compare() by wrapping the name compare.py calls.
    inner = significance.sign_flip
    spent: list[float] = []

    def counted(*a: Any, **k: Any) -> Any:
        out, seconds = timed(lambda: inner(*a, **k))
        spent.append(seconds)
        return out

    vars(compare_module)["sign_flip"] = counted
    saved: dict[str, FloatArray] = {}
    print(f"resamples {args.resamples}, seed {args.seed}, median of {args.repeat}")
    print(
        f"{'queries':>8} {'case':>8} {'checks':>6} {'compare s':>10} {'sign_flip s':>11} "
        f"{'failed':>6}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        for case in args.cases.split(","):
            baseline, current, slices = make_data(n, case, args.seed)
            totals, flips = [], []
            for _ in range(args.repeat):
                spent.clear()
                start = time.process_time()
                found = compare(baseline, current, slices, thresholds, {}, settings)
                totals.append(time.process_time() - start)
                flips.append(sum(spent))
            failed = sum(c.failed for c in found)
            saved[f"{n}_{case}"] = np.asarray([c.p_value for c in found], dtype=np.float64)
            print(
                f"{n:>8} {case:>8} {len(found):>6} {statistics.median(totals):>10.2f} "
                f"{statistics.median(flips):>11.2f} {failed:>6}",
                flush=True,
            )
    if args.save:
        np.savez(args.save, **saved)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
