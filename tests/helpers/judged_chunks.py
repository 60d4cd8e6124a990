"""The chunked example under gate.labels human+llm: people's labels held back on most
queries, a simulated judge's layer anchored to the chunks it read, and a re-chunk."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.datasets.llm_layer import LlmJudgment, write_layer
from retrieval_gate.pipeline.execute import execute
from tests.helpers.chunkings import copy_chunked_example, corpus_rows, write_rows
from tests.helpers.cli import run_cli
from tests.helpers.judged_example import HELD_BACK, MODEL, PROMPT, read_qrels, write_qrels

MAIN = "judged-main.yaml"
PR = "judged-pr.yaml"
LAYER = "judge.llm.jsonl"


def renamed(chunk_id: str) -> str:
    """The id the re-chunk gives the chunk holding `chunk_id`'s text: the same text and span,
    another name (as a chunker that numbers chunks otherwise does) for the articles of odd
    number; the others keep theirs (lint refuses a corpus holding no judged id)."""
    source = chunk_id.split("#")[0]
    return chunk_id.replace("#", "~") if int(source.removeprefix("kb-")) % 2 else chunk_id


@dataclasses.dataclass(frozen=True)
class JudgedChunks:
    """The project folder, its two configs, the full chunk labels and the layer."""

    root: Path
    main: Path
    pr: Path
    full: dict[tuple[str, str], int]
    layer: Path
    pr_corpus: Path


def judged_chunks(
    target: Path, *, seed: int = 28, anchored: bool = True, baseline: bool = True
) -> JudgedChunks:
    """The chunked example in `target` at the chunk level under gate.labels human+llm with
    HELD_BACK of its queries' labels held back: MAIN on the 300-character chunks, PR on the
    same chunks, half of them renamed (`renamed`; the text unchanged). The layer holds the simulated
    judge's grade (people's full grade, 0 when unjudged, one up or down on a quarter of
    pairs) of every pair MAIN's run ranks, each row anchored to the chunk it read (or, with
    `anchored` False, written as before anchors were). With `baseline`, MAIN's baseline is
    made."""
    copy_chunked_example(target)
    qrels = target / "example-chunked" / "qrels.tsv"
    full = read_qrels(qrels)
    queries = sorted({q for q, _ in full})
    rng = np.random.default_rng(seed)
    held = set(rng.choice(queries, size=round(HELD_BACK * len(queries)), replace=False).tolist())
    write_qrels(qrels, {key: g for key, g in full.items() if key[0] not in held})
    source = target / "example-chunked" / "corpus-300.jsonl"
    pr_corpus = target / "example-chunked" / "corpus-renamed.jsonl"
    write_rows(pr_corpus, [{**row, "_id": renamed(row["_id"])} for row in corpus_rows(source)])
    document = yaml.safe_load((target / "example-chunked.yaml").read_text(encoding="utf-8"))
    document.pop("report", None)
    document["dataset"]["level"] = "chunk"
    document["gate"] = {"labels": "human+llm"}
    document["judge"] = {"base_url": "http://127.0.0.1:9/v1", "model": MODEL, "output": LAYER}
    document["baseline"] = ".retrieval-gate/judged/baseline.json"
    main = target / MAIN
    main.write_text(yaml.safe_dump({**document, "name": "judged-main"}, sort_keys=False))
    document["dataset"]["corpus"] = "example-chunked/corpus-renamed.jsonl"
    pr = target / PR
    pr.write_text(yaml.safe_dump({**document, "name": "judged-pr"}, sort_keys=False))
    config = load(main)
    done = execute(config, cache=False)
    anchors = load_dataset(config.dataset, config.base_dir, keep_unjudged=True).anchors
    assert anchors is not None
    pairs = sorted({(q, hit.doc_id) for q, hits in done.run.hits.items() for hit in hits})
    rng = np.random.default_rng(seed + 1)
    rows = []
    for query, doc in pairs:
        grade = full.get((query, doc), 0)
        if rng.random() < 0.25:
            grade = int(np.clip(grade + rng.choice((-1, 1)), 0, 3))
        row = LlmJudgment(
            query, doc, grade, MODEL, PROMPT, f"grade {grade}", "2026-12-01T00:00:00Z",
            answered_by=MODEL, anchor=anchors.anchors[doc] if anchored else None,
        )  # fmt: skip
        rows.append(row)
    layer = target / LAYER
    write_layer(layer, rows)
    if baseline:
        code, _, err = run_cli("baseline", "-c", main, "--no-cache", "--quiet")
        assert code == 0, err
    return JudgedChunks(target, main, pr, full, layer, pr_corpus)


ADDED = "Updated for the December release. "
"""The sentence `edited_articles` adds at the top of every article."""


def edited_articles(configs: Path) -> Path:
    """The chunked example under `configs` after an edit that shifts every article's text:
    ADDED at the top of each article (example/corpus.jsonl) and of its first 300-character
    chunk, the other chunks as they were. Returns `configs`."""
    articles = configs / "example" / "corpus.jsonl"
    write_rows(articles, [{**row, "text": ADDED + row["text"]} for row in corpus_rows(articles)])
    chunks = configs / "example-chunked" / "corpus-300.jsonl"
    rows = corpus_rows(chunks)
    write_rows(
        chunks,
        [
            {**row, "text": ADDED + row["text"]} if row["_id"].endswith("#0") else row
            for row in rows
        ],
    )
    return configs
