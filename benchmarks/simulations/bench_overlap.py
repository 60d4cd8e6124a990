"""Simulate the label-free overlap gate on a seeded nondeterministic retriever: the A/A false
alarm with and without repeats, and the power when some queries lose part of their top 10."""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table  # noqa: E402
from retrieval_gate.core.ids import FloatArray, IntArray  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold  # noqa: E402
from retrieval_gate.gate.modes.label_free import (  # noqa: E402
    LabelFreeCheck,
    Lists,
    label_free_comparisons,
    overlap_columns,
)

K = 10
POOL = 60
"""Candidate documents per query: the retriever ranks them by a latent score plus noise."""
SOURCES = (("web", 0.5), ("app", 0.3), ("api", 0.2))
CHECKS = (
    LabelFreeCheck(name="overlap@10", measure="overlap", k=K, threshold=Threshold(max_drop=0.02)),
    LabelFreeCheck(name="rbo@10", measure="rbo", k=K, threshold=Threshold(max_drop=0.02), p=0.9),
    LabelFreeCheck(
        name="lost@10>3",
        measure="lost",
        k=K,
        threshold=Threshold(max_drop=0.05, direction="lower"),
        more_than=3,
    ),
)
STRICTEST = tuple(
    LabelFreeCheck(
        name=c.name,
        measure=c.measure,
        k=c.k,
        threshold=Threshold(max_drop=0.0, direction=c.threshold.direction),
        p=c.p,
        more_than=c.more_than,
    )
    for c in CHECKS
)
"""The same checks with max_drop 0: any significant drop fails, so the test's level binds."""
SETTINGS = ComparisonSettings(alpha=0.05, resamples=2000, min_size=30)


@dataclass(frozen=True)
class Scenario:
    label: str
    repeats: int
    noise: float
    """Sd of the per-run score noise (latent scores are N(0, 1)): the nondeterminism."""
    changed: float = 0.0
    """Share of queries whose current retriever drops `lost` of their top 10."""
    lost: int = 4
    strictest: bool = False
    """Thresholds of 0 (`STRICTEST`) instead of `CHECKS`'."""


def latent(queries: int, rng: np.random.Generator) -> FloatArray:
    """Each query's documents' latent scores, best first."""
    return -np.sort(-rng.standard_normal((queries, POOL)), axis=1)


def changed_scores(
    scores: FloatArray, share: float, lost: int, rng: np.random.Generator
) -> FloatArray:
    """`scores` with `lost` random documents of the top 10 pushed far down for a random
    `share` of the queries: the real change the gate should catch."""
    out = scores.copy()
    hit = rng.random(scores.shape[0]) < share
    for q in np.flatnonzero(hit):
        out[q, rng.choice(K, size=lost, replace=False)] -= 10.0
    return out


def run(scores: FloatArray, noise: float, ids: Sequence[str], rng: np.random.Generator) -> Lists:
    """One run of the retriever: each query's top 10 by its scores plus fresh noise."""
    drawn = scores + noise * rng.standard_normal(scores.shape)
    top = np.argsort(-drawn, axis=1, kind="stable")[:, :K]
    return {query: tuple(f"d{d}" for d in row) for query, row in zip(ids, top, strict=True)}


def slices_of(queries: int, rng: np.random.Generator) -> dict[str, IntArray]:
    labels = rng.choice(len(SOURCES), size=queries, p=[share for _, share in SOURCES])
    found = {"all": np.arange(queries, dtype=np.int64)}
    for i, (name, _) in enumerate(SOURCES):
        found[f"source={name}"] = np.flatnonzero(labels == i).astype(np.int64)
    return found


def trial(scenario: Scenario, queries: int, seed: int) -> tuple[bool, dict[str, bool]]:
    """Whether the gate failed, and which check failed overall."""
    rng = np.random.default_rng([seed, queries, scenario.repeats])
    ids = [f"q{i:05d}" for i in range(queries)]
    base = latent(queries, rng)
    now = changed_scores(base, scenario.changed, scenario.lost, rng) if scenario.changed else base
    reference = [run(base, scenario.noise, ids, rng) for _ in range(scenario.repeats)]
    current = [run(now, scenario.noise, ids, rng) for _ in range(scenario.repeats)]
    checks = STRICTEST if scenario.strictest else CHECKS
    columns = overlap_columns(checks, ids, reference, current)
    settings = ComparisonSettings(
        alpha=SETTINGS.alpha,
        resamples=SETTINGS.resamples,
        min_size=SETTINGS.min_size,
        seed=seed,
    )
    found = label_free_comparisons(checks, columns, slices_of(queries, rng), settings)
    overall = {c.metric: c.failed for c in found if c.slice == "all"}
    return any(c.failed for c in found), overall


def simulate(scenario: Scenario, queries: int, trials: int) -> list[str]:
    fails = 0
    by_check = dict.fromkeys((c.name for c in CHECKS), 0)
    for t in range(trials):
        failed, overall = trial(scenario, queries, t)
        fails += failed
        for name, hit in overall.items():
            by_check[name] += hit
    return [
        scenario.label,
        "0" if scenario.strictest else "2pt / 5pt",
        str(scenario.repeats),
        f"{scenario.noise:g}",
        f"{scenario.changed:.0%}" + (f" lose {scenario.lost}" if scenario.changed else ""),
        rate(fails, trials),
        *(rate(by_check[c.name], trials) for c in CHECKS),
    ]


SCENARIOS = (
    Scenario("A/A deterministic", 1, 0.0),
    Scenario("A/A nondeterministic, no repeats", 1, 0.15),
    Scenario("A/A nondeterministic, repeats 2", 2, 0.15),
    Scenario("A/A very noisy, repeats 2", 2, 0.4),
    Scenario("A/A nondeterministic, repeats 3", 3, 0.15),
    Scenario("A/A nondeterministic, repeats 2", 2, 0.15, strictest=True),
    Scenario("A/A very noisy, repeats 2", 2, 0.4, strictest=True),
    Scenario("A/A nondeterministic, repeats 3", 3, 0.15, strictest=True),
    Scenario("change, repeats 2", 2, 0.15, changed=0.10, lost=4),
    Scenario("change, repeats 2", 2, 0.15, changed=0.05, lost=4),
    Scenario("change, deterministic", 1, 0.0, changed=0.10, lost=4),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=400, help="trials per row (400)")
    parser.add_argument("--queries", type=int, default=500, help="unlabelled queries (500)")
    args = parser.parse_args(argv)
    started = time.process_time()
    body = [simulate(s, args.queries, args.trials) for s in SCENARIOS]
    header = [
        "scenario",
        "max_drop",
        "repeats",
        "noise sd",
        "true change",
        "P(gate fails)",
        *(f"P({c.name} fails overall)" for c in CHECKS),
    ]
    print(
        f"{args.queries} unlabelled queries (slices source=web/app/api, 50/30/20%), "
        f"{POOL} candidates a query with N(0, 1) latent scores, each run ranking them by score "
        f"+ N(0, noise sd); thresholds overlap@10 and rbo@10 (p 0.9) max_drop 2pt, lost@10>3 "
        f"max_share 5% (or all 0: any significant drop fails); alpha {SETTINGS.alpha}, "
        "randomization test, "
        f"{SETTINGS.resamples} resamples; {args.trials} trials a row, Wilson 95% intervals.\n"
    )
    print(table(header, body, right=set(range(2, len(header)))))
    print(f"\nCPU time {time.process_time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
