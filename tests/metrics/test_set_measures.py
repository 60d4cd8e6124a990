"""Set measures (trec_eval's set_P, set_recall, set_F), ranx's f1@k, BEIR's capped recall
and the hit@k alias, against trec_eval's expected outputs, pytrec_eval, ranx, BEIR's code
and plain reference loops."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

import retrieval_gate.metrics.set_measures  # noqa: F401  (registers the measures)
from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import Scores, evaluate, parse_metric
from retrieval_gate.metrics.explain import notes
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.random_cases import make_case, truncated
from tests.helpers.trec_eval_cases import CASES, at_collection

TOLERANCE = 1e-9
N_CASES = 300
WEIGHTS = (1.0, 0.5, 2.0, 0.0)
CUTOFFS = (1, 3, 5, 10, 50)

# trec_eval's printed set measure -> our metric; {rel} is "(rel=N)" or "".
SET_MEASURES = {
    "set_P": "set_precision{rel}",
    "set_recall": "set_recall{rel}",
    "set_F": "set_f{rel}",
}

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


# trec_eval's own expected outputs ---------------------------------------------------------


def set_rows(folder: Path) -> list[tuple[str, str, str, str]]:
    """(file, measure, qid, printed value) of every set_P/set_recall/set_F line."""
    rows = []
    for out in CASES:
        path = folder / out
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            measure, qid, value = line.split("\t")
            if measure.strip() in SET_MEASURES:
                rows.append((out, measure.strip(), qid, value))
    return rows


def set_params() -> list[object]:
    folder = at_collection()
    rows = [] if folder is None else set_rows(folder)
    if not rows:  # the trec_eval_test fixture skips (or fails in CI)
        return [pytest.param("", "", "", "", id="no-data")]
    return [pytest.param(*row, id=f"{row[0]}:{row[1]}:{row[2]}") for row in rows]


@functools.cache
def set_scores(folder: Path, out: str) -> tuple[Scores, int]:
    qrels_name, run_name, rel = CASES[out]
    suffix = f"(rel={rel})" if rel != 1 else ""
    metrics = [template.format(rel=suffix) for template in SET_MEASURES.values()]
    return evaluate(read_run(folder / run_name), read_qrels(folder / qrels_name), metrics), rel


def test_trec_eval_outputs_have_set_rows(trec_eval_test: Path) -> None:
    files = {out for out, _, _, _ in set_rows(trec_eval_test)}
    assert files == {"out.test.aq", "out.test.aqc", "out.test.aql"}  # -c and -l 2 included
    assert {m for _, m, _, _ in set_rows(trec_eval_test)} == set(SET_MEASURES)


@pytest.mark.parametrize(("out", "measure", "qid", "printed"), set_params())
def test_set_measures_match_trec_eval(
    trec_eval_test: Path, out: str, measure: str, qid: str, printed: str
) -> None:
    collected = at_collection()
    assert collected is not None
    assert trec_eval_test.resolve() == collected.resolve()
    scores, rel = set_scores(trec_eval_test, out)
    suffix = f"(rel={rel})" if rel != 1 else ""
    name = str(parse_metric(SET_MEASURES[measure].format(rel=suffix)))
    assert str(parse_metric(f"trec_eval:{measure}")) == str(parse_metric(name.split("(")[0]))
    if qid == "all":
        ours = scores.mean()[name]
    else:
        ours = float(scores.values[name][scores.query_ids.index(qid)])
    # trec_eval prints "%.4f": ours must round to the printed value (1e-12 slack at a tie).
    assert abs(ours - float(printed)) <= 0.5e-4 + 1e-12, f"{name} {qid}: {ours:.6f} vs {printed}"


# plain reference loops ----------------------------------------------------------------------


def ranking(run: Run, qid: str) -> list[str]:
    """trec_eval's order: score descending, ties by doc id descending."""
    return list(truncated(run, 10**9).get(qid, {}))


def reference(qrels: Qrels, run: Run, rel: int, weight: float, k: int) -> dict[str, list[float]]:
    """Per query (sorted ids): every measure written out from its definition."""
    out: dict[str, list[float]] = {}
    for qid in sorted(qrels):
        judged = qrels[qid]
        docs = ranking(run, qid)
        is_rel = [judged.get(d, -1) >= rel for d in docs]
        num_rel = sum(g >= rel for g in judged.values())
        found, found_k = sum(is_rel), sum(is_rel[:k])
        p = found / len(docs) if docs else 0.0
        r = found / num_rel if num_rel else 0.0
        f = (weight + 1) * p * r / (weight * p + r) if found else 0.0
        p_k, r_k = found_k / k, (found_k / num_rel if num_rel else 0.0)
        f1 = 2 * p_k * r_k / (p_k + r_k) if found_k else 0.0
        capped = found_k / min(k, num_rel) if num_rel else 0.0
        out[qid] = [p, r, f, f1, capped, float(found_k > 0)]
    return out


def our_metrics(rel: int, weight: float, k: int) -> list[str]:
    suffix = f"(rel={rel})" if rel != 1 else ""
    f_params = ",".join([f"weight={weight}"] + ([f"rel={rel}"] if rel != 1 else []))
    names = [
        f"set_p{suffix}",
        f"set_recall{suffix}",
        f"set_F({f_params})",
        f"f1{suffix}@{k}",
        f"R_cap{suffix}@{k}",
        f"hit{suffix}@{k}",
    ]
    return [str(parse_metric(name)) for name in names]


@pytest.mark.parametrize("seed", range(N_CASES), ids=lambda seed: f"case{seed}")
def test_random_cases_match_reference_loops_and_pytrec_eval(seed: int) -> None:
    """Ties, negative grades, empty and missing rankings, R = 0, rel = 1 or 2."""
    qrels, run, rel = make_case(seed)
    weight, k = WEIGHTS[seed % len(WEIGHTS)], CUTOFFS[seed % len(CUTOFFS)]
    metrics = our_metrics(rel, weight, k)
    scores = evaluate(run, qrels, metrics)
    expected = reference(qrels, run, rel, weight, k)
    assert scores.query_ids == tuple(expected)
    for i, name in enumerate(metrics):
        theirs = np.array([values[i] for values in expected.values()])
        assert np.allclose(scores.values[name], theirs, rtol=0, atol=TOLERANCE), (
            f"{name}: ours {scores.values[name]}, reference {theirs}\nqrels={qrels}\nrun={run}"
        )
    # trec_eval's C code (pytrec_eval), which scores only queries the run has
    measures = {"set_P", "set_recall", f"set_F.{weight}"}
    c_values = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel).evaluate(run)
    for name, key in zip(metrics[:3], ("set_P", "set_recall", "set_F"), strict=True):
        got = [c_values.get(qid, {}).get(key, 0.0) for qid in scores.query_ids]
        assert np.allclose(scores.values[name], got, rtol=0, atol=TOLERANCE), (name, got)


def test_edge_cases_by_hand() -> None:
    qrels = {"a": {"d1": 1, "d2": 2, "d3": -1}, "b": {"d1": 0, "d2": -2}, "c": {"d1": 1}}
    run = {"a": {"d1": 1.0, "d3": 1.0, "d4": 0.5}, "b": {"d1": 1.0}, "c": {}}
    scores = evaluate(run, qrels, ["set_p", "set_recall", "set_f", "f1@2", "r_cap@1", "hit@2"])
    values = scores.per_query()
    # a: ties at 1.0 put d3 (grade -1: pooled, unjudged, not relevant) above d1
    assert values["a"] == {
        "set_precision": 1 / 3,
        "set_recall": 1 / 2,
        "set_f": pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2)),
        "f1@2": pytest.approx(2 * 1 / (2 + 2)),  # 2 hits / (k + R)
        "capped_recall@1": 0.0,  # d3 is rank 1
        "hit_rate@2": 1.0,
    }
    # b: R = 0; c: nothing retrieved. Everything 0, never NaN.
    assert all(v == 0.0 for q in ("b", "c") for v in values[q].values())
    assert scores.missing_queries == ("c",)


# ranx ---------------------------------------------------------------------------------------


def ranx_scores(qrels: Qrels, run: Run, metrics: list[str]) -> dict[str, np.ndarray]:
    ranx = pytest.importorskip("ranx")
    with warnings.catch_warnings():  # numba's cast and cache warnings
        warnings.simplefilter("ignore")
        theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, return_mean=False)
    return {m: np.asarray(theirs[m] if len(metrics) > 1 else theirs) for m in metrics}


def distinct_scores(qrels: Qrels, run: Run) -> Run:
    """The run over the labelled queries with trec_eval's order kept and no tied scores (ranx
    breaks ties its own way), every labelled query present (empty when it had nothing)."""
    out: Run = {}
    for qid in sorted(qrels):
        docs = ranking(run, qid)
        out[qid] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
    return out


@pytest.mark.parametrize("seed", range(100), ids=lambda seed: f"case{seed}")
def test_f1_matches_ranx(seed: int) -> None:
    qrels, run, rel = make_case(seed)
    run = distinct_scores(qrels, run)
    if not any(run.values()):
        run[next(iter(run))] = {"never-judged": 1.0}  # ranx needs one retrieved doc
    level = f"-l{rel}" if rel != 1 else ""
    theirs_names = [f"f1@{k}{level}" for k in CUTOFFS] + [f"f1{level}"]
    theirs = ranx_scores(qrels, run, theirs_names)
    ours = evaluate(run, qrels, [f"ranx:{name}" for name in theirs_names])
    for name in theirs_names:
        mine = str(parse_metric(f"ranx:{name}"))
        assert np.allclose(ours.values[mine], theirs[name], rtol=0, atol=TOLERANCE), (
            f"{name} ({mine}): ours {ours.values[mine]}, ranx {theirs[name]}"
        )


# BEIR ---------------------------------------------------------------------------------------


def beir_recall_cap(qrels: Qrels, results: Run, k_values: list[int]) -> dict[str, dict[int, float]]:
    """BEIR's recall_cap per query, transcribed from beir-cellar/beir @ ef83d293,
    beir/retrieval/custom_metrics.py:50-56 (its loop body; :58-59 only average and round).
    Queries with R = 0 are left out: BEIR divides by zero there."""
    per_query: dict[str, dict[int, float]] = {}
    k_max = max(k_values)
    for query_id, doc_scores in results.items():
        top_hits = sorted(doc_scores.items(), key=lambda item: item[1], reverse=True)[0:k_max]
        query_relevant_docs = [d for d in qrels[query_id] if qrels[query_id][d] > 0]
        if not query_relevant_docs:
            continue
        per_query[query_id] = {}
        for k in k_values:
            retrieved_docs = [row[0] for row in top_hits[0:k] if qrels[query_id].get(row[0], 0) > 0]
            denominator = min(len(query_relevant_docs), k)
            per_query[query_id][k] = len(retrieved_docs) / denominator
    return per_query


@pytest.mark.parametrize("seed", range(200), ids=lambda seed: f"case{seed}")
def test_capped_recall_matches_beir(seed: int) -> None:
    qrels, run, _ = make_case(seed)
    # Python's sort is stable: docs inserted in trec_eval's order (ties by doc id descending)
    # keep that order among equal scores, so BEIR's loop sees our ranking, ties included.
    results = {q: truncated(run, 10**9).get(q, {}) for q in qrels}
    theirs = beir_recall_cap(qrels, results, list(CUTOFFS))
    ours = evaluate(run, qrels, [f"capped_recall@{k}" for k in CUTOFFS]).per_query()
    for qid, values in ours.items():
        for k in CUTOFFS:
            expected = theirs[qid][k] if qid in theirs else 0.0  # R = 0 scores 0 here
            assert abs(values[f"capped_recall@{k}"] - expected) <= TOLERANCE, (qid, k)


# names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("set_P", "set_precision"),
        ("SET_PRECISION(rel=2)", "set_precision(rel=2)"),
        ("set_recall", "set_recall"),
        ("set_F", "set_f"),
        ("set_f(weight=1)", "set_f"),
        ("set_F(weight=0.5, rel=2)", "set_f(weight=0.5,rel=2)"),
        ("trec_eval:set_P", "set_precision"),
        ("trec_eval:set_F", "set_f"),
        ("trec_eval:set_F_0.5", "set_f(weight=0.5)"),
        ("trec_eval:set_recall", "set_recall"),
        ("F1@10", "f1@10"),
        ("ranx:f1@10", "f1@10"),
        ("ranx:f1@10-l2", "f1(rel=2)@10"),
        ("ranx:f1", "set_f"),
        ("ranx:f1-l2", "set_f(rel=2)"),
        ("R_cap@100", "capped_recall@100"),
        ("recall_cap(rel=2)@10", "capped_recall(rel=2)@10"),
        ("hit@5", "hit_rate@5"),
        ("hits@5", "hit_rate@5"),
    ],
)
def test_names(text: str, canonical: str) -> None:
    assert str(parse_metric(text)) == canonical


def test_hit_is_a_plain_alias_and_hits_stays_deprecated() -> None:
    assert notes("hit@5") == []
    assert any("hits@5 is deprecated" in note for note in notes("hits@5"))
    assert "hit" in parse_metric("hit@5").measure.aliases
    assert str(parse_metric("hit@5")) == "hit_rate@5"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("set_p@10", "set_precision takes no cutoff"),
        ("f1", "f1 needs a cutoff"),
        ("capped_recall", "capped_recall needs a cutoff"),
        ("set_f(weight=-1)", "out of range"),
        ("set_F_0.5", "write 'set_f(weight=0.5)'"),
        ("trec_eval:set_map", "we have no equivalent yet"),
    ],
)
def test_bad_names_are_refused(text: str, says: str) -> None:
    with pytest.raises(MetricError, match=f".*{says.replace('(', '.').replace(')', '.')}"):
        parse_metric(text)
