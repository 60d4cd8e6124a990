"""What each `metrics:` key names, and the keys each part of the gate scores."""

from __future__ import annotations

import pytest

from retrieval_gate.config.check_keys import canonical_name, kind_of, ranked_keys, ranking_keys
from retrieval_gate.errors import MetricError

KEYS = [
    "NDCG@10",
    "trec_eval:ndcg_cut_10",
    "candidates:recall@100",
    "latency_p95",
    "cost_mean",
    "ragas:faithfulness",
]


@pytest.mark.parametrize(
    ("key", "kind", "name"),
    [
        ("NDCG@10", "ranking", "ndcg@10"),
        ("trec_eval:ndcg_cut_10", "ranking", "ndcg(gain=linear)@10"),
        ("candidates:recall@100", "candidates", "candidates:recall@100"),
        ("candidates: Recall@100", "candidates", "candidates:recall@100"),
        ("latency_p95", "operational", "latency_p95"),
        ("cost_mean", "operational", "cost_mean"),
        ("ragas:faithfulness", "evaluator", "ragas:faithfulness"),
    ],
)
def test_each_key_has_one_kind_and_one_canonical_name(key: str, kind: str, name: str) -> None:
    assert kind_of(key) == kind
    assert canonical_name(key) == name


def test_the_engine_scores_only_ranked_keys_and_the_final_list_only_ranking_ones() -> None:
    assert ranking_keys(KEYS) == ["NDCG@10", "trec_eval:ndcg_cut_10"]
    assert ranked_keys(KEYS) == ["NDCG@10", "trec_eval:ndcg_cut_10", "candidates:recall@100"]


def test_a_ranking_key_that_does_not_parse_is_a_metric_error() -> None:
    with pytest.raises(MetricError):
        canonical_name("ndcg@@10")
