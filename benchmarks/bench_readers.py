"""TREC run files read by the numpy reader and by the exact line-by-line reader."""

# Each read runs in a fresh interpreter and includes importing the reader, so the figures are
# the ones a CLI user sees. Run: python benchmarks/bench_readers.py

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = """\
import sys, time
start = time.perf_counter()
from retrieval_gate.readers.trec import exact_trec_run, fast_trec_run
if sys.argv[2] == "fast":
    assert fast_trec_run(sys.argv[1]) is not None, "the fast reader declined a clean file"
else:
    exact_trec_run(sys.argv[1])
print(time.perf_counter() - start)
"""


def write_run(path: Path, lines: int, seed: int = 0) -> None:
    """A run of 100 docs per query with sorted 4-decimal scores, as retrievers write them."""
    rng = np.random.default_rng(seed)
    with path.open("w") as handle:
        for q in range(lines // 100):
            docs = rng.choice(1_000_000, 100, replace=False)
            scores = np.sort(rng.random(100) * 30)[::-1]
            handle.write(
                "".join(
                    f"q{q} Q0 d{d} {r} {s:.4f} bench\n"
                    for r, (d, s) in enumerate(zip(docs, scores, strict=True), 1)
                )
            )


def best_of(path: Path, mode: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), mode],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout))
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", default="1000,30000,300000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'lines':>9}  {'MB':>6}  {'exact s':>7}  {'numpy s':>7}  numpy / exact")
    with tempfile.TemporaryDirectory() as folder:
        for lines in (int(n) for n in args.lines.split(",")):
            path = Path(folder) / f"run{lines}.trec"
            write_run(path, lines)
            exact = best_of(path, "exact", args.repeat)
            fast = best_of(path, "fast", args.repeat)
            size = path.stat().st_size / 2**20
            print(f"{lines:>9,}  {size:>6.1f}  {exact:>7.3f}  {fast:>7.3f}  {fast / exact:.2f}")


if __name__ == "__main__":
    main()
