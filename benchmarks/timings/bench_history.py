"""What reading a long history costs: `history list` and `export` on 1,000 to 100,001 records.

A history file of N records of configs/tiny (a real `check` result, 5 queries, about 2.7 kB a
line, every commit its own) is read by `retrieval-gate history list --from FILE` and
`history export --format csv --from FILE`, each a whole process as a user runs it; medians of
wall seconds, CPU seconds (user + system) and peak RSS (the child's own, from wait4, measured
by a small launcher so that this script's size does not count). With `--before DIR` (a
checkout of another version, e.g. `git worktree add /tmp/before REV`) that version runs too,
in turn with this one, for a before/after table. Time should grow linearly with N, and
memory not at all.

    python benchmarks/timings/bench_history.py  # 1,000 to 100,001: ~3 min
    python benchmarks/timings/bench_history.py --sizes 20000 --rounds 5 --before /tmp/before
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = (["list"], ["export", "--format", "csv"])
# A launcher of its own for each measured process: on Linux a child's peak RSS starts at
# its parent's size.
MEASURE = """\
import os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
problem = child.stderr.read()
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - start
code = os.waitstatus_to_exitcode(status)
print(code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, problem[-300:].hex() or "-")
"""


def history_line(folder: Path) -> str:
    """One history line of configs/tiny: `baseline`, `check --json`, then the record."""
    shutil.copytree(ROOT / "configs" / "tiny", folder / "tiny")
    config = str(folder / "tiny" / "retrieval-gate.yaml")
    result = folder / "result.json"
    for argv in (
        ["baseline", "-c", config, "--quiet", "--force"],
        ["check", "-c", config, "--quiet", "--no-cache", "--json", str(result)],
    ):
        command = [sys.executable, "-m", "retrieval_gate", *argv]
        subprocess.run(command, check=True, capture_output=True, env=environment(ROOT), cwd=ROOT)
    sys.path.insert(0, str(ROOT))
    from retrieval_gate.history.record import entry_line, result_entry

    document = json.loads(result.read_text(encoding="utf-8"))
    made = {"commit": "0" * 40, "time": "2026-01-01T00:00:00Z", "ref": "refs/heads/main"}
    entry = result_entry(document, str(result), **made, subject="Merge pull request #1 from a/b")
    return entry_line(entry)


def write_history(path: Path, line: str, records: int) -> None:
    """`records` copies of `line`, each with a commit of its own and a pull request number."""
    head, tail = line.split("0" * 40, 1)
    with path.open("w", encoding="utf-8") as file:
        for n in range(records):
            commit = hashlib.sha1(str(n).encode()).hexdigest()
            file.write(head + commit + tail.replace('"pr":1,', f'"pr":{n + 1},', 1) + "\n")


def environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}


def measured(tree: Path, argv: Sequence[str]) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (MiB) of `retrieval-gate ARGV` run from `tree`."""
    command = [sys.executable, "-c", MEASURE, sys.executable, "-m", "retrieval_gate", *argv]
    # Run in `tree`: `python -m` puts the working directory first on the import path.
    done = subprocess.run(command, capture_output=True, text=True, env=environment(tree), cwd=tree)
    code, wall, cpu, peak, problem = done.stdout.split()
    if int(code) != 0:
        problem = bytes.fromhex(problem.strip("-")).decode("utf-8", "replace")
        raise SystemExit(f"{' '.join(argv)} exited {code}: {problem}")
    scale = 1 if sys.platform == "darwin" else 1024
    return float(wall), float(cpu), int(peak) * scale / 2**20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100001", help="records, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each command (median)")
    parser.add_argument("--before", type=Path, help="a checkout of the version to compare with")
    args = parser.parse_args(argv)
    trees = {"after": ROOT} if args.before is None else {"before": args.before, "after": ROOT}
    print(f"{args.rounds} rounds, medians, whole processes (configs/tiny records)\n")
    print("| records | file MiB | command | version | wall s | CPU s | peak RSS MiB |")
    print("|---:|---:|:--|:--|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        folder = Path(scratch)
        line = history_line(folder)
        path = folder / "history.jsonl"
        for records in (int(size) for size in args.sizes.split(",")):
            write_history(path, line, records)
            size = path.stat().st_size / 2**20
            for action in ACTIONS:
                command = ["history", *action, "--from", str(path)]
                found: dict[str, list[tuple[float, float, float]]] = {v: [] for v in trees}
                for tree in trees.values():  # warm the file cache and the byte code
                    measured(tree, command)
                for _ in range(args.rounds):
                    for version, tree in trees.items():
                        found[version].append(measured(tree, command))
                for version, runs in found.items():
                    wall, cpu, peak = (statistics.median(run[i] for run in runs) for i in range(3))
                    print(f"| {records:,} | {size:,.0f} | `history {' '.join(action)}` "
                          f"| {version} | {wall:.2f} | {cpu:.2f} | {peak:,.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
