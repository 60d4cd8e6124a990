"""Render every report of a large gate result: time, size, and the JSON dump for scale.

With a main-branch trend of 500 merges attached (`report.trend.with_trend`) the PR comment is
timed and measured too. `--trend-screenshot PNG` renders the HTML report of a small result
with a trend and, when Chromium is installed, saves a screenshot of it (docs/trend-example.png
is made this way); without Chromium it writes the HTML beside PNG and says so.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.history.record import TrendPoint
from retrieval_gate.report import COMMENT_BUDGET, render, render_markdown, validate_result
from retrieval_gate.report.trend import with_trend

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
    settings = ComparisonSettings(resamples=1_000, min_size=30)
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
        "schema_version": 2,
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


def trend_points(count: int, level: float, seed: int = 0) -> list[TrendPoint]:
    """`count` merges on main of a metric wandering around `level`, oldest first."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0, 0.002, count))
    return [
        TrendPoint(
            commit=f"{(i + 1) * 2654435761 % 16**12:012x}",
            pr=1000 + i,
            time=f"2026-{1 + i * 11 // count:02d}-{1 + i % 28:02d}T12:00:00Z",
            value=float(level + walk[i] - walk.mean()),
        )
        for i in range(count)
    ]


def trend_of(document: dict[str, Any], count: int) -> dict[str, Any]:
    """`document` with `count` merges of each of its metrics on main, near the baseline."""
    means = {
        c["metric"]: c["baseline_mean"] for c in document["comparisons"] if c["slice"] == "all"
    }
    trend = {m: trend_points(count, mean, seed) for seed, (m, mean) in enumerate(means.items())}
    return with_trend(document, trend)


def screenshot_document() -> dict[str, Any]:
    """A small result whose one gated metric, ndcg@10, regressed to just below the range main
    moved within over its last 40 merges (recall@10 report only): one chart, in the first
    screen of the HTML report."""
    document = make_document(800, 1)
    rows = {c["metric"]: c for c in document["comparisons"] if c["slice"] == "all"}
    primary = rows["ndcg@10"]
    shown = {
        **rows["recall@10"],
        "gated": False,
        "verdict": None,
        "failed": False,
        "max_drop": None,
        "p_adjusted": None,
        "level": None,
        "detectable_drop": None,
        "queries_needed": None,
        "reason": "report only: no max_drop or min",
    }
    document |= {
        "name": "support-search",
        "comparisons": [primary, shown],
        "failures": [primary] if primary["failed"] else [],
        "status": "fail" if primary["failed"] else "pass",
        "query_changes": [],
        "current": None,
        "baseline": None,
    }
    # Main wandered a little above where this PR lands.
    trend = {
        metric: trend_points(40, row["current_mean"] + 0.02, seed)
        for seed, (metric, row) in enumerate((("ndcg@10", primary), ("recall@10", shown)))
    }
    return with_trend(document, trend)


def save_screenshot(path: Path) -> str:
    """Render the screenshot document's HTML and photograph it with headless Chromium."""
    html = render(screenshot_document(), "html")
    browser = next(
        (found for name in BROWSERS if (found := shutil.which(name))),
        None,
    )
    if browser is None:
        page = path.with_suffix(".html")
        page.write_text(html, encoding="utf-8")
        return f"no Chromium found: wrote {page} instead"
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        page.write_text(html, encoding="utf-8")
        profile = Path(folder) / "profile"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                f"--screenshot={path.resolve()}",
                "--window-size=1200,1150",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return f"wrote {path}"


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def best_of(repeat: int, task: Callable[[], object]) -> tuple[float, object]:
    """The fastest of `repeat` runs in seconds, and the task's value."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = task()
        times.append(time.perf_counter() - start)
    return min(times), value


def tasks_for(document: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """What is timed: validation, each format, and json.dumps of the same document for scale;
    then the PR comment and the HTML with 500 merges of trend on main."""
    result = validate_result(document)
    trended = validate_result(trend_of(document, 500))
    return {
        "json.dumps (for scale)": lambda: json.dumps(document, indent=2),
        "validate": lambda: validate_result(document),
        "markdown (summary)": lambda: render_markdown(result),
        "markdown (comment)": lambda: render_markdown(result, limit=COMMENT_BUDGET),
        "junit": lambda: render(document, "junit"),
        "html": lambda: render(document, "html"),
        "markdown (comment, 500-merge trend)": lambda: render_markdown(
            trended, limit=COMMENT_BUDGET
        ),
        "html (500-merge trend)": lambda: render(trended, "html"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", choices=list(SIZES), default=["small", "medium"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--trend-screenshot", type=Path, metavar="PNG", help="save the trend chart's screenshot"
    )
    args = parser.parse_args()
    if args.trend_screenshot:
        print(save_screenshot(args.trend_screenshot))
        return
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
