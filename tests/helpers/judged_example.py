"""The example with most of its judgments held back and a simulated LLM judge's layer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.datasets.llm_layer import LlmJudgment, write_layer
from retrieval_gate.pipeline.execute import execute
from tests.helpers.builders import copy_example

MODEL = "sim-judge"
PROMPT = "a" * 64
HELD_BACK = 0.7
JUDGE_BLOCK = {"base_url": "http://127.0.0.1:9/v1", "model": MODEL, "output": "judge.llm.jsonl"}


def read_qrels(path: Path) -> dict[tuple[str, str], int]:
    """A BEIR qrels file as {(query, doc): grade}."""
    rows = path.read_text(encoding="utf-8").splitlines()[1:]
    return {(q, d): int(g) for q, d, g in (row.split("\t") for row in rows)}


def write_qrels(path: Path, grades: Mapping[tuple[str, str], int]) -> None:
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{g}" for (q, d), g in sorted(grades.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def held_back_example(target: Path, *, seed: int = 28, share: float = HELD_BACK) -> Path:
    """The example copied into `target` with `share` of its queries' judgments held back
    (seeded, by query): the kept ones in example/qrels/test.tsv, the held-back ones in
    held_back.tsv, the full set in full.tsv. Returns `target`."""
    copy_example(target)
    qrels = target / "example" / "qrels" / "test.tsv"
    full = read_qrels(qrels)
    write_qrels(target / "full.tsv", full)
    queries = sorted({q for q, _ in full})
    rng = np.random.default_rng(seed)
    held = set(rng.choice(queries, size=round(share * len(queries)), replace=False).tolist())
    write_qrels(qrels, {key: g for key, g in full.items() if key[0] not in held})
    write_qrels(target / "held_back.tsv", {key: g for key, g in full.items() if key[0] in held})
    return target


def assisted_config(
    target: Path,
    name: str,
    *,
    trust: Mapping[str, object] | None = None,
    file: str | None = None,
    **judge: object,
) -> Path:
    """`target`/`name` (example.yaml or example-regressed.yaml) with gate.labels human+llm and
    the simulated judge's block (`judge` overrides its fields), reports off, written to
    `target`/`file` (default assisted-NAME)."""
    path = target / name
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document.pop("report", None)
    document.setdefault("gate", {})["labels"] = "human+llm"
    block: dict[str, object] = {**JUDGE_BLOCK, **judge}
    if trust is not None:
        block["trust"] = dict(trust)
    document["judge"] = block
    out = target / (file or f"assisted-{name}")
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def pooled_pairs(configs: Iterable[Path]) -> set[tuple[str, str]]:
    """Every (query, doc) the configs' retrievers rank in their top k: the judge's pool."""
    pairs: set[tuple[str, str]] = set()
    for config in configs:
        done = execute(load(config), cache=False)
        for query, hits in done.run.hits.items():
            pairs.update((query, hit.doc_id) for hit in hits)
    return pairs


def simulated_layer(
    path: Path,
    pairs: Iterable[tuple[str, str]],
    truth: Mapping[tuple[str, str], int],
    *,
    seed: int = 1,
    off_by_one: float = 0.25,
    answer: str = "grade",
) -> int:
    """A judge's layer at `path` over `pairs`: people's grade (0 when unjudged), one grade
    up or down (clipped to 0-3) on `off_by_one` of pairs. Returns the rows written."""
    rng = np.random.default_rng(seed)
    rows = []
    for query, doc in sorted(pairs):
        grade = truth.get((query, doc), 0)
        if rng.random() < off_by_one:
            grade = int(np.clip(grade + rng.choice((-1, 1)), 0, 3))
        rows.append(
            LlmJudgment(
                query, doc, grade, MODEL, PROMPT, f"{answer} {grade}", "2026-11-26T00:00:00Z"
            )
        )
    return write_layer(path, rows)
