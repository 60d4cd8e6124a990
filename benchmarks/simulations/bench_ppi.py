"""Prediction-powered gating under biased LLM judges: coverage, false alarms, power, width.

A seeded simulation at the level of judgments and rankings. Each replication draws 2,000
queries with a pool of 20 documents each (true grades 0-3; 40% of the queries "hard", with
fewer relevant documents; an independent "segment" a/b), and two systems that rank each
pool by grade plus Gaussian noise. The reference system's noise is fixed; the candidate's is
the same (A/A: the true delta is exactly 0) or larger, mostly on hard queries, tuned so that
the true drop of ndcg@10 over the population is 3 or 5 points. People's labels are the true
grades on n = 100 or 200 random queries; a judge grades every pool:

- noisy: one grade up or down (at random) on 30% of pairs, clipped to 0-3;
- over-grading: one grade up on 30% of pairs (clipped at 3);
- attribute: on hard queries one grade up on 50% of pairs, on the others one grade down on
  20%: a bias that depends on a query attribute, and the candidate's drop lives mostly on
  hard queries, so the judge's bias moves the delta itself.

The gate's checks are ndcg@10 and recall@10, each overall and on the slices hard, easy,
segment=a and segment=b (10 checks, one family: weighted Holm with the overall checks
sharing half of alpha = 0.05, `family_levels` and `adjust_p_values` as the gate does, and
a max_drop of 0, the strictest rule). For each check the paired delta is estimated by
`stats.ppi.ppi_mean` (PPI++: the judge-scored delta on the judge-only queries, rectified on
the human-judged ones), by the human-only paired t on the n queries, and, for contrast,
by the judge alone (a t interval over all 2,000 queries, no rectifier).

The metrics are a vectorised ndcg@10 (exponential gain, ideal from the pool) and recall@10
(grade >= 1), checked against the product's `metrics.evaluate` on one world at start.
The truth is the population mean delta of each check, from 200,000 queries drawn alike.

    python benchmarks/simulations/bench_ppi.py          # 2,000 replications per effect: 2-3 min
    python benchmarks/simulations/bench_ppi.py --quick  # 200 replications per effect: about 20 s
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from retrieval_gate.gate.checks.compare import ComparisonSettings
from retrieval_gate.gate.checks.family import family_levels
from retrieval_gate.stats.ppi import PpiEstimate, ppi_mean
from retrieval_gate.stats.significance import adjust_p_values, t_quantile

QUERIES = 2_000
POOL = 20
DEPTH = 10
HARD_SHARE = 0.4
EASY_GRADES = (0.55, 0.2, 0.15, 0.1)
HARD_GRADES = (0.7, 0.15, 0.1, 0.05)
SIGMA = 1.2
"""The reference system's ranking noise, in grades."""
EASY_WEIGHT = 0.3
"""How much of the candidate's extra noise easy queries get (hard ones get all of it)."""
HUMAN_COUNTS = (100, 200)
DROPS = (0.0, 0.03, 0.05)
METRICS = ("ndcg@10", "recall@10")
SLICES = ("all", "hard", "easy", "segment=a", "segment=b")
ALPHA = 0.05
TRUTH_QUERIES = 200_000

Judge = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def noisy(grades: np.ndarray, hard: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One grade up or down on 30% of pairs."""
    step = np.where(rng.random(grades.shape) < 0.5, -1, 1) * (rng.random(grades.shape) < 0.3)
    return np.clip(grades + step, 0, 3)


def over_grading(grades: np.ndarray, hard: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One grade up on 30% of pairs."""
    return np.clip(grades + (rng.random(grades.shape) < 0.3), 0, 3)


def attribute(grades: np.ndarray, hard: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Up on 50% of a hard query's pairs, down on 20% of an easy one's."""
    draw = rng.random(grades.shape)
    up = hard[:, None] & (draw < 0.5)
    down = ~hard[:, None] & (draw < 0.2)
    return np.clip(grades + up.astype(np.int64) - down.astype(np.int64), 0, 3)


JUDGES: dict[str, Judge] = {"noisy": noisy, "over-grading": over_grading, "attribute": attribute}


@dataclasses.dataclass(frozen=True)
class World:
    """Queries' attributes, true grades, and the two systems' top-10 pool positions."""

    hard: np.ndarray
    segment: np.ndarray
    grades: np.ndarray
    top_a: np.ndarray
    top_b: np.ndarray


def draw_world(rng: np.random.Generator, size: int, extra: float) -> World:
    """`size` queries; the candidate's noise is SIGMA * (1 + extra * weight)."""
    hard = rng.random(size) < HARD_SHARE
    draw = rng.random((size, POOL))
    grades = np.where(
        hard[:, None],
        np.searchsorted(np.cumsum(HARD_GRADES), draw),
        np.searchsorted(np.cumsum(EASY_GRADES), draw),
    ).clip(0, 3)
    segment = rng.random(size) < 0.5
    noise_a = rng.standard_normal((size, POOL))
    noise_b = rng.standard_normal((size, POOL))
    return World(hard, segment, grades, *_tops(grades, hard, noise_a, noise_b, extra))


def _tops(
    grades: np.ndarray, hard: np.ndarray, noise_a: np.ndarray, noise_b: np.ndarray, extra: float
) -> tuple[np.ndarray, np.ndarray]:
    weight = np.where(hard, 1.0, EASY_WEIGHT)[:, None]
    top_a = np.argsort(-(grades + SIGMA * noise_a), axis=1, kind="stable")[:, :DEPTH]
    scale = SIGMA * (1.0 + extra * weight)
    top_b = np.argsort(-(grades + scale * noise_b), axis=1, kind="stable")[:, :DEPTH]
    return top_a, top_b


_DISCOUNT = 1.0 / np.log2(np.arange(2, DEPTH + 2))


def scores(grades: np.ndarray, top: np.ndarray) -> dict[str, np.ndarray]:
    """ndcg@10 (exponential gain, ideal from the pool) and recall@10 (grade >= 1) per query."""
    gain = np.exp2(grades) - 1.0
    ranked = np.take_along_axis(gain, top, axis=1)
    ideal = -np.sort(-gain, axis=1)[:, :DEPTH]
    best = ideal @ _DISCOUNT
    dcg = ranked @ _DISCOUNT
    ndcg = np.divide(dcg, best, out=np.zeros_like(dcg), where=best > 0)
    relevant = (grades >= 1).sum(axis=1)
    found = (np.take_along_axis(grades, top, axis=1) >= 1).sum(axis=1)
    recall = np.divide(found, relevant, out=np.zeros(len(found)), where=relevant > 0)
    return {"ndcg@10": ndcg, "recall@10": recall}


def deltas(world: World, grades: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query candidate - reference of each metric, scored with `grades`."""
    before, after = scores(grades, world.top_a), scores(grades, world.top_b)
    return {m: after[m] - before[m] for m in METRICS}


def slice_masks(world: World) -> dict[str, np.ndarray]:
    return {
        "all": np.ones(world.hard.size, dtype=bool),
        "hard": world.hard,
        "easy": ~world.hard,
        "segment=a": world.segment,
        "segment=b": ~world.segment,
    }


def check_against_evaluate(seed: int) -> None:
    """The vectorised metrics equal the product's `metrics.evaluate` on one small world."""
    from retrieval_gate.metrics import evaluate

    world = draw_world(np.random.default_rng([seed, 99]), 300, 0.5)
    qrels = {
        f"q{i}": {f"d{j}": int(world.grades[i, j]) for j in range(POOL)}
        for i in range(world.grades.shape[0])
    }
    for top in (world.top_a, world.top_b):
        run = {
            f"q{i}": {f"d{j}": float(DEPTH - r) for r, j in enumerate(top[i])}
            for i in range(top.shape[0])
        }
        mine = scores(world.grades, top)
        theirs = evaluate(run, qrels, list(METRICS))
        order = [int(q[1:]) for q in theirs.query_ids]
        for metric in METRICS:
            if not np.allclose(theirs.values[metric], mine[metric][order], atol=1e-12):
                raise SystemExit(f"vectorised {metric} differs from metrics.evaluate")


def tuned_drop(target: float, seed: int) -> tuple[float, dict[tuple[str, str], float]]:
    """The candidate's extra noise giving a true ndcg@10 drop of `target`, and every check's
    true delta, from TRUTH_QUERIES queries (common random numbers across the bisection)."""
    rng = np.random.default_rng([seed, 1, round(target * 1000)])
    base = draw_world(rng, TRUTH_QUERIES, 0.0)
    noise_a = rng.standard_normal(base.grades.shape)
    noise_b = rng.standard_normal(base.grades.shape)

    def world(extra: float) -> World:
        top_a, top_b = _tops(base.grades, base.hard, noise_a, noise_b, extra)
        return dataclasses.replace(base, top_a=top_a, top_b=top_b)

    low, high = 0.0, 8.0
    if target > 0:
        for _ in range(40):
            middle = (low + high) / 2.0
            if -deltas(world(middle), base.grades)["ndcg@10"].mean() < target:
                low = middle
            else:
                high = middle
    extra = (low + high) / 2.0 if target > 0 else 0.0
    chosen = world(extra)
    found = deltas(chosen, base.grades)
    masks = slice_masks(chosen)
    truth = {
        (m, s): (0.0 if target == 0 else float(found[m][masks[s]].mean()))
        for m in METRICS
        for s in SLICES
    }
    return extra, truth


@lru_cache(maxsize=4096)
def _quantile(df: int) -> float:
    return t_quantile(0.975, df)


def _interval(found: PpiEstimate) -> tuple[float, float]:
    half = _quantile(max(1, int(found.df))) * found.se
    return found.estimate - half, found.estimate + half


class Tally:
    """Counts of successes over replications, per named figure."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.trials: dict[str, int] = {}
        self.sums: dict[str, float] = {}

    def count(self, name: str, hit: bool) -> None:
        self.hits[name] = self.hits.get(name, 0) + int(hit)
        self.trials[name] = self.trials.get(name, 0) + 1

    def add(self, name: str, value: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + value
        self.trials[name] = self.trials.get(name, 0) + 1

    def rate(self, name: str) -> str:
        hits, trials = self.hits[name], self.trials[name]
        low, high = wilson(hits, trials)
        return f"{hits / trials:.3f} [{low:.3f}, {high:.3f}]"

    def mean(self, name: str) -> float:
        return self.sums[name] / self.trials[name]


def wilson(hits: int, trials: int) -> tuple[float, float]:
    """The Wilson 95% interval of a binomial proportion."""
    z = 1.959963984540054
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return centre - half / (1 + z * z / trials), centre + half / (1 + z * z / trials)


def replicate(
    rng: np.random.Generator,
    extra: float,
    truth: dict[tuple[str, str], float],
    drop: float,
    tally: Tally,
    settings: ComparisonSettings,
) -> None:
    """One world, judged by every judge, gated at every human count."""
    world = draw_world(rng, QUERIES, extra)
    human = deltas(world, world.grades)
    masks = slice_masks(world)
    order = rng.permutation(QUERIES)
    checks = [(m, s) for m in METRICS for s in SLICES]
    for judge_name, judge in JUDGES.items():
        judged = deltas(world, judge(world.grades, world.hard, rng))
        for n in HUMAN_COUNTS:
            labelled = np.zeros(QUERIES, dtype=bool)
            labelled[order[:n]] = True
            cell = f"{judge_name}|{n}|{drop}"
            assisted: list[PpiEstimate] = []
            alone: list[PpiEstimate] = []
            for metric, name in checks:
                inside = masks[name]
                ours, theirs = labelled & inside, ~labelled & inside
                y, f = human[metric][ours], judged[metric][ours]
                assisted.append(ppi_mean(y, f, judged[metric][theirs]))
                alone.append(ppi_mean(y, f, judged[metric][theirs], lam=0.0))
            for label, found in (("ppi", assisted), ("human", alone)):
                sizes = [(name, int(e.n)) for (_, name), e in zip(checks, found, strict=True)]
                levels, _ = family_levels(sizes, settings)
                family = sorted(levels)
                adjusted = adjust_p_values(
                    [found[i].p_drop for i in family], "holm", [levels[i] for i in family]
                )
                rejected = {i for i, p in zip(family, adjusted, strict=True) if p <= ALPHA}
                if drop == 0:
                    tally.count(f"{cell}|{label}|false_alarm", bool(rejected))
                else:
                    tally.count(f"{cell}|{label}|power", 0 in rejected)
                for index in (0, len(SLICES)):  # the overall checks of both metrics
                    low, high = _interval(found[index])
                    metric = checks[index][0]
                    tally.count(
                        f"{cell}|{label}|cover|{metric}", low <= truth[metric, "all"] <= high
                    )
            low, high = _interval(assisted[0])
            human_low, human_high = _interval(alone[0])
            tally.add(f"{cell}|width_ratio", (high - low) / (human_high - human_low))
            tally.add(f"{cell}|lam", assisted[0].lam)
        # The judge alone, no rectifier: every query, a t interval.
        for metric in METRICS:
            values = judged[metric]
            half = _quantile(QUERIES - 1) * float(values.std(ddof=1)) / math.sqrt(QUERIES)
            middle = float(values.mean())
            covered = middle - half <= truth[metric, "all"] <= middle + half
            tally.count(f"{judge_name}|{drop}|llm_only|cover|{metric}", covered)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="200 replications per effect")
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()
    replications = 200 if args.quick else args.replications
    started = time.perf_counter()
    check_against_evaluate(args.seed)
    settings = ComparisonSettings(alpha=ALPHA, test="t", overall_share=0.5)
    tally = Tally()
    for drop in DROPS:
        extra, truth = tuned_drop(drop, args.seed)
        rng = np.random.default_rng([args.seed, 2, round(drop * 1000)])
        for _ in range(replications):
            replicate(rng, extra, truth, drop, tally, settings)
        print(
            f"drop {drop * 100:.0f} pt: candidate noise x{1 + extra:.3f} on hard queries; true "
            f"ndcg@10 delta {truth['ndcg@10', 'all']:+.4f}, recall@10 "
            f"{truth['recall@10', 'all']:+.4f}",
            file=sys.stderr,
        )
    print(
        f"{QUERIES} queries, {replications} replications per effect, alpha {ALPHA}, "
        f"{len(METRICS) * len(SLICES)} checks; [.] = Wilson 95% interval\n"
    )
    print(
        "| judge | n human | coverage PPI ndcg@10 (A/A, 3, 5 pt pooled) | coverage PPI "
        "recall@10 | coverage human-only ndcg@10 | coverage LLM-only ndcg@10 | false alarm "
        "PPI (A/A) | false alarm human-only | power PPI 3 pt | power human 3 pt | power PPI "
        "5 pt | power human 5 pt | width PPI / human | mean lambda |"
    )
    print("|" + "---|" * 14)
    for judge in JUDGES:
        for n in HUMAN_COUNTS:
            pooled = Tally()
            for drop in DROPS:
                cell = f"{judge}|{n}|{drop}"
                for label, metric in (
                    ("ppi", "ndcg@10"),
                    ("ppi", "recall@10"),
                    ("human", "ndcg@10"),
                ):
                    key = f"{cell}|{label}|cover|{metric}"
                    pooled.hits[f"{label}|{metric}"] = (
                        pooled.hits.get(f"{label}|{metric}", 0) + tally.hits[key]
                    )
                    pooled.trials[f"{label}|{metric}"] = (
                        pooled.trials.get(f"{label}|{metric}", 0) + tally.trials[key]
                    )
                key = f"{judge}|{drop}|llm_only|cover|ndcg@10"
                pooled.hits["llm"] = pooled.hits.get("llm", 0) + tally.hits[key]
                pooled.trials["llm"] = pooled.trials.get("llm", 0) + tally.trials[key]
            ratio = np.mean([tally.mean(f"{judge}|{n}|{d}|width_ratio") for d in DROPS])
            lam = np.mean([tally.mean(f"{judge}|{n}|{d}|lam") for d in DROPS])
            print(
                f"| {judge} | {n} | {pooled.rate('ppi|ndcg@10')} | "
                f"{pooled.rate('ppi|recall@10')} | {pooled.rate('human|ndcg@10')} | "
                f"{pooled.rate('llm')} | {tally.rate(f'{judge}|{n}|0.0|ppi|false_alarm')} | "
                f"{tally.rate(f'{judge}|{n}|0.0|human|false_alarm')} | "
                f"{tally.rate(f'{judge}|{n}|0.03|ppi|power')} | "
                f"{tally.rate(f'{judge}|{n}|0.03|human|power')} | "
                f"{tally.rate(f'{judge}|{n}|0.05|ppi|power')} | "
                f"{tally.rate(f'{judge}|{n}|0.05|human|power')} | {ratio:.3f} | {lam:.2f} |"
            )
    print("\nLLM-only (no rectifier) coverage of the ndcg@10 delta, by effect:")
    for judge in JUDGES:
        rates = ", ".join(
            f"{d * 100:.0f} pt {tally.rate(f'{judge}|{d}|llm_only|cover|ndcg@10')}" for d in DROPS
        )
        print(f"- {judge}: {rates}")
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.quick:
        print("\n--quick: too few replications to test the claims")
        return 0
    broken = broken_claims(tally)
    for claim in broken:
        print(f"does not hold: {claim}")
    if not broken:
        print("\nclaims hold: PPI coverage >= 0.94, family-wise false alarm <= alpha, PPI narrower")
    return 1 if broken else 0


def broken_claims(tally: Tally) -> list[str]:
    """docs/llm-labels-statistics.md's claims the tally contradicts, on point estimates:
    coverage pooled over the three effects (3 x the replications per judge and n)."""
    broken = []
    for judge in JUDGES:
        for n in HUMAN_COUNTS:
            for metric in METRICS:
                keys = [f"{judge}|{n}|{drop}|ppi|cover|{metric}" for drop in DROPS]
                hits = sum(tally.hits[key] for key in keys)
                trials = sum(tally.trials[key] for key in keys)
                if hits / trials < 0.94:
                    broken.append(f"{judge}, n {n}, {metric}: coverage {hits / trials:.3f}")
            for drop in DROPS:
                if tally.mean(f"{judge}|{n}|{drop}|width_ratio") >= 1.0:
                    broken.append(f"{judge}, n {n}, drop {drop}: PPI not narrower")
            key = f"{judge}|{n}|0.0|ppi|false_alarm"
            if tally.hits[key] / tally.trials[key] > ALPHA:
                broken.append(f"{judge}, n {n}: false alarm {tally.rate(key)}")
    return broken


if __name__ == "__main__":
    raise SystemExit(main())
