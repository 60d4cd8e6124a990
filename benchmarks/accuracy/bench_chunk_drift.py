"""Benchmark the label drift classification: its kinds against a character-by-character
brute-force recount on seeded random chunkings, and its time on a large re-chunk.

    python benchmarks/accuracy/bench_chunk_drift.py  # 2,000 cases, 20,000 sources timed
    python benchmarks/accuracy/bench_chunk_drift.py --cases 10000 --sources 100000
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.core.model import Document
from retrieval_gate.datasets.anchors import corpus_anchors
from retrieval_gate.datasets.label_drift import KINDS, Chunking, label_drift
from retrieval_gate.readers import qrels_from_dict
from tests.helpers.chunkings import brute_force_kind, edited, random_chunks, random_text


def random_case(
    rng: random.Random,
) -> tuple[dict[str, Document], dict[str, Document], dict[str, Document], list[str]]:
    """An old chunking and a new one of 1-4 random texts (a source dropped at 15%, edited at
    30%, its text known at 50%; ids reused at 30%), and the labelled old chunks."""
    old: dict[str, Document] = {}
    new: dict[str, Document] = {}
    sources: dict[str, Document] = {}
    for n in range(rng.randint(1, 4)):
        source = f"s{n}"
        text = random_text(rng, rng.randint(5, 60))
        old |= random_chunks(rng, source, text, "old-", gaps=False)
        if rng.random() < 0.15:
            continue
        now = edited(rng, text) if rng.random() < 0.3 else text
        if rng.random() < 0.5:
            sources[source] = Document(source, "", now)
        new |= random_chunks(rng, source, now, "old-" if rng.random() < 0.3 else "new-", gaps=True)
    labelled = rng.sample(sorted(old), k=rng.randint(1, len(old)))
    return old, new, sources, labelled


def agreement(cases: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    agree, labels = 0, 0
    found: Counter[str] = Counter()
    recounted: Counter[str] = Counter()
    for _ in range(cases):
        old, new, sources, labelled = random_case(rng)
        qrels = qrels_from_dict({"q": dict.fromkeys(labelled, 1)})
        before, after = corpus_anchors(old).anchors, corpus_anchors(new, sources)
        rows = label_drift(qrels, before, Chunking(new, after))
        kinds = [row.drift.kind for row in rows]
        brute = [
            brute_force_kind(row.doc_id, before.get(row.doc_id), new, dict(after.anchors),
                             dict(after.texts))
            for row in rows
        ]  # fmt: skip
        found.update(kinds)
        recounted.update(brute)
        agree += kinds == brute
        labels += len(rows)
    body = [["cases (1-4 texts of 5-60 characters, chunks of 1-12)", f"{cases:,}"]]
    body += [["labels classified", f"{labels:,}"]]
    body += [[f"{kind}: module / brute force", f"{found[kind]:,} / {recounted[kind]:,}"]
             for kind in KINDS]  # fmt: skip
    body += [["cases where every label's kind equals the recount", rate(agree, cases)]]
    return body


def timing(sources: int, repeat: int, seed: int) -> list[list[str]]:
    """`sources` texts of 500 words cut at 300 and re-cut at 200 characters; every old chunk
    labelled once."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    old: dict[str, Document] = {}
    new: dict[str, Document] = {}
    for n in range(sources):
        text = " ".join(rng.choice(words) for _ in range(500))
        for size, chunks, prefix in ((300, old, "o"), (200, new, "n")):
            for i, start in enumerate(range(0, len(text), size)):
                chunk_id = f"{prefix}{n}#{i}"
                chunks[chunk_id] = Document(
                    chunk_id, "", text[start : start + size], {"source": f"d{n}", "start": start}
                )
    qrels = qrels_from_dict(
        {f"q{i % 1000}": {} for i in range(1000)} | {"q": dict.fromkeys(old, 1)}
    )
    before, after = corpus_anchors(old).anchors, corpus_anchors(new)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        label_drift(qrels, before, Chunking(new, after))
        times.append(time.perf_counter() - start)
    return [
        [
            f"label_drift, {len(old):,} labels, {len(new):,} new chunks",
            f"{statistics.median(times):.3f} s (median of {repeat})",
        ]
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=2000, help="random chunkings recounted")
    parser.add_argument("--sources", type=int, default=20_000, help="source texts timed")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (median shown)")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    rows = agreement(args.cases, args.seed)
    rows += timing(args.sources, args.repeat, args.seed)
    print(table(["measure", "value"], rows, right={1}))


if __name__ == "__main__":
    main()
