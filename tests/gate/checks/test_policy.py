"""The gate's policy: each `metrics:` key's threshold faces its column's way, in its units."""

from __future__ import annotations

import json
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


def test_both_levels_gating_test_each_check_at_half_of_alpha(tmp_path: Path) -> None:
    # power and lint state a check's figures at the level `check` tests it at.
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.checks.policy import gate_settings
    from tests.helpers.chunkings import copy_chunked_example
    from tests.helpers.cli import run_cli

    root = copy_chunked_example(tmp_path / "chunked")
    text = (root / "example-chunked.yaml").read_text(encoding="utf-8")
    assert "\n  level: document" in text
    both = root / "both.yaml"
    both.write_text(text.replace("\n  level: document", "\n  other_level: gate\n  level: document"))
    config = load(both)
    dataset = load_dataset(config.dataset, config.base_dir)
    assert gate_settings(config, dataset).alpha == config.gate.alpha / 2
    assert gate_settings(config).alpha == config.gate.alpha  # as configured, for the reports
    plain = load(root / "example-chunked.yaml")
    assert gate_settings(plain, dataset).alpha == plain.gate.alpha  # the other level reports
    halved = root / "halved.yaml"
    assert "\ngate:" not in text
    halved.write_text(text + f"gate:\n  alpha: {plain.gate.alpha / 2}\n")
    drops = []
    for path in (both, halved):
        code, out, err = run_cli("power", "-c", path, "-f", "json", "--no-history")
        assert code == 0, err
        drops.append([c["detectable_drop"] for c in json.loads(out)["checks"]])
    assert drops[0] == drops[1]
