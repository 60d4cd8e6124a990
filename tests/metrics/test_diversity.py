"""Diversity measures (alpha-nDCG, ERR-IA, ...) against ndeval via pyndeval, and their reader."""

from __future__ import annotations

import gzip
import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.errors import GateError, InputError, MetricError
from retrieval_gate.metrics import REGISTRY, evaluate, parse_metric
from retrieval_gate.metrics.diversity import DIVERSITY
from retrieval_gate.readers.subtopics import (
    MAX_FIELD,
    SubtopicQrels,
    read_subtopics,
    subtopics_from_dict,
)
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

pyndeval = pytest.importorskip("pyndeval")

TINY = CONFIGS / "tiny"

# ndeval's names -> ours (alpha goes on the ones that take it).
NDEVAL = {
    "alpha-nDCG": "alpha_ndcg",
    "alpha-DCG": "alpha_dcg",
    "ERR-IA": "err_ia",
    "nERR-IA": "nerr_ia",
    "P-IA": "p_ia",
    "strec": "s_recall",
}
TAKES_ALPHA = {"alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia"}
CUTOFFS = (1, 2, 3, 5, 10, 20)

Rows = list[tuple[str, str, str, int]]
RunDict = dict[str, dict[str, float]]


def nested(rows: Rows) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for query, subtopic, doc, judgment in rows:
        out.setdefault(query, {}).setdefault(subtopic, {})[doc] = judgment
    return out


def names(alpha: float, beta: float) -> list[tuple[str, str]]:
    """(pyndeval's name, our canonical name) of every measure at every cutoff."""
    pairs = []
    for theirs, ours in NDEVAL.items():
        params = f"(alpha={alpha})" if ours in TAKES_ALPHA else ""
        for k in CUTOFFS:
            pairs.append((f"{theirs}@{k}", str(parse_metric(f"{ours}{params}@{k}"))))
    pairs.append(("NRBP", str(parse_metric(f"nrbp(alpha={alpha},beta={beta})"))))
    pairs.append(("nNRBP", str(parse_metric(f"nnrbp(alpha={alpha},beta={beta})"))))
    pairs.append(("MAP-IA", "ap_ia"))
    return pairs


def reference(
    rows: Rows, run: RunDict, alpha: float = 0.5, beta: float = 0.5
) -> dict[str, dict[str, float]]:
    """pyndeval's values, for the queries in both the run and the subtopic qrels. Rows go in
    ascending subtopic order: pyndeval numbers subtopics as first seen, ndeval by their id."""
    ordered = sorted(rows, key=lambda row: int(row[1]))
    flat = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    measures = [theirs for theirs, _ in names(alpha, beta)]
    result: dict[str, dict[str, float]] = pyndeval.ndeval(
        ordered, flat, measures, alpha=alpha, beta=beta
    )
    return result


def assert_matches_ndeval(
    rows: Rows, run: RunDict, labelled: list[str], alpha: float = 0.5, beta: float = 0.5
) -> int:
    """Ours equals pyndeval to 1e-9 wherever pyndeval scores a query; elsewhere (a query the
    run lacks, or absent from the subtopic qrels) ours is 0. Returns the values compared."""
    pairs = names(alpha, beta)
    qrels = {q: {"any-doc": 1.0} for q in labelled}
    scores = evaluate(run, qrels, [ours for _, ours in pairs], subtopics=nested(rows)).per_query()
    theirs = reference(rows, run, alpha, beta)
    compared = 0
    for query in labelled:
        for ndeval_name, ours in pairs:
            value = scores[query][ours]
            expected = theirs.get(query, {}).get(ndeval_name, 0.0)
            if math.isnan(expected):  # ndeval's nNRBP of a topic with no relevant subtopic
                assert ndeval_name == "nNRBP"
                expected = 0.0
            assert value == pytest.approx(expected, abs=1e-9, rel=0), (query, ours)
            compared += 1
    return compared


# --- a published example, by hand ----------------------------------------------------------

# pyndeval's README example: subtopics a = {A}, b = {B, D}, c = {C}; the run ranks A, D, E
# (unjudged), B; C is not retrieved. A = 3 subtopics; alpha = beta = 0.5.
README_ROWS: Rows = [("0", "1", "A", 1), ("0", "2", "B", 1), ("0", "2", "D", 1), ("0", "3", "C", 1)]
README_RUN: RunDict = {"0": {"A": 9.3, "D": 8.4, "E": 8.1, "B": 7.6}}


def disc(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def test_readme_example_by_hand_and_against_pyndeval() -> None:
    # Run gains: A covers a (1), D covers b (1), E nothing (0), B covers b again (0.5).
    # Greedy ideal over A, B, C, D: all gain 1 at rank 1, ties to the larger id: D; then A and
    # C tie at 1: C; then A (1); then B (0.5). Ideal gains 1, 1, 1, 0.5.
    dcg = 1 * disc(1) + 1 * disc(2) + 0.5 * disc(4)
    ideal_ideal = sum(3 * 0.5 ** (r - 1) * disc(r) for r in range(1, 6))
    ideal = 1 * disc(1) + 1 * disc(2) + 1 * disc(3) + 0.5 * disc(4)
    err = 1 / 1 + 1 / 2 + 0.5 / 4
    err_ideal_ideal = sum(3 * 0.5 ** (r - 1) / r for r in range(1, 6))
    err_ideal = 1 / 1 + 1 / 2 + 1 / 3 + 0.5 / 4
    nrbp = (1 + 0.5 + 0 + 0.5 * 0.5**3) * (1 - 0.5 * 0.5) / 3
    nrbp_ideal = (1 + 0.5 + 0.25 + 0.5 * 0.5**3) * (1 - 0.5 * 0.5) / 3
    expected = {
        "alpha_dcg@5": dcg / ideal_ideal,  # 0.4052 in the README
        "alpha_ndcg@5": dcg / ideal,  # 0.7868
        "err_ia@5": err / err_ideal_ideal,  # 0.3933
        "nerr_ia@5": err / err_ideal,  # 0.8297
        "nrbp": nrbp,  # 0.3906
        "nnrbp": nrbp / nrbp_ideal,  # 0.8620
        "ap_ia": (1 / 1 + (1 / 2 + 2 / 4) / 2 + 0) / 3,  # a: AP 1; b: (1/2 + 2/4) / 2; c: 0
        "p_ia@5": 3 / (5 * 3),  # (A, a), (D, b), (B, b)
        "s_recall@5": 2 / 3,
    }
    got = evaluate(README_RUN, {"0": {"A": 1}}, list(expected), subtopics=nested(README_ROWS))
    for name, value in expected.items():
        assert got.values[name][0] == pytest.approx(value, abs=1e-12), name
    readme = {"alpha-DCG@5": 0.4052, "alpha-nDCG@5": 0.7868, "ERR-IA@5": 0.3933}
    for name, value in readme.items():
        assert reference(README_ROWS, README_RUN)["0"][name] == pytest.approx(value, abs=1e-4)
    assert assert_matches_ndeval(README_ROWS, README_RUN, ["0"]) == len(names(0.5, 0.5))


def test_rank_one_is_left_unnormalised_as_ndeval_leaves_it() -> None:
    # ndeval divides alpha-DCG and ERR-IA by the ideal-ideal sum from rank 2 on only: a doc
    # relevant to both subtopics at rank 1 gives alpha_dcg@1 = err_ia@1 = 2 (gain 1 + 1).
    rows: Rows = [("1", "1", "A", 1), ("1", "2", "A", 1), ("1", "2", "B", 1)]
    run = {"1": {"A": 2.0, "B": 1.0}}
    got = evaluate(run, {"1": {"A": 1}}, ["alpha_dcg@1", "err_ia@1", "alpha_ndcg@1"], nested(rows))
    assert got.values["alpha_dcg@1"][0] == 2.0
    assert got.values["err_ia@1"][0] == 2.0
    assert got.values["alpha_ndcg@1"][0] == 1.0
    # Rank 2: B's gain is 0.5 (b already covered); ideal-ideal 2 + 1 * log(2)/log(3).
    at_two = evaluate(run, {"1": {"A": 1}}, ["alpha_dcg@2"], nested(rows)).values["alpha_dcg@2"]
    assert at_two[0] == pytest.approx((2 + 0.5 * disc(2)) / (2 + 1 * disc(2)), abs=1e-12)
    assert_matches_ndeval(rows, run, ["1"])


def test_greedy_ideal_is_ndevals_not_the_optimum() -> None:
    # Subtopics 1 = {X, Y}, 2 = {X, Z}, 3 = {W}, alpha = 0.9. Greedy takes X (gain 2) first;
    # then W (1) beats Y and Z (0.1 each). The run W, X is scored against that greedy ideal,
    # whatever the true optimum; ndeval can so exceed 1 on other runs, and ours with it.
    rows: Rows = [
        ("7", "1", "X", 1),
        ("7", "1", "Y", 1),
        ("7", "2", "X", 1),
        ("7", "2", "Z", 1),
        ("7", "3", "W", 1),
    ]
    run = {"7": {"W": 3.0, "X": 2.0, "Y": 1.0}}
    assert_matches_ndeval(rows, run, ["7"], alpha=0.9, beta=0.3)
    got = evaluate(run, {"7": {"X": 1}}, ["alpha_ndcg(alpha=0.9)@2"], nested(rows))
    # Run gains 1 (W), 2 (X); ideal gains 2 (X), 1 (W).
    expected = (1 + 2 * disc(2)) / (2 + 1 * disc(2))
    assert got.values["alpha_ndcg(alpha=0.9)@2"][0] == pytest.approx(expected, abs=1e-12)


# --- seeded random cases against pyndeval ----------------------------------------------------


def random_case(seed: int) -> tuple[Rows, RunDict, list[str]]:
    """Several topics: some with no relevant subtopic (all judged 0), some missing from the
    run, some absent from the subtopic qrels, docs judged non-relevant to every subtopic,
    unjudged docs in the run, up to 30 subtopics, distinct scores (no ties)."""
    rng = random.Random(seed)
    rows: Rows = []
    run: RunDict = {}
    labelled = []
    for topic in range(1, rng.randint(2, 7) + 1):
        query = str(100 + topic)
        labelled.append(query)
        kind = rng.random()
        pool = [f"doc-{rng.randint(0, 80):02d}" for _ in range(rng.randint(1, 40))]
        subtopics = rng.choice([1, 2, 3, 5, 8, 30])
        if kind > 0.1:  # else: absent from the subtopic qrels
            no_relevant = kind < 0.2
            for subtopic in range(1, subtopics + 1):
                judged = rng.sample(sorted(set(pool)), rng.randint(0, len(set(pool))))
                for doc in judged:
                    grade = 0 if no_relevant else rng.choice([0, 0, 1, 1, 2, 3])
                    rows.append((query, str(subtopic), doc, grade))
            for doc in rng.sample(sorted(set(pool)), min(3, len(set(pool)))):
                if not any(r[0] == query and r[2] == doc for r in rows):
                    rows.append((query, "1", doc, 0))  # judged, relevant to nothing
        if rng.random() < 0.85:  # else: missing from the run
            candidates = sorted({*pool, *(f"doc-{i:02d}" for i in range(90))})
            docs = rng.sample(candidates, rng.randint(1, 45))
            scores = rng.sample(range(100_000), len(docs))
            run[query] = {doc: score / 17.0 for doc, score in zip(docs, scores, strict=True)}
    return rows, run, labelled


@pytest.mark.parametrize(
    ("alpha", "beta"), [(0.5, 0.5), (0.3, 0.8), (0.9, 0.2), (0.0, 1.0), (1.0, 0.0), (0.25, 0.99)]
)
@pytest.mark.parametrize("seed", range(12))
def test_random_cases_equal_pyndeval(seed: int, alpha: float, beta: float) -> None:
    rows, run, labelled = random_case(seed * 7 + int(alpha * 100))
    assert assert_matches_ndeval(rows, run, labelled, alpha, beta) > 0


def test_random_cases_reach_the_edge_cases() -> None:
    """The random cases do hold what they are meant to test (else they could pass vacuously)."""
    seen = dict.fromkeys(
        [
            "no relevant subtopic",
            "missing from run",
            "no subtopic qrels",
            "alpha-nDCG@20 in (0, 1)",
        ],
        0,
    )
    for seed in range(12 * 6):
        rows, run, labelled = random_case(seed)
        judged = {r[0] for r in rows}
        relevant = {r[0] for r in rows if r[3] > 0}
        seen["no relevant subtopic"] += len(judged - relevant)
        seen["missing from run"] += len(set(labelled) - set(run))
        seen["no subtopic qrels"] += len(set(labelled) - judged)
        theirs = reference(rows, run)
        seen["alpha-nDCG@20 in (0, 1)"] += sum(0 < v["alpha-nDCG@20"] < 1 for v in theirs.values())
    assert min(seen.values()) > 0, seen


def test_empty_runs_score_zero_and_are_reported() -> None:
    rows, _, labelled = random_case(2)
    qrels = {q: {"x": 1.0} for q in labelled}
    metrics = [ours for _, ours in names(0.5, 0.5)]
    for run in ({}, {q: {} for q in labelled}):
        got = evaluate(run, qrels, metrics, nested(rows))
        assert got.missing_queries == tuple(sorted(labelled))
        for name in metrics:
            assert got.values[name].tolist() == [0.0] * len(labelled), name


def test_subtopic_ids_with_tabs_are_not_confused() -> None:
    table = subtopics_from_dict({"a\tb": {"c": {"d": 1}}, "a": {"b\tc": {"d": 1}}})
    assert len(table) == 2


def test_rel_threshold_matches_pyndeval_relevance_level() -> None:
    rows, run, labelled = random_case(3)
    rows = sorted(rows, key=lambda row: int(row[1]))
    flat = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    theirs = pyndeval.RelevanceEvaluator(rows, ["alpha-nDCG@10", "MAP-IA"], relevance_level=2)
    expected = theirs.evaluate(flat)
    qrels = {q: {"x": 1.0} for q in labelled}
    ours = evaluate(run, qrels, ["alpha_ndcg(rel=2)@10", "ap_ia(rel=2)"], nested(rows))
    table = ours.per_query()
    assert expected
    for query, values in expected.items():
        assert table[query]["alpha_ndcg(rel=2)@10"] == pytest.approx(values["alpha-nDCG@10"])
        assert table[query]["ap_ia(rel=2)"] == pytest.approx(values["MAP-IA"], abs=1e-12)


def test_cutoffs_past_ndevals_depth_continue_its_definitions() -> None:
    # ndeval stops at rank 20; at 30 the same sums go on (here every rank is relevant to
    # subtopic 1 only, so P-IA@30 = 30 / (30 * 2) and strec@30 = 1/2).
    rows: Rows = [("1", "1", f"d{i:02d}", 1) for i in range(40)] + [("1", "2", "z", 1)]
    run = {"1": {f"d{i:02d}": 100.0 - i for i in range(40)}}
    got = evaluate(run, {"1": {"z": 1}}, ["p_ia@30", "s_recall@30", "alpha_ndcg@30"], nested(rows))
    assert got.values["p_ia@30"][0] == 0.5
    assert got.values["s_recall@30"][0] == 0.5
    assert 0 < got.values["alpha_ndcg@30"][0] < 1


# --- ties: our order is trec_eval's (ndeval -traditional); pyndeval's differs ------------------


def test_ties_rank_by_doc_id_descending_unlike_pyndeval() -> None:
    rows: Rows = [("1", "1", "A", 1), ("1", "2", "B", 1), ("1", "2", "Z", 1)]
    tied = {"1": {"A": 1.0, "B": 1.0, "Z": 1.0, "C": 2.0}}
    # Ours (trec_eval, ndeval -traditional): C, then the tie by id descending: Z, B, A.
    ours_order = {"1": {"C": 4.0, "Z": 3.0, "B": 2.0, "A": 1.0}}
    # pyndeval sorts on (-score, doc id): C, A, B, Z.
    pyndeval_order = {"1": {"C": 4.0, "A": 3.0, "B": 2.0, "Z": 1.0}}
    assert assert_matches_ndeval(rows, ours_order, ["1"]) > 0
    metrics = [ours for _, ours in names(0.5, 0.5)]
    qrels = {"1": {"A": 1}}
    on_tied = evaluate(tied, qrels, metrics, nested(rows)).per_query()["1"]
    on_ours = evaluate(ours_order, qrels, metrics, nested(rows)).per_query()["1"]
    assert on_tied == on_ours
    pyndeval_tied = reference(rows, tied)["1"]
    assert pyndeval_tied == reference(rows, pyndeval_order)["1"]
    # The orders differ at rank 2 (Z, gain for b, against A, gain for a): equal at ERR-IA@2,
    # but at rank 3 ours gives B a redundant b (0.5) where pyndeval's B is new (1).
    assert on_tied["err_ia@3"] < pyndeval_tied["ERR-IA@3"]


def test_tie_order_is_the_one_of_the_other_metrics() -> None:
    # One relevant doc among tied ones: its rank (rr) and its alpha-nDCG rank agree.
    rows: Rows = [("q", "1", "m", 1)]
    run = {"q": {"a": 1.0, "m": 1.0, "z": 1.0}}
    got = evaluate(run, {"q": {"m": 1}}, ["rr", "alpha_ndcg@3", "err_ia@3"], nested(rows))
    assert got.values["rr"][0] == 0.5  # z, m, a
    assert got.values["alpha_ndcg@3"][0] == pytest.approx(disc(2), abs=1e-12)
    assert got.values["err_ia@3"][0] == pytest.approx((1 / 2) / (1 + 0.5 / 2 + 0.25 / 3))


def test_a_run_object_and_a_mapping_score_alike(tmp_path: Path) -> None:
    from retrieval_gate.readers import read_run

    rows, run, labelled = random_case(5)
    path = tmp_path / "run.txt"
    path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s!r} t\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items(), 1)
        )
    )
    metrics = ["alpha_ndcg@10", "nrbp", "ap_ia"]
    qrels = {q: {"x": 1.0} for q in labelled}
    from_file = evaluate(read_run(path), qrels, metrics, nested(rows))
    from_dict = evaluate(run, qrels, metrics, subtopics_from_dict(nested(rows)))
    assert from_file.per_query() == from_dict.per_query()


# --- wiring: errors, dialects, CLI, config ---------------------------------------------------


def test_a_diversity_metric_without_subtopics_is_a_clear_error() -> None:
    with pytest.raises(MetricError, match="need subtopic qrels") as error:
        evaluate({"1": {"a": 1.0}}, {"1": {"a": 1}}, ["ndcg@10", "alpha_ndcg@20"])
    assert "--subtopics" in str(error.value)
    assert "dataset.subtopics" in str(error.value)
    assert error.value.exit_code == 2


def test_plain_metrics_are_unchanged_by_subtopics() -> None:
    rows, run, labelled = random_case(8)
    qrels = {q: dict.fromkeys(list(run.get(q, {}))[:3], 1.0) or {"x": 1.0} for q in labelled}
    plain = evaluate(run, qrels, ["ndcg@10", "ap", "rr@5"]).per_query()
    both = evaluate(run, qrels, ["ndcg@10", "alpha_ndcg@10", "ap", "rr@5"], nested(rows))
    assert [str(m) for m in both.metrics] == ["ndcg@10", "alpha_ndcg@10", "ap", "rr@5"]
    for query, values in plain.items():
        for name, value in values.items():
            assert both.per_query()[query][name] == value


IR_MEASURES_NAMES = [
    "alpha_nDCG@20",
    "alpha_nDCG(alpha=0.7)@10",
    "alpha_DCG@5",
    "ERR_IA@20",
    "nERR_IA@10",
    "P_IA@5",
    "StRecall@10",
    "NRBP",
    "nNRBP(alpha=0.3,beta=0.8)",
    "AP_IA",
    "MAP_IA",
    "alpha_nDCG(rel=2)@10",
]


@pytest.mark.parametrize("seed", range(4))
def test_ir_measures_names_evaluate_to_ir_measures_values(seed: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    rows, run, labelled = random_case(seed + 40)
    # ir_measures reads the subtopic from the qrels' iteration column.
    ordered = sorted(rows, key=lambda row: int(row[1]))
    qrels = [ir_measures.Qrel(q, d, j, s) for q, s, d, j in ordered]
    flat = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    measures = [ir_measures.parse_measure(name) for name in IR_MEASURES_NAMES]
    theirs: dict[tuple[str, str], float] = {}
    for one in measures:  # one at a time: ir_measures 0.4.3 gives 0 to every query of all but
        # the first pyndeval invocation (one per alpha, beta, rel) when a call needs several
        for metric in ir_measures.iter_calc([one], qrels, flat):
            theirs[(str(metric.measure), metric.query_id)] = metric.value
    specs = [parse_metric(name, dialect="ir_measures") for name in IR_MEASURES_NAMES]
    ours = evaluate(run, {q: {"x": 1.0} for q in labelled}, specs, nested(rows)).per_query()
    compared = 0
    for name, measure, spec in zip(IR_MEASURES_NAMES, measures, specs, strict=True):
        for query in labelled:
            value = theirs.get((str(measure), query))
            if value is None or math.isnan(value):
                continue  # not in the run or the qrels, or nNRBP's 0/0
            assert ours[query][str(spec)] == pytest.approx(value, abs=1e-9), (name, query)
            compared += 1
    assert compared > len(IR_MEASURES_NAMES)


def test_ir_measures_dialect_spellings() -> None:
    expected = {
        "alpha_nDCG(alpha=0.7)@10": "alpha_ndcg(alpha=0.7)@10",
        "ERR_IA@20": "err_ia@20",
        "StRecall@10": "s_recall@10",
        "P_IA@5": "p_ia@5",
        "nNRBP(alpha=0.3,beta=0.8)": "nnrbp(alpha=0.3,beta=0.8)",
        "MAP_IA": "ap_ia",
    }
    for theirs, ours in expected.items():
        assert str(parse_metric(theirs, dialect="ir_measures")) == ours
        assert str(parse_metric(f"ir_measures:{theirs}")) == ours
    with pytest.raises(MetricError, match="cannot read its parameter 'judged_only=True'"):
        parse_metric("ERR_IA(judged_only=True)@20", dialect="ir_measures")
    assert str(parse_metric("strec@5")) == "s_recall@5"


def write_rows(path: Path, rows: Rows) -> Path:
    path.write_text("".join(f"{q} {s} {d} {j}\n" for q, s, d, j in rows), encoding="utf-8")
    return path


def test_cli_evaluate_with_subtopics(tmp_path: Path) -> None:
    rows, run, labelled = random_case(11)
    labelled.append("999")  # labelled, without subtopic judgments
    qrels = write_rows(tmp_path / "qrels.txt", [(q, "0", "x", 1) for q in labelled])
    subtopics = write_rows(tmp_path / "diversity.txt", rows)
    run_path = tmp_path / "run.txt"
    run_path.write_text(
        "".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items())
    )
    metrics = ["alpha_ndcg@20", "err_ia@10", "nnrbp", "ap_ia", "s_recall@5"]
    code, out, err = run_cli(
        "evaluate", str(qrels), str(run_path), "--subtopics", str(subtopics), "-m", *metrics,
        "-f", "json",
    )  # fmt: skip
    assert code == 0, err
    printed = json.loads(out)["per_query"]
    expected = evaluate(run, {q: {"x": 1} for q in labelled}, metrics, nested(rows)).per_query()
    assert printed == expected
    assert sorted(set(labelled) - {row[0] for row in rows}) == ["999"]
    assert "1 labelled query without subtopic judgments scores 0 on the diversity " in err
    assert printed["999"]["alpha_ndcg@20"] == 0.0
    code, _, err = run_cli("evaluate", str(qrels), str(run_path), "-m", "alpha_ndcg@20")
    assert code == 2
    assert "need subtopic qrels" in err
    code, _, err = run_cli(
        "evaluate", str(qrels), str(run_path), "--subtopics", str(tmp_path / "nope.txt"),
        "-m", "alpha_ndcg@20",
    )  # fmt: skip
    assert code == 2
    assert "nope.txt" in err


def tiny_project(tmp_path: Path, metrics: str, subtopics: bool) -> Path:
    for name in ("qrels.txt", "queries.jsonl", "corpus.jsonl"):
        shutil.copy(TINY / name, tmp_path / name)
    rows: Rows = []
    for line in (TINY / "qrels.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and not line.startswith("#"):
            query, _, doc, grade = parts
            rows.append((query, "1" if int(grade) >= 2 else "2", doc, 1 if int(grade) else 0))
    write_rows(tmp_path / "diversity.txt", rows)
    extra = "  subtopics: diversity.txt\n" if subtopics else ""
    config = tmp_path / "retrieval-gate.yaml"
    config.write_text(
        "version: 1\ndataset:\n  queries: queries.jsonl\n  qrels: qrels.txt\n"
        f"  corpus: corpus.jsonl\n{extra}retriever: {{type: bm25}}\nk: 10\n"
        f"metrics:\n{metrics}gate: {{require_significance: false}}\n",
        encoding="utf-8",
    )
    return config


def test_config_dataset_subtopics_reach_baseline_and_check(tmp_path: Path) -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset

    metrics = "  ndcg@10: {max_drop: 2pt}\n  alpha_ndcg@10: {max_drop: 2pt}\n  nrbp: {}\n"
    config = tiny_project(tmp_path, metrics, subtopics=True)
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet")
    assert code == 0, err
    document = json.loads((tmp_path / ".retrieval-gate" / "baseline.json").read_text())
    dataset = load_dataset(load(config).dataset, tmp_path)
    assert dataset.subtopics is not None
    top_k = {q: {d: -float(i) for i, d in enumerate(docs)} for q, docs in document["top_k"].items()}
    expected = evaluate(top_k, dataset.qrels, ["alpha_ndcg@10", "nrbp"], dataset.subtopics)
    assert document["scores"]["alpha_ndcg@10"] == expected.values["alpha_ndcg@10"].tolist()
    assert max(document["scores"]["alpha_ndcg@10"]) > 0
    code, _, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 0, err


def test_config_without_subtopics_refuses_diversity_metrics(tmp_path: Path) -> None:
    config = tiny_project(tmp_path, "  alpha_ndcg@10: {max_drop: 2pt}\n", subtopics=False)
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet")
    assert code == 2
    assert "dataset.subtopics" in err
    # Refused when the config loads, naming the key, before any retriever runs.
    assert "metrics.alpha_ndcg@10: a diversity measure needs subtopic judgments" in err


def test_dataset_subtopics_join_the_fingerprint_and_warn(tmp_path: Path) -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset

    config = tiny_project(tmp_path, "  ndcg@10: {}\n", subtopics=True)
    with_subtopics = load_dataset(load(config).dataset, tmp_path)
    other = tmp_path / "without"
    other.mkdir()
    without = load_dataset(load(tiny_project(other, "  ndcg@10: {}\n", False)).dataset, other)
    assert without.subtopics is None
    assert with_subtopics.fingerprint != without.fingerprint
    lines = [r for r in (tmp_path / "diversity.txt").read_text().splitlines() if "sso" not in r]
    (tmp_path / "diversity.txt").write_text("\n".join(lines) + "\n99 1 kb-1 1\n")
    warned = load_dataset(load(config).dataset, tmp_path)
    kinds = {w.kind: w for w in warned.warnings}
    assert kinds["query_without_subtopics"].examples == ("sso-okta",)
    assert kinds["subtopics_without_query"].examples == ("99",)
    assert warned.fingerprint != with_subtopics.fingerprint


# --- the reader -------------------------------------------------------------------------------


def test_reader_skips_comments_and_blank_lines_and_reads_gzip(tmp_path: Path) -> None:
    text = "# topic subtopic docno judgment\n\n51 1 doc-a 1\n51\t2\tdoc-a\t0\r\n  \n52 1 d#1 2\n"
    plain = tmp_path / "diversity.txt"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "diversity.txt.gz"
    packed.write_bytes(gzip.compress(("\ufeff" + text).encode()))
    expected = {"51": {"1": {"doc-a": 1.0}, "2": {"doc-a": 0.0}}, "52": {"1": {"d#1": 2.0}}}
    assert read_subtopics(plain).to_dict() == expected
    assert read_subtopics(packed).to_dict() == expected
    assert len(read_subtopics(plain)) == 3


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("51 1 d 1\n51 1 d\n", 2, "expected 'topic subtopic docno judgment'"),
        ("51 1 d 1 extra\n", 1, "got 5 fields"),
        ("51 1 d one\n", 1, "judgment 'one' is not a finite number"),
        ("51 1 d nan\n", 1, "judgment 'nan' is not a finite number"),
        ("51 1 d 1e999\n", 1, "judgment '1e999' is not a finite number"),
        ("51 1 d 1\n51 1 d 0\n", 2, "duplicate judgment for topic '51', subtopic '1', doc 'd'"),
        ("51 1 d\x00x 1\n", 1, "docno 'd\\x00x' holds a control character"),
        ("51 1 d\x1b[31m 1\n", 1, "holds a control character"),
        ("5\x7f1 1 d 1\n", 1, "topic '5\\x7f1' holds a control character"),
        ("51 1\x9b d 1\n", 1, "subtopic '1\\x9b' holds a control character"),
    ],
)
def test_reader_errors_name_file_and_line(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "diversity.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_subtopics(path)
    assert error.value.source == str(path)
    assert error.value.line == line
    assert says in str(error.value)


def test_reader_refuses_huge_fields_without_echoing_them(tmp_path: Path) -> None:
    path = tmp_path / "diversity.txt"
    for row in (f"51 1 {'d' * 5_000_000} 1\n", f"51 1 d {'9' * 100_000}\n"):
        path.write_text("51 1 ok 1\n" + row, encoding="utf-8")
        with pytest.raises(InputError) as error:
            read_subtopics(path)
        assert error.value.line == 2
        assert len(str(error.value)) < 400
        assert "characters long" in str(error.value)
    path.write_text(f"51 1 {'d' * MAX_FIELD} 1\n", encoding="utf-8")
    assert len(read_subtopics(path)) == 1


def test_reader_refuses_empty_binary_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no subtopic judgments found"):
        read_subtopics(empty)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"51 1 d 1\n\xff\xfe\x00\x80 junk\n")
    with pytest.raises(InputError, match="not UTF-8") as error:
        read_subtopics(binary)
    assert error.value.source == str(binary)
    with pytest.raises(InputError, match="file not found"):
        read_subtopics(tmp_path / "missing.txt")


def test_reader_keeps_many_rows_and_subtopics(tmp_path: Path) -> None:
    path = tmp_path / "diversity.txt"
    rows: Rows = [(str(q), str(s), f"d{d}", (q + s + d) % 2) for q in range(30) for s in range(20)
                  for d in range(40)]  # fmt: skip
    write_rows(path, rows)
    read = read_subtopics(path)
    assert len(read) == len(rows)
    assert read.to_dict() == nested(rows)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"1": {"a": {"d": float("nan")}}}, "is not a finite number"),
        ({"1": {"a": {"d": True}}}, "is not a finite number"),
        ({"1": {"a": ["d"]}}, "expected {doc: judgment}"),
        ({"1": ["a"]}, "expected {subtopic: {doc: judgment}}"),
        ({"1": {2: {"d": 1}}}, "subtopic 2 must be a non-empty string"),
    ],
)
def test_subtopics_from_dict_checks_its_input(value: Any, says: str) -> None:
    with pytest.raises(InputError, match=re_escape(says)):
        subtopics_from_dict(value)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_subtopic_qrels_are_a_value_the_api_accepts() -> None:
    table = SubtopicQrels.from_rows(["1", "1"], ["1", "2"], ["A", "A"], [1.0, 1.0])
    got = evaluate({"1": {"A": 1.0}}, {"1": {"A": 1}}, ["err_ia@1", "p_ia@1"], subtopics=table)
    assert got.values["err_ia@1"][0] == 2.0  # two subtopics at rank 1, left undivided
    assert got.values["p_ia@1"][0] == 1.0
    with pytest.raises(GateError, match="duplicate judgment"):
        SubtopicQrels.from_rows(["1", "1"], ["1", "1"], ["A", "A"], [1.0, 0.0])


def rescanned_ideal_gains(relevant: Any, alpha: float) -> list[float]:
    """ndeval's idealResult as written: every doc rescanned at every rank (quadratic)."""
    weights = relevant.astype(float)
    n, width = relevant.shape
    gain = [1.0] * width
    left = set(range(n))
    out: list[float] = []
    while left:
        scores = {}
        for row in left:
            total = 0.0
            for j in range(width):
                total = total + weights[row, j] * gain[j]
            scores[row] = total
        best = max(scores.values())
        if best <= 0.0:
            break
        row = max(r for r, s in scores.items() if s == best)  # ties: the larger doc id
        out.append(best)
        left.discard(row)
        for j in range(width):
            if relevant[row, j]:
                gain[j] *= 1.0 - alpha
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_lazy_ideal_ranking_is_the_rescanned_one_bit_for_bit(seed: int) -> None:
    import numpy as np

    from retrieval_gate.metrics.diversity import _ideal_gains, _nrbp, _Topic

    rnd = random.Random(seed)
    docs, width = rnd.randint(1, 60), rnd.randint(1, 8)
    relevant = np.array(
        [[rnd.random() < rnd.choice((0.1, 0.3, 0.7)) for _ in range(width)] for _ in range(docs)]
    )
    relevant[rnd.randrange(docs), rnd.randrange(width)] = True
    topic = _Topic({f"d{i:03d}": i for i in range(docs)}, relevant, relevant.sum(axis=0) * 1.0)
    alpha = rnd.choice((0.0, 0.1, 0.5, 0.9, 1.0))
    full = rescanned_ideal_gains(relevant, alpha)
    for depth in (1, 5, 10, 200):
        assert _ideal_gains(topic, alpha, depth).tolist() == full[:depth]
    for beta in (0.0, 0.3, 0.5, 0.8, 0.99):
        cut = _ideal_gains(topic, alpha, 10, beta)
        assert cut.tolist() == full[: len(cut)]
        assert len(cut) >= min(10, len(full))
        ours = _nrbp(cut, width, alpha, beta)
        assert ours == _nrbp(np.asarray(full), width, alpha, beta)  # the same bits


def test_a_topic_of_32000_judged_documents_is_scored_without_a_quadratic_ideal(
    tmp_path: Path,
) -> None:
    # One topic, 32,000 relevant documents over 50 subtopics: rescanning every document for
    # every rank of the ideal took over 100 s (issue 27); the top k, or as deep as nNRBP's sum
    # can tell, is all the measures read.
    rnd = random.Random(0)
    lines = [
        f"1 {s} doc{d} 1\n"
        for d in range(32_000)
        for s in rnd.sample(range(1, 51), rnd.choice((1, 2, 3)))
    ]
    (tmp_path / "sub.txt").write_text("".join(lines))
    (tmp_path / "qrels.txt").write_text("".join(f"1 0 doc{d} 1\n" for d in range(100)))
    (tmp_path / "run.txt").write_text(
        "".join(f"1 Q0 doc{d * 7} {d + 1} {100 - d} r\n" for d in range(100))
    )
    code, out, err = run_cli(
        "evaluate",
        str(tmp_path / "qrels.txt"),
        str(tmp_path / "run.txt"),
        "-m",
        "alpha_ndcg@10",
        "nerr_ia@20",
        "nnrbp",
        "--subtopics",
        str(tmp_path / "sub.txt"),
        "-f",
        "json",
    )
    assert code == 0, err
    values = json.loads(out)["per_query"]["1"]
    assert set(values) == {"alpha_ndcg@10", "nerr_ia@20", "nnrbp"}
    assert all(0 < value <= 1 for value in values.values())


def test_no_diversity_measure_leaves_its_bounds_on_random_cases() -> None:
    specs = [parse_metric(name + "@1" if name in {"alpha_dcg", "err_ia"} else name + "@5")
             for name in sorted(DIVERSITY) if REGISTRY[name].cutoff != "none"]  # fmt: skip
    specs += [parse_metric(name) for name in sorted(DIVERSITY) if REGISTRY[name].cutoff == "none"]
    for seed in range(100):
        rows, run, labelled = random_case(seed)
        qrels = {q: {"x": 1} for q in labelled}
        values = evaluate(run, qrels, specs, nested(rows)).values
        for spec in specs:
            low, high = spec.bounds
            assert np.all((values[str(spec)] >= low) & (values[str(spec)] <= high + 1e-12)), spec
