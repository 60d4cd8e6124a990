"""Metric dialects: trec_eval, ir_measures and ranx names read with their tool's meaning."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.errors import InputError, MetricError
from retrieval_gate.metrics import Scores, evaluate, parse_metric
from retrieval_gate.metrics.dialects import DIALECTS
from retrieval_gate.metrics.explain import mapping
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

TINY = CONFIGS / "tiny"

# (tool, name) -> our canonical name: the mapping tables.
MAPPED = {
    ("trec_eval", "ndcg"): "ndcg(gain=linear)",
    ("trec_eval", "ndcg_cut_10"): "ndcg(gain=linear)@10",
    ("trec_eval", "P_10"): "precision@10",
    ("trec_eval", "map"): "ap",
    ("trec_eval", "map_cut_100"): "ap@100",
    ("trec_eval", "recip_rank"): "rr",
    ("trec_eval", "Rprec"): "r_precision",
    ("trec_eval", "bpref"): "bpref",
    ("trec_eval", "success_10"): "hit_rate@10",
    ("trec_eval", "recall_100"): "recall@100",
    ("trec_eval", "num_rel_ret"): "num_rel_ret",
    ("ir_measures", "nDCG@10"): "ndcg(gain=linear)@10",
    ("ir_measures", "nDCG(dcg=exp-log2)@10"): "ndcg@10",
    ("ir_measures", "AP@100"): "ap@100",
    ("ir_measures", "RR@10"): "rr@10",
    ("ir_measures", "R@100"): "recall@100",
    ("ir_measures", "P(rel=2)@10"): "precision(rel=2)@10",
    ("ir_measures", "Judged@10"): "judged(of=retrieved)@10",
    ("ir_measures", "Success@10"): "hit_rate@10",
    ("ir_measures", "NumRet(rel=1)"): "num_rel_ret",
    ("ranx", "ndcg@10"): "ndcg(gain=linear)@10",
    ("ranx", "ndcg_burges@10"): "ndcg@10",
    ("ranx", "dcg@10"): "dcg(gain=linear)@10",
    ("ranx", "map@100"): "ap@100",
    ("ranx", "mrr@10"): "rr@10",
    ("ranx", "mrr"): "rr",
    ("ranx", "hits@5"): "num_rel_ret@5",
    ("ranx", "precision@10"): "precision@10",
    ("ranx", "recall@100"): "recall@100",
    ("ranx", "hit_rate@10"): "hit_rate@10",
    ("ranx", "r-precision"): "r_precision",
    ("ranx", "map@100-l2"): "ap(rel=2)@100",
}

# A peer's name -> the trec_eval measure it computes (ir_measures' pytrec_eval provider;
# ranx's docs and code follow trec_eval for these), checked against trec_eval's own output.
VIA_TREC_EVAL = {
    ("ir_measures", "nDCG@10"): "ndcg_cut_10",
    ("ir_measures", "nDCG"): "ndcg",
    ("ir_measures", "AP@100"): "map_cut_100",
    ("ir_measures", "AP"): "map",
    ("ir_measures", "RR"): "recip_rank",
    ("ir_measures", "R@100"): "recall_100",
    ("ir_measures", "P@10"): "P_10",
    ("ir_measures", "Success@10"): "success_10",
    ("ir_measures", "Rprec"): "Rprec",
    ("ir_measures", "Bpref"): "bpref",
    ("ranx", "ndcg@10"): "ndcg_cut_10",
    ("ranx", "ndcg"): "ndcg",
    ("ranx", "map@100"): "map_cut_100",
    ("ranx", "map"): "map",
    ("ranx", "mrr"): "recip_rank",
    ("ranx", "precision@10"): "P_10",
    ("ranx", "recall@100"): "recall_100",
    ("ranx", "hit_rate@10"): "success_10",
    ("ranx", "r-precision"): "Rprec",
    ("ranx", "bpref"): "bpref",
}
TREC_EVAL_NAMES = [
    "ndcg", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_1000", "P_5", "P_10", "P_1000", "map",
    "map_cut_10", "map_cut_100", "recip_rank", "Rprec", "bpref", "success_1", "success_10",
    "recall_10", "recall_100", "num_ret", "num_rel", "num_rel_ret",
]  # fmt: skip
CASES = ("out.test.aq", "out.test.aqc", "out.comment.test")  # relevance level 1
INPUTS = {
    "out.test.aq": ("qrels.test", "results.test"),
    "out.test.aqc": ("qrels.test", "results.trunc"),
    "out.comment.test": ("qrels.comment.test", "results.comment.test"),
}
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}


@functools.cache
def printed(folder: Path, out: str) -> dict[str, dict[str, str]]:
    """trec_eval's printed measure -> qid -> value."""
    values: dict[str, dict[str, str]] = {}
    for line in (folder / out).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        values.setdefault(measure, {})[qid] = value
    return values


@functools.cache
def scores(folder: Path, out: str, names: tuple[str, ...], dialect: str | None) -> Scores:
    qrels, run = INPUTS[out]
    specs = [parse_metric(name, dialect=dialect) for name in names]
    return evaluate(read_run(folder / run), read_qrels(folder / qrels), specs)


def assert_printed(folder: Path, column: Scores, name: str, measure: str, out: str) -> None:
    spec = str(parse_metric(name))
    values = printed(folder, out)[measure]
    if set(values) != {"all"}:
        assert set(values) - {"all"} == set(column.query_ids)
    for qid, value in values.items():
        if qid == "all":
            total = column.values[spec].sum()
            ours = float(total if measure in COUNTS else column.mean()[spec])
        else:
            ours = float(column.values[spec][column.query_ids.index(qid)])
        if measure in COUNTS:
            assert ours == int(value), (measure, qid)
        else:
            assert abs(ours - float(value)) <= 0.5e-4 + 1e-12, (measure, qid, ours, value)


@pytest.mark.parametrize("out", CASES)
def test_trec_eval_names_give_trec_eval_values(trec_eval_test: Path, out: str) -> None:
    """The real proof: `metrics_dialect: trec_eval` names equal what trec_eval printed."""
    names = tuple(n for n in TREC_EVAL_NAMES if n in printed(trec_eval_test, out))
    assert len(names) >= 10
    got = scores(trec_eval_test, out, names, "trec_eval")
    for name in names:
        assert_printed(trec_eval_test, got, str(parse_metric(name, dialect="trec_eval")), name, out)
    prefixed = scores(trec_eval_test, out, tuple(f"trec_eval:{n}" for n in names), None)
    assert prefixed.values.keys() == got.values.keys()


@pytest.mark.parametrize(("tool", "name"), list(VIA_TREC_EVAL))
def test_peer_names_give_the_trec_eval_measure_they_compute(
    trec_eval_test: Path, tool: str, name: str
) -> None:
    measure = VIA_TREC_EVAL[tool, name]
    cases = [out for out in CASES if measure in printed(trec_eval_test, out)]
    assert cases
    for out in cases:
        got = scores(trec_eval_test, out, (name,), tool)
        assert_printed(
            trec_eval_test,
            got,
            str(parse_metric(name, dialect=tool)),
            VIA_TREC_EVAL[tool, name],
            out,
        )


def test_ranx_hits_is_the_count_of_relevant_in_the_top_k(trec_eval_test: Path) -> None:
    got = scores(trec_eval_test, "out.test.aq", ("hits@5",), "ranx")
    for qid, value in printed(trec_eval_test, "out.test.aq")["P_5"].items():
        if qid != "all":
            ours = got.values["num_rel_ret@5"][got.query_ids.index(qid)]
            assert ours == round(float(value) * 5)


@pytest.mark.parametrize(("tool", "name"), list(MAPPED))
def test_mapped_names_equal_our_canonical_per_query(
    trec_eval_test: Path, tool: str, name: str
) -> None:
    canonical = MAPPED[tool, name]
    assert str(parse_metric(name, dialect=tool)) == canonical
    assert parse_metric(f"{tool}:{name}") == parse_metric(canonical)
    theirs = scores(trec_eval_test, "out.test.aq", (name,), tool)
    ours = scores(trec_eval_test, "out.test.aq", (canonical,), None)
    assert theirs.query_ids == ours.query_ids
    assert list(theirs.values[canonical]) == list(ours.values[canonical])


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (
            "ndcg_cut_10",
            "'ndcg_cut_10' is trec_eval's name, not ours: write 'ndcg(gain=linear)@10'",
        ),
        ("P_10", "write 'precision@10' (or write trec_eval:P_10)"),
        ("map_cut_100", "write 'ap@100'"),
        ("success_10", "write 'hit_rate@10'"),
        ("ndcg_burges@10", "is ranx's name, not ours: write 'ndcg@10'"),
        ("gm_map", "'gm_map' is trec_eval's name, but we have no equivalent yet"),
    ],
)
def test_other_tools_names_are_refused_with_ours(name: str, says: str) -> None:
    with pytest.raises(MetricError) as error:
        parse_metric(name)
    assert says in str(error.value)


def test_our_names_stay_ours_and_our_errors_stay_ours() -> None:
    assert str(parse_metric("nDCG@10")) == "ndcg@10"  # exp gain: ours, unchanged
    assert str(parse_metric("map")) == "ap"
    with pytest.raises(MetricError, match="precision needs a cutoff"):
        parse_metric("precision")


@pytest.mark.parametrize(
    ("name", "dialect", "says"),
    [
        ("precision", "ranx", "without @k it scores the whole run"),
        ("ndcg@10-l2", "ranx", "-l2 drops the grades below 2"),
        ("rbp", "ranx", "its rbp is not verified against ours yet"),
        ("ERR@10", "ir_measures", "ir_measures' name, but we have no equivalent"),
        ("Bpref(judged_only=True)", "ir_measures", "cannot read its parameter"),
        ("gm_map", "trec_eval", "we have no equivalent yet"),
    ],
)
def test_dialect_names_we_cannot_read_are_refused(name: str, dialect: str, says: str) -> None:
    with pytest.raises(MetricError, match=re.escape(says)):
        parse_metric(name, dialect=dialect)
    with pytest.raises(MetricError, match=re.escape(says)):
        parse_metric(f"{dialect}:{name}")


def test_dialect_falls_back_to_our_names() -> None:
    assert str(parse_metric("err(g_max=3)@20", dialect="ranx")) == "err(g_max=3)@20"
    assert str(parse_metric("ndcg(gain=exp)@10", dialect="trec_eval")) == "ndcg@10"


def config(tmp_path: Path, metrics: str, top: str = "") -> Path:
    for name in ("qrels.txt", "queries.jsonl", "corpus.jsonl"):
        shutil.copy(TINY / name, tmp_path / name)
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(
        "version: 1\ndataset: {queries: queries.jsonl, qrels: qrels.txt, corpus: corpus.jsonl}\n"
        f"retriever: {{type: bm25}}\n{top}metrics:\n{metrics}"
    )
    return path


def test_config_dialect_canonicalises_the_keys(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        "  ndcg_cut_10: {max_drop: 2pt}\n  P_10: {}\n  recip_rank: {}\n",
        "metrics_dialect: trec_eval\n",
    )
    loaded = load(path)
    assert list(loaded.metrics) == ["ndcg(gain=linear)@10", "precision@10", "rr"]
    assert str(loaded.metrics["ndcg(gain=linear)@10"].max_drop) == "2pt"


def test_config_per_name_prefix(tmp_path: Path) -> None:
    path = config(tmp_path, "  ranx:ndcg@10: {max_drop: 2pt}\n  ndcg@10: {}\n  mrr@10: {}\n")
    loaded = load(path)
    assert list(loaded.metrics) == ["ndcg(gain=linear)@10", "ndcg@10", "mrr@10"]


def test_config_without_dialect_refuses_a_trec_eval_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=re.escape("metrics_dialect: trec_eval")):
        load(config(tmp_path, "  ndcg_cut_10: {}\n"))


def test_config_same_metric_twice_across_dialects(tmp_path: Path) -> None:
    path = config(tmp_path, "  trec_eval:ndcg_cut_10: {}\n  ranx:ndcg@10: {}\n")
    with pytest.raises(InputError, match="the same metric as"):
        load(path)


def test_counts_refuse_a_drop_in_points_but_are_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"num_rel_ret@5 is a count .* report-only"):
        load(config(tmp_path, "  ndcg@10: {}\n  ranx:hits@5: {max_drop: 2pt}\n"))
    with pytest.raises(InputError, match="num_ret is a count"):
        load(config(tmp_path, "  ndcg@10: {}\n  num_ret: {max_drop: 3%}\n"))
    loaded = load(config(tmp_path, "  ndcg@10: {}\n  ranx:hits@5: {}\n  num_ret: {min: 5}\n"))
    assert list(loaded.metrics) == ["ndcg@10", "num_rel_ret@5", "num_ret"]


def test_hits_is_deprecated_with_a_note(tmp_path: Path) -> None:
    loaded = load(config(tmp_path, "  hits@5: {}\n  ndcg(gain=linear)@10: {}\n"))
    assert list(loaded.metrics) == ["hits@5", "ndcg(gain=linear)@10"]  # still hit_rate
    (note,) = loaded.notes
    assert "hits@5 is deprecated" in note
    assert "write hit_rate@5" in note
    assert "num_rel_ret@5" in note


def test_bare_ndcg_notes_its_gain(tmp_path: Path) -> None:
    loaded = load(config(tmp_path, "  ndcg@10: {}\n  trec_eval:ndcg_cut_5: {}\n"))
    (note,) = loaded.notes
    assert "ndcg@10 uses exponential gain" in note
    assert "write ndcg(gain=linear)@10 for theirs" in note


def test_config_validate_prints_the_notes(tmp_path: Path) -> None:
    path = config(tmp_path, "  hits@5: {}\n  ndcg@10: {}\n")
    code, _, err = run_cli("config", "validate", "-c", str(path))
    assert code == 0
    assert "note:" in err
    assert "hits@5 is deprecated" in err
    assert "exponential gain" in err


@pytest.mark.parametrize("dialect", DIALECTS)
def test_metrics_dialect_lists_the_mapping(dialect: str) -> None:
    code, text, _ = run_cli("metrics", "--dialect", dialect)
    assert code == 0
    for tool, ours in mapping(dialect):
        assert re.search(rf"^  {re.escape(tool)} +-> {re.escape(ours)}$", text, re.MULTILINE)
    expected = {
        "trec_eval": "ndcg_cut_10  ",
        "ir_measures": "nDCG@10",
        "ranx": "hits@5",
    }[dialect]
    assert expected in text
    if dialect == "ranx":
        assert re.search(r"hits@5 +-> num_rel_ret@5", text)


def test_only_a_config_is_told_of_metrics_dialect(tmp_path: Path) -> None:
    # `evaluate` takes no metrics_dialect key: it was told to declare one all the same.

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    code, _, err = run_cli("evaluate", str(qrels), str(run), "-m", "P_10")
    assert code == 2
    assert "metrics_dialect" not in err
    assert "write 'precision@10' (or write trec_eval:P_10)" in err
    with pytest.raises(MetricError, match=r"or declare `metrics_dialect: trec_eval`"):
        parse_metric("P_10", in_config=True)
