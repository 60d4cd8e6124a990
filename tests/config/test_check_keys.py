"""What each `metrics:` key names, and the keys each part of the gate scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.check_keys import canonical_name, kind_of, ranked_keys, ranking_keys
from retrieval_gate.config.loader import load
from retrieval_gate.errors import InputError, MetricError

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


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("candidates:recall@100", "candidates"),
        ("latency_p95", "operational"),
        ("ragas:faithfulness", "evaluator"),
    ],
)
def test_llm_assisted_labels_take_ranking_checks_only(tmp_path: Path, key: str, kind: str) -> None:
    # PPI re-estimates a ranking metric from the judge's labels: no labels re-estimate a
    # latency or an evaluator's score, and the stored top k is not the first stage's list.
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(
        "version: 1\n"
        "dataset: {queries: q.jsonl, qrels: q.tsv}\n"
        'retriever: {type: http, url: "http://127.0.0.1:9/search"}\n'
        "judge: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
        "gate: {labels: human+llm}\n"
        "evaluators: {ragas: {format: ragas, current: r.csv}}\n"
        "metrics:\n"
        "  ndcg@10: {max_drop: 2pt}\n"
        f"  {key}: {{}}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load(path)
    message = str(caught.value)
    assert f"retrieval-gate.yaml:9: metrics.{key}: gate.labels: human+llm" in message
    assert f"takes no {kind} checks yet ({key})" in message
