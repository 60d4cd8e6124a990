"""Random qrels/runs scored by us and by pytrec_eval (trec_eval's C code) must agree per query."""

from __future__ import annotations

import re

import pytest
import pytrec_eval

from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.readers import qrels_from_dict, run_from_dict
from tests.helpers.random_cases import make_case, truncated

N_CASES = 1200
TOLERANCE = 1e-9
MEASURES = {
    "map", "map_cut.5,10", "ndcg", "ndcg_cut.5,10", "P.5,10", "recall.5,10", "recip_rank",
    "Rprec", "bpref", "success.1,5,10", "num_ret", "num_rel", "num_rel_ret",
}  # fmt: skip
RR_CUTOFFS = (1, 3, 5, 10)

# pytrec_eval key (regex, `k` is the cutoff) -> our metric; {rel} is "(rel=N)" or "".
NAMES = {
    r"map": "ap{rel}",
    r"map_cut_(?P<k>\d+)": "ap{rel}@{k}",
    r"ndcg": "ndcg(gain=linear)",
    r"ndcg_cut_(?P<k>\d+)": "ndcg(gain=linear)@{k}",
    r"P_(?P<k>\d+)": "precision{rel}@{k}",
    r"recall_(?P<k>\d+)": "recall{rel}@{k}",
    r"recip_rank": "rr{rel}",
    r"Rprec": "r_precision{rel}",
    r"bpref": "bpref{rel}",
    r"success_(?P<k>\d+)": "hit_rate{rel}@{k}",
    r"num_ret": "num_ret",
    r"num_rel": "num_rel{rel}",
    r"num_rel_ret": "num_rel_ret{rel}",
}
KEYS = [
    "map", "map_cut_5", "map_cut_10", "ndcg", "ndcg_cut_5", "ndcg_cut_10", "P_5", "P_10",
    "recall_5", "recall_10", "recip_rank", "Rprec", "bpref", "success_1", "success_5",
    "success_10", "num_ret", "num_rel", "num_rel_ret",
]  # fmt: skip


def our_name(key: str, rel: int) -> str:
    for pattern, template in NAMES.items():
        match = re.fullmatch(pattern, key)
        if match:
            suffix = f"(rel={rel})" if rel != 1 else ""
            return str(parse_metric(template.format(rel=suffix, k=match.groupdict().get("k"))))
    raise AssertionError(key)


def reference(qrels: dict, run: dict, rel: int) -> dict[str, dict[str, float]]:
    """pytrec_eval's values under our metric names, 0 for queries it does not return."""
    expected: dict[str, dict[str, float]] = {}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, MEASURES, relevance_level=rel).evaluate(run)
    rr_evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=rel)
    rr_cut = {k: rr_evaluator.evaluate(truncated(run, k)) for k in RR_CUTOFFS}
    suffix = f"(rel={rel})" if rel != 1 else ""
    for qid, judged in qrels.items():
        values = {our_name(key, rel): theirs.get(qid, {}).get(key, 0.0) for key in KEYS}
        values[our_name("num_rel", rel)] = sum(g >= rel for g in judged.values())
        for k, result in rr_cut.items():
            values[str(parse_metric(f"rr{suffix}@{k}"))] = result.get(qid, {}).get("recip_rank", 0)
        expected[qid] = values
    return expected


@pytest.mark.parametrize("seed", range(N_CASES), ids=lambda seed: f"case{seed}")
def test_matches_pytrec_eval(seed: int) -> None:
    qrels, run, rel = make_case(seed)
    expected = reference(qrels, run, rel)
    metrics = sorted(next(iter(expected.values())))
    if seed % 2:
        scores = evaluate(run, qrels, metrics)
    else:
        scores = evaluate(run_from_dict(run), qrels_from_dict(qrels), metrics)

    assert scores.query_ids == tuple(sorted(qrels))
    assert set(scores.missing_queries) == {q for q in qrels if not run.get(q)}
    assert set(scores.ignored_queries) == set(run) - set(qrels)
    per_query = scores.per_query()
    wrong = [
        f"{qid} {name}: ours {per_query[qid][name]!r}, pytrec_eval {value!r}"
        for qid, values in expected.items()
        for name, value in values.items()
        if abs(per_query[qid][name] - value) > TOLERANCE
    ]
    assert not wrong, f"rel={rel}\nqrels={qrels}\nrun={run}\n" + "\n".join(wrong)
