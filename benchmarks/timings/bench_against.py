"""What `check --against` costs: whole processes beside one run and two runs in one process.

The issue's bound: the overhead of `--against` over a single run is at most the second
retriever run plus 10%. `check --repeats 2` is that yardstick (one process, two retriever
runs, no git); `check` alone is the single run. Each is the whole process as a user runs it,
in a temporary git repository holding the bundled example, the three commands in turn
(A, B, C, A, B, C, ...) so that a drifting machine moves them alike; medians of wall and CPU
seconds (the children's rusage).

    python benchmarks/timings/bench_against.py  # 15 rounds: about 40 s
    python benchmarks/timings/bench_against.py --rounds 31
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOUND = 1.10
"""--against may cost at most the second run plus 10%: 1.10 x `check --repeats 2`."""


def make_repository(folder: Path) -> Path:
    """The bundled example in a git repository of its own, without reports; its config."""
    shutil.copytree(ROOT / "configs" / "example", folder / "example")
    text = (ROOT / "configs" / "example.yaml").read_text(encoding="utf-8")
    text = text[: text.index("\nreport:")] + "\n"
    config = folder / "gate.yaml"
    config.write_text(
        text.replace("baseline: .retrieval-gate/example/baseline.json", "baseline: baseline.json")
    )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example"]):
        subprocess.run(
            ["git", "-C", str(folder), "-c", "user.email=b@e.org", "-c", "user.name=bench", *args],
            check=True,
            capture_output=True,
        )
    gate = [sys.executable, "-m", "retrieval_gate", "baseline", "-c", str(config), "--quiet"]
    subprocess.run(gate, check=True, capture_output=True, cwd=folder)
    return config


def timed(command: Sequence[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-against-") as scratch:
        folder = Path(scratch)
        config = make_repository(folder)
        base = [sys.executable, "-m", "retrieval_gate", "check", "-c", str(config), "--quiet"]
        commands = {
            "check --against HEAD": [*base, "--against", "HEAD", "--no-reports"],
            "check --repeats 2 (two runs)": [*base, "--no-cache", "--repeats", "2", "--no-reports"],
            "check (one run)": [*base, "--no-cache", "--no-reports"],
        }
        for command in commands.values():  # warm the file cache and the byte code
            timed(command, folder)
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                found[name].append(timed(command, folder))
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in found.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in found.items()}
    print(f"{args.rounds} rounds, medians, whole processes (the bundled example, 131 queries)\n")
    print(f"| {'command':<30} | wall s | cpu s |")
    print(f"|{'-' * 32}|-------:|------:|")
    for name in commands:
        print(f"| {name:<30} | {wall[name]:6.3f} | {cpu[name]:5.3f} |")
    against, yardstick, single = (wall[name] for name in commands)
    ratio = against / yardstick
    print(
        f"\n--against over one run: +{against - single:.3f} s; the second run costs "
        f"+{yardstick - single:.3f} s. --against / (two runs in one process) = {ratio:.3f} "
        f"(bound {BOUND:.2f})"
    )
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
