"""A baseline re-scored under new judgments, from the rankings it stores."""

from __future__ import annotations

import dataclasses

from retrieval_gate.gate.baseline.comparable import rescored_baseline
from tests.helpers.baselines import FINGERPRINTS, make
from tests.helpers.builders import queue_dataset


def test_the_final_and_the_candidates_columns_are_re_scored_each_from_its_own_list() -> None:
    metrics = ("recall@10", "candidates:recall@100")
    baseline = make(
        fingerprints=dataclasses.replace(FINGERPRINTS, metrics=metrics),
        query_ids=("q1", "q2"),
        scores={"recall@10": [0.0, 0.0], "candidates:recall@100": [0.0, 0.0]},
        top_k={"q1": ["d1"]},
        candidates={"q1": ["d3", "d1", "d2"], "q2": ["d5"]},
    )
    dataset = queue_dataset({"q1": {"d1": 1, "d2": 1}, "q2": {"d5": 1}})
    rescored = rescored_baseline(baseline, dataset)
    # q1's top k holds one of its two relevant docs, q2's nothing; the candidates hold all.
    assert rescored.scores["recall@10"].tolist() == [0.5, 0.0]
    assert rescored.scores["candidates:recall@100"].tolist() == [1.0, 1.0]
    assert rescored.fingerprints.dataset == dataset.fingerprint
    assert rescored.repeats is None
