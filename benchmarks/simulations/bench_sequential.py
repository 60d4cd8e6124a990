"""Simulate gate.sequential on seeded synthetic sets of 500 queries: how often it fails early
with nothing changed, P(fail) beside the full-set decision's at 0/2/3/4/5 pt drops, and the
share of the queries it spends, on bench_gate's generator and on heavier ties, skewed and
concentrated drops, and runs that correlate 0.3 and 0.9; at twice the threshold, beside the
most a test at the early fail's levels could stop by half the queries."""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common import synthetic_scores as bg  # noqa: E402
from benchmarks.common.tables import rate, table  # noqa: E402
from retrieval_gate.core.ids import FloatArray, IntArray  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, compare  # noqa: E402
from retrieval_gate.gate.modes.sequential import Monitor, draw_order, evidence  # noqa: E402
from retrieval_gate.stats.sequential import LOOKS, bound  # noqa: E402

QUERIES = 500
BATCH = 10
DROPS = (0.0, 0.02, 0.03, 0.04, 0.05)
TWICE = 0.04
"""Twice ndcg@10's max_drop."""
THRESHOLDS = {metric: bg.THRESHOLDS[metric] for metric in bg.METRICS}
"""ndcg@10 2pt, recall@10 5pt, rr@10 3% relative, ap@10 report only; slices by intent,
segment and length (9 slices), 30 gated checks with a max_drop."""
POPULATION = 200_000


@dataclass(frozen=True)
class Generator:
    """A variant of bench_gate's synthetic retriever."""

    name: str
    ties: float = bg.TIE_SHARE
    correlation: float = 0.0
    """Of the two runs' own latent noise (bench_gate: independent)."""
    shape: str = "even"
    """even: every changed query loses the same latent shift; skewed: an exponential multiple
    of it (most lose little, a few much); concentrated: 15% of the queries lose it all."""
    alone: bool = False
    """Gate ndcg@10 overall alone (1 check) instead of 30 checks."""


GENERATORS = (
    Generator("bench_gate"),
    Generator("heavier ties (60%)", ties=0.6),
    Generator("skewed drop", shape="skewed"),
    Generator("concentrated drop (15%)", shape="concentrated"),
    Generator("run correlation 0.3", correlation=0.3),
    Generator("run correlation 0.9", correlation=0.9),
    Generator("bench_gate, ndcg@10 overall alone", alone=True),
)
ALONE = {"ndcg@10": bg.THRESHOLDS["ndcg@10"]}


def _draw(
    gen: Generator, n: int, rng: np.random.Generator
) -> tuple[bg.Noise, FloatArray, dict[str, IntArray]]:
    """bench_gate's noise under `gen`, each query's share of the change, its attributes."""
    bg.TIE_SHARE = gen.ties  # draw_noise reads it
    attrs = bg.attributes(n, rng)
    noise = bg.draw_noise(attrs, rng)
    if gen.correlation:
        rho = gen.correlation
        noise = noise._replace(
            current_run=rho * noise.base_run + math.sqrt(1 - rho * rho) * noise.current_run
        )
    if gen.shape == "skewed":
        weight = rng.exponential(1.0, n)
    elif gen.shape == "concentrated":
        weight = (rng.random(n) < 0.15).astype(np.float64)
    else:
        weight = np.ones(n)
    return noise, weight, attrs


def _scores(
    noise: bg.Noise, weight: FloatArray, shift: float
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    base, current = {}, {}
    for j, metric in enumerate(bg.TIMING_METRICS):
        b = noise.quality + noise.base_run + noise.base_metric[:, j]
        c = noise.quality + noise.current_run + noise.current_metric[:, j]
        c = np.where(noise.tie, b, c - shift * weight)
        base[metric] = bg.score(metric, b, noise.relevant)
        current[metric] = bg.score(metric, c, noise.relevant)
    return base, current


def calibrate(gen: Generator, drop: float, seed: int) -> float:
    """The latent shift that lowers the population mean of ndcg@10 by `drop` points."""
    if drop <= 0:
        return 0.0
    noise, weight, _ = _draw(gen, POPULATION, np.random.default_rng([seed, 999]))
    before = _scores(noise, weight, 0.0)[1]["ndcg@10"]
    low, high = 0.0, 1.0
    while float(np.mean(before - _scores(noise, weight, high)[1]["ndcg@10"])) < drop:
        high *= 2.0
    for _ in range(40):
        middle = (low + high) / 2.0
        lost = float(np.mean(before - _scores(noise, weight, middle)[1]["ndcg@10"]))
        low, high = (middle, high) if lost < drop else (low, middle)
    return (low + high) / 2.0


def one_look_at_half(
    monitor: Monitor, order: IntArray, base: dict[str, FloatArray], current: dict[str, FloatArray]
) -> bool:
    """Whether a single look at half the queries, each check spending all of its level there
    (the t statistics of `evidence`), would stop: what stops by half when nothing is kept for
    the other looks, the most a test with these levels can stop by half (each check's by-half
    stop is a test at its level, and none beats the t-test of a mean much)."""
    drawn = order[: QUERIES // 2]
    for check in monitor.checks:
        rows = drawn[np.isin(drawn, check.rows)]
        if rows.size < 2:
            continue
        deltas = current[check.metric][rows] - base[check.metric][rows]
        t = min(evidence(deltas, check.max_drop, int(check.rows.size), any_drop=True))
        if t >= bound(check.level, int(rows.size)):
            return True
    return False


@dataclass(frozen=True)
class Trial:
    full: bool
    """The full-set decision failed."""
    early: bool
    """The sequential check stopped early (with FAIL)."""
    within: bool
    """It stopped on a check whose drop over the whole set was within its max_drop."""
    spent: int
    sd: float
    """sd of the ndcg@10 per-query differences over the set."""
    half: bool
    """A single look at half the queries, spending every check's level, would stop."""


def trial(gen: Generator, shift: float, seed: int, index: int, alpha: float) -> Trial:
    rng = np.random.default_rng([seed, index])
    noise, weight, attrs = _draw(gen, QUERIES, rng)
    slices = bg.slices_of(attrs, () if gen.alone else bg.SIM_GROUPS)
    thresholds = ALONE if gen.alone else THRESHOLDS
    base, current = _scores(noise, weight, shift)
    settings = ComparisonSettings(alpha=alpha, seed=index)
    full = compare(base, current, slices, thresholds, {}, settings)
    monitor = Monitor(base, slices, thresholds, {}, settings, alpha)
    order = draw_order(QUERIES, index)
    first = QUERIES  # queries run when a check first crossed at a look before the end
    stopper = None
    for end in range(BATCH, QUERIES, BATCH):  # the looks `check --sequential` takes
        drawn = order[:end]
        crossed = monitor.look(drawn, {metric: current[metric][drawn] for metric in base})
        if crossed:
            first, stopper = end, crossed[0]
            break
    early = stopper is not None
    within = False
    if stopper is not None:
        row = next(c for c in full if (c.metric, c.slice) == (stopper.metric, stopper.slice))
        within = row.max_drop is not None and -row.delta <= row.max_drop
    sd = float(np.std(current["ndcg@10"] - base["ndcg@10"], ddof=1))
    half = one_look_at_half(monitor, order, base, current)
    return Trial(any(c.failed for c in full), early, within, first, sd, half)


def row(label: str, drop: float, trials: Sequence[Trial]) -> list[str]:
    n = len(trials)
    full = sum(t.full for t in trials)
    seq = sum(t.full or t.early for t in trials)
    early = sum(t.early for t in trials)
    within = sum(t.within for t in trials)
    spent = [t.spent for t in trials]
    return [
        label,
        f"{drop * 100:g}",
        rate(full, n),
        rate(seq, n),
        f"{(seq - full) / n:.3f}",
        rate(early, n),
        rate(within, n),
        f"{np.median(spent):.0f}",
        f"{np.median(spent) / QUERIES:.2f}",
        f"{np.percentile(spent, 90):.0f}",
        f"{np.mean([t.sd for t in trials]):.3f}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=250, help="trials per row")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    looks = "/".join(f"{share:.0%}" for share, _ in LOOKS)
    body, twice = [], []
    for gen in GENERATORS:
        for drop in DROPS:
            shift = calibrate(gen, drop, args.seed)
            trials = [trial(gen, shift, args.seed, i, args.alpha) for i in range(args.trials)]
            body.append(row(gen.name, drop, trials))
            if drop == TWICE:
                spent = [t.spent for t in trials]
                by_half = sum(t.spent <= QUERIES // 2 for t in trials)
                best = sum(t.half for t in trials)
                reach = "yes" if best >= len(trials) / 2 else "no, at these levels"
                twice.append(
                    [
                        gen.name,
                        f"{np.median(spent) / QUERIES:.2f}",
                        rate(by_half, len(trials)),
                        rate(best, len(trials)),
                        reach,
                    ]
                )
    print(
        f"{QUERIES} queries, batches of {BATCH}, alpha {args.alpha} (the early fail spends "
        f"all of it: alpha_share 1), planned looks at {looks} of the queries (the first "
        f"batch at or past each), {args.trials} trials a row, seed {args.seed}; 4 metrics "
        "(ndcg@10 2pt, recall@10 5pt, rr@10 3%, ap@10 report only) on all and 9 slices: 30 "
        "gated checks (the last generator: ndcg@10 overall alone, 1 check). The drop is "
        "ndcg@10's in the population; rates with Wilson 95% intervals.\n"
    )
    header = [
        "generator",
        "drop pt",
        "P(fail) full set",
        "P(fail) sequential",
        "difference",
        "stopped early",
        "early on a check within max_drop",
        "median queries",
        "median share",
        "p90 queries",
        "sd of ndcg@10 deltas",
    ]
    print(table(header, body, right=set(range(1, len(header)))))
    print(
        f"\nAt twice the threshold ({TWICE * 100:g} pt): the share of queries the early fail "
        "ran (median), how often it stopped by half, and the most any valid test could stop "
        "by half with these levels (one look there, each check spending all of its level): "
        "below 0.5, no test at these levels halves the median.\n"
    )
    twice_header = [
        "generator",
        "share of queries at 2x threshold",
        "stopped by half",
        "one look at half, whole levels",
        "half reachable",
    ]
    print(table(twice_header, twice, right={1, 2, 3}))
    print(f"\n{time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
