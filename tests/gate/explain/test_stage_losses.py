"""The stage that lost each relevant document, against a brute-force recount on random cases."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.gate.explain.stage_losses import stage_losses
from retrieval_gate.readers.dicts import qrels_from_dict

K = 10
CHECKS = (
    "ndcg@5",
    "recall(rel=2)@4",
    "ap@10",
    "ndcg@20",
    "precision(rel=3)@3",
    "recall@10",
    "precision(rel=0)@5",  # grade 0 is judged out, never a lost relevant document
)


def random_case(seed: int) -> dict[str, object]:
    """Queries with grades -1..3 (some unjudged docs), a reference top k, the current
    candidates (a random part of a pool, sometimes none) and a current top k drawn mostly from
    the candidates, sometimes from outside them."""
    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(int(rng.integers(1, 9)))]
    qrels, reference, current, candidates = {}, {}, {}, {}
    for query in queries:
        pool = [f"d{n}" for n in rng.permutation(40)[: int(rng.integers(1, 30))]]
        judged = pool[: int(rng.integers(1, len(pool) + 1))]
        qrels[query] = {doc: int(rng.choice([-1, 0, 0, 1, 2, 3])) for doc in judged}
        if rng.random() < 0.9:
            reference[query] = list(rng.permutation(pool)[: int(rng.integers(0, K + 1))])
        kept = list(rng.permutation(pool)[: int(rng.integers(0, len(pool) + 1))])
        if rng.random() < 0.85:
            candidates[query] = kept
        strays = [doc for doc in pool if doc not in kept]
        ranked = list(rng.permutation(kept))[: int(rng.integers(0, K + 1))]
        if strays and rng.random() < 0.2:  # a top k that is not a reranking of the candidates
            ranked.insert(int(rng.integers(0, len(ranked) + 1)), strays[0])
        if rng.random() < 0.9:
            current[query] = ranked[:K]
    return {
        "queries": queries,
        "qrels": qrels,
        "reference": reference,
        "current": current,
        "candidates": candidates,
        "slices": {
            "all": np.arange(len(queries), dtype=np.int64),
            "odd": np.arange(1, len(queries), 2, dtype=np.int64),
        },
    }


def brute_force(case: dict[str, object], depth: int, rel: int) -> dict[str, tuple[int, int]]:
    """Query -> (lost by the first stage, demoted by the reranker), by sets."""
    counts = {}
    for query in case["queries"]:  # type: ignore[attr-defined]
        grades = case["qrels"][query]  # type: ignore[index]
        ranked = case["reference"].get(query, [])[:depth]  # type: ignore[attr-defined]
        now = set(case["current"].get(query, [])[:depth])  # type: ignore[attr-defined]
        kept = set(case["candidates"].get(query, []))  # type: ignore[attr-defined]
        relevant = {doc for doc in ranked if grades.get(doc, 0) >= max(rel, 1)}
        lost = relevant - now
        counts[query] = (len(lost - kept), len(lost & kept))
    return counts


def depth_and_rel(metric: str) -> tuple[int, int]:
    rel = int(metric.split("rel=")[1][0]) if "rel=" in metric else 1
    return min(int(metric.rsplit("@", 1)[1]), K), rel


@pytest.mark.parametrize("seed", range(400))
def test_counts_agree_with_a_brute_force_recount(seed: int) -> None:
    case = random_case(seed)
    queries: list[str] = case["queries"]  # type: ignore[assignment]
    slices = case["slices"]
    found = stage_losses(
        case["reference"],  # type: ignore[arg-type]
        case["current"],  # type: ignore[arg-type]
        case["candidates"],  # type: ignore[arg-type]
        qrels_from_dict(case["qrels"]),  # type: ignore[arg-type]
        queries,
        [(metric, name) for metric in CHECKS for name in slices],  # type: ignore[attr-defined]
        slices,  # type: ignore[arg-type]
        K,
    )
    for loss in found.checks:
        per_query = brute_force(case, *depth_and_rel(loss.metric))
        rows = slices[loss.slice].tolist()  # type: ignore[index]
        assert loss.first_stage == sum(per_query[queries[i]][0] for i in rows), loss
        assert loss.reranker == sum(per_query[queries[i]][1] for i in rows), loss
    at_k = {query: pair for query, pair in brute_force(case, K, 1).items() if any(pair)}
    assert found.query_count == len(at_k)
    assert len(found.queries) == min(len(at_k), 20)
    for row in found.queries:
        assert (row.first_stage, row.reranker) == at_k[row.query_id]
        # At most five ids a stage: the counts hold the rest.
        assert len(row.first_stage_docs) == min(row.first_stage, 5)
        assert len(row.reranker_docs) == min(row.reranker, 5)
        assert not set(row.first_stage_docs) & set(case["candidates"].get(row.query_id, []))  # type: ignore[attr-defined]
        assert set(row.reranker_docs) <= set(case["candidates"].get(row.query_id, []))  # type: ignore[attr-defined]


def test_candidates_checks_are_not_attributed() -> None:
    """What a `candidates:` check loses is the first stage's by definition: no row of its own."""
    found = stage_losses(
        {"q": ["a"]},
        {"q": []},
        {"q": []},
        qrels_from_dict({"q": {"a": 1}}),
        ["q"],
        [("candidates:recall@100", "all"), ("recall@10", "all")],
        {"all": np.arange(1, dtype=np.int64)},
        K,
    )
    assert [(c.metric, c.first_stage, c.reranker) for c in found.checks] == [("recall@10", 1, 0)]


def test_the_queries_that_lost_most_come_first_and_are_bounded() -> None:
    queries = [f"q{i:03d}" for i in range(27)]
    reference = {q: [f"{q}-d{j}" for j in range(i % 4 + 1)] for i, q in enumerate(queries)}
    qrels = qrels_from_dict({q: dict.fromkeys(docs, 2) for q, docs in reference.items()})
    found = stage_losses(
        reference,
        {},
        {q: docs[:1] for q, docs in reference.items()},
        qrels,
        queries,
        [("ndcg@10", "all")],
        {"all": np.arange(len(queries), dtype=np.int64)},
        K,
    )
    totals = [q.first_stage + q.reranker for q in found.queries]
    assert totals == sorted(totals, reverse=True)
    assert len(found.queries) == 20  # the report lists the 20 that lost most
    assert found.query_count == len(queries)
    assert found.checks[0].reranker == len(queries)  # each kept its first doc as a candidate


def test_queries_that_lost_as_many_are_listed_by_id() -> None:
    # q2 lost the same count as q1 (its doc sorting first): ties go by query id, not by doc.
    # q4's three are the reranker's: a loss is a loss, whichever stage made it.
    reference = {"q1": ["z"], "q2": ["a"], "q3": ["m", "n"], "q4": ["r1", "r2", "r3"]}
    found = stage_losses(
        reference,
        {},
        {"q4": ["r1", "r2", "r3"]},
        qrels_from_dict({q: dict.fromkeys(docs, 1) for q, docs in reference.items()}),
        ["q1", "q2", "q3", "q4"],
        [("recall@10", "all")],
        {"all": np.arange(4, dtype=np.int64)},
        K,
    )
    assert [(q.query_id, q.first_stage_docs, q.reranker) for q in found.queries] == [
        ("q4", (), 3),
        ("q3", ("m", "n"), 0),
        ("q1", ("z",), 0),
        ("q2", ("a",), 0),
    ]


def test_a_fractional_grade_below_1_is_not_a_lost_relevant_document() -> None:
    # Relevant is grade >= 1 (or >= rel) everywhere in the gate: a doc graded 0.5 that left
    # the top k is no loss, for a metric without `rel` (nDCG) as for one with it.
    found = stage_losses(
        {"q": ["half", "one"]},
        {"q": []},
        {"q": ["one"]},
        qrels_from_dict({"q": {"half": 0.5, "one": 1.0}}),
        ["q"],
        [("ndcg@10", "all"), ("recall(rel=1)@10", "all")],
        {"all": np.arange(1, dtype=np.int64)},
        K,
    )
    assert [(c.metric, c.first_stage, c.reranker) for c in found.checks] == [
        ("ndcg@10", 0, 1),
        ("recall(rel=1)@10", 0, 1),
    ]
    assert [(q.query_id, q.first_stage, q.reranker_docs) for q in found.queries] == [
        ("q", 0, ("one",))
    ]
