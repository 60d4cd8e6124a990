"""Where pyarrow starts to pay: TREC run files read by the pure and the pyarrow reader.

Each read runs in a fresh interpreter and includes importing the reader (pyarrow's import
is most of its cost on small files), so the crossover it prints is the one a CLI user sees.
It sets `retrieval_gate.readers.arrow.MIN_BYTES`. Run: python benchmarks/bench_readers.py
"""

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
from retrieval_gate.readers import arrow
from retrieval_gate.readers.trec import read_trec_run
arrow.MIN_BYTES = 0 if sys.argv[2] == "arrow" else 1 << 62
read_trec_run(sys.argv[1])
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
    parser.add_argument("--lines", default="30000,110000,300000,600000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'lines':>9}  {'MB':>6}  {'pure s':>7}  {'pyarrow s':>9}  faster")
    with tempfile.TemporaryDirectory() as folder:
        for lines in (int(n) for n in args.lines.split(",")):
            path = Path(folder) / f"run{lines}.trec"
            write_run(path, lines)
            pure = best_of(path, "pure", args.repeat)
            fast = best_of(path, "arrow", args.repeat)
            size = path.stat().st_size / 2**20
            print(
                f"{lines:>9,}  {size:>6.1f}  {pure:>7.3f}  {fast:>9.3f}  "
                f"{'pyarrow' if fast < pure else 'pure'}"
            )


if __name__ == "__main__":
    main()
