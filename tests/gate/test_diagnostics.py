"""Per-query diagnostics: judged@k before and after, labelling gaps and when they are claimed."""

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

# --- judged@k and labelling gaps -----------------------------------------------------------

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


def test_a_regression_with_a_judged_drop_records_a_labelling_gap(pooled: Path) -> None:
    from retrieval_gate.gate.diagnostics import JUDGED_DROP

    result, dataset = decided(pooled, "unjudged_search")
    failed = {(c.metric, c.slice) for c in result.failures}
    assert ("ndcg@10", "intent=billing") in failed
    gaps = {(g.metric, g.slice): g for g in result.labelling_gaps}
    assert set(gaps) <= failed
    assert [(g.metric, g.slice) for g in result.labelling_gaps] == [
        (c.metric, c.slice) for c in result.failures if (c.metric, c.slice) in gaps
    ]
    billing = [q.id for q in dataset.queries if q.metadata["intent"] == "billing"]
    gap = gaps["ndcg@10", "intent=billing"]
    assert gap.judged_before == pytest.approx(
        judged_at_10(result.baseline.top_k, dataset, billing), abs=1e-12
    )
    assert gap.judged_after == pytest.approx(
        judged_at_10(result.current.top_k, dataset, billing), abs=1e-12
    )
    assert gap.judged_before - gap.judged_after >= JUDGED_DROP
    assert result.document()["labelling_gaps"][0] == dataclasses.asdict(result.labelling_gaps[0])
    code, out, _ = run_cli("check", "-c", str(pooled / "unjudged_search.yaml"), "--quiet")
    assert code == 1
    lines = out.splitlines()
    # The first gap says what it may mean and what to do; the console points back to it after.
    assert (
        "    judged@10 fell 0.20 -> 0.15 on these queries: the drop may be a labelling gap "
        "rather than a retriever fault; `retrieval-gate label-queue` lists the unjudged documents"
    ) in lines
    assert "    judged@10 fell 0.20 -> 0.06: a possible labelling gap, as above" in lines


def test_a_regression_with_judged_at_k_held_records_no_gap(pooled: Path) -> None:
    result, _ = decided(pooled, "worse_search")  # d<i> moves down; the same docs stay judged
    assert result.failures
    assert result.labelling_gaps == ()
    assert result.unjudged.judged_before == result.unjudged.judged_after
    assert result.document()["labelling_gaps"] == []
    code, out, _ = run_cli("check", "-c", str(pooled / "worse_search.yaml"), "--quiet")
    assert code == 1
    assert "labelling gap" not in out


def test_a_fall_of_exactly_one_point_is_a_gap_and_less_is_not(pooled: Path) -> None:
    from retrieval_gate.gate.diagnostics import labelling_gaps

    result, _ = decided(pooled, "worse_search")
    slices = {c.slice: np.arange(10) for c in result.failures}
    before = np.full(10, 0.2)
    one_point = np.array([0.2] * 9 + [0.1])  # mean 0.19: 0.2 - 0.19 is 0.00999... in floats
    unjudged = np.full(10, 0.5)
    entered = (unjudged, unjudged + (before - one_point))  # the lost judged slot is unjudged now
    every = {(c.metric, c.slice) for c in result.failures}
    gaps = labelling_gaps(result.failures, slices, (before, one_point), entered, every)
    assert len(gaps) == len(result.failures)
    assert labelling_gaps(result.failures, slices, (before, one_point), entered, set()) == ()
    less = (before, before - 0.009)
    assert labelling_gaps(result.failures, slices, less, (unjudged, unjudged + 0.009), every) == ()
    more = (before, before + 0.1)
    assert labelling_gaps(result.failures, slices, more, (unjudged, unjudged - 0.1), every) == ()


def test_fewer_documents_returned_is_no_labelling_gap(pooled: Path) -> None:
    from retrieval_gate.gate.diagnostics import labelling_gaps

    result, _ = decided(pooled, "worse_search")
    slices = {c.slice: np.arange(10) for c in result.failures}
    judged = (np.full(10, 0.2), np.full(10, 0.1))  # judged@k fell a whole 10 points ...
    unjudged = np.full(10, 0.5)
    shorter = (unjudged, unjudged - 0.1)  # ... because the lists got shorter, not unjudged
    every = {(c.metric, c.slice) for c in result.failures}
    assert labelling_gaps(result.failures, slices, judged, shorter, every) == ()
    entered = (unjudged, unjudged + 0.1)
    assert len(labelling_gaps(result.failures, slices, judged, entered, every)) == len(
        result.failures
    )


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


def test_a_failure_unjudged_documents_cannot_explain_gets_no_hint(pooled: Path) -> None:
    (pooled / "genuine_search.py").write_text(GENUINE_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    result, _ = decided(pooled, "genuine_search")
    failed = {(c.metric, c.slice) for c in result.failures}
    assert ("ndcg@10", "intent=billing") in failed
    billing = next(c for c in result.failures if c.slice == "intent=billing")
    assert billing.metric == "ndcg@10"
    # The judged@k rule alone would call it a gap: judged@10 fell, unjudged documents rose.
    assert result.unjudged.judged_after < result.unjudged.judged_before - 0.01
    assert result.unjudged.new > 0
    gaps = {(g.metric, g.slice) for g in result.labelling_gaps}
    # nDCG fails even if the unjudged documents were relevant: the top rank lost a grade-2
    # document to a grade-1 one. Recall would not: the one document nobody judged takes the
    # lost document's place among the ten.
    assert not any(metric == "ndcg@10" for metric, _ in gaps)
    assert ("recall@10", "intent=billing") in gaps
    code, out, _ = run_cli("check", "-c", str(pooled / "genuine_search.yaml"), "--quiet")
    assert code == 1
    lines = out.splitlines()
    ndcg = [i for i, line in enumerate(lines) if "x ndcg@10 fell" in line]
    assert ndcg
    assert all("labelling gap" not in lines[i + 1] for i in ndcg)  # the hint follows its check


# --- the vectorised diagnostics against per-query sets ---------------------------------------


def random_records(seed: int) -> tuple[Any, list[str], dict[str, list[str]], dict[str, list[str]]]:
    """Seeded qrels (grades -1 to 3, some queries without judgments) and two top-10 maps that
    share docs, leave queries out and rank docs the qrels never name."""
    from retrieval_gate.readers import qrels_from_dict

    rng = np.random.default_rng(seed)
    query_ids = [f"q{i:03d}" for i in range(40)]
    judgments = {
        q: {f"d{int(d)}": float(rng.integers(-1, 4)) for d in rng.choice(30, 8, replace=False)}
        for q in query_ids
    }
    tops = []
    for _ in range(2):
        tops.append(
            {
                q: [f"d{int(d)}" for d in rng.choice(30, int(rng.integers(1, 11)), replace=False)]
                for q in query_ids
                if rng.random() < 0.85
            }
        )
    return qrels_from_dict(judgments), query_ids, tops[0], tops[1]


@pytest.mark.parametrize("seed", range(20))
def test_the_vectorised_diagnostics_equal_per_query_sets(seed: int) -> None:
    from retrieval_gate.gate.diagnostics import (
        _optimistic,
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

    optimistic = _optimistic(qrels, (before, after))
    best = max(float(qrels.grade.max()), 1.0)
    for q, judgments in zip(optimistic.query_ids.tolist(), optimistic.by_query, strict=True):
        expected_grades = dict(graded[q])
        expected_grades.update(dict.fromkeys(unjudged(old, q) | unjudged(new, q), best))
        assert judgments == expected_grades, q
