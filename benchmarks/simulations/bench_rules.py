"""Simulate the gate's three decision rules on seeded data of several shapes: P(fail) at true
drops of 0 to 2x max_drop beside what the gate predicts, the family-wise false alarm, and how
often an unchanged retriever shows an inconclusive check."""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NamedTuple  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.synthetic_scores import (  # noqa: E402
    GATED,
    MIN_SIZE,
    QUALITY_SD,
    SIM_GROUPS,
    THRESHOLDS,
    TIMING_METRICS,
    attributes,
    score,
    slices_of,
)
from benchmarks.common.tables import rate, table, wilson  # noqa: E402
from retrieval_gate.core.ids import FloatArray  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, compare  # noqa: E402
from retrieval_gate.stats.detectability import OPERATING  # noqa: E402

MAX_DROP = THRESHOLDS[GATED].max_drop or 0.0
VARIANTS = (
    ("significant-drop", "pass"),
    ("evidence-of-excess", "pass"),
    ("non-inferiority", "fail"),
)
"""(rule, on_inconclusive): non-inferiority with on_inconclusive: pass fails exactly when
evidence-of-excess does; its point is the strict, fail-closed gate."""
METRIC_SD = 0.3


@dataclass(frozen=True)
class Shape:
    """How the per-query scores of one data set are drawn."""

    label: str
    run_sd: float = 0.88
    """sd of each run's own latent noise: the runs correlate about 1 / (1 + run_sd^2 + 0.09)."""
    tie_share: float = 0.25
    """Queries whose ranking did not change at all (their scores equal exactly)."""
    skewed: bool = False
    """Per-query shifts drawn from an exponential distribution (same mean), not all alike."""
    carried_by: float = 1.0
    """Share of the queries the drop falls on."""


SHAPES = (
    Shape("bench_gate's generator (runs correlate 0.54, 25% tied)"),
    Shape("heavier ties (60% tied)", tie_share=0.6),
    Shape("skewed drop (exponential per-query shifts)", skewed=True),
    Shape("drop carried by 10% of the queries", carried_by=0.1),
    Shape("runs correlate 0.3", run_sd=1.5),
    Shape("runs correlate 0.9", run_sd=0.145),
)


class Draws(NamedTuple):
    quality: FloatArray
    base_run: FloatArray
    current_run: FloatArray
    base_metric: FloatArray
    current_metric: FloatArray
    tie: np.ndarray
    carried: np.ndarray
    weight: FloatArray
    relevant: FloatArray


def draws(n: int, shape: Shape, rng: np.random.Generator) -> tuple[Draws, dict[str, np.ndarray]]:
    attrs = attributes(n, rng)
    k = len(TIMING_METRICS)
    found = Draws(
        quality=rng.normal(0.0, QUALITY_SD, n),
        base_run=rng.normal(0.0, shape.run_sd, n),
        current_run=rng.normal(0.0, shape.run_sd, n),
        base_metric=rng.normal(0.0, METRIC_SD, (n, k)),
        current_metric=rng.normal(0.0, METRIC_SD, (n, k)),
        tie=rng.random(n) < shape.tie_share,
        carried=rng.random(n) < shape.carried_by,
        weight=rng.exponential(1.0, n) if shape.skewed else np.ones(n),
        relevant=rng.integers(1, 5, n).astype(np.float64),
    )
    return found, attrs


def scores(d: Draws, shift: float) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    tie = d.tie
    if not d.carried.all():
        # A drop carried by a share of the queries: those queries changed, tied or not (10%
        # of the tied-free queries could not lose 4 pt of a mean of 0.5).
        tie = tie & ~d.carried
    moves = (~tie & d.carried) * d.weight
    base, current = {}, {}
    for j, metric in enumerate(TIMING_METRICS):
        b = d.quality + d.base_run + d.base_metric[:, j]
        c = d.quality + d.current_run + d.current_metric[:, j] - shift * moves
        c = np.where(tie, b, c)
        base[metric] = score(metric, b, d.relevant)
        current[metric] = score(metric, c, d.relevant)
    return base, current


def calibrate(shape: Shape, drop: float, seed: int) -> float:
    """The latent shift that lowers the population mean of GATED by `drop` under `shape`."""
    if drop <= 0:
        return 0.0
    d, _ = draws(400_000, shape, np.random.default_rng([seed, 999]))

    def lost(shift: float) -> float:
        return float(np.mean(scores(d, 0.0)[1][GATED] - scores(d, shift)[1][GATED]))

    low, high = 0.0, 1.0
    while lost(high) < drop:
        high *= 2.0
        if high > 1e6:
            raise ValueError(f"{shape.label}: no shift lowers {GATED} by {drop}")
    for _ in range(50):
        middle = (low + high) / 2.0
        low, high = (middle, high) if lost(middle) < drop else (low, middle)
    return (low + high) / 2.0


class Task(NamedTuple):
    shape: Shape
    n: int
    multiple: float
    shift: float
    trial: int
    seed: int
    resamples: int


class Outcome(NamedTuple):
    failed: bool
    overall_failed: bool
    inconclusive: bool
    predicted: float | None


def run_trial(task: Task) -> dict[str, Outcome]:
    rng = np.random.default_rng([task.seed, task.n, task.trial])
    d, attrs = draws(task.n, task.shape, rng)
    base, current = scores(d, task.shift)
    slices = slices_of(attrs, SIM_GROUPS)
    out = {}
    for rule, on_inconclusive in VARIANTS:
        settings = ComparisonSettings(
            resamples=task.resamples,
            seed=task.trial,
            min_size=MIN_SIZE,
            rule=rule,  # type: ignore[arg-type]
            on_inconclusive=on_inconclusive,  # type: ignore[arg-type]
        )
        found = compare(base, current, slices, THRESHOLDS, {}, settings)
        overall = next(c for c in found if c.metric == GATED and c.slice == "all")
        chances = overall.fail_chances
        out[rule] = Outcome(
            failed=any(c.failed for c in found),
            overall_failed=overall.failed,
            inconclusive=any(c.gated and c.verdict == "inconclusive" for c in found),
            predicted=None if chances is None else chances[OPERATING.index(task.multiple)],
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--shapes", default="all", help="comma-separated indices of SHAPES")
    args = parser.parse_args()
    chosen = SHAPES if args.shapes == "all" else [SHAPES[int(i)] for i in args.shapes.split(",")]
    started = time.process_time(), time.perf_counter()
    print(
        f"# The gate's decision rules, simulated: n = {args.n} queries, {args.trials} trials "
        f"per row, seed {args.seed}\n\nMetrics {', '.join(THRESHOLDS)} with thresholds "
        f"ndcg@10 2 pt, recall@10 5 pt, rr@10 3% (ap@10 report only); slices by intent, "
        f"segment and length (9, min_size {MIN_SIZE}); alpha 0.05, weighted Holm, "
        f"{args.resamples} resamples. A true drop is the population "
        f"drop of {GATED}'s mean (every metric moves with it). 'predicted' is the median of "
        f"what the gate printed for its overall {GATED} check (fail_chances, from the change's "
        "own spread): the least the check fails under every rule, so within or below the "
        "simulated interval is kept.\n"
    )
    rows_kept = rows_seen = 0
    with ProcessPoolExecutor(args.workers) as pool:
        for shape in chosen:
            shifts = {m: calibrate(shape, m * MAX_DROP, args.seed) for m in OPERATING}
            tasks = [
                Task(shape, args.n, m, shifts[m], t, args.seed, args.resamples)
                for m in OPERATING
                for t in range(args.trials)
            ]
            results = list(pool.map(run_trial, tasks, chunksize=8))
            body = []
            for rule, on_inconclusive in VARIANTS:
                for i, m in enumerate(OPERATING):
                    rows = [r[rule] for r in results[i * args.trials : (i + 1) * args.trials]]
                    predicted = [r.predicted for r in rows if r.predicted is not None]
                    overall = sum(r.overall_failed for r in rows)
                    # The printed figure is the least the check fails: within or below the
                    # simulated interval.
                    kept = (
                        not predicted
                        or statistics.median(predicted) <= wilson(overall, len(rows))[1]
                    )
                    rows_kept += kept
                    rows_seen += 1
                    body.append(
                        [
                            f"{rule}, on_inconclusive: {on_inconclusive}",
                            f"{m:g}x ({m * MAX_DROP * 100:g} pt)",
                            rate(sum(r.failed for r in rows), len(rows)),
                            rate(overall, len(rows)),
                            f"{statistics.median(predicted):.3f}" if predicted else "-",
                            "yes" if kept else "NO",
                            rate(sum(r.inconclusive for r in rows), len(rows)),
                        ]
                    )
            print(f"## {shape.label}\n")
            print(
                table(
                    [
                        "rule",
                        f"true {GATED} drop",
                        "P(gate fails) [95% MC]",
                        f"P(overall {GATED} fails) [95% MC]",
                        "predicted",
                        "predicted within or below",
                        "P(any check inconclusive) [95% MC]",
                    ],
                    body,
                    right={2, 3, 4, 6},
                )
            )
            print()
    print(f"predicted within or below the simulated interval in {rows_kept} of {rows_seen} rows")
    cpu, wall = time.process_time() - started[0], time.perf_counter() - started[1]
    print(f"({wall:.0f} s wall, {cpu:.0f} s CPU in this process; workers: {args.workers})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
