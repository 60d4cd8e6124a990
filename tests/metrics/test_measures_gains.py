"""nDCG / DCG with custom gains (trec_eval's ndcg.1=3,2=9) and ir_measures' SetP/SetR/SetF."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.readers import read_qrels, read_run


def _scores(data: Path, qrels: str, run: str, metric: str) -> dict[str, float]:
    scores = evaluate(read_run(data / run), read_qrels(data / qrels), [metric])
    name = str(scores.metrics[0])
    values = {q: row[name] for q, row in scores.per_query().items()}
    values["all"] = scores.mean()[name]
    return values


def test_meas_params_oracle(trec_eval_test: Path) -> None:
    """out.test.meas_params (`trec_eval -q -mndcg.1=3,2=9,4=4.5 ...`): every printed row."""
    rows = [
        line.split("\t")
        for line in (trec_eval_test / "out.test.meas_params").read_text().splitlines()
        if line.startswith("ndcg_1=")
    ]
    assert len(rows) == 4
    measure = rows[0][0].strip()
    ours = parse_metric(f"trec_eval:{measure}")
    assert str(ours) == "ndcg(gain=linear,gains=1:3;2:9;4:4.5)"
    got = _scores(trec_eval_test, "qrels.test", "results.test", str(ours))
    for _, qid, value in rows:
        assert f"{got[qid]:.4f}" == value.strip()


# trec_eval 10.0 (usnistgov/trec_eval f425365) built with its "%6.4f" print format changed to
# "%.17g", run as `trec_eval -q -m<measure> qrels.rel_level results.test` (graded qrels 0-4).
GRADED = {
    "ndcg_1=3,2=9,4=4.5": {
        "301": 0.14338297872325159,
        "302": 0.66168687874478671,
        "303": 0.36686591060589968,
        "all": 0.390645256024646,
    },
    "ndcg_0=1,2=0,3=-2": {
        "301": 0.20146002798158399,
        "302": 0.060431352550844225,
        "303": 0.27899684752061121,
        "all": 0.1802960760176798,
    },
}


@pytest.mark.parametrize("measure", sorted(GRADED))
def test_graded_gains_match_trec_eval(trec_eval_test: Path, measure: str) -> None:
    ours = str(parse_metric(f"trec_eval:{measure}"))
    got = _scores(trec_eval_test, "qrels.rel_level", "results.test", ours)
    for qid, value in GRADED[measure].items():
        assert got[qid] == pytest.approx(value, abs=1e-9)


def test_canonical_gains_sorted_and_shortest() -> None:
    assert str(parse_metric("ndcg(gains=4:4.50;1:3.0;2:9)@10")) == "ndcg(gains=1:3;2:9;4:4.5)@10"
    assert parse_metric("ndcg(gains=2:9;1:3)") == parse_metric("ndcg(gains=1:3;2:9)")
    assert str(parse_metric("dcg(gain=linear,gains=0:1)")) == "dcg(gain=linear,gains=0:1)"


@pytest.mark.parametrize("bad", ["ndcg(gains=1:x)", "ndcg(gains=1:2;1:3)", "ndcg(gains=-1:2)"])
def test_bad_gains_refused(bad: str) -> None:
    from retrieval_gate.errors import MetricError

    with pytest.raises(MetricError):
        parse_metric(bad)


ir_measures = pytest.importorskip("ir_measures")


@pytest.mark.parametrize(
    ("theirs", "qrels", "run"),
    [
        ("nDCG(gains={0:0,1:1,2:3})@10", "qrels.rel_level", "results.test"),
        ("nDCG(gains={1:3,2:9,4:4})", "qrels.rel_level", "results.test"),
        ("nDCG(gains={0:1,3:1})@20", "qrels.comment.test", "results.comment.test"),
        ("SetP", "qrels.test", "results.test"),
        ("SetP(rel=2)", "qrels.rel_level", "results.test"),
        ("SetR", "qrels.test", "results.test"),
        ("SetR(rel=2)", "qrels.comment.test", "results.comment.test"),
        ("SetF", "qrels.test", "results.test"),
        ("SetF(rel=2)", "qrels.comment.test", "results.comment.test"),
    ],
)
def test_ir_measures_names_match_ir_measures(
    trec_eval_test: Path, theirs: str, qrels: str, run: str
) -> None:
    measure = ir_measures.parse_measure(theirs)
    expected = {
        m.query_id: m.value
        for m in ir_measures.iter_calc(
            [measure],
            ir_measures.read_trec_qrels(str(trec_eval_test / qrels)),
            ir_measures.read_trec_run(str(trec_eval_test / run)),
        )
    }
    got = _scores(trec_eval_test, qrels, run, str(parse_metric(f"ir_measures:{theirs}")))
    assert expected
    for qid, value in expected.items():
        assert got[qid] == pytest.approx(value, abs=1e-9), qid
