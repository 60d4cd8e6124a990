"""Builders of test inputs: a labelled set with its config, files, the example, a check."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.model import Document, Query
from retrieval_gate.datasets import Dataset, Labels, assemble
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.labels.queue import QueueItem
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

EXAMPLE_BASELINE = Path(".retrieval-gate") / "example" / "baseline.json"
"""Where the example's configs keep their baseline, relative to configs/."""

# Six queries with two intents; graded judgments 0-2 by default.
QUERIES = [
    {"_id": f"q{i}", "text": f"query number {i}", "intent": "a" if i % 2 else "b"}
    for i in range(1, 7)
]
CORPUS = [{"_id": f"d{i}", "title": f"doc {i}", "text": f"text {i}"} for i in range(1, 10)]
QRELS = [(f"q{i}", f"d{i}", 2 if i % 3 else 1) for i in range(1, 7)] + [
    (f"q{i}", f"d{i + 1}", 0) for i in range(1, 7)
]
METRICS: dict[str, Any] = {
    "ndcg(gain=exp)@10": {"max_drop": "2pt"},
    "recall@10": {"max_drop": "5pt"},
}


def labelled_set(
    tmp_path: Path,
    *,
    qrels: list[tuple[str, ...]] | str | None = None,
    queries: list[dict[str, Any]] | None = None,
    corpus: list[dict[str, Any]] | None = CORPUS,
    **config: Any,
) -> Path:
    """A BEIR folder and a config beside it; returns the config path."""
    folder = tmp_path / "set"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    rows = queries if queries is not None else QUERIES
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in rows))
    if corpus is not None:
        (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    if isinstance(qrels, str):
        text = qrels
    else:
        lines = qrels if qrels is not None else QRELS
        text = "query-id\tcorpus-id\tscore\n" + "".join(
            "\t".join(map(str, r)) + "\n" for r in lines
        )
    (folder / "qrels" / "test.tsv").write_text(text)
    document: dict[str, Any] = {
        "version": 1,
        "dataset": {"path": "set"},
        "retriever": {"type": "bm25"},
        "k": 10,
        "metrics": METRICS,
        "slices": {"by": ["intent"], "min_size": 2},
    }
    document.update(config)
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def write(folder: Path, name: str, text: str) -> Path:
    """`folder/name` holding `text` in UTF-8, its newlines as written."""
    path = folder / name
    path.write_bytes(text.encode("utf-8"))
    return path


def copy_example(target: Path) -> Path:
    """The example's two configs, its labelled set and its committed baseline copied into a
    new folder `target` (no cache), so running the gate there writes nothing into the
    repository."""
    target.mkdir(parents=True, exist_ok=True)
    for name in ("example.yaml", "example-regressed.yaml"):
        shutil.copy(CONFIGS / name, target / name)
    shutil.copytree(
        CONFIGS / "example", target / "example", ignore=shutil.ignore_patterns("__pycache__")
    )
    (target / EXAMPLE_BASELINE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / EXAMPLE_BASELINE, target / EXAMPLE_BASELINE)
    return target


def checked_tiny(target: Path) -> Path:
    """configs/tiny copied into a new folder `target`, with the baseline and the result of a
    real `check` written there: .retrieval-gate/baseline.json, .retrieval-gate/tiny/result.json."""
    shutil.copytree(CONFIGS / "tiny", target, ignore=shutil.ignore_patterns(".retrieval-gate"))
    for command in ("baseline", "check"):
        done = run_cli(command, "-c", target / "retrieval-gate.yaml")
        assert done.ret == 0, done.err
    return target


def queue_dataset(
    judgments: Mapping[str, Mapping[str, float]],
    corpus: Mapping[str, Document] | None = None,
) -> Dataset:
    """A labelled set of the queries in `judgments` ({query: {doc: grade}}), each query's
    text its id in capitals."""
    rows = [(q, d, g) for q, docs in judgments.items() for d, g in docs.items()]
    return assemble(
        Labels(
            queries=[Query(q, q.upper()) for q in judgments],
            judgments=Judgments.from_rows(
                [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
            ),
            corpus=corpus,
            source="<test>",
            layout="test",
        )
    )


def queue_keys(items: list[QueueItem]) -> list[tuple[str, str, int | None]]:
    """(query, doc, rank) of each queue item, in order."""
    return [(item.query_id, item.doc_id, item.rank) for item in items]


def comparison(**fields: Any) -> Comparison:
    """A gated ndcg@10 check of 40 queries on every query, 0.5 on both sides, the pairs and p
    of a drop nobody can call: `fields` change what a test reads."""
    values: dict[str, Any] = {
        "metric": "ndcg@10", "slice": "all", "n": 40, "baseline_mean": 0.5,
        "current_mean": 0.5, "delta": 0.0, "ci_low": -0.02, "ci_high": 0.02, "wins": 10,
        "ties": 20, "losses": 10, "p_value": 0.5, "p_bound": False, "p_adjusted": 0.5,
        "level": 0.05, "max_drop": 0.02, "floor": None, "detectable_drop": 0.03,
        "queries_needed": 50, "gated": True, "reason": "", "verdict": None, "failed": False,
    }  # fmt: skip
    return Comparison(**{**values, **fields})
