"""Every value trec_eval printed for its own test files must be what we compute, to 4 decimals."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from retrieval_gate.metrics import Scores, evaluate
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.trec_eval_cases import CASES, COUNTS, MEASURES, at_collection, our_metric


@functools.cache
def expected_lines(folder: Path) -> list[tuple[str, str, str, str]]:
    """(file, measure, qid, printed value) for every line of a measure we also compute."""
    rows = []
    for out in CASES:
        for line in (folder / out).read_text().splitlines():
            measure, qid, value = line.split("\t")
            if any(re.fullmatch(pattern, measure.strip()) for pattern in MEASURES):
                rows.append((out, measure.strip(), qid, value))
    return rows


def params() -> list[object]:
    folder = at_collection()
    if folder is None:  # the trec_eval_test fixture skips (or fails in CI)
        return [pytest.param("", "", "", "", id="no-data")]
    return [pytest.param(*row, id=f"{row[0]}:{row[1]}:{row[2]}") for row in expected_lines(folder)]


@functools.cache
def scores_for(folder: Path, out: str) -> tuple[Scores, int]:
    qrels_name, run_name, rel = CASES[out]
    metrics = sorted(
        {our_metric(m, rel) or "" for o, m, _, _ in expected_lines(folder) if o == out}
    )
    qrels = read_qrels(folder / qrels_name)
    run = read_run(folder / run_name)
    return evaluate(run, qrels, metrics), rel


@pytest.mark.parametrize(("out", "measure", "qid", "printed"), params())
def test_matches_trec_eval(
    trec_eval_test: Path, out: str, measure: str, qid: str, printed: str
) -> None:
    collected = at_collection()
    assert collected is not None
    assert trec_eval_test.resolve() == collected.resolve()
    scores, rel = scores_for(trec_eval_test, out)
    name = our_metric(measure, rel)
    assert name is not None
    column = scores.values[name]
    if qid == "all":
        ours = float(column.sum()) if measure in COUNTS else scores.mean()[name]
    else:
        ours = float(column[scores.query_ids.index(qid)])
    if measure in COUNTS:
        assert ours == int(printed), f"{name} {qid}: ours {ours}, trec_eval {printed}"
    else:
        # trec_eval prints "%.4f": ours must round to the printed value (1e-12 slack at a tie).
        assert abs(ours - float(printed)) <= 0.5e-4 + 1e-12, (
            f"{name} {qid}: ours {ours:.6f}, trec_eval {printed}"
        )


@pytest.mark.parametrize("out", list(CASES))
def test_query_sets(trec_eval_test: Path, out: str) -> None:
    """We score exactly the queries trec_eval counted (num_q), all of them labelled."""
    qrels_name, run_name, _ = CASES[out]
    scores, _ = scores_for(trec_eval_test, out)
    printed_qids = {qid for o, _, qid, _ in expected_lines(trec_eval_test) if o == out} - {"all"}
    lines = (trec_eval_test / out).read_text().splitlines()
    num_q = [int(line.split("\t")[2]) for line in lines if line.startswith("num_q ")]
    if printed_qids:
        assert set(scores.query_ids) == printed_qids
    if num_q:
        assert len(scores.query_ids) == num_q[0]
    assert list(scores.query_ids) == sorted(scores.query_ids)
    assert scores.missing_queries == (("302",) if run_name == "results.trunc" else ())
    labelled = {line.split()[0] for line in (trec_eval_test / qrels_name).read_text().splitlines()}
    retrieved = {line.split()[0] for line in (trec_eval_test / run_name).read_text().splitlines()}
    assert set(scores.query_ids) == labelled
    assert set(scores.ignored_queries) == retrieved - labelled
