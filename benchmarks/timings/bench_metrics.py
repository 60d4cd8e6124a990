"""Benchmark retrieval_gate's metric engine against pytrec_eval, ranx and ir_measures."""
# Modes: files and dicts time the work inside one child process; process times the whole
# command a user runs (`retrieval-gate evaluate`) beside pytrec_eval's whole process.

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.byte_compiled import byte_compile

# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------

SIZES: dict[str, tuple[int, int]] = {
    "small": (10_000, 100),
    "medium": (100_000, 100),
    "large": (1_000, 1_000),
    "xlarge": (300_000, 100),
    "huge": (1_000_000, 100),
}
MODES = ("files", "dicts", "process")
TOOLS = ("ours", "pytrec_eval", "ranx", "ir_measures", "numpy_floor")
IN_PROCESS_TOOLS = TOOLS[:4]
"""The tools files and dicts modes time inside a child; numpy_floor is a whole process only."""
TOOL_MODULES = {
    "ours": "retrieval_gate",
    "pytrec_eval": "pytrec_eval",
    "ranx": "ranx",
    "ir_measures": "ir_measures",
    "numpy_floor": "numpy",
}
PROCESS_LABELS = {
    "ours": "retrieval-gate evaluate",
    "pytrec_eval": "pytrec_eval script",
    "ranx": "ranx script",
    "ir_measures": "ir_measures script",
    "numpy_floor": "numpy floor (numpy_floor.py)",
}
CORPUS = 1_000_000  # doc ids d000000 .. d999999


@dataclass(frozen=True)
class Shape:
    """What a data set looks like beyond its size."""

    mean_judged: float
    """Judged docs per query (Poisson, at least one)."""
    decimals: int
    """Decimals of the run's scores (fewer: more exact ties)."""
    about: str


SHAPES = {
    "light": Shape(5.0, 4, "about 5 judged docs per query, scores with 4 decimals"),
    "deep": Shape(10.0, 2, "about 10 judged docs per query, scores with 2 decimals (issue 31)"),
}
RETRIEVED_SHARE = 0.6  # share of the judged docs that the run retrieves
TIE_RATE = 0.01  # share of adjacent run entries forced to tie on score
DATA_VERSION = 2  # bump when the generator changes, so cached data are rebuilt
NUMBA_CACHE_ENV = "NUMBA_CACHE_DIR"
RESULT_PREFIX = "BENCH_RESULT "
AGREE_TOL = 1e-9

OUR_METRICS = [
    "ndcg@10",
    "ndcg(gain=linear)@10",
    "rr@10",
    "ap@100",
    "recall@10",
    "recall@100",
    "precision@10",
]
EXP_GAINS = {0: 0, 1: 1, 2: 3, 3: 7}  # 2**grade - 1
PYTREC_MEASURES = ["ndcg_cut.10", "recip_rank", "map_cut.100", "recall.10,100", "P.10"]
RANX_METRICS = [
    "ndcg_burges@10",
    "ndcg@10",
    "mrr@10",
    "map@100",
    "recall@10",
    "recall@100",
    "precision@10",
]
IRM_MEASURES = [
    "nDCG(gains={0:0,1:1,2:3,3:7})@10",
    "nDCG@10",
    "RR@10",
    "AP@100",
    "R@10",
    "R@100",
    "P@10",
]
# Our metric -> each tool's result key (None: the tool has no equivalent).
# ir_measures keys are str(parse_measure(...)), which drops identity gains.
EQUIVALENT: dict[str, dict[str, str | None]] = {
    "ndcg@10": {
        "pytrec_eval": None,
        "ranx": "ndcg_burges@10",
        "ir_measures": "nDCG(gains={2:3,3:7})@10",
    },
    "ndcg(gain=linear)@10": {
        "pytrec_eval": "ndcg_cut_10",
        "ranx": "ndcg@10",
        "ir_measures": "nDCG@10",
    },
    "rr@10": {"pytrec_eval": "recip_rank", "ranx": "mrr@10", "ir_measures": "RR@10"},
    "ap@100": {"pytrec_eval": "map_cut_100", "ranx": "map@100", "ir_measures": "AP@100"},
    "recall@10": {"pytrec_eval": "recall_10", "ranx": "recall@10", "ir_measures": "R@10"},
    "recall@100": {"pytrec_eval": "recall_100", "ranx": "recall@100", "ir_measures": "R@100"},
    "precision@10": {"pytrec_eval": "P_10", "ranx": "precision@10", "ir_measures": "P@10"},
}
# Measures that pytrec_eval computes identically (trec_eval, linear gain).
SHARED_EXACT = ["ndcg(gain=linear)@10", "ap@100", "recall@10", "recall@100", "precision@10"]
TOOL_NOTES = {
    "pytrec_eval": "6/7: no exp-gain ndcg; rr@10 -> uncut recip_rank",
    "ranx": "numba, warm (JIT excluded)",
    "ir_measures": "pytrec_eval provider + msmarco for RR@10",
}

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------------


@dataclass
class DataPaths:
    """The files of one synthetic data set."""

    root: Path

    @property
    def qrels(self) -> Path:
        return self.root / "qrels.txt"

    @property
    def run(self) -> Path:
        return self.root / "run.txt"

    @property
    def qrels_pickle(self) -> Path:
        return self.root / "qrels.pkl"

    @property
    def run_pickle(self) -> Path:
        return self.root / "run.pkl"

    @property
    def meta(self) -> Path:
        return self.root / "meta.json"


def _meta(seed: int, queries: int, depth: int, shape: str) -> Json:
    return {
        "seed": seed,
        "shape": shape,
        "queries": queries,
        "depth": depth,
        "corpus": CORPUS,
        "version": DATA_VERSION,
    }


def generate(
    seed: int, queries: int, depth: int, shape: Shape = SHAPES["light"]
) -> tuple[Any, Any, Any, Any, Any]:
    """Run doc ids and score ticks (queries x depth, ticks of 10**-shape.decimals) and qrels
    (query, doc, grade) arrays."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # Retrieved docs: `depth` distinct ids per query from a corpus of CORPUS ids.
    docs = rng.integers(0, CORPUS, size=(queries, depth))
    while True:
        docs.sort(axis=1)
        dup = np.zeros(docs.shape, dtype=bool)
        dup[:, 1:] = docs[:, 1:] == docs[:, :-1]
        count = int(dup.sum())
        if not count:
            break
        docs[dup] = rng.integers(0, CORPUS, size=count)
    docs = rng.permuted(docs, axis=1)
    # Scores in ticks (exact decimals in the files), descending, with a few exact ties.
    unit = 10**shape.decimals
    top = rng.integers(12 * unit, 32 * unit, size=queries)
    scale = top * 0.6 / depth
    gaps = np.rint(rng.exponential(1.0, size=(queries, depth)) * scale[:, None]).astype(np.int64)
    gaps[:, 0] = 0
    gaps[rng.random((queries, depth)) < TIE_RATE] = 0
    ticks = top[:, None] - np.cumsum(gaps, axis=1)
    # Judged docs: some retrieved (biased to the top ranks), some not retrieved at all.
    judged = np.maximum(rng.poisson(shape.mean_judged, size=queries), 1)
    n_ret = np.minimum(rng.binomial(judged, RETRIEVED_SHARE), depth)
    n_unret = judged - n_ret
    weight = 1.0 / np.arange(1, depth + 1) ** 0.8
    order = np.argsort(rng.exponential(1.0, size=(queries, depth)) / weight, axis=1)
    picked = np.arange(depth)[None, :] < n_ret[:, None]
    q_ret = np.repeat(np.arange(queries), n_ret)
    pos = order[picked]
    doc_ret = docs[q_ret, pos]
    grade_ret = np.where(
        pos < 10,
        rng.choice(4, size=len(pos), p=[0.15, 0.30, 0.35, 0.20]),
        rng.choice(4, size=len(pos), p=[0.45, 0.30, 0.18, 0.07]),
    )
    q_un = np.repeat(np.arange(queries), n_unret)
    doc_un = rng.integers(0, CORPUS, size=len(q_un))
    key_un = q_un * CORPUS + doc_un
    key_run = (np.arange(queries)[:, None] * CORPUS + docs).ravel()
    _, first = np.unique(key_un, return_index=True)
    keep = np.zeros(len(key_un), dtype=bool)
    keep[first] = True
    keep &= ~np.isin(key_un, key_run)
    q_un, doc_un = q_un[keep], doc_un[keep]
    grade_un = rng.choice(4, size=len(q_un), p=[0.50, 0.30, 0.15, 0.05])
    q_all = np.concatenate([q_ret, q_un])
    doc_all = np.concatenate([doc_ret, doc_un])
    grade_all = np.concatenate([grade_ret, grade_un])
    qorder = np.lexsort((doc_all, q_all))
    return docs, ticks, q_all[qorder], doc_all[qorder], grade_all[qorder]


def qid(index: int) -> str:
    """TREC-style numeric query id."""
    return str(1001 + index)


def build_dataset(
    paths: DataPaths, seed: int, queries: int, depth: int, shape: str, pickles: bool = True
) -> None:
    """Write the TREC files and (when `pickles`) the pickled dicts of one data set."""
    decimals = SHAPES[shape].decimals
    unit = 10**decimals
    docs, ticks, q_all, doc_all, grade_all = generate(seed, queries, depth, SHAPES[shape])
    paths.root.mkdir(parents=True, exist_ok=True)
    run: dict[str, dict[str, float]] = {}
    ranks = [str(r) for r in range(1, depth + 1)]
    with paths.run.open("w", encoding="ascii", newline="\n") as out:
        for i in range(queries):
            q = qid(i)
            names = [f"d{d:06d}" for d in docs[i].tolist()]
            row = ticks[i].tolist()
            out.write(
                "".join(
                    f"{q} Q0 {n} {r} {t // unit}.{t % unit:0{decimals}d} bench\n"
                    for n, r, t in zip(names, ranks, row, strict=True)
                )
            )
            if pickles:
                run[q] = dict(zip(names, (ticks[i] / unit).tolist(), strict=True))
    qrels: dict[str, dict[str, int]] = {qid(i): {} for i in range(queries)}
    with paths.qrels.open("w", encoding="ascii", newline="\n") as out:
        for qi, d, g in zip(q_all.tolist(), doc_all.tolist(), grade_all.tolist(), strict=True):
            q = qid(qi)
            out.write(f"{q} 0 d{d:06d} {g}\n")
            qrels[q][f"d{d:06d}"] = g
    if not pickles:
        return
    with paths.run_pickle.open("wb") as f:
        pickle.dump(run, f, protocol=pickle.HIGHEST_PROTOCOL)
    with paths.qrels_pickle.open("wb") as f:
        pickle.dump(qrels, f, protocol=pickle.HIGHEST_PROTOCOL)


def dataset_ready(paths: DataPaths, want: Json, pickles: bool = True) -> bool:
    """Whether the files of a data set exist and were built with the same parameters."""
    files = [paths.qrels, paths.run]
    if pickles:
        files += [paths.qrels_pickle, paths.run_pickle]
    if not (paths.meta.is_file() and all(p.is_file() for p in files)):
        return False
    try:
        return bool(json.loads(paths.meta.read_text()) == want)
    except ValueError:
        return False


def child_build(spec: Json) -> Json:
    """Build one data set (in a child, so the parent stays small: see run_child)."""
    paths = DataPaths(Path(spec["data"]))
    want = _meta(spec["seed"], spec["queries"], spec["depth"], spec["shape"])
    paths.meta.unlink(missing_ok=True)
    start = time.perf_counter()
    build_dataset(
        paths, spec["seed"], spec["queries"], spec["depth"], spec["shape"], spec["pickles"]
    )
    paths.meta.write_text(json.dumps(want))
    return {"seconds": time.perf_counter() - start}


def load_dicts(paths: DataPaths) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The in-memory qrels and run dicts of a data set."""
    with paths.qrels_pickle.open("rb") as f:
        qrels = pickle.load(f)
    with paths.run_pickle.open("rb") as f:
        run = pickle.load(f)
    return qrels, run


# --------------------------------------------------------------------------------------------
# Tool adapters (run inside the child process)
# --------------------------------------------------------------------------------------------

Work = Callable[[], Mapping[str, float]]


def _ours_mean_by_request(scores: Any) -> dict[str, float]:
    """Our means keyed by the requested metric strings (the engine keys canonical names)."""
    from retrieval_gate.metrics import parse_metric

    means = scores.mean()
    return {m: float(means[str(parse_metric(m))]) for m in OUR_METRICS}


def ours_work(mode: str, paths: DataPaths, data: Any) -> Work:
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import read_qrels, read_run

    def files() -> Mapping[str, float]:
        qrels = read_qrels(str(paths.qrels))
        run = read_run(str(paths.run))
        return _ours_mean_by_request(evaluate(run, qrels, OUR_METRICS))

    def dicts() -> Mapping[str, float]:
        qrels, run = data
        return _ours_mean_by_request(evaluate(run, qrels, OUR_METRICS))

    return files if mode == "files" else dicts


def _plain_parse_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    with path.open() as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    return run


def _plain_parse_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as f:
        for line in f:
            q, _, d, g = line.split()
            qrels.setdefault(q, {})[d] = int(g)
    return qrels


def pytrec_eval_means(
    qrels: Mapping[str, Any], run: Mapping[str, Any], measures: Sequence[str]
) -> dict[str, float]:
    """pytrec_eval's per-measure means over the evaluated queries."""
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    names = sorted({m for values in per_query.values() for m in values})
    return {
        m: float(pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()]))
        for m in names
    }


def pytrec_eval_work(mode: str, paths: DataPaths, data: Any) -> Work:
    import pytrec_eval

    parse_run = getattr(pytrec_eval, "parse_run", None)
    parse_qrel = getattr(pytrec_eval, "parse_qrel", None)

    def files() -> Mapping[str, float]:
        if parse_run is not None and parse_qrel is not None:
            with paths.qrels.open() as f:
                qrels = parse_qrel(f)
            with paths.run.open() as f:
                run = parse_run(f)
        else:
            qrels, run = _plain_parse_qrels(paths.qrels), _plain_parse_run(paths.run)
        return pytrec_eval_means(qrels, run, PYTREC_MEASURES)

    def dicts() -> Mapping[str, float]:
        qrels, run = data
        return pytrec_eval_means(qrels, run, PYTREC_MEASURES)

    return files if mode == "files" else dicts


def ranx_warmup(tiny: DataPaths) -> float:
    """Seconds for a first ranx round trip on a tiny input (numba JIT compile or cache load)."""
    import numba
    import ranx

    start = time.perf_counter()
    ranx.evaluate(
        ranx.Qrels.from_file(str(tiny.qrels), kind="trec"),
        ranx.Run.from_file(str(tiny.run), kind="trec"),
        RANX_METRICS,
    )
    qrels, run = load_dicts(tiny)
    ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)
    elapsed = time.perf_counter() - start
    # ranx.evaluate pins numba to one thread for inputs of < 10 queries; undo that, if it did.
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return elapsed


def ranx_work(mode: str, paths: DataPaths, data: Any) -> Work:
    import ranx

    def files() -> Mapping[str, float]:
        qrels = ranx.Qrels.from_file(str(paths.qrels), kind="trec")
        run = ranx.Run.from_file(str(paths.run), kind="trec")
        return {k: float(v) for k, v in ranx.evaluate(qrels, run, RANX_METRICS).items()}

    def dicts() -> Mapping[str, float]:
        qrels, run = data
        means = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)
        return {k: float(v) for k, v in means.items()}

    return files if mode == "files" else dicts


def ir_measures_work(mode: str, paths: DataPaths, data: Any) -> Work:
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in IRM_MEASURES]

    def files() -> Mapping[str, float]:
        qrels = ir_measures.read_trec_qrels(str(paths.qrels))
        run = ir_measures.read_trec_run(str(paths.run))
        means = ir_measures.calc_aggregate(measures, qrels, run)
        return {str(k): float(v) for k, v in means.items()}

    def dicts() -> Mapping[str, float]:
        qrels, run = data
        means = ir_measures.calc_aggregate(measures, qrels, run)
        return {str(k): float(v) for k, v in means.items()}

    return files if mode == "files" else dicts


WORK_FACTORIES: dict[str, Callable[[str, DataPaths, Any], Work]] = {
    "ours": ours_work,
    "pytrec_eval": pytrec_eval_work,
    "ranx": ranx_work,
    "ir_measures": ir_measures_work,
}


# --------------------------------------------------------------------------------------------
# Child process
# --------------------------------------------------------------------------------------------


def _maxrss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def _proc_status_mb(field_name: str) -> float | None:
    """A memory field of /proc/self/status in MB (Linux), else None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def _current_rss_mb() -> float:
    rss = _proc_status_mb("VmRSS")
    return _maxrss_mb() if rss is None else rss


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def child_measure(spec: Json) -> Json:
    """One timed measurement: inputs to means, in this (fresh) process."""
    paths = DataPaths(Path(spec["data"]))
    tool, mode = spec["tool"], spec["mode"]
    warmup = ranx_warmup(DataPaths(Path(spec["tiny"]))) if tool == "ranx" else None
    data = load_dicts(paths) if mode == "dicts" else None
    work = WORK_FACTORIES[tool](mode, paths, data)
    gc.collect()
    base = _current_rss_mb()
    start = time.perf_counter()
    means = dict(work())
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "peak_mb": _maxrss_mb(),
        "hwm_mb": _proc_status_mb("VmHWM"),
        "base_mb": base,
        "warmup": warmup,
        "means": means,
    }


def child_probe(spec: Json) -> Json:
    """Is our package importable?"""
    try:
        from retrieval_gate.metrics import evaluate  # noqa: F401
        from retrieval_gate.readers import read_qrels, read_run  # noqa: F401
    except ImportError as exc:
        return {"importable": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"importable": True}


def child_verify(spec: Json) -> Json:
    """pytrec_eval references for our exp-gain ndcg@10 and rr@10 (untimed).

    Exp-gain nDCG@10 is trec_eval's ndcg_cut.10 on qrels with grades mapped to 2**g - 1;
    rr@10 is recip_rank on the run cut to its top 10 in trec_eval's order (score descending,
    ties by docno descending).
    """
    qrels, run = load_dicts(DataPaths(Path(spec["data"])))
    exp_qrels = {q: {d: EXP_GAINS[g] for d, g in docs.items()} for q, docs in qrels.items()}
    top10 = {
        q: dict(sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:10])
        for q, docs in run.items()
    }
    means = pytrec_eval_means(exp_qrels, top10, ["ndcg_cut.10", "recip_rank"])
    return {"means": {"ndcg@10": means["ndcg_cut_10"], "rr@10": means["recip_rank"]}}


def child_main(raw: str) -> None:
    spec = json.loads(raw)
    task = spec["task"]
    if task == "measure":
        result = child_measure(spec)
    elif task == "probe":
        result = child_probe(spec)
    elif task == "verify":
        result = child_verify(spec)
    elif task == "ranx_warmup":
        result = {"seconds": ranx_warmup(DataPaths(Path(spec["tiny"])))}
    elif task == "build":
        result = child_build(spec)
    else:
        raise ValueError(f"unknown child task {task!r}")
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------------
# Parent process
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One table row: a (size, mode, tool variant) measured `repeat` times."""

    size: str
    mode: str
    tool: str
    label: str
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    base_mb: list[float] = field(default_factory=list)
    warmup: list[float] = field(default_factory=list)
    means: dict[str, float] | None = None
    unstable: bool = False
    hwm_mb: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    error: str | None = None
    note: str = ""


def run_child(
    spec: Json,
    *,
    timeout: float,
    env_extra: Mapping[str, str] | None = None,
) -> Json:
    """Run this script with --child in a fresh interpreter and return its result.

    Linux carries a process's peak RSS over fork and exec, so a child's ru_maxrss is at least
    the parent's RSS at fork time: the parent must stay small (it never builds data itself).
    """
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")  # reproducible set and dict orders in the tools
    env.update(env_extra or {})
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


def plan_rows(sizes: Sequence[str], tools: Sequence[str], modes: Sequence[str]) -> list[Row]:
    """The rows to measure, in table order (`sizes` are data set keys, shape:size)."""
    rows: list[Row] = []
    for size in sizes:
        for mode in modes:
            for tool in tools:
                if mode == "process":
                    rows.append(Row(size, mode, tool, PROCESS_LABELS[tool]))
                elif tool in IN_PROCESS_TOOLS:
                    rows.append(Row(size, mode, tool, tool))
    return rows


def size_of(key: str) -> str:
    """The size name of a data set key (`deep:medium` -> `medium`)."""
    return key.rsplit(":", 1)[-1]


# The whole process a pytrec_eval user runs: parse both files, evaluate, average.
PYTREC_SCRIPT = """\
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = set(sys.argv[3].split())
per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = sorted({m for values in per_query.values() for m in values})
for m in names:
    print(m, sum(v[m] for v in per_query.values()) / len(per_query))
"""


RANX_SCRIPT = """\
import sys, ranx
qrels = ranx.Qrels.from_file(sys.argv[1], kind="trec")
run = ranx.Run.from_file(sys.argv[2], kind="trec")
print(ranx.evaluate(qrels, run, sys.argv[3].split()))
"""

IRM_SCRIPT = """\
import sys, ir_measures
measures = [ir_measures.parse_measure(m) for m in sys.argv[3].split()]
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
print(ir_measures.calc_aggregate(measures, qrels, run))
"""


def process_command(tool: str, paths: DataPaths) -> list[str]:
    """The command a user runs: `retrieval-gate evaluate`, or another tool's script."""
    if tool == "ours":
        script = shutil.which("retrieval-gate", path=str(Path(sys.executable).parent))
        head = [script] if script else [sys.executable, "-m", "retrieval_gate"]
        return [*head, "evaluate", str(paths.qrels), str(paths.run), "-m", *OUR_METRICS]
    if tool == "numpy_floor":
        return [sys.executable, str(Path(__file__).with_name("numpy_floor.py")), str(paths.run)]
    script, measures = {
        "pytrec_eval": (PYTREC_SCRIPT, PYTREC_MEASURES),
        "ranx": (RANX_SCRIPT, RANX_METRICS),
        "ir_measures": (IRM_SCRIPT, IRM_MEASURES),
    }[tool]
    return [sys.executable, "-c", script, str(paths.qrels), str(paths.run), " ".join(measures)]


def time_process(
    command: list[str], timeout: float, env_extra: Mapping[str, str] | None = None
) -> Json:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (this child's own ru_maxrss, from
    wait4) of one command."""
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    env.update(env_extra or {})
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
    )
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            return {"error": f"timed out after {timeout:.0f}s"}
        time.sleep(0.002)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = [ln for ln in (proc.stderr.read() if proc.stderr else "").splitlines() if ln]
        return {"error": tail[-1] if tail else f"exit {proc.returncode}"}
    scale = 2**20 if sys.platform == "darwin" else 1024
    return {
        "seconds": seconds,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / scale,
    }


def process_report(rows: Sequence[Row], datasets: Mapping[str, DataPaths]) -> list[str]:
    """Issue 31's rows per data set: our whole process's CPU time (user + sys) against each
    other tool's (the median of the paired rounds' ratios, with their range) and our peak
    RSS against the run file's size, as a Markdown table."""
    others = ["pytrec_eval", "ranx", "ir_measures", "numpy_floor"]
    lines = [
        "| data set | run file | ours CPU s (wall s) | ours peak RSS / run file | "
        + " | ".join(f"ours / {t} CPU" for t in others)
        + " |",
        "|---|---:|---:|---:|" + "---:|" * len(others),
    ]
    for size in dict.fromkeys(r.size for r in rows if r.mode == "process"):
        pair = {r.tool: r for r in rows if r.mode == "process" and r.size == size}
        ours = pair.get("ours")
        if ours is None or not ours.cpu:
            continue
        run_mb = datasets[size].run.stat().st_size / 2**20
        cells = [
            size,
            f"{run_mb:,.0f} MiB",
            f"{statistics.median(ours.cpu):.2f} ({statistics.median(ours.seconds):.2f})",
            f"{max(ours.peak_mb):,.0f} MiB = {max(ours.peak_mb) / run_mb:.2f}x",
        ]
        for tool in others:
            theirs = pair.get(tool)
            if theirs is None or len(theirs.cpu) != len(ours.cpu):
                cells.append("-")
                continue
            ratios = [a / b for a, b in zip(ours.cpu, theirs.cpu, strict=True)]
            cells.append(
                f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}; "
                f"{statistics.median(theirs.cpu):.2f} s, {max(theirs.peak_mb):,.0f} MiB)"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _fmt_seconds(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def table_cells(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of the results table."""
    header = [
        "size",
        "queries x depth",
        "mode",
        "tool",
        "median s",
        "min s",
        "peak RSS MB",
        "base MB",
        "ours speedup",
        "notes",
    ]
    baselines: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.tool == "ours" and row.seconds:
            baselines[(row.size, row.mode)] = statistics.median(row.seconds)
    cells: list[list[str]] = []
    for row in rows:
        queries, depth = SIZES[size_of(row.size)]
        lead = [row.size, f"{queries:,} x {depth:,}", row.mode, row.label]
        if not row.seconds:
            cells.append([*lead, "-", "-", "-", "-", "-", row.error or row.note])
            continue
        median = statistics.median(row.seconds)
        base = baselines.get((row.size, row.mode))
        speedup = f"{median / base:.1f}x" if base else "-"
        cells.append(
            [
                *lead,
                _fmt_seconds(median),
                _fmt_seconds(min(row.seconds)),
                f"{max(row.peak_mb):,.0f}",
                f"{statistics.median(row.base_mb):,.0f}" if row.base_mb else "-",
                speedup,
                row.note,
            ]
        )
    return header, cells


def format_aligned(header: list[str], cells: list[list[str]]) -> str:
    numeric = {4, 5, 6, 7, 8}
    widths = [max(len(r[i]) for r in [header, *cells]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if i in numeric else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(c) for c in cells)])


def format_markdown(header: list[str], cells: list[list[str]]) -> str:
    numeric = {4, 5, 6, 7, 8}
    align = ["---:" if i in numeric else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells)
    return "\n".join(lines)


def agreement_report(rows: Sequence[Row], verify: Mapping[str, Json]) -> list[str]:
    """Lines on ours vs pytrec_eval (exact) and vs ranx / ir_measures (informational)."""
    lines: list[str] = []
    ours = [r for r in rows if r.tool == "ours" and r.means]
    pte = [r for r in rows if r.tool == "pytrec_eval" and r.means]
    if ours and pte:
        worst, where = 0.0, ""
        for o in ours:
            for p in (p for p in pte if p.size == o.size):
                for metric in SHARED_EXACT:
                    key = EQUIVALENT[metric]["pytrec_eval"]
                    assert key is not None
                    assert o.means is not None
                    assert p.means is not None
                    diff = abs(o.means[metric] - p.means[key])
                    if diff > worst:
                        worst = diff
                        where = f" (worst: {metric}, {o.size}, {o.label} {o.mode} vs {p.mode})"
        verdict = "AGREE" if worst <= AGREE_TOL else "DISAGREE"
        lines.append(
            f"agreement ours vs pytrec_eval on {', '.join(SHARED_EXACT)}: {verdict} "
            f"to {AGREE_TOL:g} (max |diff| {worst:.3g}){where if worst else ''}"
        )
    if ours and verify:
        worst, where = 0.0, ""
        for o in ours:
            ref = verify.get(o.size, {}).get("means")
            if not ref or o.means is None:
                continue
            for metric, value in ref.items():
                diff = abs(o.means[metric] - value)
                if diff > worst:
                    worst, where = diff, f" (worst: {metric}, {o.size}, {o.label} {o.mode})"
        verdict = "AGREE" if worst <= AGREE_TOL else "DISAGREE"
        lines.append(
            f"agreement ours vs pytrec_eval references for ndcg@10 (ndcg_cut.10 on "
            f"2^g-1 qrels) and rr@10 (recip_rank on top-10 cut): {verdict} to "
            f"{AGREE_TOL:g} (max |diff| {worst:.3g}){where if worst else ''}"
        )
    for tool in ("pytrec_eval", "ranx", "ir_measures"):
        others = [r for r in rows if r.tool == tool and r.means]
        if not others or not ours:
            continue
        diffs: dict[str, float] = {}
        for other in others:
            mine = next((o for o in ours if o.size == other.size and o.mode == other.mode), None)
            if mine is None or mine.means is None or other.means is None:
                continue
            for metric in OUR_METRICS:
                key = EQUIVALENT[metric][tool]
                if key is None or key not in other.means:
                    continue
                diff = abs(mine.means[metric] - other.means[key])
                diffs[metric] = max(diffs.get(metric, 0.0), diff)
        off = {m: d for m, d in diffs.items() if d > AGREE_TOL}
        summary = ", ".join(f"{m} {d:.2g}" for m, d in off.items()) if off else "none"
        lines.append(
            f"{tool} vs ours, metrics differing by > {AGREE_TOL:g} "
            f"(max |diff| over sizes and modes): {summary}"
        )
    return lines


def sanity_notes(rows: Sequence[Row]) -> list[str]:
    """Notes on unstable means, inflated ru_maxrss and a known ir_measures mix-up."""
    notes: list[str] = []
    for row in rows:
        where = f"{row.size} {row.mode} {row.label}"
        if row.unstable:
            notes.append(f"{where}: the means differed between repeats")
        if row.hwm_mb and max(row.peak_mb) > 1.1 * max(row.hwm_mb) + 5:
            notes.append(
                f"{where}: ru_maxrss {max(row.peak_mb):.0f} MB exceeds VmHWM "
                f"{max(row.hwm_mb):.0f} MB (peak inherited from the parent?)"
            )
    for row in rows:
        if row.tool != "ir_measures" or not row.means:
            continue
        ours = next((r for r in rows if r.tool == "ours" and r.size == row.size and r.means), None)
        exp_key = EQUIVALENT["ndcg@10"]["ir_measures"]
        lin_key = EQUIVALENT["ndcg(gain=linear)@10"]["ir_measures"]
        if ours is None or ours.means is None or exp_key is None or lin_key is None:
            continue
        exp, lin = row.means.get(exp_key), row.means.get(lin_key)
        if exp == 0.0 and lin is not None and abs(lin - ours.means["ndcg@10"]) <= AGREE_TOL:
            notes.append(
                f"{row.size} {row.mode} ir_measures: nDCG@10 came out as the exp-gain value and "
                f"{exp_key} as 0.0; ir_measures' pytrec_eval provider puts a gain-less nDCG into "
                "the first invocation it made, which is the gains one when that measure comes "
                "first in set order (hash order: see PYTHONHASHSEED)"
            )
    return notes


def source_fingerprint(package: str) -> str | None:
    """A short hash of a package's .py sources (found without importing it), else None."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    digest = hashlib.sha256()
    for location in spec.submodule_search_locations:
        for path in sorted(Path(location).rglob("*.py")):
            digest.update(str(path.relative_to(location)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def parse_list(value: str, allowed: Sequence[str], what: str) -> list[str]:
    if value == "all":
        return list(allowed)
    items = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in items if v not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes",
        default="small",
        help="comma-separated of small,medium,large,xlarge,huge, or all (default: small)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per row (median)")
    parser.add_argument(
        "--tools",
        default="all",
        help="comma-separated of ours,pytrec_eval,ranx,ir_measures,numpy_floor (default: "
        "all; numpy_floor runs in process mode only)",
    )
    parser.add_argument(
        "--shape",
        choices=("light", "deep", "both"),
        default="both",
        help="the data's shape: light (about 5 judged docs per query, 4-decimal scores), deep "
        "(about 10 judged, 2-decimal scores: issue 31's) or both (default)",
    )
    parser.add_argument(
        "--modes", default="files,dicts", help="files,dicts,process or all (default: files,dicts)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "retrieval_gate_bench",
        help="where the synthetic data live; reused when the seed matches",
    )
    parser.add_argument("--seed", type=int, default=20240521)
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds before a child measurement is abandoned",
    )
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    parser.add_argument("--json", type=Path, help="write the raw measurements here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child_main(args.child)
        return 0
    shapes = list(SHAPES) if args.shape == "both" else [args.shape]
    sizes = [
        f"{shape}:{size}"
        for shape in shapes
        for size in parse_list(args.sizes, list(SIZES), "size")
    ]
    tools = parse_list(args.tools, TOOLS, "tool")
    modes = parse_list(args.modes, MODES, "mode")
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    if "process" in modes:
        byte_compile()
    workdir: Path = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    available = []
    for tool in tools:
        if _has(TOOL_MODULES[tool]):
            available.append(tool)
        else:
            notes.append(f"{tool}: not installed ({TOOL_MODULES[tool]}), skipped")
    builds = [("tiny", 7, 16, 20)] + [(s, args.seed, *SIZES[size_of(s)]) for s in sizes]
    # Pickled dicts (slow to write, large) only for the modes that read them.
    pickles = "dicts" in modes or ("files" in modes and "pytrec_eval" in available)
    datasets: dict[str, DataPaths] = {}
    for name, seed, queries, depth in builds:
        shape = name.split(":")[0] if ":" in name else "light"
        datasets[name] = DataPaths(workdir / name.replace(":", "-"))
        wanted = pickles or name == "tiny"
        if dataset_ready(datasets[name], _meta(seed, queries, depth, shape), wanted):
            continue
        say(f"[data] building {name}: {queries} queries x {depth} docs in {workdir / name}")
        spec = {
            "task": "build",
            "data": str(datasets[name].root),
            "shape": shape,
            "seed": seed,
            "queries": queries,
            "depth": depth,
            "pickles": wanted,
        }
        result = run_child(spec, timeout=args.timeout)
        if "error" in result:
            raise SystemExit(f"building the {name} data failed: {result['error']}")
        say(f"[data] {name} built in {result['seconds']:.1f}s")
    tiny = str(datasets["tiny"].root)
    if "ours" in available:
        probe = run_child({"task": "probe"}, timeout=args.timeout)
        if not probe.get("importable"):
            notes.append(f"ours: not importable ({probe.get('error')}), skipped")
            available.remove("ours")
    available = [t for t in TOOLS if t in available]
    rows = plan_rows(sizes, available, modes)
    for row in rows:
        if row.tool != "ours":
            row.note = TOOL_NOTES.get(row.tool, "") if row.mode != "process" else "whole process"
        elif row.mode == "process":
            row.note = "whole process"

    started = time.perf_counter()
    fingerprint = source_fingerprint(TOOL_MODULES["ours"]) if "ours" in available else None
    ranx_env: dict[str, str] = {}
    ranx_cold: float | None = None
    if any(r.tool == "ranx" for r in rows):
        # A fresh numba cache: one child pays the cold JIT compile, the measured ones load it.
        ranx_env[NUMBA_CACHE_ENV] = tempfile.mkdtemp(prefix="numba_cache_", dir=workdir)
        result = run_child(
            {"task": "ranx_warmup", "tiny": tiny}, timeout=args.timeout, env_extra=ranx_env
        )
        if "error" in result:
            notes.append(f"ranx warm-up failed: {result['error']}")
        else:
            ranx_cold = result["seconds"]
            say(f"[ranx] cold numba compile on a tiny input: {ranx_cold:.1f}s")
    for index, row in enumerate(rows, 1):
        if row.mode == "process":
            continue  # measured in pairs below
        for rep in range(args.repeat):
            spec = {
                "task": "measure",
                "tool": row.tool,
                "mode": row.mode,
                "data": str(datasets[row.size].root),
                "tiny": tiny,
            }
            result = run_child(
                spec, timeout=args.timeout, env_extra=ranx_env if row.tool == "ranx" else None
            )
            if "error" in result:
                row.error = f"error: {result['error']}"
                say(f"[{index}/{len(rows)}] {row.size} {row.mode} {row.label}: {row.error}")
                break
            row.seconds.append(result["seconds"])
            row.peak_mb.append(result["peak_mb"])
            row.base_mb.append(result["base_mb"])
            if result.get("hwm_mb") is not None:
                row.hwm_mb.append(result["hwm_mb"])
            if result.get("warmup") is not None:
                row.warmup.append(result["warmup"])
            if row.means is not None and row.means != result["means"]:
                row.unstable = True
            row.means = row.means or result["means"]
            say(
                f"[{index}/{len(rows)}] {row.size} {row.mode} {row.label} run {rep + 1}: "
                f"{result['seconds']:.3f}s, peak {result['peak_mb']:.0f} MB "
                f"({time.perf_counter() - started:.0f}s elapsed)"
            )
    load_before = os.getloadavg()
    for size in sizes:
        # Whole processes in turn (ours, pytrec_eval, ours, ...): a drift in the machine's
        # speed then moves both sides of each pair's ratio alike.
        pair = [r for r in rows if r.mode == "process" and r.size == size]
        for rep in range(args.repeat + 1):  # the first round warms the page cache, untimed
            for row in pair:
                if row.error:
                    continue
                result = time_process(
                    process_command(row.tool, datasets[size]),
                    args.timeout,
                    ranx_env if row.tool == "ranx" else None,
                )
                if "error" in result:
                    row.error = f"error: {result['error']}"
                elif rep:
                    row.seconds.append(result["seconds"])
                    row.cpu.append(result["cpu"])
                    row.peak_mb.append(result["peak_mb"])
                say(
                    f"[process] {size} {row.label} run {rep}: "
                    + (
                        row.error
                        or f"{result['seconds']:.3f}s wall, {result['cpu']:.3f}s CPU, peak "
                        f"{result['peak_mb']:.0f} MB"
                    )
                )
    load_after = os.getloadavg()
    verify: dict[str, Json] = {}
    if "ours" in available and "pytrec_eval" in available and pickles:
        for size in sizes:
            result = run_child(
                {"task": "verify", "data": str(datasets[size].root)}, timeout=args.timeout
            )
            if "error" in result:
                notes.append(f"verify {size}: {result['error']}")
            else:
                verify[size] = result

    notes.extend(sanity_notes(rows))
    if fingerprint is not None:
        after = source_fingerprint(TOOL_MODULES["ours"])
        if after != fingerprint:
            notes.append(
                f"ours: the retrieval_gate sources changed during the run "
                f"({fingerprint} -> {after}); rows may mix engine versions"
            )
        else:
            notes.append(f"ours: retrieval_gate source fingerprint {fingerprint}")
    header, cells = table_cells(rows)
    print()
    print(format_aligned(header, cells))
    if args.markdown:
        print()
        print(format_markdown(header, cells))
    print()
    print(
        "ours speedup = tool median / ours median in the same size and mode (>1x: ours is "
        "faster); files = from TREC paths incl. parsing, dicts = from in-memory dicts."
    )
    print(
        "peak RSS = ru_maxrss of the child process; base = its RSS just before the timed "
        "section (interpreter, imports and, for dicts, the input dicts)."
    )
    for line in agreement_report(rows, verify):
        print(line)
    if any(r.mode == "process" for r in rows):
        print()
        print(
            "Whole processes (issue 31's rows): CPU = user + sys of the process (wait4), the "
            f"ratios are medians of {args.repeat} interleaved rounds (range in brackets) after "
            "one untimed round; load average (1, 5, 15 min) "
            + " -> ".join(", ".join(f"{v:.2f}" for v in load) for load in (load_before, load_after))
        )
        for shape in shapes:
            print(f"{shape}: {SHAPES[shape].about}; 100 results per query")
        print()
        for line in process_report(rows, datasets):
            print(line)
    warm = [w for r in rows for w in r.warmup]
    if ranx_cold is not None:
        print(
            f"ranx warm-up on a tiny input, not in the timings: cold numba JIT compile "
            f"{ranx_cold:.1f}s (once, empty cache)",
            end="",
        )
        if warm:
            print(
                f"; each measured child then loaded the cache in median "
                f"{statistics.median(warm):.2f}s (max {max(warm):.2f}s)",
                end="",
            )
        print()
    for note in notes:
        print(f"note: {note}")
    if NUMBA_CACHE_ENV in ranx_env:
        shutil.rmtree(ranx_env[NUMBA_CACHE_ENV], ignore_errors=True)
    print(
        f"total {time.perf_counter() - started:.0f}s; data in {workdir}; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; children run with "
        f"PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', '0')}"
    )
    if args.json:
        payload = [
            {
                "size": r.size,
                "mode": r.mode,
                "tool": r.label,
                "seconds": r.seconds,
                "peak_mb": r.peak_mb,
                "base_mb": r.base_mb,
                "warmup": r.warmup,
                "means": r.means,
                "error": r.error,
            }
            for r in rows
        ]
        args.json.write_text(
            json.dumps({"rows": payload, "verify": verify, "notes": notes}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
