"""What `check --run FILE` costs end to end, whole process, and where the time goes.

A seeded synthetic gate: N queries tagged with three metadata fields (27 slices with the
query-length slices and `all`), a baseline run and a current run of 100 docs per query in
TREC format, 5 metrics, in one of two shapes (`--shape`):

- light: about 5 judged docs per query (grades 0-3), scores with 4 decimals, k 10;
- deep: about 10 judged docs per query, scores with 2 decimals (ties), k 100 (issue 31's).

For each size it times, as whole processes a user runs:

- `check --run current.trec` with all four reports (JSON, Markdown, JUnit, HTML);
- `compare` on the saved result, which is only the statistics (re-deciding the JSON);
- `evaluate` on the same files (reading and scoring, no gate);

and prints CPU seconds (user + system of the child), wall seconds and peak RSS (the child's
ru_maxrss), the result JSON's size, the 1-minute load average when `check` ended (the
machine may be shared: wall time is noisy then, CPU time much less), and a phase table of
one more `check` run under cProfile (cumulative seconds of the pipeline's stages; profiling
slows Python code, so read shares).

    python benchmarks/timings/bench_check.py  # 2,000 and 20,000, both shapes
    python benchmarks/timings/bench_check.py --shape deep --sizes 20000,200000 --no-profile
    python benchmarks/timings/bench_check.py --sizes 2000,20000,200000 --resamples 10000
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.byte_compiled import byte_compile

DOCS_PER_QUERY = 100
FIELDS = {"intent": 8, "segment": 5, "region": 10}
"""Metadata fields and their values: 23 slices, with 3 query-length slices and `all`, 27."""


@dataclass(frozen=True)
class Shape:
    """How deep the seeded data is: judged docs per query, score decimals, the gate's k."""

    name: str
    judged: int
    decimals: int
    k: int
    metrics: tuple[str, ...]


SHAPES = {
    "light": Shape("light", 5, 4, 10, ("ndcg@10", "recall@10", "mrr@10", "ap@10", "precision@10")),
    "deep": Shape("deep", 10, 2, 100, ("ndcg@10", "ndcg@100", "recall@100", "mrr@100", "ap@100")),
}

PHASES = (
    ("load and check the labelled set", ("datasets/__init__.py", "load_labels")),
    ("read the run file", ("run_file.py", "__init__")),
    ("cut each query's top k", ("runner.py", "read_saved")),
    ("score the metrics", ("evaluate.py", "evaluate")),
    ("decide (statistics and diagnostics)", ("gate/decide.py", "decide")),
    ("  of which the statistics", ("compare.py", "compare")),
    ("  of which the diagnostics", ("diagnostics.py", "")),
    ("write the JSON result", ("wording.py", "json_file_pieces")),
    ("render the reports", ("render.py", "render")),
)
"""(label, (file suffix, function name)): cumulative time of the first match in the profile;
an empty function name sums the file's top-level entries the pipeline calls."""


@dataclass(frozen=True)
class Timing:
    cpu: float
    wall: float
    peak_mb: float


def write_gate(folder: Path, queries: int, seed: int, shape: Shape = SHAPES["light"]) -> Path:
    """The labelled set, two runs and a config in `folder`; the config's path."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    qids = [f"q{i:07d}" for i in range(queries)]
    values = {name: rng.integers(0, n, queries) for name, n in FIELDS.items()}
    lengths = rng.integers(1, 9, queries)
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for i, qid in enumerate(qids):
            words = " ".join(f"w{j}" for j in range(int(lengths[i])))
            meta = ", ".join(f'"{name}": "{name}{int(v[i])}"' for name, v in values.items())
            out.write(f'{{"_id": "{qid}", "text": "{words}", {meta}}}\n')
    judged = rng.integers(0, 1000, (queries, shape.judged))
    grades = rng.integers(0, 4, (queries, shape.judged))
    with (folder / "qrels.txt").open("w", encoding="utf-8") as out:
        for i, qid in enumerate(qids):
            for doc, grade in zip(np.unique(judged[i]).tolist(), grades[i].tolist(), strict=False):
                out.write(f"{qid} 0 d{doc:06d} {grade}\n")
    for name, shift in (("baseline", 0.0), ("current", 0.3)):
        _write_run(folder / f"{name}.trec", qids, judged, rng, shift, shape.decimals)
    config = folder / "gate.yaml"
    metrics = "\n".join(f"  {m}: {{max_drop: 2pt}}" for m in shape.metrics)
    config.write_text(
        "version: 1\nname: bench\n"
        "dataset:\n  queries: queries.jsonl\n  qrels: qrels.txt\n"
        "retriever:\n  type: run_file\n  path: current.trec\n"
        f"k: {shape.k}\nmetrics:\n{metrics}\n"
        f"slices:\n  by: [{', '.join(FIELDS)}, query_length]\n  min_size: 20\n"
        "baseline: baseline.json\n",
        encoding="utf-8",
    )
    return config


def _write_run(
    path: Path,
    qids: Sequence[str],
    judged: np.ndarray,
    rng: np.random.Generator,
    shift: float,
    decimals: int,
) -> None:
    """100 docs per query, the judged ones placed near the top (less so with a larger shift),
    sorted by score (rounding to `decimals` makes ties, kept in that order)."""
    with path.open("w", encoding="utf-8") as out:
        for i, qid in enumerate(qids):
            docs = np.unique(np.concatenate([judged[i], rng.integers(0, 1_000_000, 120)]))
            rng.shuffle(docs)
            docs = docs[:DOCS_PER_QUERY]
            scores = rng.random(len(docs)) + np.isin(docs, judged[i]) * (1.0 - shift)
            order = np.argsort(-scores, kind="stable")
            lines = [
                f"{qid} Q0 d{int(docs[j]):06d} {rank} {scores[j]:.{decimals}f} bench\n"
                for rank, j in enumerate(order.tolist(), 1)
            ]
            out.write("".join(lines))


def _gate(args: Sequence[str], cwd: Path | None = None) -> Timing:
    """One whole `retrieval-gate` process: CPU and wall seconds, peak RSS (MB)."""
    command = [sys.executable, "-m", "retrieval_gate", *args]
    with tempfile.TemporaryFile() as output:  # a pipe could fill up before the child ends
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        process.returncode = code
        if code not in (0, 1):
            output.seek(0)
            raise SystemExit(f"{' '.join(args)} exited {code}:\n{output.read()[-2000:].decode()}")
    return Timing(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)


def phases(config: Path, folder: Path) -> list[tuple[str, float]]:
    """Cumulative seconds per pipeline stage of one `check` under cProfile."""
    stats_file = folder / "check.prof"
    code = (
        "import cProfile, sys; from retrieval_gate.cli.main import main; "
        f"cProfile.run('main(sys.argv[1:])', {str(stats_file)!r})"
    )
    args = ["check", "-c", str(config), "--run", str(folder / "current.trec"), "--quiet"]
    subprocess.run([sys.executable, "-c", code, *args], capture_output=True, check=False)
    stats = pstats.Stats(str(stats_file)).stats  # type: ignore[attr-defined]
    total = max(entry[3] for entry in stats.values())
    rows = [("whole check (profiled)", total)]
    for label, (suffix, function) in PHASES:
        matches = [
            entry[3]
            for (file, _, name), entry in stats.items()
            if file.endswith(suffix) and (not function or name == function)
        ]
        # Without a function, the file's largest cumulative entry stands for the stage.
        rows.append((label, max(matches) if matches else float("nan")))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000", help="comma-separated query counts")
    parser.add_argument("--shape", choices=("light", "deep", "both"), default="both")
    parser.add_argument("--resamples", type=int, default=None, help="gate.resamples (default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-compare", action="store_true", help="time check and evaluate only")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile table")
    args = parser.parse_args(argv)
    byte_compile()
    base = args.workdir or Path(tempfile.gettempdir()) / "retrieval_gate_bench_check"
    shapes = [SHAPES["light"], SHAPES["deep"]] if args.shape == "both" else [SHAPES[args.shape]]
    for shape in shapes:
        print(
            f"check --run, whole process; {shape.name} shape: {shape.judged} judged docs a "
            f"query, scores with {shape.decimals} decimals, k {shape.k}; "
            f"{', '.join(shape.metrics)}; 27 slices; seed {args.seed}"
        )
    print()
    header = (
        "| shape | queries | run file | check CPU s | check wall s | check peak RSS "
        "| RSS / run file | compare CPU s | evaluate CPU s | result JSON | load |"
    )
    print(header)
    print("|---" + "|---:" * 10 + "|")
    profiles = []
    for shape in shapes:
        for size in (int(s) for s in args.sizes.split(",")):
            timing, rows = _one_size(base, shape, size, args)
            print(timing, flush=True)
            if rows:
                profiles.append((shape.name, size, rows))
    for name, size, rows in profiles:
        print()
        print(f"Where `check` spends its time, {name} shape, {size:,} queries (cProfile, s):")
        print()
        print("| stage | s |\n|---|---:|")
        for label, seconds in rows:
            print(f"| {label} | {seconds:.2f} |")
    return 0


def _one_size(
    base: Path, shape: Shape, size: int, args: argparse.Namespace
) -> tuple[str, list[tuple[str, float]]]:
    """One size's table row and its profile's rows (none with --no-profile)."""
    suffix = "" if shape.name == "light" else f"-{shape.name}"
    folder = base / f"q{size}-s{args.seed}{suffix}"
    config = folder / "gate.yaml"
    if not config.exists():
        config = write_gate(folder, size, args.seed, shape)
    # Made again on every call: a baseline kept from an earlier version of the tool may be
    # in an older layout (its top k inline, not in a side file) and cost what it no longer
    # costs.
    _gate(["baseline", "-c", str(config), "--run", str(folder / "baseline.trec"), "--quiet"])
    text = config.read_text(encoding="utf-8").split("gate:\n")[0]
    if args.resamples is not None:
        text += f"gate:\n  resamples: {args.resamples}\n"
    config.write_text(text, encoding="utf-8")
    run = folder / "current.trec"
    result = folder / "result.json"
    reports = {"--json": result, "--markdown": folder / "report.md"}
    reports |= {"--junit": folder / "junit.xml", "--html": folder / "report.html"}
    options = [str(part) for pair in reports.items() for part in pair]
    check = _gate(
        ["check", "-c", str(config), "--run", str(run), "--quiet", "--no-reports", *options]
    )
    load = os.getloadavg()[0]
    compare = "-"
    if not args.no_compare:
        baseline = str(folder / "baseline.json")
        timed = _gate(
            ["compare", "-c", str(config), baseline, str(result), "--quiet", "--no-reports"]
        )
        compare = f"{timed.cpu:.2f}"
    evaluate = _gate(["evaluate", str(folder / "qrels.txt"), str(run), "-q", "-m", *shape.metrics])
    run_mb = run.stat().st_size / 2**20
    row = (
        f"| {shape.name} | {size:,} | {run_mb:.0f} MB | {check.cpu:.2f} | {check.wall:.2f} "
        f"| {check.peak_mb:,.0f} MB | {check.peak_mb / run_mb:.1f}x | {compare} "
        f"| {evaluate.cpu:.2f} | {result.stat().st_size / 2**20:.1f} MB | {load:.1f} |"
    )
    return row, [] if args.no_profile else phases(config, folder)


if __name__ == "__main__":
    raise SystemExit(main())
