"""Per-query diagnostics: judged@k before and after, and the label-hole bounds on real runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.gate.baseline.file import read_baseline
from tests.helpers.cli import run_cli
from tests.helpers.generated_project import QUERIES, make_project, write_config
from tests.helpers.top_k_cases import random_records

# --- judged@k and label holes ----------------------------------------------------------------

UNJUDGED_RETRIEVER = """\
import zlib


def search(query, k, metadata):
    # Like worse_search, but the broken queries get documents nobody judged instead.
    i = int(metadata["n"])
    if zlib.crc32(query.encode()) % 100 < 60 and metadata["intent"] == "billing":
        return [f"fresh{i}-{j}" for j in range(k)]
    return [f"d{i}"] + [f"d{(i + j) % @COUNT@}" for j in range(1, k)]
"""


def pool(root: Path) -> None:
    """Mark d<i+1> of every query as pooled but not judged (grade -1): in every top 10."""
    path = root / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["qrels"][f"d{(row['n'] + 1) % QUERIES}"] = -1
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.fixture
def pooled(tmp_path: Path) -> Path:
    """The test_gate project, a pooled-unjudged row per query, its baseline rewritten."""
    project = make_project(tmp_path)
    pool(project)
    (project / "unjudged_search.py").write_text(UNJUDGED_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    assert run_cli("baseline", "-c", str(project / "gate.yaml"), "--quiet", "--force")[0] == 0
    return project


def judged_at_10(top_k: Any, dataset: Any, query_ids: Any = None) -> float:
    """Mean judged@10 of stored rankings, by the metric engine (the independent oracle)."""
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import run_from_dict

    run = run_from_dict({q: list(docs) for q, docs in top_k.items()})
    scores = evaluate(run, dataset.qrels, ["judged@10"])
    values = dict(zip(scores.query_ids, scores.values["judged@10"].tolist(), strict=True))
    chosen = scores.query_ids if query_ids is None else query_ids
    return float(np.mean([values[q] for q in chosen]))


def decided(project: Path, target: str) -> Any:
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.decide import decide
    from retrieval_gate.pipeline.record import record_current

    config = load(write_config(project, target, name=f"{target}.yaml"))
    current = record_current(config, cache=False)
    baseline = read_baseline(project / ".retrieval-gate" / "baseline.json")
    return decide(baseline, current.record, config, current.dataset), current.dataset


def test_judged_at_k_before_and_after_match_the_judged_metric(pooled: Path) -> None:
    result, dataset = decided(pooled, "unjudged_search")
    unjudged = result.unjudged
    assert unjudged.judged_before == pytest.approx(
        judged_at_10(result.baseline.top_k, dataset), abs=1e-12
    )
    assert unjudged.judged_after == pytest.approx(
        judged_at_10(result.current.top_k, dataset), abs=1e-12
    )
    # One rule for "judged": the pooled -1 rows count as unjudged, as judged@k counts them.
    assert unjudged.judged_before == pytest.approx(0.2)
    judged_docs = round(unjudged.judged_after * 10 * QUERIES)
    assert unjudged.retrieved - unjudged.unjudged == judged_docs
    assert unjudged.baseline_unjudged == 8 * QUERIES
    document = result.document()
    assert document["unjudged"]["judged_before"] == unjudged.judged_before
    assert document["unjudged"]["judged_after"] == unjudged.judged_after


def unjudged_pairs(result: Any, dataset: Any, query_ids: Any) -> int:
    """Distinct (query, doc) pairs nobody judged in either top 10 of `query_ids`."""
    judged = {q: dict(dataset.qrels.judgments_of(q)) for q in query_ids}
    return sum(
        len(
            {
                d
                for d in (*result.baseline.top_k.get(q, ()), *result.current.top_k.get(q, ()))
                if judged[q].get(d, -1.0) < 0
            }
        )
        for q in query_ids
    )


def test_checks_unjudged_documents_could_flip_are_label_dependent(pooled: Path) -> None:
    result, dataset = decided(pooled, "unjudged_search")
    failed = [(c.metric, c.slice) for c in result.comparisons if c.failed]
    assert ("ndcg@10", "intent=billing") in failed
    # Every failing check is bounded (none is merely inconclusive here), in check order.
    assert [(h.metric, h.slice) for h in result.label_holes] == failed
    holes = {(h.metric, h.slice): h for h in result.label_holes}
    billing = [q.id for q in dataset.queries if q.metadata["intent"] == "billing"]
    hole = holes["ndcg@10", "intent=billing"]
    assert hole.unjudged == unjudged_pairs(result, dataset, billing)
    assert (hole.worst, hole.best, hole.robust, hole.exact) == (
        "regressed",
        "improved",
        False,
        True,
    )
    assert hole.worst_delta < hole.best_delta
    assert result.document()["label_holes"][0] == dataclasses.asdict(result.label_holes[0])
    code, out, _ = run_cli("check", "-c", str(pooled / "unjudged_search.yaml"), "--quiet")
    assert code == 1
    lines = out.splitlines()
    # The first says what to do; the console points back to it after.
    first = next(line for line in lines if line.startswith("    depends on"))
    assert first.endswith(
        "label them (`retrieval-gate label-queue`) or judge them (`retrieval-gate judge`)"
    )
    assert f"    depends on {hole.unjudged} unjudged documents, as above" in lines


GENUINE_RETRIEVER = """\
import zlib


def search(query, k, metadata):
    # The broken queries lose their grade-2 document d<i>: the grade-1 d<i+7> moves to the top
    # and one document nobody judged enters at rank 10. judged@10 falls and the unjudged share
    # rises, yet even if every unjudged document were relevant the top rank would be worse.
    i = int(metadata["n"])
    if zlib.crc32(query.encode()) % 100 < 60 and metadata["intent"] == "billing":
        rest = [f"d{(i + j) % @COUNT@}" for j in (1, 2, 3, 4, 5, 6, 8, 9)]
        return [f"d{(i + 7) % @COUNT@}", *rest, f"fresh{i}"]
    return [f"d{i}"] + [f"d{(i + j) % @COUNT@}" for j in range(1, k)]
"""


def test_a_failure_no_grading_of_unjudged_documents_can_explain_holds(pooled: Path) -> None:
    (pooled / "genuine_search.py").write_text(GENUINE_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    result, dataset = decided(pooled, "genuine_search")
    holes = {(h.metric, h.slice): h for h in result.label_holes}
    # nDCG fails whatever the unjudged documents are: the top rank lost a grade-2 document to
    # a grade-1 one. Recall does not: the one document nobody judged takes the lost one's
    # place among the ten, and relevant, it would make up for it.
    ndcg, recall = holes["ndcg@10", "intent=billing"], holes["recall@10", "intent=billing"]
    assert ndcg.robust
    assert ndcg.worst == ndcg.best == "regressed"
    assert not recall.robust
    assert (recall.worst, recall.best) == ("regressed", "pass")
    billing = [q.id for q in dataset.queries if q.metadata["intent"] == "billing"]
    assert ndcg.unjudged == recall.unjudged == unjudged_pairs(result, dataset, billing)
    code, out, _ = run_cli("check", "-c", str(pooled / "genuine_search.yaml"), "--quiet")
    assert code == 1
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "x ndcg@10 fell" in line and "billing" in line)
    assert (
        lines[at + 1] == f"    holds whatever the {ndcg.unjudged} unjudged documents turn out to be"
    )


# --- the vectorised diagnostics against per-query sets ---------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_the_vectorised_diagnostics_equal_per_query_sets(seed: int) -> None:
    from retrieval_gate.gate.explain.diagnostics import (
        graded_top_ks,
        hit_changes,
        judged_at_k,
        unjudged_summary,
    )

    qrels, query_ids, old, new = random_records(seed)
    graded = dict(zip(query_ids, qrels.by_query, strict=True))
    before, after = graded_top_ks(old, new, query_ids, qrels)

    def unjudged(top: dict[str, list[str]], q: str) -> set[str]:
        return {d for d in top.get(q, []) if graded[q].get(d, -1.0) < 0}

    for top, table in ((old, before), (new, after)):
        expected = np.array([len(unjudged(top, q)) / 10 for q in query_ids])
        judged, share = judged_at_k(table, 10)
        np.testing.assert_array_equal(share, expected)
        np.testing.assert_array_equal(judged, 1.0 - expected)
    summary = unjudged_summary(before, after, np.zeros(1), np.ones(1))
    assert summary.retrieved == sum(len(new.get(q, [])) for q in query_ids)
    assert summary.unjudged == sum(len(unjudged(new, q)) for q in query_ids)
    assert summary.baseline_unjudged == sum(len(unjudged(old, q)) for q in query_ids)
    fresh = {q: unjudged(new, q) - set(old.get(q, [])) for q in query_ids}
    assert summary.new == sum(map(len, fresh.values()))
    assert summary.queries == tuple(q for q in query_ids if fresh[q])

    def hit(top: dict[str, list[str]], q: str) -> bool:
        return any(graded[q].get(d, 0.0) >= 1 for d in top.get(q, []))

    lost = tuple(q for q in query_ids if hit(old, q) and not hit(new, q))
    gained = tuple(q for q in query_ids if hit(new, q) and not hit(old, q))
    assert hit_changes(before, after) == (lost, gained)


def test_no_labelled_queries_give_empty_graded_top_ks() -> None:
    """One block of no queries (as `listed_runs` lays none out), not an error: both sides
    hold no row, and every diagnostic of them is empty."""
    from retrieval_gate.gate.explain.diagnostics import graded_top_ks, hit_changes, judged_at_k

    qrels, _, old, new = random_records(0)
    before, after = graded_top_ks(old, new, [], qrels)
    for table in (before, after):
        assert (len(table.run.query_ids), len(table.run.query), len(table.grade)) == (0, 0, 0)
        judged, share = judged_at_k(table, 10)
        assert (judged.shape, share.shape) == ((0,), (0,))
    assert hit_changes(before, after) == ((), ())


# --- the most regressed queries ---------------------------------------------------------------


def test_query_changes_list_regressions_worst_first_with_their_relevant_moves() -> None:
    from retrieval_gate.gate.explain.diagnostics import DocMove, query_changes
    from tests.helpers.baselines import make
    from tests.helpers.builders import queue_dataset

    dataset = queue_dataset(
        {
            # d3 outranks d1 by grade; d2 (grade 0) and d8 (pooled, -1) are not relevant;
            # d5 is relevant but in neither top k, so it did not move.
            "q1": {"d1": 1, "d2": 0, "d3": 2, "d5": 3, "d8": -1},
            "q2": {"d1": 2},
            "q3": {"d1": 2},
            "q4": {"d7": 1},
        }
    )
    ids = ("q1", "q2", "q3", "q4")
    # Deltas -0.2, 0 (not a regression), NaN (undefined: not compared), -0.5.
    baseline = make(
        query_ids=ids,
        scores={"ndcg@10": [0.5, 0.8, 0.2, 0.9], "recall@10": [1, 1, 1, 1]},
        top_k={"q1": ["d1", "d8", "d3"], "q2": ["d1"], "q3": ["d1"], "q4": ["d7"]},
    )
    current = make(
        query_ids=ids,
        scores={"ndcg@10": [0.3, 0.8, np.nan, 0.4], "recall@10": [0, 0, 0, 0]},
        top_k={"q1": ["d2", "d1", "d8"], "q2": ["d1"], "q3": []},
    )
    changes = query_changes(baseline, current, dataset, "ndcg@10")
    assert [(c.query_id, c.text, c.metric) for c in changes] == [
        ("q4", "Q4", "ndcg@10"),
        ("q1", "Q1", "ndcg@10"),
    ]
    assert [(c.before, c.after) for c in changes] == [(0.9, 0.4), (0.5, 0.3)]
    assert changes[0].moves == (DocMove(doc_id="d7", grade=1.0, before=1, after=None),)
    assert changes[1].moves == (
        DocMove(doc_id="d3", grade=2.0, before=3, after=None),
        DocMove(doc_id="d1", grade=1.0, before=1, after=2),
    )


def test_query_changes_show_the_ten_most_regressed() -> None:
    from retrieval_gate.gate.explain.diagnostics import query_changes
    from tests.helpers.baselines import make
    from tests.helpers.builders import queue_dataset

    ids = tuple(f"q{i:02}" for i in range(12))
    dataset = queue_dataset({q: {"d1": 1} for q in ids})
    before = np.ones(12)
    # q00 lost 0.12, q01 0.11, ... q11 0.01: the ten largest drops, largest first.
    after = before - np.arange(12, 0, -1) / 100
    baseline = make(query_ids=ids, scores={"ndcg@10": before, "recall@10": before}, top_k={})
    current = make(query_ids=ids, scores={"ndcg@10": after, "recall@10": before}, top_k={})
    changes = query_changes(baseline, current, dataset, "ndcg@10")
    assert [c.query_id for c in changes] == [f"q{i:02}" for i in range(10)]
    assert all(c.moves == () for c in changes)
