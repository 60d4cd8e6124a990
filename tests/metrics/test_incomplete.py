"""Measures for incomplete judgments: infAP, condensed (judged-only) lists, trec_eval's -M.

trec_eval 10 (usnistgov/trec_eval f425365):
- m_infap.c:52-91 (te_calc_infap), trec_eval.h:226-227 (RELVALUE_NONPOOL -1, RELVALUE_UNJUDGED
  -2) and :239 (INFAP_EPSILON .00001); form_res_rels.c:172-188: a retrieved doc absent from
  the qrels is NONPOOL, one graded < 0 UNJUDGED (pooled, not judged).
- form_res_rels.c:202-217: -J (judged_docs_only_flag) keeps only the retrieved docs graded
  >= 0, in rank order, before any measure; R (rel_levels) still counts all the qrels.
- form_res_rels.c:111-117: -M N (max_num_docs_per_topic) keeps the first N docs of the list
  sorted by score descending, docno descending (comp_sim_docno, :266-275), before anything.

ir_measures 0.4.3 (terrierteam/ir_measures dc04a88): providers/pytrec_eval_provider.py:27-43,
:204: `judged_only=True` runs pytrec_eval (trec_eval's C) with judged_docs_only_flag=1.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping
from pathlib import Path

import ir_measures
import pytest

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import Scores, evaluate, parse_metric
from retrieval_gate.metrics.incomplete import CONDENSED_OF, INFAP_EPSILON
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.trec_eval_cases import CASES, COUNTS, at_collection, our_metric

Results = dict[str, dict[str, float]]
Judgments = dict[str, dict[str, float]]

# Expected outputs with infAP rows -> (qrels, run, relevance level, -M depth or None).
INFAP_CASES: dict[str, tuple[str, str, int, int | None]] = {
    **{out: (*case, None) for out, case in CASES.items()},
    "out.test.a": (*CASES["out.test.aq"], None),
    "out.test.aqcM": (*CASES["out.test.aqc"], 100),
}
M_OUT = "out.test.aqcM"
M_DEPTH = 100


def trec_eval_top(run: Mapping[str, Mapping[str, float]], depth: int | None) -> Results:
    """`run` cut to each query's first `depth` docs in trec_eval's order (score descending,
    docno descending: form_res_rels.c:111-117, comp_sim_docno :266-275)."""
    return {
        q: dict(sorted(results.items(), key=lambda item: (item[1], item[0]), reverse=True)[:depth])
        for q, results in run.items()
    }


def printed_rows(folder: Path, out: str) -> list[tuple[str, str, str]]:
    """(measure, qid, printed value) of every line of a trec_eval expected output."""
    rows = []
    for line in (folder / out).read_text().splitlines():
        measure, qid, value = line.split("\t")
        rows.append((measure.strip(), qid, value))
    return rows


@functools.cache
def scores_for(folder: Path, out: str, metrics: tuple[str, ...]) -> Scores:
    qrels_name, run_name, _, depth = INFAP_CASES[out]
    run = read_run(folder / run_name).to_dict()
    return evaluate(trec_eval_top(run, depth), read_qrels(folder / qrels_name), metrics)


def ours(scores: Scores, name: str, measure: str, qid: str) -> float:
    column = scores.values[name]
    if qid == "all":
        return float(column.sum()) if measure in COUNTS else scores.mean()[name]
    return float(column[scores.query_ids.index(qid)])


def assert_printed(value: float, printed: str, measure: str, what: str) -> None:
    if measure in COUNTS:
        assert value == int(printed), f"{what}: ours {value}, trec_eval {printed}"
    else:  # trec_eval prints "%.4f"
        assert abs(value - float(printed)) <= 0.5e-4 + 1e-12, (
            f"{what}: ours {value:.6f}, trec_eval {printed}"
        )


def infap_params() -> list[object]:
    folder = at_collection()
    if folder is None:
        return [pytest.param("", "", "", id="no-data")]
    return [
        pytest.param(out, qid, value, id=f"{out}:infAP:{qid}")
        for out in sorted(INFAP_CASES)
        for measure, qid, value in printed_rows(folder, out)
        if measure == "infAP"
    ]


@pytest.mark.parametrize(("out", "qid", "printed"), infap_params())
def test_infap_matches_trec_eval(trec_eval_test: Path, out: str, qid: str, printed: str) -> None:
    rel = INFAP_CASES[out][2]
    name = str(parse_metric(f"infap(rel={rel})"))
    scores = scores_for(trec_eval_test, out, (name,))
    assert_printed(ours(scores, name, "infAP", qid), printed, "infAP", f"{out} {name} {qid}")


def test_every_infap_row_is_checked(trec_eval_test: Path) -> None:
    files = {p.name for p in trec_eval_test.glob("out*") if "infAP" in p.read_text()}
    assert files == set(INFAP_CASES) - {"out.test.meas_params", "out.comment.test"}


# ---- trec_eval -M N: the run cut to its top N, not @N cutoffs ----------------------------


def m_rows(folder: Path) -> list[tuple[str, str, str, str]]:
    """(trec_eval measure, qid, printed, our metric) of every out.test.aqcM row we compute."""
    rows = []
    for measure, qid, value in printed_rows(folder, M_OUT):
        name = "infap" if measure == "infAP" else our_metric(measure, 1)
        if name is not None:
            rows.append((measure, qid, value, name))
    return rows


def m_params() -> list[object]:
    folder = at_collection()
    if folder is None:
        return [pytest.param("", "", "", "", id="no-data")]
    return [pytest.param(*row, id=f"{M_OUT}:{row[0]}:{row[1]}") for row in m_rows(folder)]


@pytest.mark.parametrize(("measure", "qid", "printed", "name"), m_params())
def test_dash_m_is_the_run_cut_to_its_top_n(
    trec_eval_test: Path, measure: str, qid: str, printed: str, name: str
) -> None:
    """`trec_eval -M100` = our metrics on the run cut to its top 100 (trec_eval's order)."""
    scores = scores_for(
        trec_eval_test, M_OUT, tuple(sorted({row[3] for row in m_rows(trec_eval_test)}))
    )
    assert_printed(ours(scores, name, measure, qid), printed, measure, f"{name} {qid}")


def at_depth(name: str, depth: int) -> str:
    """`name` with its cutoff lowered to `depth` (added when it has none and may take one)."""
    spec = parse_metric(name)
    if spec.measure.cutoff == "none":
        return name
    k = depth if spec.k is None else min(spec.k, depth)
    return str(type(spec)(spec.name, spec.params, k))


def test_dash_m_is_not_just_cutoffs(trec_eval_test: Path) -> None:
    """On the uncut run, @min(k, N) reproduces -M N only where the normaliser ignores the
    ranks past N. P_k (k > N) still divides by k; ndcg and ndcg_cut_k (k > N) keep their
    ideal over all relevant docs (over k); Rprec, bpref and infAP take no cutoff. For these
    the run itself must be cut (trec_eval -M, a retriever asked for N results)."""
    rows = m_rows(trec_eval_test)
    uncut = evaluate(
        read_run(trec_eval_test / "results.trunc"),
        read_qrels(trec_eval_test / "qrels.test"),
        sorted({at_depth(row[3], M_DEPTH) for row in rows}),
    )
    differ = set()
    for measure, qid, printed, name in rows:
        value = ours(uncut, at_depth(name, M_DEPTH), measure, qid)
        if abs(value - float(printed)) > 0.5e-4 + 1e-12:
            differ.add(measure)
    assert differ == {
        *(f"{m}_{k}" for m in ("P", "ndcg_cut") for k in (200, 500, 1000)),
        *("ndcg", "Rprec", "bpref", "infAP"),
    }


# ---- random cases: plain loops over trec_eval's C, and ir_measures ------------------------


def random_case(seed: int) -> tuple[Results, Judgments]:
    """A small run and qrels with ties, absent docs, grades < 0, empty runs and R = 0."""
    rng = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(rng.randint(1, 14))]
    run: Results = {}
    qrels: Judgments = {}
    for q in range(rng.randint(1, 4)):
        qid = f"q{q}"
        graded = rng.sample(docs, rng.randint(1, len(docs)))
        qrels[qid] = {d: float(rng.choice([-2, -1, 0, 0, 1, 1, 2, 3])) for d in graded}
        if rng.random() < 0.15:
            continue  # a labelled query the run retrieved nothing for
        retrieved = rng.sample(docs, rng.randint(0, len(docs)))
        run[qid] = {d: float(rng.randint(0, 4)) for d in retrieved}  # many ties
    if rng.random() < 0.2:
        run["unlabelled"] = {docs[0]: 1.0}
    return run, qrels


def te_rel_list(results: Mapping[str, float], judged: Mapping[str, float]) -> list[float]:
    """form_res_rels.c:111-127, 163-188, 219-232: trec_eval's ranked relevance values."""
    ranked = sorted(results.items(), key=lambda item: (item[1], item[0]), reverse=True)
    rels = []
    for doc, _ in ranked:
        if doc not in judged:
            rels.append(-1.0)  # RELVALUE_NONPOOL
        elif judged[doc] < 0:
            rels.append(-2.0)  # RELVALUE_UNJUDGED
        else:
            rels.append(judged[doc])
    return rels


def te_infap(results: Mapping[str, float], judged: Mapping[str, float], rel: int) -> float:
    """m_infap.c:52-91, line for line."""
    rel_list = te_rel_list(results, judged)
    num_rel = sum(1 for g in judged.values() if g >= rel)  # form_res_rels.c:234-241
    nonrel_so_far = rel_so_far = pool_unjudged_so_far = 0
    inf_ap = 0.0
    for j, value in enumerate(rel_list):
        if value == -1.0:  # RELVALUE_NONPOOL: skip
            continue
        if value == -2.0:  # RELVALUE_UNJUDGED
            pool_unjudged_so_far += 1
            continue
        if 0 <= value < rel:
            nonrel_so_far += 1
        else:
            rel_so_far += 1
            if j == 0:
                inf_ap += 1.0
            else:
                fj = float(j)
                inf_ap += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                    (rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj
                ) * (
                    (rel_so_far - 1 + INFAP_EPSILON)
                    / (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON)
                )
    if num_rel:
        inf_ap /= num_rel
    return inf_ap


SEEDS = range(300)


@pytest.mark.parametrize("seed", SEEDS)
def test_infap_equals_trec_eval_loop(seed: int) -> None:
    run, qrels = random_case(seed)
    for rel in (1, 2):
        name = str(parse_metric(f"infap(rel={rel})"))
        scores = evaluate(run, qrels, [name])
        for qid, values in scores.per_query().items():
            expected = te_infap(run.get(qid, {}), qrels[qid], rel)
            assert math.isclose(values[name], expected, rel_tol=0, abs_tol=1e-9), (seed, qid)


def judged_only(run: Results, qrels: Judgments) -> Results:
    """form_res_rels.c:202-217: only the retrieved docs the qrels grade >= 0."""
    return {
        q: {d: s for d, s in results.items() if qrels.get(q, {}).get(d, -1.0) >= 0}
        for q, results in run.items()
    }


BASE_METRICS = (
    "ndcg@3", "ndcg(gain=linear)", "ndcg(gain=linear)@5", "ap", "ap(rel=2)@4", "rr",
    "rr(rel=2)@3", "precision@3", "precision(rel=2)@10", "recall@4", "hit_rate@1",
    "hit_rate(rel=2)@5", "r_precision", "r_precision(rel=2)",
)  # fmt: skip


def condensed(metric: str) -> str:
    spec = parse_metric(metric)
    return str(type(spec)(f"{spec.name}_condensed", spec.params, spec.k))


@pytest.mark.parametrize("seed", SEEDS)
def test_condensed_is_the_measure_on_the_judged_docs_only(seed: int) -> None:
    run, qrels = random_case(seed)
    names = [condensed(m) for m in BASE_METRICS]
    ours_ = evaluate(run, qrels, names).per_query()
    theirs = evaluate(judged_only(run, qrels), qrels, BASE_METRICS).per_query()
    for qid in ours_:
        for base, name in zip(BASE_METRICS, names, strict=True):
            assert math.isclose(ours_[qid][name], theirs[qid][base], abs_tol=1e-12), (seed, qid)


# ir_measures measure -> our metric (its nDCG is linear gain; R takes no rel in pytrec_eval)
IR_MEASURES = {
    "nDCG(judged_only=True)": "ndcg_condensed(gain=linear)",
    "nDCG(judged_only=True)@3": "ndcg_condensed(gain=linear)@3",
    "AP(judged_only=True)": "ap_condensed",
    "AP(judged_only=True,rel=2)@5": "ap_condensed(rel=2)@5",
    "RR(judged_only=True)": "rr_condensed",
    "RR(judged_only=True,rel=2)": "rr_condensed(rel=2)",
    "P(judged_only=True)@3": "precision_condensed@3",
    "P(judged_only=True,rel=2)@5": "precision_condensed(rel=2)@5",
    "R(judged_only=True)@4": "recall_condensed@4",
    "Success(judged_only=True)@2": "hit_rate_condensed@2",
    "Rprec(judged_only=True)": "r_precision_condensed",
    "Rprec(judged_only=True,rel=2)": "r_precision_condensed(rel=2)",
    "infAP": "infap",
    "infAP(rel=2)": "infap(rel=2)",
}


@pytest.mark.parametrize("seed", range(120))
def test_condensed_and_infap_equal_ir_measures(seed: int) -> None:
    run, qrels = random_case(seed)
    measures = {ir_measures.parse_measure(m): m for m in IR_MEASURES}
    scores = evaluate(run, qrels, list(IR_MEASURES.values()))
    table = scores.per_query()
    seen = set()
    # pytrec_eval takes integer grades, and crashes on a query whose grades are all < 0
    # (form_res_rels.c:141-157 sizes rel_levels by the highest grade + 1): those are left out.
    int_qrels = {
        q: {d: int(g) for d, g in judged.items()}
        for q, judged in qrels.items()
        if max(judged.values()) >= 0
    }
    for metric in ir_measures.iter_calc(list(measures), int_qrels, run):
        name = str(parse_metric(IR_MEASURES[measures[metric.measure]]))
        # the dialect reads the ir_measures name as this metric
        assert str(parse_metric(measures[metric.measure], dialect="ir_measures")) == name
        ours_ = table[metric.query_id][name]
        assert math.isclose(ours_, metric.value, abs_tol=1e-9), (seed, metric)
        seen.add((metric.query_id, name))
    for qid, values in table.items():  # ir_measures skips a query absent from the run
        for name, value in values.items():
            if (qid, name) not in seen and qid in int_qrels:
                assert qid not in run
                assert value == 0.0


# ---- edge cases ------------------------------------------------------------------------------


def test_infap_edge_cases() -> None:
    qrels = {"a": {"r1": 1, "n1": 0, "p1": -1}, "none": {"n": 0, "p": -1}, "empty": {"r": 1}}
    run = {
        "a": {"x": 5.0, "r1": 4.0, "p1": 3.0, "n1": 3.0},  # x unpooled; p1/n1 tie: p1 first
        "none": {"n": 1.0, "p": 2.0},
    }
    values = evaluate(run, qrels, ["infap"]).per_query()
    # r1 at rank 2 (j = 1): 1/2 + 1/2 * (0 pooled above / 1) * (eps / 2 eps) = 0.5
    assert values["a"]["infap"] == pytest.approx(0.5, abs=1e-15)
    assert values["none"]["infap"] == 0.0  # R = 0
    assert values["empty"]["infap"] == 0.0  # nothing retrieved
    # a pooled-but-unjudged doc above counts in the pool fraction, an unpooled one does not
    pooled = {"a": {"p1": 2.0, "r1": 1.0}}
    assert evaluate(pooled, qrels, ["infap"]).per_query()["a"]["infap"] == pytest.approx(
        0.5 + 0.5 * 1.0 * (INFAP_EPSILON / (2 * INFAP_EPSILON)), abs=1e-15
    )
    with pytest.raises(MetricError, match="takes no cutoff"):
        parse_metric("infap@10")


def test_condensed_edge_cases() -> None:
    qrels = {"a": {"r": 2, "n": 0, "u": -1}, "b": {"r": 1}}
    run = {"a": {"x": 9.0, "u": 8.0, "n": 7.0, "r": 1.0}, "b": {"y": 1.0}}
    names = ["ndcg_condensed@2", "ap_condensed", "rr_condensed", "precision_condensed@2"]
    values = evaluate(run, qrels, names).per_query()
    assert values["a"] == {
        "ndcg_condensed@2": pytest.approx(1 / math.log2(3)),  # r moves up to rank 2
        "ap_condensed": 0.5,
        "rr_condensed": 0.5,
        "precision_condensed@2": 0.5,
    }
    assert values["b"] == dict.fromkeys(names, 0.0)  # nothing judged retrieved
    assert evaluate({}, qrels, names).mean() == dict.fromkeys(names, 0.0)  # empty run
    assert {f"{m}_condensed" for m in CONDENSED_OF} <= {
        parse_metric(f"{m}_condensed@5" if m != "r_precision" else f"{m}_condensed").name
        for m in CONDENSED_OF
    }


@pytest.mark.parametrize(
    ("name", "dialect", "expected"),
    [
        ("infAP", "trec_eval", "infap"),
        ("infAP", "ir_measures", "infap"),
        ("infAP(rel=2)", "ir_measures", "infap(rel=2)"),
        ("nDCG(judged_only=True)@10", "ir_measures", "ndcg_condensed(gain=linear)@10"),
        ("nDCG(dcg=exp-log2,judged_only=True)@10", "ir_measures", "ndcg_condensed@10"),
        ("AP(rel=2,judged_only=True)@100", "ir_measures", "ap_condensed(rel=2)@100"),
        ("P(judged_only=True)@5", "ir_measures", "precision_condensed@5"),
        ("R(judged_only=True)@100", "ir_measures", "recall_condensed@100"),
        ("Success(judged_only=True)@10", "ir_measures", "hit_rate_condensed@10"),
        ("Rprec(judged_only=True)", "ir_measures", "r_precision_condensed"),
        ("RR(judged_only=True)", "ir_measures", "rr_condensed"),
        ("AP(judged_only=False)", "ir_measures", "ap"),
    ],
)
def test_dialects_read_infap_and_judged_only(name: str, dialect: str, expected: str) -> None:
    assert str(parse_metric(name, dialect=dialect)) == expected
    assert str(parse_metric(f"{dialect}:{name}")) == expected


def test_judged_only_without_a_condensed_twin_is_refused() -> None:
    with pytest.raises(MetricError, match="cannot read its parameter 'judged_only=True'"):
        parse_metric("Bpref(judged_only=True)", dialect="ir_measures")
