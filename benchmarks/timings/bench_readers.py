"""Run files read by the fast readers and by the exact line-by-line readers: TREC (numpy)
and JSON Lines of one result per line (json's C decoder in batches)."""

# Each read runs in a fresh interpreter and includes importing the reader, so the figures are
# the ones a CLI user sees. Run: python benchmarks/timings/bench_readers.py

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.byte_compiled import byte_compile

CHILD = """\
import sys, time
start = time.perf_counter()
from retrieval_gate.readers.jsonl import _exact_run, _plain_run
from retrieval_gate.readers.trec import exact_trec_run, fast_trec_run
fast, exact = (fast_trec_run, exact_trec_run) if sys.argv[1].endswith(".trec") else (
    _plain_run, _exact_run)
if sys.argv[2] == "fast":
    assert fast(sys.argv[1]) is not None, "the fast reader declined a clean file"
else:
    exact(sys.argv[1])
print(time.perf_counter() - start)
"""


def write_runs(trec: Path, jsonl: Path, lines: int, seed: int = 0) -> None:
    """A run of 100 docs per query with sorted 4-decimal scores, as retrievers write them, in
    TREC format and as JSON Lines of one result per line."""
    rng = np.random.default_rng(seed)
    with trec.open("w") as text, jsonl.open("w") as objects:
        for q in range(lines // 100):
            docs = rng.choice(1_000_000, 100, replace=False)
            scores = np.sort(rng.random(100) * 30)[::-1]
            ranked = list(enumerate(zip(docs.tolist(), scores.tolist(), strict=True), 1))
            text.write("".join(f"q{q} Q0 d{d} {r} {s:.4f} bench\n" for r, (d, s) in ranked))
            objects.write(
                "".join(
                    f'{{"query_id": "q{q}", "doc_id": "d{d}", "score": {s:.4f}}}\n'
                    for _, (d, s) in ranked
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
    byte_compile()
    print(
        f"{'lines':>9}  {'TREC MB':>7}  {'exact s':>7}  {'numpy s':>7}  {'ratio':>5}"
        f"  {'JSONL MB':>8}  {'exact s':>7}  {'C json s':>8}  {'ratio':>5}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for lines in (int(n) for n in args.lines.split(",")):
            trec, jsonl = Path(folder) / f"run{lines}.trec", Path(folder) / f"run{lines}.jsonl"
            write_runs(trec, jsonl, lines)
            row = f"{lines:>9,}"
            for path, width in ((trec, 7), (jsonl, 8)):
                exact = best_of(path, "exact", args.repeat)
                fast = best_of(path, "fast", args.repeat)
                size = path.stat().st_size / 2**20
                row += (
                    f"  {size:>{width}.1f}  {exact:>7.3f}  {fast:>{width}.3f}  {fast / exact:>5.2f}"
                )
            print(row, flush=True)


if __name__ == "__main__":
    main()
