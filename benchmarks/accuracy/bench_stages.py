"""Benchmark the two-stage attribution: its counts against a brute-force recount on seeded random
cases, and its time on 10,000 queries of 100 candidates.

    python benchmarks/accuracy/bench_stages.py  # 2,000 cases, 10,000 queries timed
    python benchmarks/accuracy/bench_stages.py --trials 10000 --queries 20000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.core.ids import IntArray
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.gate.explain.stage_losses import stage_losses
from retrieval_gate.readers import qrels_from_dict

K = 10
CHECKS = ("ndcg@10", "recall(rel=2)@5", "precision(rel=3)@3")
"""A check per kind of cut: the full top k, a shallower one with rel 2, rel 3 at 3."""


def random_case(rng: np.random.Generator, queries: int, candidates: int) -> dict[str, Any]:
    """A reference top k and a current two-stage answer per query, over a pool of 3 x
    `candidates` docs: grades 0-3 on a random part of it, the current candidates a random
    `candidates` of the pool (the reference's docs kept with probability 0.8), the current top k
    mostly from them (one doc from elsewhere in a fifth of the queries)."""
    ids = [f"q{i:05d}" for i in range(queries)]
    pool_size = 3 * candidates
    qrels, reference, current, kept = {}, {}, {}, {}
    for query in ids:
        pool = [f"{query}-d{n}" for n in range(pool_size)]
        judged = rng.choice(pool_size, size=int(rng.integers(1, 30)), replace=False)
        qrels[query] = {pool[n]: int(rng.integers(0, 4)) for n in judged}
        ranked = [pool[n] for n in rng.choice(pool_size, size=K, replace=False)]
        reference[query] = ranked
        keep = [doc for doc in ranked if rng.random() < 0.8]
        others = [pool[n] for n in rng.permutation(pool_size) if pool[n] not in ranked]
        kept[query] = list(rng.permutation(keep + others[: candidates - len(keep)]))
        top = [str(doc) for doc in rng.permutation(kept[query])[:K]]
        if rng.random() < 0.2:
            top[int(rng.integers(0, K))] = others[-1]
        current[query] = top
    order = np.arange(queries, dtype=np.int64)
    slices = {"all": order, "even": order[::2], "odd": order[1::2], "first": order[: queries // 3]}
    return {
        "ids": ids,
        "qrels": qrels,
        "reference": reference,
        "current": current,
        "candidates": kept,
        "slices": slices,
    }


def attributed(case: Mapping[str, Any]) -> Any:
    return stage_losses(
        case["reference"],
        case["current"],
        case["candidates"],
        qrels_from_dict(case["qrels"]),
        case["ids"],
        [(metric, name) for metric in CHECKS for name in case["slices"]],
        case["slices"],
        K,
    )


def recount(case: Mapping[str, Any], metric: str, rows: IntArray) -> tuple[int, int]:
    """(lost by the first stage, demoted by the reranker) of a check, by sets."""
    depth = min(int(metric.rsplit("@", 1)[1]), K)
    rel = int(metric.split("rel=")[1][0]) if "rel=" in metric else 1
    first = second = 0
    for i in rows.tolist():
        query = case["ids"][i]
        grades = case["qrels"][query]
        relevant = {d for d in case["reference"][query][:depth] if grades.get(d, 0) >= rel}
        lost = relevant - set(case["current"][query][:depth])
        first += len(lost - set(case["candidates"][query]))
        second += len(lost & set(case["candidates"][query]))
    return first, second


def agreement(trials: int, seed: int) -> list[list[str]]:
    """Cases (1-50 queries, 5-100 candidates) whose every check and slice count agrees."""
    rng = np.random.default_rng(seed)
    agree = checks = lost_first = lost_second = 0
    for _ in range(trials):
        case = random_case(rng, int(rng.integers(1, 51)), int(rng.integers(K, 101)))
        found = attributed(case)
        same = True
        for loss in found.checks:
            first, second = recount(case, loss.metric, case["slices"][loss.slice])
            same &= (loss.first_stage, loss.reranker) == (first, second)
            if loss.slice == "all":
                lost_first += first
                lost_second += second
            checks += 1
        agree += same
    return [
        ["cases (1-50 queries, 10-100 candidates, k = 10)", f"{trials:,}"],
        ["checks x slices recounted", f"{checks:,}"],
        ["documents lost by the first stage (overall rows)", f"{lost_first:,}"],
        ["documents demoted by the reranker (overall rows)", f"{lost_second:,}"],
        ["cases where every count equals the recount", rate(agree, trials)],
    ]


def timing(queries: int, candidates: int, repeat: int, seed: int) -> list[list[str]]:
    case = random_case(np.random.default_rng(seed), queries, candidates)
    qrels = qrels_from_dict(case["qrels"])
    # Held as a record holds them: each query's ids decoded when read.
    reference, current, kept = (
        TopKIds.of(case[key]) for key in ("reference", "current", "candidates")
    )
    checks = [(metric, name) for metric in CHECKS for name in case["slices"]]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        stage_losses(reference, current, kept, qrels, case["ids"], checks, case["slices"], K)
        times.append(time.perf_counter() - start)
    return [
        [
            f"stage_losses, {queries:,} queries x {candidates} candidates, "
            f"{len(CHECKS)} checks x {len(case['slices'])} slices",
            f"{statistics.median(times):.3f} s (median of {repeat})",
        ]
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=2000, help="random cases recounted")
    parser.add_argument("--queries", type=int, default=10_000, help="queries timed")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per query timed")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (median shown)")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    rows = agreement(args.trials, args.seed)
    rows += timing(args.queries, args.candidates, args.repeat, args.seed)
    print(table(["measure", "value"], rows, right={1}))


if __name__ == "__main__":
    main()
