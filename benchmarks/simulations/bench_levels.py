"""Simulate gating a chunked corpus at both levels (dataset.other_level: gate): the false alarms
of the two families together, each at half of alpha, against gating them both at alpha.

    python benchmarks/simulations/bench_levels.py                   # 1,000 A/A trials a row
    python benchmarks/simulations/bench_levels.py --trials 200 --queries 60

Each trial draws a labelled set of chunked documents and two runs of one retriever (the same
chunk-score distribution on both sides: no change), scores both at the chunk level and at the
document level (chunks rolled up as `gate/baseline/document_level.py` does: a document ranks
where its first chunk does, graded its chunks' highest), and decides both families with the
gate's `compare` at max_drop 0 (any significant drop fails: the most false alarms a threshold
allows). A false alarm is a trial where any check of either level fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.metrics import evaluate
from retrieval_gate.readers import qrels_from_dict, run_from_dict

METRICS = ["ndcg@10", "recall@10", "rr@10"]
K = 10
DOCUMENTS = 30
"""Documents a query's candidates come from; each cut into 1 to 4 chunks."""
SLICES = 3


def _labelled_set(rng: np.random.Generator, queries: int) -> tuple[list[dict[str, str]], dict]:
    """Per query: each chunk's source, and the chunk grades (2 to 4 relevant documents, some
    of whose chunks are graded 1 to 3)."""
    sources, judged = [], {}
    for q in range(queries):
        chunks = {}
        relevant = set(rng.choice(DOCUMENTS, size=rng.integers(2, 5), replace=False).tolist())
        grades = {}
        for d in range(DOCUMENTS):
            for c in range(int(rng.integers(1, 5))):
                chunk = f"q{q}-d{d}#{c}"
                chunks[chunk] = f"q{q}-d{d}"
                if d in relevant and rng.random() < 0.6:
                    grades[chunk] = float(rng.integers(1, 4))
        sources.append(chunks)
        judged[f"q{q}"] = grades
    return sources, judged


def _rankings(
    rng: np.random.Generator, sources: list[dict[str, str]], judged: dict, shared: list
) -> dict[str, list[str]]:
    """The top K chunks per query: a grade's worth of signal, a per-query part both sides
    share (`shared`: real runs of two versions correlate), and noise of this run."""
    top = {}
    for q, chunks in enumerate(sources):
        grades = judged[f"q{q}"]
        names = list(chunks)
        score = (
            np.asarray([grades.get(c, 0.0) for c in names]) * 0.8
            + shared[q]
            + rng.normal(0.0, 1.0, len(names))
        )
        top[f"q{q}"] = [names[i] for i in np.argsort(-score, kind="stable")[:K]]
    return top


def _rolled(top: dict[str, list[str]], sources: list[dict[str, str]]) -> dict[str, list[str]]:
    """Each chunk ranking as its documents: the first occurrence ranks, repeats drop."""
    return {
        q: list(dict.fromkeys(sources[int(q[1:])][chunk] for chunk in ranked))
        for q, ranked in top.items()
    }


def _graded_documents(judged: dict, sources: list[dict[str, str]]) -> dict:
    """Each document graded its judged chunks' highest."""
    out: dict[str, dict[str, float]] = {}
    for q, grades in judged.items():
        docs: dict[str, float] = {}
        for chunk, grade in grades.items():
            doc = sources[int(q[1:])][chunk]
            docs[doc] = max(docs.get(doc, grade), grade)
        out[q] = docs
    return out


def _scores(top: dict[str, list[str]], qrels: Qrels, ids: list[str]) -> dict[str, FloatArray]:
    found = evaluate(run_from_dict(top), qrels, METRICS)
    position = {q: i for i, q in enumerate(found.query_ids)}
    order = [position[q] for q in ids]
    return {m: np.asarray(found.values[m])[order] for m in METRICS}


def trial(rng: np.random.Generator, queries: int) -> dict[str, tuple]:
    """Both levels' (baseline, current) scores of one A/A trial."""
    sources, judged = _labelled_set(rng, queries)
    shared = [rng.normal(0.0, 0.5, len(chunks)) for chunks in sources]
    before, after = (_rankings(rng, sources, judged, shared) for _ in range(2))
    ids = [f"q{q}" for q in range(queries)]
    chunk_qrels = qrels_from_dict(judged)
    document_qrels = qrels_from_dict(_graded_documents(judged, sources))
    return {
        "chunk": (_scores(before, chunk_qrels, ids), _scores(after, chunk_qrels, ids)),
        "document": (
            _scores(_rolled(before, sources), document_qrels, ids),
            _scores(_rolled(after, sources), document_qrels, ids),
        ),
    }


def failed(scores: tuple, slices: dict[str, IntArray], alpha: float, seed: int) -> bool:
    thresholds = {m: Threshold(max_drop=0.0) for m in METRICS}
    settings = ComparisonSettings(alpha=alpha, seed=seed, min_size=10)
    checks = compare(scores[0], scores[1], slices, thresholds, {}, settings)
    return any(c.failed for c in checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--queries", type=int, nargs="+", default=[60, 150])
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    for queries in args.queries:
        rng = np.random.default_rng([args.seed, queries])
        slices = {"all": np.arange(queries)}
        slices |= {f"s={s}": np.arange(s, queries, SLICES) for s in range(SLICES)}
        counts = {"chunk alone": 0, "document alone": 0, "both, each at alpha": 0}
        counts["both, each at alpha/2 (the gate)"] = 0
        correlation = []
        for t in range(args.trials):
            levels = trial(rng, queries)
            full = {name: failed(s, slices, args.alpha, t) for name, s in levels.items()}
            half = [failed(s, slices, args.alpha / 2, t) for s in levels.values()]
            counts["chunk alone"] += full["chunk"]
            counts["document alone"] += full["document"]
            counts["both, each at alpha"] += full["chunk"] or full["document"]
            counts["both, each at alpha/2 (the gate)"] += any(half)
            deltas = [s[1]["ndcg@10"] - s[0]["ndcg@10"] for s in levels.values()]
            correlation.append(float(np.corrcoef(deltas[0], deltas[1])[0, 1]))
        for name, hits in counts.items():
            rows.append([str(queries), name, rate(hits, args.trials)])
        rows.append(
            [str(queries), "corr. of the levels' nDCG@10 deltas", f"{np.mean(correlation):.2f}"]
        )
    print(
        f"A/A trials: {args.trials} a row, alpha {args.alpha}, max_drop 0, "
        f"{len(METRICS)} metrics x (all + {SLICES} slices) a level, weighted Holm\n"
    )
    print(table(["queries", "gated", "P(false alarm) [95% CI]"], rows, {2}))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
