"""judged@k is trec_eval 10's 1 - unj_k; judged(of=retrieved)@k is ir_measures' Judged@k.

trec_eval 10 (usnistgov/trec_eval f425365, m_unjudged.c, te_calc_unj): unj_k = unjudged docs
among the top k / k, where a doc is unjudged when the qrels lack it (RELVALUE_NONPOOL) or grade
it < 0 (RELVALUE_UNJUDGED, form_res_rels.c:180); ranks past the end of a short list are not
unjudged (m_unjudged.c:78 divides by the cutoff), and under -c a query missing from the run
gets unj = 0 (trec_eval.c:425). So judged@k = 1 - unj_k, 1.0 for a query with no results.

ir_measures 0.4.3 (terrierteam/ir_measures dc04a88, ir_measures/providers/judged_provider.py):
judged docs in the top k / min(k, retrieved) (lines 48-57), a labelled query absent from the
run gets Measure.DEFAULT = 0. (providers/base.py:27, measures/base.py:40).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.readers import read_qrels, read_run, run_from_dict
from tests.helpers.trec_eval_cases import CASES, at_collection

Grades = Mapping[str, float]
Results = Mapping[str, float]

# Expected outputs with unj rows that CASES does not list. out.test.a is out.test.aq without
# -q. out.test.aqcM adds -M100, which keeps the first 100 docs of the score-sorted list
# (form_res_rels.c:115-117): the top k for k <= 100 is unchanged, so unj_5/10/20 are those of
# results.trunc itself.
MORE_CASES = {
    "out.test.a": CASES["out.test.aq"],
    "out.test.aqcM": CASES["out.test.aqc"],
}
UNJ_CASES = {**CASES, **MORE_CASES}
UNJ = re.compile(r"unj_(?P<k>\d+)")


@functools.cache
def unj_lines(folder: Path) -> list[tuple[str, int, str, str]]:
    """(file, k, qid, printed unj) for every unj row of trec_eval's expected outputs."""
    rows = []
    for out in sorted(path.name for path in folder.glob("out*")):
        for line in (folder / out).read_text().splitlines():
            measure, qid, value = line.split("\t")
            match = UNJ.fullmatch(measure.strip())
            if match:
                rows.append((out, int(match["k"]), qid, value))
    return rows


def unj_params() -> list[object]:
    folder = at_collection()
    if folder is None:  # the trec_eval_test fixture skips (or fails in CI)
        return [pytest.param("", 0, "", "", id="no-data")]
    return [pytest.param(*row, id=f"{row[0]}:unj_{row[1]}:{row[2]}") for row in unj_lines(folder)]


@functools.cache
def judged_for(folder: Path, out: str) -> dict[str, dict[str, float]]:
    qrels_name, run_name, _ = UNJ_CASES[out]
    cutoffs = sorted({k for o, k, _, _ in unj_lines(folder) if o == out})
    metrics = [f"judged@{k}" for k in cutoffs]
    scores = evaluate(read_run(folder / run_name), read_qrels(folder / qrels_name), metrics)
    return scores.per_query()


def exact_unj(printed: str, k: int) -> float:
    """The per-query unj trec_eval printed to 4 decimals: a count of docs over k."""
    count = round(float(printed) * k)
    assert abs(count / k - float(printed)) <= 0.5e-4 + 1e-12
    return count / k


def test_every_expected_output_with_unj_is_checked(trec_eval_test: Path) -> None:
    files = {out for out, _, _, _ in unj_lines(trec_eval_test)}
    assert files == {"out.test.a", "out.test.aq", "out.test.aqc", "out.test.aqcM", "out.test.aql"}
    assert files <= set(UNJ_CASES)
    assert (
        len(unj_lines(trec_eval_test)) == 51
    )  # 4 x 12 per-query and `all` rows, 3 `all` rows in .a


@pytest.mark.parametrize(("out", "k", "qid", "printed"), unj_params())
def test_judged_is_one_minus_trec_eval_unj(
    trec_eval_test: Path, out: str, k: int, qid: str, printed: str
) -> None:
    per_query = judged_for(trec_eval_test, out)
    name = f"judged@{k}"
    if qid == "all":
        ours = float(np.mean([values[name] for values in per_query.values()]))
        rows = [r for r in unj_lines(trec_eval_test) if r[0] == out and r[1] == k and r[2] != "all"]
        if rows:  # with -q: the mean of the exact per-query values
            exact = float(np.mean([1.0 - exact_unj(r[3], k) for r in rows]))
            assert ours == pytest.approx(exact, abs=1e-12)
    else:
        ours = per_query[qid][name]
        assert ours == pytest.approx(1.0 - exact_unj(printed, k), abs=1e-12)
    # trec_eval prints "%.4f": 1 - ours must round to the printed value.
    assert abs((1.0 - ours) - float(printed)) <= 0.5e-4 + 1e-12, (
        f"{out} {name} {qid}: ours {ours:.6f}, trec_eval unj {printed}"
    )


def test_the_query_missing_under_c_is_fully_judged(trec_eval_test: Path) -> None:
    """results.trunc has no 302; trec_eval -c prints unj 0.0000 for it (out.test.aqc)."""
    assert [
        r[3] for r in unj_lines(trec_eval_test) if r[0] == "out.test.aqc" and r[2] == "302"
    ] == ["0.0000"] * 3
    assert judged_for(trec_eval_test, "out.test.aqc")["302"] == {
        "judged@5": 1.0,
        "judged@10": 1.0,
        "judged@20": 1.0,
    }


# --- trec_eval's code, ported line for line ------------------------------------------------

NONPOOL, UNJUDGED = -1, -2  # trec_format.h's RELVALUE_NONPOOL, RELVALUE_UNJUDGED


def trec_eval_rel_list(qrels: Grades, results: Results) -> list[float]:
    """form_res_rels.c: sim descending, docno descending; the qrels grade when >= 0,
    RELVALUE_UNJUDGED when < 0, RELVALUE_NONPOOL when the qrels lack the doc."""
    ranked = sorted(results.items(), key=lambda item: (item[1], item[0]), reverse=True)
    rels: list[float] = []
    for doc, _ in ranked:
        grade = qrels.get(doc)
        rels.append(NONPOOL if grade is None else UNJUDGED if grade < 0 else grade)
    return rels


def trec_eval_unj(rel_list: Sequence[float], cutoffs: Sequence[int]) -> list[float]:
    """te_calc_unj of m_unjudged.c (cutoffs ascending, as te_init_meas_a_double_cut_long
    leaves them)."""
    values: list[float] = []
    unj_so_far = 0
    cutoff_index = 0
    for i, rel in enumerate(rel_list):
        if i == cutoffs[cutoff_index]:
            values.append(unj_so_far / i)
            cutoff_index += 1
            if cutoff_index == len(cutoffs):
                break
        if rel in (NONPOOL, UNJUDGED):
            unj_so_far += 1
    while cutoff_index < len(cutoffs):
        values.append(unj_so_far / cutoffs[cutoff_index])
        cutoff_index += 1
    return values


def trec_eval_c_unj(qrels: Grades, results: Results | None, cutoffs: Sequence[int]) -> list[float]:
    """unj of one labelled query under -c: a query absent from the run is forced to 0.0
    (trec_eval.c:425)."""
    if results is None:
        return [0.0] * len(cutoffs)
    return trec_eval_unj(trec_eval_rel_list(qrels, results), cutoffs)


def ir_measures_judged(qrels: Grades, results: Results | None, k: int) -> float:
    """ir_measures' Judged@k, as judged_provider.py computes it."""
    if not results:
        return 0.0  # Measure.DEFAULT (measures/base.py:40); an empty dict divides by zero (:57)
    ranked = sorted(results.items(), key=lambda x: (-x[1], x[0]))[:k]  # :36, doc id ascending
    judged = sum(doc in qrels for doc, _ in ranked)  # :48, any qrels row, grade -1 too
    return judged / len(ranked)  # :53-57, min(k, retrieved)


# --- textbook cases --------------------------------------------------------------------------

FIVE = {f"d{i}": float(10 - i) for i in range(5)}
HALF = {f"d{i}": float(10 - i) for i in range(10)}
FOUR = {"d0": 4.0, "d1": 3.0, "x0": 2.0, "x1": 1.0}
FIFTEEN = {f"d{i:02d}": float(20 - i) for i in range(15)}
POOLED = {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}
TIED = {"a": 2.0, "x": 1.0, "y": 1.0}
ELEVEN = list(FIFTEEN)[:11]

# (id, qrels, results (None: absent from the run), k, judged@k, judged(of=retrieved)@k,
# ir_measures' Judged@k)
TEXTBOOK: list[tuple[str, Grades, Results | None, int, float, float, float]] = [
    ("5-docs-all-judged@10", dict.fromkeys(FIVE, 1), FIVE, 10, 1.0, 1.0, 1.0),
    ("5-docs-all-judged@5", dict.fromkeys(FIVE, 1), FIVE, 5, 1.0, 1.0, 1.0),
    ("5-docs-all-judged@3", dict.fromkeys(FIVE, 0), FIVE, 3, 1.0, 1.0, 1.0),
    ("5-docs-none-judged@10", {"other": 1}, FIVE, 10, 0.5, 0.0, 0.0),
    ("half-judged@10", {f"d{i}": i % 2 for i in range(0, 10, 2)}, HALF, 10, 0.5, 0.5, 0.5),
    ("half-judged@4", {f"d{i}": 1 for i in range(0, 10, 2)}, HALF, 4, 0.5, 0.5, 0.5),
    ("4-docs-half-judged@10", {"d0": 1, "d1": 0}, FOUR, 10, 0.8, 0.5, 0.5),
    # m_unjudged.c's own example read as "4 unjudged of 15 retrieved": unj_20 = 4/20 = 0.2.
    ("15-docs-4-unjudged@20", dict.fromkeys(ELEVEN, 0), FIFTEEN, 20, 0.8, 11 / 15, 11 / 15),
    # c is pooled but unjudged (grade -1): unjudged here and in trec_eval, judged in ir_measures.
    ("grade-minus-1@4", {"a": 1, "b": 0, "c": -1}, POOLED, 4, 0.5, 0.5, 0.75),
    ("grade-minus-1@10", {"a": 1, "b": 0, "c": -1}, POOLED, 10, 0.8, 0.5, 0.75),
    ("grade-minus-1@2", {"a": 1, "b": 0, "c": -1}, POOLED, 2, 1.0, 1.0, 1.0),
    ("all-grade-minus-1@3", {"a": -1, "b": -1, "c": -1, "d": -1}, POOLED, 3, 0.0, 0.0, 1.0),
    ("absent-from-run@10", {"a": 1, "b": 0}, None, 10, 1.0, 0.0, 0.0),
    ("empty-ranking@10", {"a": 1}, {}, 10, 1.0, 0.0, 0.0),
    # x and y tie: trec_eval (and we) put y first (doc id descending), ir_measures x (:36).
    ("tie-across-k@2", {"a": 1, "x": 0}, TIED, 2, 0.5, 0.5, 1.0),
    ("tie-across-k-other-way@2", {"a": 1, "y": 0}, TIED, 2, 1.0, 1.0, 0.5),
    ("tie-inside-k@3", {"a": 1, "x": 0}, TIED, 3, 2 / 3, 2 / 3, 2 / 3),
    ("tie-inside-k@10", {"a": 1, "x": 0}, TIED, 10, 0.9, 2 / 3, 2 / 3),
]
# Where judged(of=retrieved) and ir_measures part: grade < 0 and ties broken the other way.
IR_MEASURES_DIFFER = {
    "grade-minus-1@4", "grade-minus-1@10", "all-grade-minus-1@3",
    "tie-across-k@2", "tie-across-k-other-way@2",
}  # fmt: skip


def textbook_scores(qrels: Grades, results: Results | None, k: int) -> dict[str, float]:
    """Our judged@k and judged(of=retrieved)@k of query q, from a dict and from a Run."""
    judgments = {"q": dict(qrels), "other": {"z": 1}}
    run = {"other": {"z": 1.0}} | ({} if results is None else {"q": dict(results)})
    metrics = [f"judged@{k}", f"judged(of=retrieved)@{k}"]
    from_dict = evaluate(run, judgments, metrics).per_query()["q"]
    from_run = evaluate(run_from_dict(run), judgments, metrics).per_query()["q"]
    assert from_dict == from_run
    return from_dict


@pytest.mark.parametrize(
    ("qrels", "results", "k", "trec", "retrieved", "ir"),
    [pytest.param(*case[1:], id=case[0]) for case in TEXTBOOK],
)
def test_textbook_cases(
    qrels: Grades, results: Results | None, k: int, trec: float, retrieved: float, ir: float
) -> None:
    ours = textbook_scores(qrels, results, k)
    assert ours[f"judged@{k}"] == pytest.approx(trec, abs=1e-12)
    assert ours[f"judged(of=retrieved)@{k}"] == pytest.approx(retrieved, abs=1e-12)
    # The hand values are what the two references' code computes.
    assert 1.0 - trec_eval_c_unj(qrels, results, [k])[0] == pytest.approx(trec, abs=1e-12)
    assert ir_measures_judged(qrels, results, k) == pytest.approx(ir, abs=1e-12)


def test_the_issue_example() -> None:
    """5 docs, all judged, at @10: trec_eval 1.0, ir_measures 1.0 (it used to be 0.5)."""
    ours = textbook_scores(dict.fromkeys(FIVE, 1), FIVE, 10)
    assert ours == {"judged@10": 1.0, "judged(of=retrieved)@10": 1.0}


@pytest.mark.parametrize(
    ("case_id", "qrels", "results", "k", "ir"),
    [pytest.param(c[0], c[1], c[2], c[3], c[6], id=c[0]) for c in TEXTBOOK if c[2] != {}],
)
def test_ir_measures_itself(
    case_id: str, qrels: Grades, results: Results | None, k: int, ir: float
) -> None:
    """ir_measures' own Judged@k gives the hand values; judged(of=retrieved) equals it except
    on grade < 0 and ties across k. (An empty ranking, {}, raises ZeroDivisionError in
    ir_measures 0.4.3, judged_provider.py:57; we cannot tell it from an absent query.)"""
    ir_measures = pytest.importorskip("ir_measures")
    run = {"other": {"z": 1.0}} | ({} if results is None else {"q": dict(results)})
    metric = ir_measures.Judged @ k
    values = {
        m.query_id: m.value
        for m in ir_measures.iter_calc([metric], {"q": dict(qrels), "other": {"z": 1}}, run)
    }
    assert values["q"] == pytest.approx(ir, abs=1e-12)
    ours = textbook_scores(qrels, results, k)[f"judged(of=retrieved)@{k}"]
    if case_id in IR_MEASURES_DIFFER:
        assert ours != pytest.approx(values["q"], abs=1e-12)
    else:
        assert ours == pytest.approx(values["q"], abs=1e-12)


# --- random cases against the ported code ----------------------------------------------------

CUTOFFS = (1, 3, 5, 10, 20, 30)


def random_case(
    rng: np.random.Generator, *, negative: bool, ties: bool
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Up to 6 labelled queries (some absent from the run), one unlabelled run query; runs of
    0-25 docs with some of the pool judged, grades -1..2 when `negative`."""
    qrels: dict[str, dict[str, float]] = {}
    run: dict[str, dict[str, float]] = {}
    grades = [-1, 0, 1, 2] if negative else [0, 1, 2]
    for q in range(int(rng.integers(1, 7))):
        pool = [f"d{i:02d}" for i in rng.permutation(40)[: int(rng.integers(1, 30))]]
        qrels[f"q{q}"] = {doc: float(rng.choice(grades)) for doc in pool}
        length = int(rng.integers(0, 26))
        if length == 0 and rng.random() < 0.5:
            continue  # absent from the run rather than empty
        docs = [f"d{i:02d}" for i in rng.permutation(40)[:length]]
        scores = rng.integers(0, 4, length) if ties else rng.permutation(length) + 0.5
        run[f"q{q}"] = {doc: float(s) for doc, s in zip(docs, scores, strict=True)}
    run["unlabelled"] = {"d00": 1.0}
    return qrels, run


@pytest.mark.parametrize("seed", range(300))
def test_random_cases_equal_trec_eval_code(seed: int) -> None:
    rng = np.random.default_rng(seed)
    qrels, run = random_case(rng, negative=True, ties=bool(seed % 2))
    metrics = [f"judged@{k}" for k in CUTOFFS]
    values = evaluate(run_from_dict(run), qrels, metrics).per_query()
    for qid, judgments in qrels.items():
        expected = trec_eval_c_unj(judgments, run.get(qid), CUTOFFS)
        ours = [values[qid][m] for m in metrics]
        assert ours == pytest.approx([1.0 - unj for unj in expected], abs=1e-12), qid


@pytest.mark.parametrize("seed", range(300))
def test_random_cases_of_retrieved_equal_ir_measures(seed: int) -> None:
    """No grade < 0 and no tied scores: the two places the variant and ir_measures part."""
    rng = np.random.default_rng(seed)
    qrels, run = random_case(rng, negative=False, ties=False)
    run = {q: results for q, results in run.items() if results}  # ir_measures fails on {}
    metrics = [f"judged(of=retrieved)@{k}" for k in CUTOFFS]
    values = evaluate(run, qrels, metrics).per_query()
    for qid, judgments in qrels.items():
        expected = [ir_measures_judged(judgments, run.get(qid), k) for k in CUTOFFS]
        assert [values[qid][m] for m in metrics] == pytest.approx(expected, abs=1e-12), qid
    ir_measures = pytest.importorskip("ir_measures")
    measures = [ir_measures.Judged @ k for k in CUTOFFS]
    for m in ir_measures.iter_calc(measures, qrels, run):
        ours = values[m.query_id][f"judged(of=retrieved)@{m.measure['cutoff']}"]
        assert ours == pytest.approx(m.value, abs=1e-12), (m.query_id, str(m.measure))


def test_the_parameter() -> None:
    assert str(parse_metric("judged(of=k)@10")) == "judged@10"
    assert parse_metric("judged(of=k)@10") == parse_metric("judged@10")
    assert str(parse_metric("Judged(OF=Retrieved)@10")) == "judged(of=retrieved)@10"
    with pytest.raises(MetricError, match="of=k\\|retrieved"):
        parse_metric("judged(of=ranks)@10")
    with pytest.raises(MetricError, match="needs a cutoff"):
        parse_metric("judged(of=retrieved)")
