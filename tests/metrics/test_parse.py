"""Metric names read into specs: the canonical spellings, and errors naming what is known."""

from __future__ import annotations

import pytest

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import parse_metric


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("NDCG@10", "ndcg@10"),
        ("ndcg(gain=linear)@10", "ndcg(gain=linear)@10"),
        ("ndcg(gain=exp)@10", "ndcg@10"),
        ("map@100", "ap@100"),
        ("MAP@100", "ap@100"),
        ("map", "ap"),
        ("MRR@10", "rr@10"),
        ("mrr", "rr"),
        ("P@5", "precision@5"),
        ("R@100", "recall@100"),
        ("success@10", "hit_rate@10"),
        ("ap(rel=2)@100", "ap(rel=2)@100"),
        ("ap(rel=1)", "ap"),
        ("rbp(p=0.8)", "rbp(p=0.8)"),
        ("err(g_max=3)@20", "err(g_max=3)@20"),
        ("r_precision", "r_precision"),
        ("bpref", "bpref"),
        ("num_rel_ret", "num_rel_ret"),
    ],
)
def test_parse_canonical(name: str, canonical: str) -> None:
    assert str(parse_metric(name)) == canonical
    assert str(parse_metric(canonical)) == canonical


def test_unknown_metric_lists_known_ones() -> None:
    with pytest.raises(MetricError, match="ndcg"):
        parse_metric("nope@10")


def test_unknown_parameter_lists_known_ones() -> None:
    with pytest.raises(MetricError, match="rel"):
        parse_metric("ap(foo=2)")


@pytest.mark.parametrize("name", ["precision", "P", "ndcg@0", "ap@x", ""])
def test_malformed_names(name: str) -> None:
    with pytest.raises(MetricError):
        parse_metric(name)
