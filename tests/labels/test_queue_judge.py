"""The label queue ordered by the LLM judge: least sure first, or where it disagrees with people."""

from __future__ import annotations

from retrieval_gate.datasets.llm_layer import LlmJudgment
from retrieval_gate.labels.queue import judge_disagreements, judge_unsure_first, unjudged_items
from tests.helpers.builders import queue_dataset, queue_keys


def _row(query: str, doc: str, grade: int, confidence: float | None) -> LlmJudgment:
    return LlmJudgment(
        query, doc, grade, "m", "sha", str(grade), "2026-01-01T00:00:00Z", confidence
    )


def _judge(*rows: LlmJudgment) -> dict[tuple[str, str], LlmJudgment]:
    return {(row.query, row.doc): row for row in rows}


DATA = queue_dataset({"q1": {"a": 3, "b": 0, "c": 1}, "q2": {"a": 2}})
TOP = {"q1": ["a", "b", "c", "x", "y", "z"], "q2": ["a", "w"]}


def test_the_pairs_the_judge_was_least_sure_of_come_first() -> None:
    items = unjudged_items(DATA, TOP, k=10, metric="ndcg@10")
    judge = _judge(_row("q1", "y", 1, 0.4), _row("q1", "z", 2, 0.9), _row("q2", "w", 0, None))
    ordered = judge_unsure_first(items, judge)
    # Sure-less and ungraded pairs follow, in the default order (rank, then ids).
    assert queue_keys(ordered) == [("q1", "y", 5), ("q1", "z", 6), ("q2", "w", 2), ("q1", "x", 4)]
    assert sorted(queue_keys(ordered)) == sorted(queue_keys(items))


def test_disagreements_are_judged_pairs_largest_gap_then_least_sure_first() -> None:
    judge = _judge(
        _row("q1", "a", 3, 0.9),  # agrees: left out
        _row("q1", "b", 1, 0.9),  # gap 1, sure
        _row("q1", "c", 0, 0.5),  # gap 1, unsure
        _row("q2", "a", 0, 0.99),  # gap 2
        _row("q1", "x", 3, 0.1),  # not judged by people: not a disagreement
    )
    items = judge_disagreements(DATA, TOP, judge, k=10, metric="ndcg@10")
    assert queue_keys(items) == [("q2", "a", 1), ("q1", "c", 3), ("q1", "b", 2)]
    assert judge_disagreements(DATA, TOP, judge, k=2, metric="ndcg@10") == [items[0], items[2]]
