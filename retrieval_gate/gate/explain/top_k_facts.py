"""What a check reads off both records' top k, a block of queries at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.explain.diagnostics import (
    Unjudged,
    graded_blocks,
    hit_changes,
    joined_unjudged,
    judged_at_k,
    unjudged_summary,
)
from retrieval_gate.gate.explain.label_holes import (
    HoleExtremes,
    HolePlan,
    block_extremes,
    joined_extremes,
)

QUERIES_AT_ONCE = 1 << 13
"""Queries whose top k are graded and read in one block: about 1.6 million rows of both
records at k = 100, so every array of a block stays in memory the allocator reuses (a fresh
mapping per array costs page faults: at 200,000 queries they were a quarter of the time)."""


@dataclass(frozen=True, kw_only=True)
class TopKFacts:
    """The hits lost and gained, the unjudged documents, and the label-hole extremes."""

    lost: tuple[str, ...]
    """Queries whose top k went from holding a relevant doc to none (`hit_changes`)."""
    gained: tuple[str, ...]
    unjudged: Unjudged
    holes: HoleExtremes | None
    """Each query's extremes for `plan`'s metrics; None without a plan."""


def top_k_facts(
    before: Mapping[str, Sequence[str]],
    after: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    qrels: Qrels,
    *,
    k: int,
    plan: HolePlan | None,
    size: int = QUERIES_AT_ONCE,
) -> TopKFacts:
    """Both records' top k over the sorted labelled `query_ids`, graded by `qrels`, read
    `size` queries at a time: what the diagnostics and the label-hole bounds (`plan`, when
    there are checks to bound) need, and no row of either top k kept past its block."""
    lost: list[str] = []
    gained: list[str] = []
    parts = []
    judged: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    holes = []
    for old, new, judgments in graded_blocks(before, after, query_ids, qrels, size):
        went, came = hit_changes(old, new)
        lost += went
        gained += came
        judged_before, _ = judged_at_k(old, k)
        judged_after, _ = judged_at_k(new, k)
        judged[0].append(judged_before)
        judged[1].append(judged_after)
        parts.append(unjudged_summary(old, new, judged_before, judged_after))
        if plan is not None:
            holes.append(block_extremes(plan, old, new, judgments))
    unjudged = joined_unjudged(parts, np.concatenate(judged[0]), np.concatenate(judged[1]))
    found = joined_extremes(plan, holes) if plan is not None else None
    return TopKFacts(lost=tuple(lost), gained=tuple(gained), unjudged=unjudged, holes=found)
