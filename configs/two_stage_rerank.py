"""The two-stage example's reranker: BM25's candidates, nudged up by the query words they hold."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

WORD = re.compile(r"[a-z0-9]+")


def rerank(
    query: str, candidates: Sequence[Mapping[str, Any]], k: int, *, broken: bool = False
) -> list[tuple[str, float]]:
    """The top `k` candidates by BM25 score times (1 + the share of the query's words found in
    the candidate's text, over 10). `broken` reverses that order: a reranker that demotes
    the first stage's best candidates, for example-two-stage-reranker.yaml."""
    words = set(WORD.findall(query.lower()))
    scored = []
    for candidate in candidates:
        text = set(WORD.findall(str(candidate.get("text") or "").lower()))
        share = len(words & text) / len(words) if words else 0.0
        scored.append((str(candidate["id"]), float(candidate["score"] or 0.0) * (1 + share / 10)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]), reverse=broken)
    return scored[:k]
