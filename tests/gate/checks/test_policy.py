"""The gate's policy: each `metrics:` key's threshold faces its column's way, in its units."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.columns import RELEVANCE, Column
from retrieval_gate.config.loader import load
from retrieval_gate.gate.checks.policy import column_of, gate_thresholds

CONFIG = """\
version: 1
dataset: {queries: q.jsonl, qrels: q.tsv}
retriever: {type: http, url: "http://127.0.0.1:9/search"}
evaluators:
  judge:
    format: jsonl
    current: judge-now.jsonl
    lower_is_better: [hallucination]
    units: {helpfulness: stars}
metrics:
  ndcg@10: {max_drop: 2pt}
  judge:hallucination: {max_increase: 2pt}
  judge:helpfulness: {max_drop: 0.5 stars}
slices:
  by: [topic]
  overrides:
    billing:
      judge:hallucination: {max_increase: 5pt}
"""


def test_an_evaluator_score_takes_the_direction_and_unit_its_evaluator_gives(
    tmp_path: Path,
) -> None:
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    config = load(path)
    thresholds, overrides = gate_thresholds(config)
    hallucination = thresholds["judge:hallucination"]
    assert (hallucination.direction, hallucination.unit) == ("lower", "")
    assert hallucination.max_drop == pytest.approx(0.02)
    helpfulness = thresholds["judge:helpfulness"]
    assert (helpfulness.direction, helpfulness.unit) == ("higher", "stars")
    assert helpfulness.max_drop == pytest.approx(0.5)
    assert thresholds["ndcg@10"].direction == "higher"
    override = overrides["billing"]["judge:hallucination"]
    assert (override.direction, override.max_drop) == ("lower", pytest.approx(0.05))


def test_a_key_of_no_configured_evaluator_is_a_relevance_column() -> None:
    assert column_of("judge:hallucination") == RELEVANCE
    assert column_of("latency_p95", {}) == Column("lower", "ms")
