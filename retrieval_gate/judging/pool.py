"""Which (query, document) pairs the judge grades: the pooled top k, and a calibration sample."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from retrieval_gate.core.model import Document, Query
from retrieval_gate.core.qrels import is_judged


@dataclass(frozen=True)
class Pair:
    """One pair to grade: the query (id and text), the document, and people's grade of it
    (None: not judged by people)."""

    query_id: str
    query: str
    doc: str
    human: float | None = None


@dataclass(frozen=True)
class Pool:
    """The pairs to grade, and what the pool held besides them."""

    pairs: tuple[Pair, ...]
    pooled: int
    """Pairs in the pooled top k of every query."""
    calibration: tuple[str, ...]
    """The human-judged queries whose whole pool is graded, sorted."""


def calibration_sample(
    judged: Iterable[str], size: int | None, seed: int | None
) -> tuple[str, ...]:
    """`size` of the `judged` query ids drawn with `seed` (all of them when `size` is None or
    larger), sorted: the same ids and seed always draw the same sample."""
    ids = sorted(set(judged))
    if size is None or size >= len(ids):
        return tuple(ids)
    return tuple(sorted(random.Random(seed).sample(ids, size)))


def pool_pairs(
    queries: Sequence[Query],
    human: Mapping[str, Mapping[str, float]],
    rankings: Sequence[Mapping[str, Sequence[str]]],
    depth: int,
    calibration: Iterable[str],
    *,
    beyond: bool = True,
) -> Pool:
    """The pairs to grade: for every query, the union of the top `depth` of each ranking
    (`{query id: doc ids, best first}`, e.g. the current run and the reference); of those,
    every pair people did not judge (the judged@k rule), and every pair of the `calibration`
    queries, judged or not, and beyond the pool every pair people judged of those queries:
    the calibration card compares the judge with people on them, while the gate scores with
    the judge's labels of the pool alone (`gate/modes/assisted.py`), the same for every query.
    Queries in order of id, documents in ranking order, then people's in id order. `beyond`
    off: the pool alone, for the calibration queries too."""
    sampled = set(calibration)
    pairs: list[Pair] = []
    pooled = 0
    for query in sorted(queries, key=lambda q: q.id):
        grades = human.get(query.id, {})
        docs = dict.fromkeys(
            doc for ranking in rankings for doc in list(ranking.get(query.id, ()))[:depth]
        )
        pooled += len(docs)
        for doc in docs:
            judged = is_judged(grades, doc)
            if not judged or query.id in sampled:
                pairs.append(Pair(query.id, query.text, doc, grades[doc] if judged else None))
        if beyond and query.id in sampled:
            outside = sorted(doc for doc in grades if doc not in docs and is_judged(grades, doc))
            pairs.extend(Pair(query.id, query.text, doc, grades[doc]) for doc in outside)
    return Pool(tuple(pairs), pooled, tuple(sorted(sampled)))


def document_text(document: Document) -> str:
    """What an LLM reads of a corpus document, to grade it or to write a query it answers: its
    title, a blank line, then its text."""
    return "\n\n".join(part.strip() for part in (document.title, document.text) if part.strip())


def passage_text(
    doc: str, corpus: Mapping[str, Document] | None, hit_texts: Mapping[str, str]
) -> str | None:
    """What the judge reads of `doc`: its corpus entry's title and text (the title on its own
    line above the text), else the text a retriever returned with it, else None."""
    document = corpus.get(doc) if corpus is not None else None
    if document is not None:
        text = document_text(document)
        if text:
            return text
    text = hit_texts.get(doc, "").strip()
    return text or None
