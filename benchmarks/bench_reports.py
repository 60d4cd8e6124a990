"""Render every report of a large gate result: time, size, and the JSON dump for scale."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from retrieval_gate.compare import GateSettings, Threshold, compare
from retrieval_gate.report import COMMENT_BUDGET, render, render_markdown, validate_result

METRICS = ("ndcg@10", "recall@10", "rr@10", "ap@100", "precision@10")
SIZES = {"small": (500, 10), "medium": (2_000, 40), "large": (20_000, 200)}


def make_document(queries: int, slices: int, seed: int = 0) -> dict[str, Any]:
    """A result document of `queries` queries in `slices` slices, one in five slightly worse."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:06d}" for i in range(queries)]
    labels = rng.integers(0, slices, queries)
    groups = {"all": np.arange(queries)}
    groups |= {f"segment=s{s:04d}": np.flatnonzero(labels == s) for s in range(slices)}
    base = {m: rng.beta(2, 2, queries) for m in METRICS}
    worse = rng.random(queries) < 0.2
    current = {m: np.clip(v - worse * rng.random(queries) * 0.3, 0, 1) for m, v in base.items()}
    thresholds = {m: Threshold(max_drop=0.02) for m in METRICS}
    settings = GateSettings(resamples=1_000, min_size=30)
    comparisons = compare(base, current, groups, thresholds, {}, settings)
    rows = [{**asdict(c), "failed": c.failed} for c in comparisons]
    order = np.argsort(current[METRICS[0]] - base[METRICS[0]])[:10]
    changes = [
        {
            "query_id": ids[i],
            "text": f"how do I change setting {i} <b>now</b>",
            "metric": METRICS[0],
            "before": float(base[METRICS[0]][i]),
            "after": float(current[METRICS[0]][i]),
            "delta": float(current[METRICS[0]][i] - base[METRICS[0]][i]),
            "moves": [{"doc_id": f"d{i}", "grade": 2.0, "before": 1, "after": 7}],
        }
        for i in order.tolist()
    ]
    prints = {"dataset": "0" * 64, "k": 10, "metrics": list(METRICS), "slices": "1" * 64}
    return {
        "schema_version": 1,
        "tool_version": "bench",
        "name": "bench",
        "status": "fail" if any(r["failed"] for r in rows) else "pass",
        "failures": [r for r in rows if r["failed"]],
        "comparisons": rows,
        "query_changes": changes,
        "warnings": [],
        "config": {"file": "gate.yaml", "sha256": "2" * 64, "k": 10, "gate": asdict(settings)},
        "baseline": {
            "created_at": "2026-01-01T00:00:00Z",
            "git_commit": "3" * 40,
            "git_dirty": False,
            "tool_version": "bench",
            "fingerprints": prints,
            "scores": {m: v.tolist() for m, v in base.items()},
        },
        "current": {
            "git_commit": None,
            "git_dirty": None,
            "fingerprints": prints,
            "query_ids": ids,
            "scores": {m: v.tolist() for m, v in current.items()},
        },
    }


def best_of(repeat: int, task: Callable[[], object]) -> tuple[float, object]:
    """The fastest of `repeat` runs in seconds, and the task's value."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = task()
        times.append(time.perf_counter() - start)
    return min(times), value


def tasks_for(document: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """What is timed: validation, each format, and json.dumps of the same document for scale."""
    result = validate_result(document)
    return {
        "json.dumps (for scale)": lambda: json.dumps(document, indent=2),
        "validate": lambda: validate_result(document),
        "markdown (summary)": lambda: render_markdown(result),
        "markdown (comment)": lambda: render_markdown(result, limit=COMMENT_BUDGET),
        "junit": lambda: render(document, "junit"),
        "html": lambda: render(document, "html"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=["small", "medium"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| size | queries | slices | checks | task | seconds | output chars |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for size in args.sizes:
        queries, slices = SIZES[size]
        document = make_document(queries, slices)
        for name, task in tasks_for(document).items():
            seconds, value = best_of(args.repeat, task)
            chars = len(value) if isinstance(value, str) else "-"
            checks = len(document["comparisons"])
            print(
                f"| {size} | {queries:,} | {slices} | {checks:,} | {name} | {seconds:.3f} | "
                f"{chars if chars == '-' else f'{chars:,}'} |"
            )


if __name__ == "__main__":
    main()
