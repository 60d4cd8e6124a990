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
from tests.helpers.chunkings import brute_force_kind, random_case


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
    body = [
        [
            "cases (1-4 texts of 5-60 characters, chunks of 1-12; a text's characters replaced "
            "at 25%, 1-3 stretches inserted at 25%)",
            f"{cases:,}",
        ]
    ]
    body += [["labels classified", f"{labels:,}"]]
    body += [[f"{kind}: module / brute force", f"{found[kind]:,} / {recounted[kind]:,}"]
             for kind in KINDS]  # fmt: skip
    body += [["cases where every label's kind equals the recount", rate(agree, cases)]]
    return body


def timing(sources: int, repeat: int, seed: int, *, edit: bool) -> list[list[str]]:
    """`sources` texts of 500 words cut at 300 and re-cut at 200 characters (with `edit`, the
    re-cut text with a sentence added at its top: every span moves); every old chunk labelled
    once."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    old: dict[str, Document] = {}
    new: dict[str, Document] = {}
    for n in range(sources):
        text = " ".join(rng.choice(words) for _ in range(500))
        now = "A sentence added at the top. " + text if edit else text
        for size, chunks, prefix, cut in ((300, old, "o", text), (200, new, "n", now)):
            for i, start in enumerate(range(0, len(cut), size)):
                chunk_id = f"{prefix}{n}#{i}"
                chunks[chunk_id] = Document(
                    chunk_id, "", cut[start : start + size], {"source": f"d{n}", "start": start}
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
    what = ", a sentence added at each text's top" if edit else ""
    return [
        [
            f"label_drift, {len(old):,} labels, {len(new):,} new chunks{what}",
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
    rows += timing(args.sources, args.repeat, args.seed, edit=False)
    rows += timing(args.sources, args.repeat, args.seed, edit=True)
    print(table(["measure", "value"], rows, right={1}))


if __name__ == "__main__":
    main()
