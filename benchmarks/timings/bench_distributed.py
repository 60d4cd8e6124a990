"""`evaluate` of one run file in one process beside its shards on a local Dask cluster."""

# The data shape: 100 results per query with 2-decimal scores (ties), 10 judged docs
# per query (8 of them retrieved), grades 0-3; the run split by query into --shards files,
# and the same rows in one file. Each command runs in a fresh process tree; the table gives
# wall time, CPU (user+sys of every process, the workers included), each process's peak RSS
# and the load average around it. Memory heavy (10^6 queries: a 3.2 GB run): run it alone,
# `flock /tmp/rg-bench.lock python benchmarks/timings/bench_distributed.py`.

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEPTH = 100
JUDGED = 10
JUDGED_RETRIEVED = 8
DOCS = 10_000_000
STRIDE = 104_729  # prime, so the DEPTH + 2 doc ids of a query differ
CHUNK = 10_000  # queries generated at once


def digits(values: np.ndarray, width: int) -> np.ndarray:
    """`values` as zero-padded ASCII digits, one row of `width` bytes each."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((values[:, None] // powers) % 10 + 48).astype(np.uint8)


def lines(*columns: np.ndarray | bytes) -> bytes:
    """Rows of fixed-width fields (digit matrices and literal bytes) joined into text."""
    rows = next(len(c) for c in columns if isinstance(c, np.ndarray))
    parts = [
        c if isinstance(c, np.ndarray) else np.tile(np.frombuffer(c, np.uint8), (rows, 1))
        for c in columns
    ]
    return np.hstack(parts).tobytes()


def write_data(folder: Path, queries: int, shards: int, seed: int) -> tuple[Path, Path, Path]:
    """qrels.txt, all.trec and shards/part-NN.trec (contiguous query ranges) in `folder`."""
    rng = np.random.default_rng(seed)
    (folder / "shards").mkdir(parents=True, exist_ok=True)
    per_shard = -(-queries // shards)
    qrels = (folder / "qrels.txt").open("wb")
    whole = (folder / "all.trec").open("wb")
    shard_files = [(folder / "shards" / f"part-{i:02d}.trec").open("wb") for i in range(shards)]
    for start in range(0, queries, CHUNK):
        q = np.arange(start, min(start + CHUNK, queries), dtype=np.int64)
        base = rng.integers(0, DOCS, size=len(q))
        slot = np.arange(DEPTH + JUDGED - JUDGED_RETRIEVED, dtype=np.int64)
        doc = (base[:, None] + slot * STRIDE) % DOCS
        score = -np.sort(-rng.integers(0, 100, size=(len(q), DEPTH)), axis=1)
        rows = len(q) * DEPTH
        run_text = lines(
            b"q", digits(np.repeat(q, DEPTH), 7), b" Q0 d", digits(doc[:, :DEPTH].ravel(), 7),
            b" ", digits(np.tile(np.arange(1, DEPTH + 1), len(q)), 3), b" 0.",
            digits(score.ravel(), 2), b" r\n",
        )  # fmt: skip
        assert len(run_text) == rows * 32
        picked = np.argsort(rng.random((len(q), DEPTH)), axis=1)[:, :JUDGED_RETRIEVED]
        unretrieved = np.tile(np.arange(DEPTH, slot[-1] + 1), (len(q), 1))
        judged = np.take_along_axis(doc, np.hstack([picked, unretrieved]), axis=1)
        qrels.write(
            lines(
                b"q",
                digits(np.repeat(q, JUDGED), 7),
                b" 0 d",
                digits(judged.ravel(), 7),
                b" ",
                digits(rng.integers(0, 4, size=len(q) * JUDGED), 1),
                b"\n",
            )
        )
        whole.write(run_text)
        owner = q // per_shard
        for i in np.unique(owner).tolist():
            rows_of = np.flatnonzero(owner == i)
            shard_files[i].write(run_text[rows_of[0] * DEPTH * 32 : (rows_of[-1] + 1) * DEPTH * 32])
    for file in (qrels, whole, *shard_files):
        file.close()
    return folder / "qrels.txt", folder / "all.trec", folder / "shards"


def peak_rss(pid: int) -> int | None:
    """The process's peak resident set (VmHWM) in bytes, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc's parent links."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def measure(argv: list[str]) -> dict[str, object]:
    """Wall, CPU of the whole process tree, each process's peak RSS, load average, stdout."""
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    peaks: dict[int, int] = {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err)
        while process.poll() is None:
            for pid in [process.pid, *descendants(process.pid)]:
                rss = peak_rss(pid)
                if rss is not None:
                    peaks[pid] = max(peaks.get(pid, 0), rss)
            time.sleep(0.2)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}):\n{stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = peaks.pop(process.pid, 0)
    return {
        "wall": wall,
        "cpu": cpu,
        "driver": own,
        "others": sorted(peaks.values(), reverse=True),
        "load": (load_before, os.getloadavg()[0]),
        "stdout": stdout,
    }


def mib(size: int) -> str:
    return f"{size / 2**20:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--folder", type=Path, help="keep the data here (default: a temp dir)")
    args = parser.parse_args(argv)
    folder = args.folder or Path(tempfile.mkdtemp(prefix="rg-bench-distributed-"))
    try:
        started = time.perf_counter()
        qrels, whole, shards = write_data(folder, args.queries, args.shards, args.seed)
        print(f"data written in {time.perf_counter() - started:.0f} s: run "
              f"{mib(whole.stat().st_size)} MiB, qrels {mib(qrels.stat().st_size)} MiB",
              file=sys.stderr)  # fmt: skip
        command = [sys.executable, "-m", "retrieval_gate", "evaluate", str(qrels)]
        one = measure([*command, str(whole)])
        many = measure([*command, str(shards), "--scheduler", f"local:{args.workers}"])
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
    same = one["stdout"] == many["stdout"]
    print(
        f"{args.queries:,} queries, {DEPTH} results each (2-decimal scores), {JUDGED} judged "
        f"per query ({JUDGED_RETRIEVED} retrieved), grades 0-3; 5 metrics (evaluate's "
        f"default); {args.shards} shards split by query; {os.cpu_count()} cores.\n"
    )
    print("| how | wall s | CPU s (user+sys, all processes) | peak RSS MiB: driver | "
          "peak RSS MiB: other processes | load average before, after |")  # fmt: skip
    print("|---|---:|---:|---:|---|---|")
    for name, row in (("one process (`evaluate QRELS all.trec`)", one),
                      (f"local cluster, {args.workers} workers (`--scheduler local:"
                       f"{args.workers}`)", many)):  # fmt: skip
        others = ", ".join(map(mib, row["others"])) or "-"  # type: ignore[arg-type]
        load = "{:.2f}, {:.2f}".format(*row["load"])  # type: ignore[str-format]
        print(f"| {name} | {row['wall']:.1f} | {row['cpu']:.1f} | {mib(row['driver'])} | "  # type: ignore[arg-type]
              f"{others} | {load} |")  # fmt: skip
    print(f"\nSame output (the means, to 4 decimals) from both: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
