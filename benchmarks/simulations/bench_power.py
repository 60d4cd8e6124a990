"""Simulate `retrieval-gate power`'s claims against the gate's own check on seeded data whose
truth is known: P(the check fails) at the stated detectable drop, per source of the sd
(assumption, a saved run, main's history, the baseline's repeats), spread evenly and carried
by 10% of the queries, on several kinds of data (the bench_gate generator, heavier ties,
skewed differences, run correlations 0.3, 0.5 and 0.9).

Each trial draws a labelled set's baseline scores, the data the source reads (an earlier
version, a chain of main's versions, repeated runs), asks `gate.power.estimate` for the
claim, then draws the next version of the retriever from the same process, lowers it by the
claimed drop, and runs `gate.compare.compare` on it: the claim holds when the check fails 80%
of the time. One process, seeded; `--trials` sets the Monte Carlo size.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import NamedTuple  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.synthetic_scores import METRIC_SD, QUALITY_SD, RUN_SD, score  # noqa: E402
from benchmarks.common.tables import rate, table  # noqa: E402
from retrieval_gate.core.ids import FloatArray  # noqa: E402
from retrieval_gate.gate.checks.compare import (  # noqa: E402
    ComparisonSettings,
    Runs,
    Threshold,
    compare,
)
from retrieval_gate.gate.power.estimate import estimate, repeats_source  # noqa: E402
from retrieval_gate.gate.power.spread import SHARE, DeltaSource  # noqa: E402
from retrieval_gate.stats.detectability import OPERATING  # noqa: E402

METRIC = "ndcg@10"
MAX_DROP = 0.02
N = 131
"""Queries: the bundled example's size."""
HISTORY_PAIRS = 5
REPEATS = 3
REPEAT_SD = 0.03
"""Per-query sd of a rerun of the unchanged retriever: the noise the repeats measure."""
SOURCES = ("assumption", "run", "history", "repeats")


class Version(NamedTuple):
    """One version's per-query scores, the latent state the next version is drawn from, and
    which queries it moved from the previous version (the others are tied)."""

    scores: FloatArray
    latent: FloatArray
    quality: FloatArray
    moved: np.ndarray


@dataclass(frozen=True)
class World:
    """A kind of data: how a labelled set's first version is drawn, and the next one."""

    name: str
    shape: str
    first: Callable[[np.random.Generator, int], Version]
    next: Callable[[np.random.Generator, Version], Version]
    correlation: float | None = None
    """The true correlation of consecutive versions, when the world has one by design."""


def _gate_like(tie_share: float) -> tuple[Callable[..., Version], Callable[..., Version]]:
    """bench_gate's retriever: a latent query quality shared by every version, each version's
    own run and metric noise, ndcg@10 clipped to [0, 1]; `tie_share` of the queries keep the
    previous version's ranking (tied)."""

    def latent(rng: np.random.Generator, quality: FloatArray) -> FloatArray:
        n = quality.size
        return quality + rng.normal(0.0, RUN_SD, n) + rng.normal(0.0, METRIC_SD, n)

    def first(rng: np.random.Generator, n: int) -> Version:
        quality = rng.normal(0.0, QUALITY_SD, n)
        value = latent(rng, quality)
        return Version(score(METRIC, value, np.ones(n)), value, quality, np.ones(n, dtype=bool))

    def following(rng: np.random.Generator, previous: Version) -> Version:
        n = previous.quality.size
        moved = rng.random(n) >= tie_share
        value = np.where(moved, latent(rng, previous.quality), previous.latent)
        return Version(score(METRIC, value, np.ones(n)), value, previous.quality, moved)

    return first, following


def _gaussian(rho: float) -> tuple[Callable[..., Version], Callable[..., Version]]:
    """Scores N(0.5, 0.22), each version correlating at `rho` with the previous one (AR(1):
    the same marginal every version)."""

    def first(rng: np.random.Generator, n: int) -> Version:
        value = rng.normal(0.5, 0.22, n)
        return Version(value, value, value, np.ones(n, dtype=bool))

    def following(rng: np.random.Generator, previous: Version) -> Version:
        n = previous.scores.size
        noise = rng.normal(0.0, 0.22 * math.sqrt(1.0 - rho * rho), n)
        value = 0.5 + rho * (previous.scores - 0.5) + noise
        return Version(value, value, value, np.ones(n, dtype=bool))

    return first, following


def _skewed(sd: float) -> tuple[Callable[..., Version], Callable[..., Version]]:
    """Scores N(0.5, 0.22); each version moves every query by a skewed difference of mean 0
    and sd `sd` (sd (1 - Exponential(1)): many small gains, a few large losses; skew -2)."""

    def first(rng: np.random.Generator, n: int) -> Version:
        value = rng.normal(0.5, 0.22, n)
        return Version(value, value, value, np.ones(n, dtype=bool))

    def following(rng: np.random.Generator, previous: Version) -> Version:
        n = previous.scores.size
        value = previous.scores + sd * (1.0 - rng.exponential(1.0, n))
        return Version(value, value, value, np.ones(n, dtype=bool))

    return first, following


def worlds() -> list[World]:
    return [
        World("bench_gate generator", "25% tied, clipped", *_gate_like(0.25)),
        World("heavier ties", "60% tied, clipped", *_gate_like(0.60)),
        World("skewed differences", "skew -2, sd 0.15", *_skewed(0.15)),
        World("correlation 0.3", "normal", *_gaussian(0.3), correlation=0.3),
        World("correlation 0.5", "normal", *_gaussian(0.5), correlation=0.5),
        World("correlation 0.9", "normal", *_gaussian(0.9), correlation=0.9),
    ]


def pattern(
    rng: np.random.Generator, moved: np.ndarray, drop: float, share: float | None
) -> FloatArray:
    """Per-query drops of mean `drop`: on every query that moved alike (None), or on exactly
    `share` of the queries (of those that moved), the others not at all."""
    n = moved.size
    movers = np.flatnonzero(moved)
    if share is not None:
        movers = rng.choice(movers, size=max(1, round(share * n)), replace=False)
    out = np.zeros(n)
    out[movers] = drop * n / movers.size
    return out


@dataclass
class Cell:
    world: World
    source: str
    even_claims: list[float] = field(default_factory=list)
    even_hits: int = 0
    even_trials: int = 0
    concentrated_claims: list[float] = field(default_factory=list)
    concentrated_hits: int = 0
    concentrated_trials: int = 0
    none: int = 0
    """Trials whose 10% claim was "no drop is caught"."""
    even_claim_on_concentrated_hits: int = 0


def claim_source(
    world: World, source: str, rng: np.random.Generator, ids: tuple[str, ...]
) -> tuple[Version, DeltaSource | None]:
    """The baseline version and what the source reads."""
    if source == "history":
        chain = [world.first(rng, N)]
        for _ in range(HISTORY_PAIRS):
            chain.append(world.next(rng, chain[-1]))
        pairs = tuple(
            {METRIC: after.scores - before.scores} for before, after in itertools.pairwise(chain)
        )
        return chain[-1], DeltaSource(kind="history", label="main", query_ids=ids, pairs=pairs)
    baseline = world.first(rng, N)
    if source == "run":
        earlier = world.next(rng, baseline)
        pair = {METRIC: earlier.scores - baseline.scores}
        return baseline, DeltaSource(kind="run", label="earlier run", query_ids=ids, pairs=(pair,))
    if source == "repeats":
        runs = [{METRIC: baseline.scores + rng.normal(0.0, REPEAT_SD, N)} for _ in range(REPEATS)]
        return baseline, repeats_source(runs, ids, 1)
    return baseline, None


def trial(cell: Cell, seed: int, number: int, settings: ComparisonSettings) -> None:
    world = cell.world
    rng = np.random.default_rng([seed, worlds_index(world), SOURCES.index(cell.source), number])
    ids = tuple(f"q{i}" for i in range(N))
    rows = {"all": np.arange(N, dtype=np.int64)}
    thresholds = {METRIC: Threshold(max_drop=MAX_DROP)}
    baseline, source = claim_source(world, cell.source, rng, ids)
    base = {METRIC: baseline.scores}
    (claim,) = estimate(base, rows, thresholds, {}, settings, spread=source)
    if claim.fail_range is not None:
        # Without data the claim is the top of the range: caught with the power at least, if
        # the runs correlate 0.3 or more.
        claim = dataclasses.replace(
            claim,
            detectable_drop=claim.span("detectable_drop")[1],
            concentrated_drop=claim.span("concentrated_drop")[1],
        )
    after = world.next(rng, baseline)

    def fails(drop: float, share: float | None) -> bool:
        current = after.scores - pattern(rng, after.moved, drop, share)
        (check,) = compare(base, {METRIC: current}, rows, thresholds, {}, settings)
        return check.failed

    if claim.detectable_drop is not None:
        cell.even_claims.append(claim.detectable_drop)
        cell.even_trials += 1
        cell.even_hits += fails(claim.detectable_drop, None)
        cell.even_claim_on_concentrated_hits += fails(claim.detectable_drop, SHARE)
    if claim.concentrated_drop is None:
        cell.none += 1
    else:
        cell.concentrated_claims.append(claim.concentrated_drop)
        cell.concentrated_trials += 1
        cell.concentrated_hits += fails(claim.concentrated_drop, SHARE)


_WORLD_NAMES: list[str] = []


def worlds_index(world: World) -> int:
    return _WORLD_NAMES.index(world.name)


def pt(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 100:.2f}"


def report(cells: Sequence[Cell], power: float) -> str:
    header = [
        "data",
        "sd from",
        "claimed drop pt (median)",
        "P(fail) at it [95% MC]",
        "power states",
        "10% claim pt (median)",
        "P(fail) at it, 10% carry it [95% MC]",
        "P(fail) at the even claim, 10% carry it",
    ]
    body = []
    for cell in cells:
        states = f"{power:.2f}"
        if cell.source == "assumption":
            states = f">= {power:.2f} (runs at 0.3+)"
        if cell.source == "repeats":
            states += " (upper bound)"
        none = f"; none in {cell.none}" if cell.none else ""
        body.append(
            [
                f"{cell.world.name} ({cell.world.shape})",
                cell.source,
                pt(cell.even_claims),
                rate(cell.even_hits, cell.even_trials) if cell.even_trials else "-",
                states,
                pt(cell.concentrated_claims) + none,
                rate(cell.concentrated_hits, cell.concentrated_trials)
                if cell.concentrated_trials
                else "-",
                rate(cell.even_claim_on_concentrated_hits, cell.even_trials)
                if cell.even_trials
                else "-",
            ]
        )
    return table(header, body, right={2, 3, 5, 6, 7})


# The operating characteristic at four correlations ------------------------------------------

CORRELATED = (0.3, 0.5, 0.7, 0.9)
OC_SOURCES = ("history", "repeats", "assumption")
SCORE_SD = 0.22


def _runs(rng: np.random.Generator, quality: FloatArray, rho: float) -> FloatArray:
    """One run of a retriever whose runs all correlate at `rho` query by query: a quality
    each run shares (variance rho) and noise of its own (1 - rho)."""
    noise = rng.normal(0.0, SCORE_SD * math.sqrt(1.0 - rho), quality.size)
    return 0.5 + SCORE_SD * math.sqrt(rho) * quality + noise


@dataclass
class OcCell:
    """One correlation x source: what `power` printed, and how often the check failed."""

    rho: float
    source: str
    printed: list[list[float]] = field(default_factory=list)
    """Per trial: P(fail) at each multiple (the headline), or at the world's correlation."""
    lowest: list[list[float]] = field(default_factory=list)
    highest: list[list[float]] = field(default_factory=list)
    hits: list[int] = field(default_factory=lambda: [0] * len(OPERATING))
    claims: list[float] = field(default_factory=list)
    claim_hits: int = 0
    correlations: list[float] = field(default_factory=list)
    trials: int = 0


def oc_trial(cell: OcCell, seed: int, number: int, settings: ComparisonSettings) -> None:
    """Draw the source's data at the cell's correlation, read `power`'s figures, then fail
    the next version at each multiple of max_drop and at the stated drop."""
    where = [OC_SOURCES.index(cell.source), CORRELATED.index(cell.rho)]
    rng = np.random.default_rng([seed, 7, *where, number])
    ids = tuple(f"q{i}" for i in range(N))
    rows = {"all": np.arange(N, dtype=np.int64)}
    thresholds = {METRIC: Threshold(max_drop=MAX_DROP)}
    runs: list[dict[str, FloatArray]] = []
    source: DeltaSource | None = None
    sides: tuple[Runs, Runs] | None = None
    if cell.source == "repeats":
        # A retriever whose every run differs from the last as much as a change does: the
        # baseline is the mean of REPEATS runs, the change one run, as `check` takes them.
        quality = rng.normal(0.0, 1.0, N)
        runs = [{METRIC: _runs(rng, quality, cell.rho)} for _ in range(REPEATS)]
        base = {METRIC: np.mean([run[METRIC] for run in runs], axis=0)}
        source = repeats_source(runs, ids, 1)
        after = _runs(rng, quality, cell.rho)
    else:
        # Main's versions: each correlates at rho with the one before (AR(1), same marginal).
        first, following = _gaussian(cell.rho)
        chain = [first(rng, N)]
        steps = HISTORY_PAIRS if cell.source == "history" else 0
        for _ in range(steps):
            chain.append(following(rng, chain[-1]))
        if steps:
            pairs = tuple(pairwise_sides(chain))
            source = DeltaSource(
                kind="history",
                label="main",
                query_ids=ids,
                pairs=tuple({METRIC: b[METRIC] - a[METRIC]} for a, b in pairs),
                sides=pairs,
            )
        base = {METRIC: chain[-1].scores}
        after = following(rng, chain[-1]).scores
    (claim,) = estimate(
        base, rows, thresholds, {}, settings, runs=runs, current_runs=1, spread=source
    )
    if cell.source != "assumption":
        sides = ((*runs,), ({METRIC: after},)) if runs else None
    cell.trials += 1
    if claim.correlation is not None:
        cell.correlations.append(claim.correlation.value)

    def fails(drop: float) -> bool:
        current = {METRIC: after - drop}
        (check,) = compare(base, current, rows, thresholds, {}, settings, runs=sides)
        return check.failed

    if claim.fail_range is not None:
        cell.lowest.append([low for low, _ in claim.fail_range])
        cell.highest.append([high for _, high in claim.fail_range])
        at = next(r for r in claim.by_correlation if r.correlation == cell.rho)
        cell.printed.append(list(at.fail_probability or ()))
        stated = at.detectable_drop
    else:
        cell.printed.append(list(claim.fail_probability or ()))
        stated = claim.detectable_drop
    for i, multiple in enumerate(OPERATING):
        cell.hits[i] += fails(multiple * MAX_DROP)
    if stated is not None:
        cell.claims.append(stated)
        cell.claim_hits += fails(stated)


def pairwise_sides(chain: Sequence[Version]) -> list[tuple[dict[str, FloatArray], ...]]:
    return [({METRIC: a.scores}, {METRIC: b.scores}) for a, b in itertools.pairwise(chain)]


def oc_report(cells: Sequence[OcCell], power: float) -> tuple[str, float]:
    """The table, and the largest gap between a printed figure and its simulated rate (for
    the assumption: between the printed range and the rate, 0 inside it)."""
    header = ["runs correlate", "read from", "correlation stated (mean)", "stated drop pt"]
    header += ["P(fail) at it", *(f"P(fail) {m:g}x: printed / simulated" for m in OPERATING)]
    body, worst = [], 0.0
    for cell in cells:
        stated = "-" if not cell.correlations else f"{statistics.mean(cell.correlations):.3f}"
        row = [f"{cell.rho:g}", cell.source, stated, pt(cell.claims)]
        row.append(rate(cell.claim_hits, len(cell.claims)) if cell.claims else "-")
        if cell.claims:
            worst = max(worst, abs(cell.claim_hits / len(cell.claims) - power))
        for i in range(len(OPERATING)):
            simulated = cell.hits[i] / cell.trials
            printed = statistics.mean(p[i] for p in cell.printed)
            shown = f"{printed:.3f}"
            if cell.lowest:
                low = statistics.mean(p[i] for p in cell.lowest)
                high = statistics.mean(p[i] for p in cell.highest)
                shown = f"{low:.3f}-{high:.3f} ({printed:.3f} at {cell.rho:g})"
                worst = max(worst, low - simulated, simulated - high)
            else:
                worst = max(worst, abs(printed - simulated))
            row.append(f"{shown} / {rate(cell.hits[i], cell.trials)}")
        body.append(row)
    return table(header, body, right=set(range(2, len(header)))), worst


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials per row (default 1000)")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--sources", nargs="*", default=list(SOURCES), choices=SOURCES)
    parser.add_argument(
        "--tables",
        nargs="*",
        default=["claims", "correlations"],
        choices=("claims", "correlations"),
        help="the claims per source and kind of data, and the operating characteristic at "
        "four correlations (default both)",
    )
    args = parser.parse_args(argv)
    settings = ComparisonSettings()
    started = time.process_time()
    if "claims" in args.tables:
        found = worlds()
        _WORLD_NAMES[:] = [w.name for w in found]
        cells = [Cell(world, source) for world in found for source in args.sources]
        for cell in cells:
            for number in range(args.trials):
                trial(cell, args.seed, number, settings)
        print(
            f"{N} queries, {METRIC} max_drop {MAX_DROP * 100:g}pt, one check at alpha "
            f"{settings.alpha:g} ({settings.resamples} sign-flip resamples); {args.trials} "
            f"trials per row, seed {args.seed}; history {HISTORY_PAIRS} pairs, repeats {REPEATS} "
            f"runs with per-query noise sd {REPEAT_SD}; the 10% drops fall on exactly "
            f"{round(SHARE * N)} of the queries that moved; without data the claim is the top "
            "of the stated range (runs correlating 0.3)\n"
        )
        print(report(cells, settings.power))
    if "correlations" in args.tables:
        oc = [OcCell(rho, source) for rho in CORRELATED for source in OC_SOURCES]
        for oc_cell in oc:
            for number in range(args.trials):
                oc_trial(oc_cell, args.seed, number, settings)
        text, worst = oc_report(oc, settings.power)
        print(
            f"\n{N} queries, scores N(0.5, {SCORE_SD}); history: {HISTORY_PAIRS} pairs of "
            f"versions each correlating at the row's correlation with the one before; repeats: "
            f"{REPEATS} runs of a retriever whose runs correlate at it (the change one more run); "
            f"the assumption: no data, the next version correlating at it. Printed: the mean over "
            f"trials of what `power` states (without data: its range, and its figure at the "
            f"row's correlation); {args.trials} trials per row, seed {args.seed}\n"
        )
        print(text)
        print(f"\nlargest gap between a printed figure (or range) and simulation: {worst:.3f}")
    print(f"\nCPU {time.process_time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
