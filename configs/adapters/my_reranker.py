"""An example reranker for stages.yaml: the first stage's candidates reordered by title match.

retrieval-gate imports it as `my_reranker:rerank` and calls `rerank(query, candidates, k)`
once per labelled query, from several threads at once: `query` is the query text and
`candidates` the first stage's hits, best first, as {"id", "score", "text"} dicts (text from
the hit, else the corpus's title and text, else None). Return the top k, best first, in any
shape a python retriever may return; only ids among the candidates: any other fails the query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from my_retriever import words  # type: ignore[import-not-found]


def rerank(query: str, candidates: Sequence[Mapping[str, Any]], k: int) -> list[tuple[str, float]]:
    """The candidates by how many of the query's words their first five words hold (a stand-in
    for a title match), then by the first stage's score."""
    wanted = words(query)
    scored = []
    for candidate in candidates:
        head = words(" ".join(str(candidate.get("text") or "").split()[:5]))
        first = float(candidate.get("score") or 0.0)
        scored.append((str(candidate["id"]), len(wanted & head) + first / (1 + first)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:k]
