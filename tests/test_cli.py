"""`retrieval-gate` command line: output formats, exit codes, and trec_eval's printed values."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.cli import main
from retrieval_gate.metrics import MetricSpec, parse_metric

ROOT = Path(__file__).resolve().parents[1]
TINY_QRELS = str(ROOT / "configs" / "tiny" / "qrels.txt")
TINY_RUN = str(ROOT / "configs" / "tiny" / "run.txt")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_table_lists_metrics_in_the_order_asked() -> None:
    code, out, err = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "rr@10", "NDCG@10")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "all"]
    assert [line.split()[0] for line in lines[1:3]] == ["rr@10", "ndcg@10"]
    assert "api-rate-limit" in err
    assert "pricing-page" in err


def test_json_has_full_precision_and_every_labelled_query() -> None:
    code, out, _ = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "ap", "P@5", "-f", "json")
    assert code == 0
    document = json.loads(out)
    assert document["metrics"] == ["ap", "precision@5"]
    assert list(document["per_query"]) == sorted(document["per_query"])
    assert len(document["per_query"]) == document["num_queries"] == 5
    assert document["per_query"]["api-rate-limit"] == {"ap": 0.0, "precision@5": 0.0}
    assert document["missing_queries"] == ["api-rate-limit"]
    assert document["ignored_queries"] == ["pricing-page"]
    assert document["per_query"]["reset-password"]["precision@5"] == 0.6


def test_bad_metrics_are_all_reported_with_exit_2() -> None:
    code, out, err = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "ndgc@10", "precision")
    assert code == 2
    assert out == ""
    assert "did you mean 'ndcg'" in err
    assert "precision needs a cutoff" in err


def test_bad_input_file_is_exit_2_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "qrels.txt"
    bad.write_text("q1 0 d1 1\nq1 0 d2\n")
    code, _, err = run_cli("evaluate", str(bad), TINY_RUN)
    assert code == 2
    assert f"{bad}:2:" in err


def test_usage_error_is_exit_2() -> None:
    code, _, err = run_cli("evaluate", TINY_QRELS)
    assert code == 2
    assert "usage" in err


def test_metrics_command_lists_every_metric() -> None:
    code, out, _ = run_cli("metrics")
    assert code == 0
    for name in ("ndcg", "ap", "rr", "precision", "recall", "bpref", "err", "rbp", "judged"):
        assert f"\n{name}  (" in "\n" + out


def test_console_script_runs_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "retrieval_gate", "evaluate", TINY_QRELS, TINY_RUN, "-f", "trec"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("ndcg@10")


# trec_eval measure -> our metric, for the measures `evaluate -f trec` is compared on.
TREC_EVAL_NAMES = {
    "map": "ap",
    "map_cut_100": "ap@100",
    "P_5": "precision@5",
    "P_1000": "precision@1000",
    "recall_100": "recall@100",
    "ndcg": "ndcg(gain=linear)",
    "ndcg_cut_10": "ndcg(gain=linear)@10",
    "Rprec": "r_precision",
    "bpref": "bpref",
    "recip_rank": "rr",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
}


def with_rel(metric: str, rel: int) -> str:
    """`metric` with its binary relevance threshold set to `rel` (if it has one)."""
    spec = parse_metric(metric)
    params = tuple((name, rel if name == "rel" else value) for name, value in spec.params)
    return str(MetricSpec(spec.name, params, spec.k))


@pytest.mark.parametrize(
    ("qrels", "run", "expected", "rel"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1),
        ("qrels.test", "results.trunc", "out.test.aqc", 1),
        ("qrels.rel_level", "results.test", "out.test.aql", 2),
    ],
)
def test_trec_format_prints_trec_eval_values(
    trec_eval_test: Path, qrels: str, run: str, expected: str, rel: int
) -> None:
    metrics = [with_rel(metric, rel) for metric in TREC_EVAL_NAMES.values()]
    code, out, _ = run_cli(
        "evaluate",
        str(trec_eval_test / qrels),
        str(trec_eval_test / run),
        "-q",
        "-f",
        "trec",
        "-m",
        *metrics,
    )
    assert code == 0
    printed = {}
    for line in out.splitlines():
        name, qid, value = (field.strip() for field in line.split("\t"))
        printed[name, qid] = value
    by_trec_name = dict(zip(TREC_EVAL_NAMES, metrics, strict=True))
    compared = 0
    for line in (trec_eval_test / expected).read_text().splitlines():
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if measure in by_trec_name:
            assert printed[by_trec_name[measure], qid] == value, (measure, qid)
            compared += 1
    assert compared == len(TREC_EVAL_NAMES) * 4
