"""Metrics against plain textbook definitions and worked examples."""

from __future__ import annotations

import math
import random

import pytest

from retrieval_gate.metrics import evaluate, parse_metric

Judged = dict[str, int]
Docs = dict[str, float]


def ranking(docs: Docs) -> list[str]:
    """trec_eval's order: score descending, ties by doc id descending."""
    ordered = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return [doc for doc, _ in ordered]


def ref_ndcg(judged: Judged, docs: Docs, k: int) -> float:
    dcg = 0.0
    for i, doc in enumerate(ranking(docs)[:k]):
        grade = judged.get(doc, 0)
        if grade > 0:
            dcg += (2**grade - 1) / math.log2(i + 2)
    ideal = sorted((grade for grade in judged.values() if grade > 0), reverse=True)
    idcg = 0.0
    for i, grade in enumerate(ideal[:k]):
        idcg += (2**grade - 1) / math.log2(i + 2)
    return dcg / idcg if idcg > 0 else 0.0


def ref_err(judged: Judged, docs: Docs, k: int, g_max: int) -> float:
    err = 0.0
    still_looking = 1.0
    for rank, doc in enumerate(ranking(docs)[:k], start=1):
        grade = judged.get(doc, 0)
        stop = (2 ** min(grade, g_max) - 1) / 2**g_max if grade > 0 else 0.0
        err += still_looking * stop / rank
        still_looking *= 1 - stop
    return err


def ref_rbp(judged: Judged, docs: Docs, p: float, rel: int, k: int | None) -> float:
    total = 0.0
    for rank, doc in enumerate(ranking(docs)[:k], start=1):
        if judged.get(doc, 0) >= rel:
            total += p ** (rank - 1)
    return (1 - p) * total


def random_case(seed: int) -> tuple[dict[str, Judged], dict[str, Docs]]:
    rnd = random.Random(seed)
    qrels: dict[str, Judged] = {}
    run: dict[str, Docs] = {}
    for q in range(rnd.randint(1, 4)):
        docs = [f"d{n}" for n in rnd.sample(range(40), rnd.randint(1, 30))]
        qrels[f"q{q}"] = {d: rnd.choice([-2, -1, 0, 0, 1, 1, 2, 3, 4]) for d in docs[::2]}
        if rnd.random() < 0.9:  # else the query is missing from the run
            tiny = rnd.random() < 0.3
            run[f"q{q}"] = {
                d: rnd.choice([0.0, 0.5, 1.0]) if tiny else rnd.random()
                for d in rnd.sample(docs, rnd.randint(0, len(docs)))
            }
    return qrels, run


@pytest.mark.parametrize("seed", range(300))
def test_against_textbook_definitions(seed: int) -> None:
    qrels, run = random_case(seed)
    rnd = random.Random(-seed)
    k = rnd.choice([1, 3, 5, 10, 20])
    g_max = rnd.choice([1, 2, 3, 4])
    p = rnd.choice([0.5, 0.8, 0.95])
    rel = rnd.choice([1, 2])
    rbp_k = rnd.choice([None, 5, 10])
    rel_param = f",rel={rel}" if rel != 1 else ""
    cut = f"@{rbp_k}" if rbp_k else ""
    names = {
        "ndcg": f"ndcg@{k}",
        "err": f"err(g_max={g_max})@{k}",
        "rbp": f"rbp(p={p}{rel_param}){cut}",
    }
    scores = evaluate(run, qrels, list(names.values())).per_query()
    for qid, judged in qrels.items():
        docs = run.get(qid, {})
        ours = {kind: scores[qid][str(parse_metric(name))] for kind, name in names.items()}
        assert ours["ndcg"] == pytest.approx(ref_ndcg(judged, docs, k), abs=1e-12)
        assert ours["err"] == pytest.approx(ref_err(judged, docs, k, g_max), abs=1e-12)
        assert ours["rbp"] == pytest.approx(ref_rbp(judged, docs, p, rel, rbp_k), abs=1e-12)


def means(grades: list[int], metrics: list[str]) -> dict[str, float]:
    """One query retrieving d1, d2, ... in that order; the qrels are exactly those docs."""
    run = {"q": {f"d{i}": 100.0 - i for i in range(1, len(grades) + 1)}}
    qrels = {"q": {f"d{i}": grade for i, grade in enumerate(grades, 1)}}
    return evaluate(run, qrels, metrics).mean()


@pytest.mark.parametrize(
    ("grades", "ndcg_exp", "ndcg_linear", "ap"),
    [
        ([3, 2, 0, 1, 0], 0.9926, 0.9854, 0.9167),
        # both gains are 1 here: 0.624051, so 0.6241 at 4 decimals for either
        ([0, 1, 0, 0, 1], 0.6241, 0.6241, 0.4500),
    ],
)
def test_graded_examples(grades: list[int], ndcg_exp: float, ndcg_linear: float, ap: float) -> None:
    got = means(grades, ["ndcg@10", "ndcg(gain=linear)@10", "ap@5"])
    assert got["ndcg@10"] == pytest.approx(ndcg_exp, abs=0.5e-4)
    assert got["ndcg(gain=linear)@10"] == pytest.approx(ndcg_linear, abs=0.5e-4)
    assert got["ap@5"] == pytest.approx(ap, abs=0.5e-4)


@pytest.mark.parametrize(
    ("order", "rr", "ap", "recall", "ndcg"),
    [
        (["r1", "n1", "n2", "n3", "n4"], 1.0, 0.333, 0.333, 0.469),
        (["n1", "r1", "r2", "r3", "n2"], 0.5, 0.639, 1.0, 0.733),
    ],
    ids=["A", "B"],
)
def test_two_retrievers(order: list[str], rr: float, ap: float, recall: float, ndcg: float) -> None:
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1, "n1": 0, "n2": 0}}
    run = {"q": {doc: 10.0 - i for i, doc in enumerate(order)}}
    got = evaluate(run, qrels, ["rr", "ap", "recall@5", "ndcg@5"]).mean()
    assert got["rr"] == pytest.approx(rr, abs=0.5e-3)
    assert got["ap"] == pytest.approx(ap, abs=0.5e-3)
    assert got["recall@5"] == pytest.approx(recall, abs=0.5e-3)
    assert got["ndcg@5"] == pytest.approx(ndcg, abs=0.5e-3)


@pytest.mark.parametrize(("p", "expected"), [(0.5, 0.7661), (0.8, 0.4526), (0.95, 0.1881)])
def test_rbp_example(p: float, expected: float) -> None:
    grades = [1 if rank in {1, 2, 6, 11, 17} else 0 for rank in range(1, 21)]
    name = str(parse_metric(f"rbp(p={p})"))
    assert means(grades, [name])[name] == pytest.approx(expected, abs=0.5e-4)


def test_ties_broken_by_doc_id_descending() -> None:
    """As strings "d9" > "d10", so d9 is ranked first."""
    got = evaluate({"q": {"d10": 1.0, "d9": 1.0}}, {"q": {"d10": 1}}, ["rr"]).mean()
    assert got["rr"] == 0.5


def test_only_negative_grades() -> None:
    """Every doc judged-unjudged: nothing is relevant, but the docs still count as retrieved."""
    qrels = {"q": {"a": -1, "b": -2}}
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    metrics = ["num_ret", "num_rel", "ap", "ndcg@10", "bpref", "rr", "precision@5"]
    got = evaluate(run, qrels, metrics).mean()
    assert got == {"num_ret": 3, "num_rel": 0, "ap": 0, "ndcg@10": 0, "bpref": 0, "rr": 0,
                   "precision@5": 0}  # fmt: skip
