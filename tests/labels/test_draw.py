"""Drawing whole queries for a label queue: uniform, by the judge's doubt, or targeted."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from retrieval_gate.labels.draw import (
    active_draw,
    query_doubt,
    round_id,
    targeted,
    uniform_draw,
)
from retrieval_gate.labels.queue import QueueItem
from retrieval_gate.stats.ppi import active_probabilities


def item(query_id: str, doc_id: str = "d1") -> QueueItem:
    return QueueItem(query_id, "text", doc_id, 1, None, None, "ndcg@10", None, None)


def test_doubt_weighs_each_moved_document_by_its_dcg_weight_and_the_judges_doubt() -> None:
    w = [1 / math.log2(r + 1) for r in (1, 2, 3)]
    # d1 stays first (no weight), d2 goes from 2nd to out of the top 2, d3 comes in 2nd; d3 is
    # ungraded (doubt 1), d2 graded at confidence 0.75.
    doubt = query_doubt(["d1", "d3", "d2"], ["d1", "d2"], {"d1": 0.5, "d2": 0.25}, k=2)
    assert doubt == pytest.approx(w[1] * 0.25 + w[1] * 1.0, abs=1e-15)
    assert query_doubt(["a", "b"], ["a", "b"], {}, k=10) == 0.0  # ranked alike: delta 0
    no_baseline = query_doubt(["a", "b"], None, {"a": 0.1}, k=10)
    assert no_baseline == pytest.approx(w[0] * 0.1 + w[1] * 1.0, abs=1e-15)


def test_a_uniform_draw_takes_the_seeded_sample_and_records_its_rate() -> None:
    items = [item(q, d) for q in ("q1", "q2", "q3", "q4") for d in ("a", "b")]
    drawn = uniform_draw(items, ["q4", "q2", "q3", "q1"], 2, seed=7)
    chosen = set(random.Random(7).sample(["q1", "q2", "q3", "q4"], 2))
    assert {row.query_id for row in drawn} == chosen
    assert len(drawn) == 4
    assert {(row.draw, row.rate, row.weight, row.p) for row in drawn} == {("sample", 0.5, 1.0, 0.5)}
    assert {row.round for row in drawn} == {round_id("sample", 7, 2, ["q1", "q2", "q3", "q4"])}
    assert uniform_draw(items, [], 2, seed=7) == []


def test_an_active_draw_is_seeded_and_records_each_querys_probability() -> None:
    queries = [f"q{i:02}" for i in range(40)]
    doubt = {q: float(i % 7) for i, q in enumerate(queries)}
    items = [item(q) for q in queries]
    drawn = active_draw(items, doubt, 8, seed=3)
    assert drawn == active_draw(items, doubt, 8, seed=3)
    pi, rate, weights = active_probabilities(np.array([doubt[q] for q in queries]), 8, 0.2)
    uniform = np.random.default_rng(3).random(40)
    assert [row.query_id for row in drawn] == [
        q for q, u, p in zip(queries, uniform, pi, strict=True) if u < p
    ]
    for row in drawn:
        at = queries.index(row.query_id)
        assert (row.draw, row.rate, row.weight, row.p) == ("active", rate, weights[at], pi[at])
    # 8 on average; a query without doubt keeps the floor: 0.2 of the uniform rate.
    counts = [len(active_draw(items, doubt, 8, seed=s)) for s in range(400)]
    assert np.mean(counts) == pytest.approx(8, abs=0.3)
    assert min(pi) == pytest.approx(rate * 0.2)


def test_a_targeted_queue_says_so_with_no_probability() -> None:
    rows = targeted([item("q1")], "judge-unsure")
    assert (rows[0].draw, rows[0].round, rows[0].p) == ("targeted", "judge-unsure", None)
