"""A seeded synthetic labelled set in BEIR layout, for benchmarks that need many queries.

Made-up words with Zipf frequencies; documents on topics; each query a few words of one
target document (some swapped for distractors), judged 3 for the target and 1-2 for a few
documents of the same topic that share its words. The built-in BM25 scores an ndcg@10 of
about 0.6 on it (0.61-0.65 over seeds 0-2), spread widely across queries (about 10% score
0, the median about 0.75). The bytes depend only on the arguments.
Run: python benchmarks/tools/synthetic_set.py OUT_FOLDER
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

INTENTS = ("lookup", "how-to", "troubleshoot", "compare")
SEGMENTS = ("free", "business", "enterprise")
CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"
VOCABULARY = 6000
"""Made-up words; the most frequent ones act like function words."""
TOPIC_WORDS = 25
"""Words characteristic of each topic."""
DOCS_PER_TOPIC = 20
"""Documents per topic on average."""
TOPICAL_SHARE = 0.35
"""Share of a document's words drawn from its topic's words; the rest follow Zipf."""
DISTRACTOR = 0.3
"""Chance that a query word is swapped for a word not taken from the target document."""
RARITY = 0.1
"""How strongly queries prefer a document's rarer words (0: not at all)."""


def write_synthetic_set(
    folder: Path, *, queries: int = 500, docs: int = 5000, seed: int = 0
) -> Path:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv (BEIR layout) into `folder`
    and return it. Equal arguments write equal bytes; query texts are distinct."""
    if queries < 1 or docs < 2:
        raise ValueError("need at least 1 query and 2 documents")
    rng = np.random.default_rng(seed)
    words = _vocabulary(rng, VOCABULARY)
    zipf = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    zipf /= zipf.sum()
    topics = max(1, docs // DOCS_PER_TOPIC)
    # Topic words come from the middle and the tail of the vocabulary, not the function words.
    topic_words = [
        rng.choice(np.arange(100, len(words)), size=TOPIC_WORDS, replace=False)
        for _ in range(topics)
    ]
    doc_topic = rng.integers(0, topics, size=docs)
    doc_words: list[np.ndarray] = []
    titles: list[str] = []
    texts: list[str] = []
    for d in range(docs):
        own = topic_words[doc_topic[d]]
        # Each document leans on a few of its topic's words more than on the others.
        weights = rng.dirichlet(np.full(len(own), 0.5))
        length = int(rng.integers(30, 121))
        topical = rng.random(length) < TOPICAL_SHARE
        body = np.where(
            topical,
            own[rng.choice(len(own), size=length, p=weights)],
            rng.choice(len(words), size=length, p=zipf),
        )
        title = own[rng.choice(len(own), size=int(rng.integers(2, 6)), p=weights)]
        doc_words.append(np.unique(np.concatenate([body, title])))
        titles.append(_sentence(words, title))
        texts.append(_sentence(words, body))

    by_topic: list[list[int]] = [[] for _ in range(topics)]
    for d, t in enumerate(doc_topic.tolist()):
        by_topic[t].append(d)
    doc_ids = [f"d{d:06d}" for d in range(docs)]
    seen: set[str] = set()
    query_rows: list[dict[str, object]] = []
    qrels: list[tuple[str, str, int]] = []
    while len(query_rows) < queries:
        target = int(rng.integers(0, docs))
        chosen = _query_words(rng, doc_words[target], zipf, topic_words, doc_topic[target])
        text = _sentence(words, chosen)
        if text in seen:
            continue
        seen.add(text)
        query_id = f"q{len(query_rows) + 1:05d}"
        query_rows.append(
            {
                "_id": query_id,
                "text": text,
                "metadata": {
                    "intent": INTENTS[int(rng.integers(0, len(INTENTS)))],
                    "segment": SEGMENTS[int(rng.integers(0, len(SEGMENTS)))],
                },
            }
        )
        qrels.append((query_id, doc_ids[target], 3))
        for d, grade in _related(rng, target, chosen, doc_words, by_topic[doc_topic[target]]):
            qrels.append((query_id, doc_ids[d], grade))

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    _write_lines(
        folder / "corpus.jsonl",
        (
            json.dumps({"_id": doc_ids[d], "title": titles[d], "text": texts[d]})
            for d in range(docs)
        ),
    )
    _write_lines(folder / "queries.jsonl", (json.dumps(row) for row in query_rows))
    _write_lines(
        folder / "qrels" / "test.tsv",
        ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in qrels)],
    )
    return folder


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """`size` distinct made-up words of 2-4 consonant-vowel syllables."""
    found: dict[str, None] = {}
    while len(found) < size:
        syllables = int(rng.integers(2, 5))
        word = "".join(
            CONSONANTS[int(rng.integers(0, len(CONSONANTS)))] + VOWELS[int(rng.integers(0, 5))]
            for _ in range(syllables)
        )
        found.setdefault(word, None)
    return list(found)


def _query_words(
    rng: np.random.Generator,
    target_words: np.ndarray,
    zipf: np.ndarray,
    topic_words: list[np.ndarray],
    topic: int,
) -> np.ndarray:
    """2-6 distinct words of the target document, each swapped for a distractor (a frequent
    word, or a word of the same topic) with probability DISTRACTOR."""
    size = min(int(rng.integers(2, 7)), len(target_words))
    # People query with content words: rarer words of the document are likelier picks.
    weights = 1.0 / zipf[target_words] ** RARITY
    picked = rng.choice(target_words, size=size, replace=False, p=weights / weights.sum())
    for i in range(size):
        if rng.random() < DISTRACTOR:
            if rng.random() < 0.5:
                picked[i] = rng.choice(len(zipf), p=zipf)
            else:
                picked[i] = rng.choice(topic_words[topic])
    return np.asarray(list(dict.fromkeys(picked.tolist())))


def _related(
    rng: np.random.Generator,
    target: int,
    query: np.ndarray,
    doc_words: list[np.ndarray],
    same_topic: list[int],
) -> list[tuple[int, int]]:
    """1-4 documents of the target's topic, those sharing the most query words first, graded
    2 when they share at least two query words, else 1."""
    others = [d for d in same_topic if d != target]
    if not others:
        return []
    shared = np.array([np.isin(query, doc_words[d]).sum() for d in others])
    order = np.lexsort((rng.random(len(others)), -shared))
    count = int(rng.integers(1, 5))
    return [(others[i], 2 if shared[i] >= 2 else 1) for i in order[:count].tolist()]


def _sentence(words: list[str], indices: Iterable[int]) -> str:
    return " ".join(words[i] for i in np.asarray(indices).tolist())


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_folder", type=Path)
    folder = write_synthetic_set(parser.parse_args(argv).out_folder)
    judgments = sum(1 for _ in (folder / "qrels" / "test.tsv").open(encoding="utf-8")) - 1
    corpus = sum(1 for _ in (folder / "corpus.jsonl").open(encoding="utf-8"))
    queries = sum(1 for _ in (folder / "queries.jsonl").open(encoding="utf-8"))
    print(f"wrote {queries} queries, {corpus} documents and {judgments} judgments to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
