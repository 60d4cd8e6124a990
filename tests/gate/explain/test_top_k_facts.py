"""top_k_facts in blocks of queries gives what one block gives: diagnostics and hole extremes."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold
from retrieval_gate.gate.explain.diagnostics import (
    graded_top_ks,
    hit_changes,
    judged_at_k,
    unjudged_summary,
)
from retrieval_gate.gate.explain.label_holes import hole_extremes, hole_plan
from retrieval_gate.gate.explain.top_k_facts import top_k_facts
from retrieval_gate.readers import qrels_from_dict
from tests.helpers.top_k_cases import METRICS, Case, K, decider, random_case, random_records, scored


def failing(case: Case) -> list[Comparison]:
    """Every metric's check over all queries, failing (a floor no mean reaches)."""
    judgments, query_ids, _, _ = case
    thresholds = {m: Threshold(max_drop=0.05, floor=2.0) for m in METRICS}
    settings = ComparisonSettings(require_significance=False, min_size=1)
    decide = decider(settings, thresholds, {"all": np.arange(len(query_ids))})
    checks = list(decide(*scored(case, METRICS, judgments)))
    assert all(check.failed for check in checks)
    return checks


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("size", [1, 2, 3, 16])
def test_diagnostics_in_blocks_are_those_of_one_block(seed: int, size: int) -> None:
    qrels, query_ids, old, new = random_records(seed)
    # Judgments and lists of a query nobody labelled: read by no block.
    old = {**old, "zzz": ["d1", "d2"]}
    before, after = graded_top_ks(old, new, query_ids, qrels)
    judged_before, _ = judged_at_k(before, 10)
    judged_after, _ = judged_at_k(after, 10)
    whole = unjudged_summary(before, after, judged_before, judged_after)
    facts = top_k_facts(old, new, query_ids, qrels, k=10, plan=None, size=size)
    assert facts.unjudged == whole
    assert (facts.lost, facts.gained) == hit_changes(before, after)
    assert facts.holes is None


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("size", [1, 2, 3])
def test_hole_extremes_in_blocks_are_those_of_one_block(seed: int, size: int) -> None:
    case = random_case(seed, queries=7)
    judgments, query_ids, old, new = case
    qrels = qrels_from_dict(judgments)
    checks = failing(case)
    before, after = graded_top_ks(old, new, query_ids, qrels)
    whole = hole_extremes(checks, before, after, qrels, k=K)
    assert whole is not None
    assert int(whole.unjudged.sum()) > 0
    facts = top_k_facts(
        old, new, query_ids, qrels, k=K, plan=hole_plan(checks, qrels, k=K), size=size
    )
    found = facts.holes
    assert found is not None
    assert found.unjudged.tolist() == whole.unjudged.tolist()
    assert found.reasons == whole.reasons
    assert set(found.extremes) == set(whole.extremes)
    for metric, want in whole.extremes.items():
        got = found.extremes[metric]
        # To the bit: a query's extremes do not depend on the queries read with it.
        for a, b in zip((*got.delta, *got.current), (*want.delta, *want.current), strict=True):
            assert a.tolist() == b.tolist(), metric
        assert got.exact.tolist() == want.exact.tolist()


def test_no_queries_make_one_empty_block() -> None:
    qrels = qrels_from_dict({"q1": {"d1": 1.0}})
    facts = top_k_facts({}, {}, [], qrels, k=10, plan=None)
    assert facts.unjudged.retrieved == 0
    assert facts.unjudged.queries == ()
    assert (facts.lost, facts.gained) == ((), ())
