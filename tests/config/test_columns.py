"""Check columns in the config: which way is better, their units, and thresholds that fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.columns import Column, operational_column
from retrieval_gate.config.loader import load
from retrieval_gate.errors import InputError
from retrieval_gate.gate.checks.policy import gate_thresholds
from retrieval_gate.report.filters import amount, mean, points

CONFIG = """\
version: 1
dataset: {{queries: q.jsonl, qrels: q.tsv}}
retriever: {{type: http, url: "http://127.0.0.1:9/search"}}
metrics:
  ndcg@10: {{max_drop: 2pt}}
  {key}: {gate}
"""


def _load(tmp_path: Path, key: str, gate: str) -> object:
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(CONFIG.format(key=key, gate=gate), encoding="utf-8")
    return load(path)


@pytest.mark.parametrize(
    ("key", "column"),
    [
        ("latency_p95", Column("lower", "ms")),
        ("latency_p50", Column("lower", "ms")),
        ("latency_mean", Column("lower", "ms")),
        ("cost_mean", Column("lower", "cost")),
        ("latency_p100", None),
        ("latency_p0", None),
        ("latency", None),
        ("ndcg@10", None),
    ],
)
def test_operational_keys_are_lower_is_better_in_their_units(
    key: str, column: Column | None
) -> None:
    assert operational_column(key) == column


@pytest.mark.parametrize(
    ("gate", "tolerance", "relative"),
    [("{max_increase: 20%}", 0.2, True), ("{max_increase: 0.5s}", 500.0, False)],
)
def test_a_latency_threshold_is_an_increase_in_ms_or_percent(
    tmp_path: Path, gate: str, tolerance: float, relative: bool
) -> None:
    config = _load(tmp_path, "latency_p95", gate)
    thresholds, _ = gate_thresholds(config)  # type: ignore[arg-type]
    found = thresholds["latency_p95"]
    assert (found.max_drop, found.relative) == (pytest.approx(tolerance), relative)
    assert (found.direction, found.unit) == ("lower", "ms")
    assert thresholds["ndcg@10"].direction == "higher"


@pytest.mark.parametrize(
    ("key", "gate", "said"),
    [
        ("latency_p95", "{max_drop: 20%}", "lower is better here: write max_increase"),
        ("latency_p95", "{min: 100}", "lower is better here"),
        ("latency_p95", "{max_increase: 2pt}", "is in points of the 0-1 scale, but this check"),
        ("latency_p95", "{max_increase: 3 stars}", "3 stars is in stars, but this check is in ms"),
        ("recall@10", "{max_increase: 2pt}", "higher is better here: write max_drop"),
        ("recall@10", "{max: 0.9}", "higher is better here"),
        ("recall@10", "{max_drop: 50ms}", "50 ms is in ms, but this check is on the 0-1 scale"),
    ],
)
def test_a_threshold_facing_the_wrong_way_or_in_other_units_is_refused(
    tmp_path: Path, key: str, gate: str, said: str
) -> None:
    with pytest.raises(InputError) as caught:
        _load(tmp_path, key, gate)
    message = str(caught.value)
    assert f"retrieval-gate.yaml:6: metrics.{key}: " in message
    assert said in message


def test_values_show_in_their_units() -> None:
    assert mean(0.51234) == "0.5123"
    assert points(0.0312) == "+3.12"
    assert mean(183.26, "ms") == "183.3 ms"
    assert points(12.04, unit="ms") == "+12.0"
    assert mean(0.001234, "cost") == "0.001234 cost"
    assert points(-0.5, unit="own") == "-0.5"
    assert mean(3.5, "own") == "3.5"
    assert amount(0.06, "") == "6 pt"
    assert amount(150.0, "ms") == "150.0 ms"


@pytest.mark.parametrize("rule", ["evidence-of-excess", "non-inferiority"])
def test_a_stricter_rule_refuses_a_gated_quantile(tmp_path: Path, rule: str) -> None:
    # Both rules test the differences moved by max_drop, a mean's test: a p95 has none.
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(
        CONFIG.format(key="latency_p95", gate="{max_increase: 20%}") + f"gate: {{rule: {rule}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load(path)
    assert f"retrieval-gate.yaml:6: metrics.latency_p95: gate.rule: {rule} tests a mean" in str(
        caught.value
    )
    # A mean, and a quantile left report-only, are fine.
    path.write_text(
        CONFIG.format(key="latency_mean", gate="{max_increase: 20%}")
        + f"  latency_p95: {{}}\ngate: {{rule: {rule}}}\n",
        encoding="utf-8",
    )
    assert load(path).gate.rule == rule
