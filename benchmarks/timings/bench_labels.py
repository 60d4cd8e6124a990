"""Benchmark the label checks: inter-annotator agreement against krippendorff and scikit-learn,
and `lint` end to end on a BEIR folder (no other tool lints a labelled set)."""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

# The measuring helpers bench_metrics.py already has.
from benchmarks.timings.bench_metrics import (
    _current_rss_mb,
    _fmt_seconds,
    _has,
    _maxrss_mb,
    _proc_status_mb,
    parse_list,
    source_fingerprint,
)

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

# size -> (judgment rows for agreement, queries for lint)
SIZES: dict[str, tuple[int, int]] = {
    "small": (10_000, 1_000),
    "medium": (100_000, 10_000),
    "large": (1_000_000, 100_000),
}
PARTS = ("agreement", "lint")
ANNOTATORS = 5
ACCURACY = (0.85, 0.8, 0.7, 0.6, 0.5)  # chance each annotator gives an item its true grade
TRUE_GRADES = (0.4, 0.3, 0.2, 0.1)  # share of items whose true grade is 0, 1, 2, 3
ITEMS_PER_QUERY = 20  # agreement: judged (query, doc) items per query
AGREEMENT_CORPUS = 1_000_000  # agreement: doc ids d0000000 .. d0999999
MEAN_JUDGED = 10.0  # lint: judged docs per query (Poisson, at least one)
LINT_GRADES = (0.45, 0.3, 0.15, 0.1)
CORPUS_PER_QUERY = 5  # lint: corpus documents per query (every judged doc is in the corpus)
INTENTS = ("navigational", "informational", "transactional", "comparison", "troubleshooting")
INTENT_SHARES = (0.3, 0.3, 0.2, 0.15, 0.05)
WARMUP = "warmup"  # a tiny labelled set beside each size's, to import what lint needs
WARMUP_QUERIES = 60
RESULT_PREFIX = "BENCH_RESULT "
AGREE_TOL = 1e-9

# Agreement columns: (key, header, module it needs).
TOOLS: tuple[tuple[str, str, str], ...] = (
    ("ours", "ours: kappas + alpha from rows", "retrieval_gate"),
    ("ours_matrix", "ours: alpha, prebuilt matrix", "retrieval_gate"),
    ("kripp_matrix", "krippendorff, prebuilt matrix", "krippendorff"),
    ("kripp_rows", "krippendorff incl. pivot", "krippendorff"),
    ("sklearn", "sklearn kappas incl. pivot", "sklearn"),
)
TOOL_HEADER = {key: header for key, header, _ in TOOLS}
TOOL_MODULE = {key: module for key, _, module in TOOLS}
LINT_STEPS = ("load_labels", "lint")

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------


def _distinct_docs(rng: Any, group: Any, corpus: int) -> Any:
    """A doc number for each row, drawn from `corpus`, distinct within each run of `group`."""
    import numpy as np

    docs = rng.integers(0, corpus, size=len(group))
    while True:
        _, first = np.unique(group * corpus + docs, return_index=True)
        again = np.ones(len(docs), dtype=bool)
        again[first] = False
        count = int(again.sum())
        if not count:
            return docs
        docs[again] = rng.integers(0, corpus, size=count)


def judgment_rows(rows: int, seed: int) -> Json:
    """About `rows` judgments: each (query, doc) item judged by 2 or 3 of ANNOTATORS people.

    Each item has a true grade; an annotator gives it with probability ACCURACY[annotator],
    else a grade one step off (clipped to 0-3) or, one time in four, a uniform random grade.
    Rows come grouped by item, as a qrels file with an annotator column would list them.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    judges = rng.integers(2, 4, size=rows // 2 + 1)
    items = int(np.searchsorted(np.cumsum(judges), rows, side="right"))
    judges = judges[:items]
    short = rows - int(judges.sum())  # 0, 1 or 2: make the row count exact
    if short == 2:
        judges = np.append(judges, 2)
    elif short == 1:
        judges[np.flatnonzero(judges == 2)[-1]] = 3
    items = len(judges)
    order = rng.permuted(np.tile(np.arange(ANNOTATORS), (items, 1)), axis=1)
    who = order[np.arange(ANNOTATORS)[None, :] < judges[:, None]]  # row-major: item by item
    item = np.repeat(np.arange(items), judges)
    query_of_item = np.arange(items) // ITEMS_PER_QUERY
    doc_of_item = _distinct_docs(rng, query_of_item, AGREEMENT_CORPUS)
    truth = rng.choice(4, size=items, p=TRUE_GRADES)[item]
    right = rng.random(len(item)) < np.asarray(ACCURACY)[who]
    step = rng.choice(np.array([-1, 1]), size=len(item))
    off = np.clip(truth + step, 0, 3)
    off = np.where(rng.random(len(item)) < 0.25, rng.integers(0, 4, size=len(item)), off)
    grade = np.where(right, truth, off).astype(np.float64)
    names = np.array([f"ann{i + 1}" for i in range(ANNOTATORS)], dtype=object)
    doc_names = np.array([f"d{d:07d}" for d in doc_of_item.tolist()], dtype=object)
    return {
        "query": query_of_item[item].astype(np.int64),
        "docs": doc_names[item],
        "grades": grade,
        "annotators": names[who],
        "item": item,
        "who": who,
        "items": items,
    }


def _jsonl(path: Path, rows: Sequence[Json]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)


def write_labelled_set(root: Path, queries: int, seed: int) -> Json:
    """A BEIR folder (root/set) and root/gate.yaml; returns counts of what was written."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folder = root / "set"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    intents = rng.choice(len(INTENTS), size=queries, p=INTENT_SHARES)
    _jsonl(
        folder / "queries.jsonl",
        [
            {"_id": f"q{i:07d}", "text": f"synthetic query number {i}", "intent": INTENTS[t]}
            for i, t in enumerate(intents.tolist())
        ],
    )
    judged = np.maximum(rng.poisson(MEAN_JUDGED, size=queries), 1)
    query = np.repeat(np.arange(queries), judged)
    corpus = CORPUS_PER_QUERY * queries
    docs = _distinct_docs(rng, query, corpus)
    grades = rng.choice(4, size=len(query), p=LINT_GRADES)
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8", newline="\n") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        out.writelines(
            f"q{q:07d}\td{d:08d}\t{g}\n"
            for q, d, g in zip(query.tolist(), docs.tolist(), grades.tolist(), strict=True)
        )
    _jsonl(
        folder / "corpus.jsonl",
        [
            {"_id": f"d{d:08d}", "title": f"document {d}", "text": f"synthetic text of doc {d}"}
            for d in range(corpus)
        ],
    )
    config = (
        "version: 1\n"
        "dataset:\n  path: set\n"
        "retriever:\n  type: bm25\n"
        "k: 10\n"
        "metrics:\n"
        "  ndcg@10:\n    max_drop: 2pt\n"
        "  recall@10:\n    max_drop: 5pt\n"
        "slices:\n  by: [intent]\n  min_size: 30\n"
    )
    (root / "gate.yaml").write_text(config, encoding="utf-8")
    return {"queries": queries, "judgments": len(query), "corpus": corpus}


def synthetic_baseline(query_ids: Sequence[str], metrics: Sequence[str], seed: int) -> Any:
    """A baseline of seeded per-query scores, as tests/lint/test_engine.py builds one."""
    import numpy as np

    from retrieval_gate.gate.baseline.record import Fingerprints, make_baseline

    rng = np.random.default_rng(seed)
    return make_baseline(
        fingerprints=Fingerprints(
            dataset="d", k=10, metrics=tuple(metrics), slices="s", retriever="r"
        ),
        retriever={},
        slice_definition={},
        query_ids=query_ids,
        scores={m: rng.beta(2.0, 2.0, size=len(query_ids)) for m in metrics},
        top_k={},
        tool_version="bench",
        repo_dir=None,
    )


# --------------------------------------------------------------------------------------------
# Child process
# --------------------------------------------------------------------------------------------


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux), so the next peak is the timed section's alone."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return _proc_status_mb("VmHWM") is not None


@dataclass
class Timed:
    """One timed call: seconds, peak RSS during it, RSS before it, and its value."""

    seconds: float
    peak_mb: float
    base_mb: float
    peak_is_section: bool
    value: Any


def timed(task: Callable[[], Any]) -> Timed:
    """Run `task` once: wall time, RSS just before, and peak RSS during (VmHWM after a reset;
    else ru_maxrss, the whole process's peak)."""
    gc.collect()
    reset = _reset_peak()
    base = _current_rss_mb()
    start = time.perf_counter()
    value = task()
    seconds = time.perf_counter() - start
    hwm = _proc_status_mb("VmHWM") if reset else None
    peak = hwm if hwm is not None else _maxrss_mb()
    return Timed(seconds, peak, base, hwm is not None, value)


def traced_mb(task: Callable[[], Any]) -> float:
    """tracemalloc's peak in MB while `task` runs (a separate, untimed run: tracing is slow)."""
    gc.collect()
    tracemalloc.start()
    try:
        task()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def pivot(query: Any, docs: Any, grades: Any, annotators: Any) -> Any:
    """The annotators x items matrix (NaN = not judged) from judgment rows, with pandas."""
    import pandas as pd

    frame = pd.DataFrame({"query": query, "doc": docs, "annotator": annotators, "grade": grades})
    return frame.pivot(index="annotator", columns=["query", "doc"], values="grade").to_numpy()


def agreement_task(tool: str, data: Json) -> Callable[[], Json]:
    """The timed call of one agreement column; returns {"alpha"} and/or {"kappas"}."""
    import numpy as np

    query, docs, grades, annotators = (
        data["query"],
        data["docs"],
        data["grades"],
        data["annotators"],
    )
    categories = np.unique(grades).tolist()
    if tool == "ours":
        from retrieval_gate.stats.agreement import annotator_agreement

        def ours() -> Json:
            result = annotator_agreement(query, docs, grades, annotators, graded=True)
            kappas = {f"{p.first}|{p.second}": p.kappa for p in result.pairs}
            return {"alpha": result.alpha, "kappas": kappas, "items": result.items}

        return ours
    if tool in ("ours_matrix", "kripp_matrix"):
        matrix = np.full((ANNOTATORS, data["items"]), np.nan)
        matrix[data["who"], data["item"]] = grades
        if tool == "ours_matrix":
            from retrieval_gate.stats.agreement import krippendorff_alpha

            return lambda: {"alpha": krippendorff_alpha(matrix, level="ordinal")}
        import krippendorff

        return lambda: {
            "alpha": float(
                krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
            )
        }
    import pandas  # noqa: F401  (import cost is not part of the measurement)

    if tool == "kripp_rows":
        import krippendorff

        def kripp_rows() -> Json:
            built = pivot(query, docs, grades, annotators)
            alpha = krippendorff.alpha(reliability_data=built, level_of_measurement="ordinal")
            return {"alpha": float(alpha)}

        return kripp_rows
    if tool == "sklearn":
        import pandas as pd
        from sklearn.metrics import cohen_kappa_score

        def sklearn_kappas() -> Json:
            frame = pd.DataFrame(
                {"query": query, "doc": docs, "annotator": annotators, "grade": grades}
            )
            wide = frame.pivot(index="annotator", columns=["query", "doc"], values="grade")
            names, built = [str(n) for n in wide.index], wide.to_numpy()
            kappas = {}
            for i, j in itertools.combinations(range(len(names)), 2):
                both = ~np.isnan(built[i]) & ~np.isnan(built[j])
                kappas[f"{names[i]}|{names[j]}"] = float(
                    cohen_kappa_score(
                        built[i, both], built[j, both], labels=categories, weights="quadratic"
                    )
                )
            return {"kappas": kappas}

        return sklearn_kappas
    raise ValueError(f"unknown agreement tool {tool!r}")


def child_agreement(spec: Json) -> Json:
    data = judgment_rows(spec["rows"], spec["seed"])
    task = agreement_task(spec["tool"], data)
    measured = timed(task)
    result: Json = {
        "rows": len(data["grades"]),
        "items": data["items"],
        "seconds": measured.seconds,
        "peak_mb": measured.peak_mb,
        "base_mb": measured.base_mb,
        "section_peak": measured.peak_is_section,
        "value": measured.value,
    }
    if spec.get("trace"):
        result["traced_mb"] = traced_mb(task)
    return result


def child_build(spec: Json) -> Json:
    start = time.perf_counter()
    counts = write_labelled_set(Path(spec["root"]), spec["queries"], spec["seed"])
    seconds = time.perf_counter() - start
    write_labelled_set(Path(spec["root"]) / WARMUP, WARMUP_QUERIES, spec["seed"])
    return {**counts, "seconds": seconds}


def lint_inputs(root: Path, seed: int) -> tuple[Any, Any]:
    """The config at root/gate.yaml and a synthetic baseline of its queries."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.metrics import parse_metric

    config = load(root / "gate.yaml")
    with (root / "set" / "queries.jsonl").open(encoding="utf-8") as handle:
        ids = sorted(json.loads(line)["_id"] for line in handle)
    metrics = [str(parse_metric(key)) for key in config.metrics]
    return config, synthetic_baseline(ids, metrics, seed)


def child_lint(spec: Json) -> Json:
    from retrieval_gate.datasets import load_labels
    from retrieval_gate.lint import lint

    root = Path(spec["root"])
    # Imports are not timed: lint imports some modules on first use, and the readers import
    # pyarrow for large files, so one round on a tiny set and the pyarrow import come first.
    if _has("pyarrow"):
        import pyarrow.csv  # noqa: F401
    warm_config, warm_baseline = lint_inputs(root / WARMUP, spec["seed"] + 1)
    lint(warm_config, load_labels(warm_config.dataset, warm_config.base_dir), warm_baseline)
    del warm_config, warm_baseline
    config, baseline = lint_inputs(root, spec["seed"] + 1)

    def read() -> Any:
        return load_labels(config.dataset, config.base_dir)

    loading = timed(read)
    labels = loading.value
    loading.value = None
    checking = timed(lambda: lint(config, labels, baseline))
    report = checking.value
    steps: Json = {}
    for name, measured in (("load_labels", loading), ("lint", checking)):
        steps[name] = {
            "seconds": measured.seconds,
            "peak_mb": measured.peak_mb,
            "base_mb": measured.base_mb,
            "section_peak": measured.peak_is_section,
        }
    if spec.get("trace"):
        del labels
        steps["load_labels"]["traced_mb"] = traced_mb(read)
        labels = read()
        steps["lint"]["traced_mb"] = traced_mb(lambda: lint(config, labels, baseline))
    findings = Counter(f"{f.code} ({f.severity})" for f in report.findings)
    return {"steps": steps, "findings": dict(sorted(findings.items()))}


def child_main(raw: str) -> None:
    spec = json.loads(raw)
    task = spec["task"]
    if task == "agreement":
        result = child_agreement(spec)
    elif task == "build":
        result = child_build(spec)
    elif task == "lint":
        result = child_lint(spec)
    else:
        raise ValueError(f"unknown child task {task!r}")
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------------
# Parent process
# --------------------------------------------------------------------------------------------


@dataclass
class Cell:
    """One (size, column) measured `repeat` times, each in a fresh child."""

    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    base_mb: list[float] = field(default_factory=list)
    traced_mb: float | None = None
    value: Json | None = None
    error: str | None = None

    @property
    def extra_mb(self) -> float:
        """Peak RSS above the RSS before the timed call (largest over repeats)."""
        return max(p - b for p, b in zip(self.peak_mb, self.base_mb, strict=True))


def run_child(spec: Json, *, timeout: float) -> Json:
    """Run this script with --child in a fresh interpreter and return its result."""
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result: Json = json.loads(line[len(RESULT_PREFIX) :])
            return result
    tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return {"error": tail[-1] if tail else f"child exited with {proc.returncode}"}


def _fmt_mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def format_aligned(header: list[str], cells: list[list[str]], numeric: set[int]) -> str:
    widths = [max(len(r[i]) for r in [header, *cells]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(c) for c in cells)])


def format_markdown(header: list[str], cells: list[list[str]], numeric: set[int]) -> str:
    align = ["---:" if i in numeric else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
    return "\n".join(lines)


def agreement_tables(
    sizes: Sequence[str],
    cells: Mapping[tuple[str, str], Cell],
    missing: Mapping[str, str],
) -> list[tuple[str, list[str], list[list[str]], set[int]]]:
    """(title, header, rows, numeric columns) of the seconds and the memory table."""
    keys = [key for key, _, _ in TOOLS]
    lead = ["judgment rows", "items"]
    seconds_rows, memory_rows = [], []
    for size in sizes:
        first = next((c for k in keys if (c := cells.get((size, k))) and c.value), None)
        rows = f"{first.value['rows']:,}" if first and first.value else "-"
        items = f"{first.value['items']:,}" if first and first.value else "-"
        timing, memory = [rows, items], [rows, items]
        for key in keys:
            cell = cells.get((size, key))
            if key in missing:
                timing.append(missing[key])
                memory.append(missing[key])
            elif cell is None or not cell.seconds:
                timing.append(cell.error if cell and cell.error else "-")
                memory.append("-")
            else:
                timing.append(
                    f"{_fmt_seconds(statistics.median(cell.seconds))} "
                    f"({_fmt_seconds(min(cell.seconds))})"
                )
                memory.append(f"{_fmt_mb(cell.extra_mb)} / {_fmt_mb(cell.traced_mb)}")
        ours, theirs = cells.get((size, "ours")), cells.get((size, "kripp_rows"))
        if ours and ours.seconds and theirs and theirs.seconds:
            ratio = statistics.median(theirs.seconds) / statistics.median(ours.seconds)
            timing.append(f"{ratio:.1f}x")
        else:
            timing.append("-")
        seconds_rows.append(timing)
        memory_rows.append(memory)
    headers = [TOOL_HEADER[k] for k in keys]
    numeric = set(range(len(lead) + len(keys) + 1))
    return [
        (
            "Agreement, seconds: median (min) of the repeats, each in a fresh process",
            [*lead, *headers, "ours speedup vs krippendorff incl. pivot"],
            seconds_rows,
            numeric,
        ),
        (
            "Agreement, peak RSS above the RSS before the call / tracemalloc peak (MB)",
            [*lead, *headers],
            memory_rows,
            numeric,
        ),
    ]


def agreement_checks(sizes: Sequence[str], cells: Mapping[tuple[str, str], Cell]) -> list[str]:
    """Lines on ours vs krippendorff (alpha) and vs scikit-learn (kappas); raises on a
    difference above AGREE_TOL."""
    lines, failures = [], []
    for other, what in (
        ("ours_matrix", "alpha"),
        ("kripp_matrix", "alpha"),
        ("kripp_rows", "alpha"),
        ("sklearn", "kappas"),
    ):
        worst, compared = 0.0, 0
        for size in sizes:
            ours, theirs = cells.get((size, "ours")), cells.get((size, other))
            if not (ours and ours.value and theirs and theirs.value):
                continue
            if what == "alpha":
                pairs = [(ours.value["alpha"], theirs.value["alpha"])]
            else:
                mine = ours.value["kappas"]
                if set(mine) != set(theirs.value["kappas"]):
                    failures.append(f"{size}: {TOOL_HEADER[other]} has other annotator pairs")
                    continue
                pairs = [(mine[p], theirs.value["kappas"][p]) for p in mine]
            for a, b in pairs:
                compared += 1
                diff = abs(a - b) if not (math.isnan(a) and math.isnan(b)) else 0.0
                if not diff <= AGREE_TOL:
                    failures.append(f"{size}: ours {what} {a!r} vs {TOOL_HEADER[other]} {b!r}")
                worst = max(worst, diff) if diff == diff else math.inf
        if compared:
            lines.append(
                f"  {TOOL_HEADER[other]} vs ours: {compared} {what.rstrip('s')} values, "
                f"max |diff| {worst:.3g}"
            )
    if failures:
        raise AssertionError("values disagree:\n" + "\n".join(failures))
    if lines:
        lines.insert(0, f"values agree (to {AGREE_TOL:g}):")
    return lines


def lint_table(
    sizes: Sequence[str], results: Mapping[str, list[Json]], counts: Mapping[str, Json]
) -> tuple[list[str], list[list[str]], set[int]]:
    header = [
        "queries",
        "judgments",
        "corpus docs",
        "step",
        "median s",
        "min s",
        "peak RSS MB",
        "base MB",
        "tracemalloc peak MB",
    ]
    rows = []
    for size in sizes:
        runs = results.get(size, [])
        count = counts.get(size, {})
        lead = [
            f"{count.get('queries', SIZES[size][1]):,}",
            f"{count['judgments']:,}" if "judgments" in count else "-",
            f"{count['corpus']:,}" if "corpus" in count else "-",
        ]
        for step in LINT_STEPS:
            done = [r["steps"][step] for r in runs if "steps" in r]
            if not done:
                error = next((r["error"] for r in runs if "error" in r), "-")
                rows.append([*lead, step, error, "-", "-", "-", "-"])
                continue
            seconds = [d["seconds"] for d in done]
            traced = next((d["traced_mb"] for d in done if "traced_mb" in d), None)
            rows.append(
                [
                    *lead,
                    step,
                    _fmt_seconds(statistics.median(seconds)),
                    _fmt_seconds(min(seconds)),
                    _fmt_mb(max(d["peak_mb"] for d in done)),
                    _fmt_mb(statistics.median(d["base_mb"] for d in done)),
                    _fmt_mb(traced),
                ]
            )
    return header, rows, {0, 1, 2, 4, 5, 6, 7, 8}


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes",
        default="small,medium",
        help="comma-separated of small,medium,large, or all (default: small,medium)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cell (median)")
    parser.add_argument("--parts", default="all", help="agreement,lint or all (default: all)")
    parser.add_argument("--seed", type=int, default=20240521)
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds before a child measurement is abandoned",
    )
    parser.add_argument("--markdown", action="store_true", help="also print Markdown tables")
    parser.add_argument("--json", type=Path, help="write the raw measurements here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child_main(args.child)
        return 0
    sizes = parse_list(args.sizes, list(SIZES), "size")
    parts = parse_list(args.parts, PARTS, "part")
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    notes: list[str] = []

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.perf_counter()
    load_before = _load_average()
    fingerprint = source_fingerprint("retrieval_gate")
    missing: dict[str, str] = {}
    for key, _, module in TOOLS:
        if not _has(module):
            missing[key] = "not installed"
            notes.append(f"{TOOL_HEADER[key]}: not installed ({module}), skipped")
    if "kripp_rows" not in missing and not _has("pandas"):
        missing["kripp_rows"] = "not installed"
        notes.append("krippendorff incl. pivot: pandas not installed, skipped")
    if "sklearn" not in missing and not _has("pandas"):
        missing["sklearn"] = "not installed"
        notes.append("sklearn kappas incl. pivot: pandas not installed, skipped")
    section_peak = True

    cells: dict[tuple[str, str], Cell] = {}
    if "agreement" in parts:
        todo = [(s, k) for s in sizes for k, _, _ in TOOLS if k not in missing]
        for index, (size, key) in enumerate(todo, 1):
            cell = cells.setdefault((size, key), Cell())
            for rep in range(args.repeat):
                spec = {
                    "task": "agreement",
                    "rows": SIZES[size][0],
                    "seed": args.seed,
                    "tool": key,
                    "trace": rep == 0,
                }
                result = run_child(spec, timeout=args.timeout)
                if "error" in result:
                    cell.error = f"error: {result['error']}"
                    say(f"[agreement {index}/{len(todo)}] {size} {key}: {cell.error}")
                    break
                cell.seconds.append(result["seconds"])
                cell.peak_mb.append(result["peak_mb"])
                cell.base_mb.append(result["base_mb"])
                section_peak &= result["section_peak"]
                if "traced_mb" in result:
                    cell.traced_mb = result["traced_mb"]
                value = {**result["value"], "rows": result["rows"], "items": result["items"]}
                if cell.value is not None and cell.value != value:
                    notes.append(f"agreement {size} {key}: values differed between repeats")
                cell.value = cell.value or value
                say(
                    f"[agreement {index}/{len(todo)}] {size} {key} run {rep + 1}: "
                    f"{result['seconds']:.3f}s ({time.perf_counter() - started:.0f}s elapsed)"
                )

    lint_runs: dict[str, list[Json]] = {}
    lint_counts: dict[str, Json] = {}
    findings: dict[str, Json] = {}
    if "lint" in parts:
        with tempfile.TemporaryDirectory(prefix="bench_labels_") as folder:
            for size in sizes:
                root = Path(folder) / size
                spec = {
                    "task": "build",
                    "root": str(root),
                    "queries": SIZES[size][1],
                    "seed": args.seed,
                }
                built = run_child(spec, timeout=args.timeout)
                if "error" in built:
                    lint_runs[size] = [built]
                    say(f"[lint] building {size} failed: {built['error']}")
                    continue
                lint_counts[size] = built
                say(
                    f"[lint] {size}: wrote {built['queries']:,} queries, "
                    f"{built['judgments']:,} judgments, {built['corpus']:,} docs in "
                    f"{built['seconds']:.1f}s"
                )
                for rep in range(args.repeat):
                    spec = {
                        "task": "lint",
                        "root": str(root),
                        "seed": args.seed,
                        "trace": rep == 0,
                    }
                    result = run_child(spec, timeout=args.timeout)
                    lint_runs.setdefault(size, []).append(result)
                    if "error" in result:
                        say(f"[lint] {size} run {rep + 1}: error: {result['error']}")
                        break
                    section_peak &= all(s["section_peak"] for s in result["steps"].values())
                    if size in findings and findings[size] != result["findings"]:
                        notes.append(f"lint {size}: findings differed between repeats")
                    findings.setdefault(size, result["findings"])
                    say(
                        f"[lint] {size} run {rep + 1}: load_labels "
                        f"{result['steps']['load_labels']['seconds']:.3f}s, lint "
                        f"{result['steps']['lint']['seconds']:.3f}s "
                        f"({time.perf_counter() - started:.0f}s elapsed)"
                    )

    after = source_fingerprint("retrieval_gate")
    if fingerprint is not None and after != fingerprint:
        notes.append(
            f"ours: the retrieval_gate sources changed during the run ({fingerprint} -> "
            f"{after}); rows may mix versions"
        )
    elif fingerprint is not None:
        notes.append(f"ours: retrieval_gate source fingerprint {fingerprint}")
    if not section_peak:
        notes.append(
            "VmHWM could not be reset here: peak RSS is the child's whole-run ru_maxrss, which "
            "includes building the synthetic data"
        )

    checks: list[str] = []
    if cells:
        for title, header, rows, numeric in agreement_tables(sizes, cells, missing):
            print()
            print(title)
            print(format_aligned(header, rows, numeric))
            if args.markdown:
                print()
                print(format_markdown(header, rows, numeric))
        print()
        print(
            "ours = annotator_agreement(graded=True): every pair's quadratic-weighted kappa and "
            "ordinal alpha from the judgment rows; prebuilt matrix = annotators x items NaN "
            "matrix built before timing; incl. pivot = pandas DataFrame.pivot of the rows to "
            "that matrix, then krippendorff.alpha(ordinal), or per pair a NumPy mask of the "
            "shared items and cohen_kappa_score(weights='quadratic', labels=all grades)."
        )
        checks = agreement_checks(sizes, cells)
        for line in checks:
            print(line)
    if lint_runs:
        header, rows, numeric = lint_table(sizes, lint_runs, lint_counts)
        print()
        print("lint end to end (no other tool lints a labelled set)")
        print(format_aligned(header, rows, numeric))
        if args.markdown:
            print()
            print(format_markdown(header, rows, numeric))
        print()
        print(
            "load_labels = datasets.load_labels (queries.jsonl, qrels/test.tsv, corpus.jsonl); "
            "lint = lint.lint(config, labels, baseline) alone; peak RSS = the child's VmHWM, "
            "reset just before the step; base = its RSS then; tracemalloc peak from a separate "
            "untimed run."
        )
        for size, found in findings.items():
            listed = ", ".join(f"{code} x{n}" for code, n in found.items()) or "none"
            print(f"lint findings at {SIZES[size][1]:,} queries: {listed}")
    load_after = _load_average()
    if load_before is not None and load_after is not None:
        notes.append(
            f"1-minute load average {load_before:.2f} at the start, {load_after:.2f} at the end "
            f"({os.cpu_count()} CPUs): other work on the machine shows up as noise"
        )
    for note in notes:
        print(f"note: {note}")
    print(
        f"total {time.perf_counter() - started:.0f}s; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs; children run with "
        f"PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', '0')}"
    )
    if args.json:
        payload = {
            "agreement": [
                {
                    "size": size,
                    "tool": key,
                    "seconds": cell.seconds,
                    "peak_mb": cell.peak_mb,
                    "base_mb": cell.base_mb,
                    "traced_mb": cell.traced_mb,
                    "value": cell.value,
                    "error": cell.error,
                }
                for (size, key), cell in cells.items()
            ],
            "lint": {"counts": lint_counts, "runs": lint_runs},
            "notes": notes,
        }
        args.json.write_text(json.dumps(payload, indent=1, allow_nan=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
