"""Benchmark the label-hole bounds: their extra time in `check`, and a seeded simulation that
every check they call robust keeps its verdict under random gradings of its unjudged documents.

    python benchmarks/simulations/bench_label_holes.py  # example-regressed and 2,000 queries
    python benchmarks/simulations/bench_label_holes.py --queries 20000 --gradings 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from retrieval_gate.core.ids import FloatArray  # noqa: E402
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare  # noqa: E402
from retrieval_gate.gate.explain.diagnostics import graded_top_ks  # noqa: E402
from retrieval_gate.gate.explain.label_holes import hole_extremes, label_holes  # noqa: E402
from retrieval_gate.metrics import evaluate  # noqa: E402
from retrieval_gate.readers import qrels_from_dict, run_from_dict  # noqa: E402

METRICS = ["ndcg@10", "recall@10", "rr@10", "precision@10"]
K = 10
INTENTS = 4


def median_seconds(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def example_regressed(repeat: int) -> None:
    """`decide` on configs/example-regressed.yaml, and the bounds' share of it."""
    import shutil

    from retrieval_gate.config.loader import load
    from retrieval_gate.gate import decide as decide_module
    from retrieval_gate.gate.baseline.file import read_baseline
    from retrieval_gate.pipeline.record import record_current

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "configs"
        shutil.copytree(ROOT / "configs", target, ignore=shutil.ignore_patterns(".cache*"))
        config = load(target / "example-regressed.yaml")
        current = record_current(config, cache=False)
        baseline = read_baseline(config.resolve(config.baseline))

        def run() -> Any:
            return decide_module.decide(baseline, current.record, config, current.dataset)

        with_bounds = median_seconds(run, repeat)
        real = decide_module.label_holes
        decide_module.label_holes = lambda *args, **kwargs: ()  # type: ignore[assignment]
        try:
            without = median_seconds(run, repeat)
        finally:
            decide_module.label_holes = real
        result = run()
    robust = sum(h.robust for h in result.label_holes)
    print(
        f"example-regressed: decide {without * 1000:.0f} ms without the bounds, "
        f"{with_bounds * 1000:.0f} ms with them (+{(with_bounds - without) * 1000:.0f} ms); "
        f"{len(result.label_holes)} checks bounded, {robust} robust, "
        f"{sum(h.exact for h in result.label_holes)} exact"
    )


def synthetic(queries: int, seed: int) -> dict[str, Any]:
    """Graded qrels (0-3, 10 judged docs a query of a pool of 14) and two top 10s with about
    three unjudged documents each: the baseline's ranked by grade (with noise), the current
    one shuffled on a third of the queries (a regression the unjudged ones rarely undo)."""
    rng = np.random.default_rng(seed)
    query_ids = [f"q{i:06d}" for i in range(queries)]
    judgments = {}
    tops: list[dict[str, list[str]]] = [{}, {}]
    for q in query_ids:
        pool = [f"d{j}" for j in range(14)]
        grades = rng.choice(4, 14, p=[0.4, 0.3, 0.2, 0.1]).astype(float)
        judgments[q] = {pool[j]: float(grades[j]) for j in rng.choice(14, 10, replace=False)}
        known = np.asarray([judgments[q].get(d, 1.5) for d in pool])
        ranked = [pool[j] for j in np.argsort(-(known + rng.normal(0, 0.7, 14)))[:K]]
        tops[0][q] = ranked
        tops[1][q] = ranked if rng.random() < 2 / 3 else [pool[j] for j in rng.permutation(14)[:K]]
    return {"query_ids": query_ids, "judgments": judgments, "old": tops[0], "new": tops[1]}


def scored(
    case: Mapping[str, Any], labels: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    qrels = qrels_from_dict(labels)
    found = [evaluate(run_from_dict(case[side]), qrels, METRICS).values for side in ("old", "new")]
    return found[0], found[1]


def large(queries: int, gradings: int, seed: int, repeat: int) -> None:
    case = synthetic(queries, seed)
    query_ids, judgments = case["query_ids"], case["judgments"]
    qrels = qrels_from_dict(judgments)
    slices = {"all": np.arange(queries)}
    for i in range(INTENTS):
        slices[f"intent={i}"] = np.arange(i, queries, INTENTS)
    thresholds = {metric: Threshold(max_drop=0.01) for metric in METRICS}
    settings = ComparisonSettings(resamples=2000)

    def decide(base: Mapping[str, FloatArray], cur: Mapping[str, FloatArray]) -> Any:
        return compare(base, cur, slices, thresholds, {}, settings)

    scores = scored(case, judgments)
    checks = decide(*scores)
    before, after = graded_top_ks(case["old"], case["new"], query_ids, qrels)
    compare_time = median_seconds(lambda: decide(*scores), repeat)

    def bound() -> Any:
        found = hole_extremes(checks, before, after, qrels, k=K)
        return label_holes(checks, found, slices, scores, decide)

    holes = bound()
    bound_time = median_seconds(bound, repeat)
    unjudged = sum(1 for q in query_ids for d in case["new"][q] if d not in judgments[q])
    print(
        f"{queries:,} queries, k = {K}, {unjudged:,} unjudged documents in the current top k: "
        f"compare {compare_time:.2f} s, bounds {bound_time:.2f} s for {len(holes)} checks "
        f"({sum(h.robust for h in holes)} robust, {sum(h.exact for h in holes)} exact)"
    )
    # The simulation: random gradings of every unjudged document; a robust check's verdict
    # must be the one it has under each.
    rng = np.random.default_rng(seed + 1)
    robust = {(h.metric, h.slice): h.verdict for h in holes if h.robust}
    broken = 0
    for _ in range(gradings):
        labels = {q: dict(j) for q, j in judgments.items()}
        for q in query_ids:
            for d in {*case["old"][q], *case["new"][q]}:
                if labels[q].get(d, -1.0) < 0:
                    labels[q][d] = float(rng.choice(4))
        for check in decide(*scored(case, labels)):
            if robust.get((check.metric, check.slice), check.verdict) != check.verdict:
                broken += 1
    print(f"  {gradings} random gradings: {broken} robust verdicts changed (must be 0)")
    if broken:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--gradings", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    example_regressed(args.repeat)
    large(args.queries, args.gradings, args.seed, args.repeat)


if __name__ == "__main__":
    main()
