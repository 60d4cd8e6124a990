"""Benchmark `judge` against a rate-limited endpoint: what a share of 429s costs in time."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import table
from tests.helpers.fake_llm import Answer, fake_llm, rate_limited
from tests.helpers.judged_example import judge_example

REPO = Path(__file__).resolve().parents[2]
HELD_BACK = 0.7
"""Share of the example's judged queries whose judgments are held back: the pool to grade."""


@dataclass(frozen=True)
class Case:
    name: str
    every: int
    """Every Nth request answers 429 (0: none)."""
    refusal: Answer


@dataclass
class Row:
    case: str
    pairs: int
    requests: int
    refused: int
    failed: int
    walls: list[float]
    cpus: list[float]
    """CPU seconds (user + sys) of the `judge` process."""
    served: list[float]
    """CPU seconds of this process: the stand-in endpoint."""


def cases(every: int, retry_after: int) -> list[Case]:
    share = f"1 in {every}"
    return [
        Case("no 429s", 0, rate_limited(None)),
        Case(f"{share} 429, no Retry-After", every, rate_limited(None)),
        Case(f"{share} 429, Retry-After: {retry_after}", every, rate_limited(retry_after)),
    ]


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(case: Case, concurrency: int, delay: float, row: Row | None) -> Row:
    """One `judge` process on a fresh copy of the example, against a fresh endpoint."""
    with tempfile.TemporaryDirectory() as folder, fake_llm(delay=delay) as llm:
        example = judge_example(Path(folder), llm.base_url, concurrency=concurrency)
        llm.judge = example.fake_judge()
        llm.refuse_every, llm.refusal = case.every, case.refusal
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "retrieval_gate", "judge", "-c", str(example.config)]
        cpu, served = child_cpu(), self_cpu()
        started = time.perf_counter()
        done = subprocess.run(
            [*command, "--quiet"], env=env, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - started
        cpu, served = child_cpu() - cpu, self_cpu() - served
        if done.returncode != 0:
            raise SystemExit(f"bench: judge failed ({case.name}):\n{done.stderr[-2000:]}")
        graded = next(line for line in done.stdout.splitlines() if line.startswith("graded:"))
        # "graded: N pairs, C from the cache, F failed"
        words = graded.replace(",", "").split()
        pairs, failed = int(words[1]), int(words[7])
        refused = llm.statuses.count(429)
        requests = len(llm.requests)
    if row is None:
        row = Row(case.name, pairs, requests, refused, failed, [], [], [])
    row.walls.append(wall)
    row.cpus.append(cpu)
    row.served.append(served)
    return row


def render(rows: Sequence[Row]) -> str:
    base = statistics.median(rows[0].walls)
    body = []
    for row in rows:
        wall = statistics.median(row.walls)
        body.append(
            [
                row.case,
                f"{row.pairs:,}",
                f"{row.requests:,}",
                f"{row.refused:,}",
                str(row.failed),
                f"{wall:.2f}",
                f"{statistics.median(row.cpus):.2f}",
                f"{statistics.median(row.served):.2f}",
                f"{wall / base:.2f}",
            ]
        )
    header = [
        "endpoint",
        "pairs graded",
        "requests",
        "429s",
        "failed",
        "wall s",
        "judge CPU s",
        "endpoint CPU s",
        "x no 429s",
    ]
    return table(header, body, set(range(1, len(header))))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_judge_429.py",
        description=(
            "Time `retrieval-gate judge` (a whole process) on the bundled example, "
            f"{HELD_BACK:.0%} of its judged queries held back, against the local "
            "chat-completions stand-in (tests/helpers/fake_llm.py): no 429s, then every Nth "
            "request answered 429 without and with Retry-After. Prints the median wall, the "
            "judge's CPU beside it, and each case's time over the no-429 case's."
        ),
    )
    parser.add_argument("--every", type=int, default=5, help="every Nth request is a 429")
    parser.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds")
    parser.add_argument("--concurrency", type=int, default=4, help="judge.concurrency")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="seconds the endpoint takes per answer"
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (median)")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for case in cases(args.every, args.retry_after):
        row = None
        for _ in range(args.repeats):
            row = run_once(case, args.concurrency, args.delay, row)
        assert row is not None
        rows.append(row)
    print(
        f"judge on the bundled example ({rows[0].pairs:,} pairs to grade), "
        f"judge.concurrency {args.concurrency}, endpoint delay {args.delay:g} s, "
        f"median of {args.repeats} runs; {os.cpu_count()} CPUs"
    )
    print(render(rows))
    worst = max(statistics.median(row.walls) for row in rows) / statistics.median(rows[0].walls)
    print(f"\nthe slowest case takes {worst:.2f} times the no-429 case's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
