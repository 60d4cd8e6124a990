"""Scoring a run file batch by batch gives exactly what scoring it whole gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.metrics import Scores, evaluate
from retrieval_gate.metrics.batches import evaluate_run_file
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.cli import run_cli

METRICS = [
    "ap",
    "ap@100",
    "ndcg(gain=linear)",
    "ndcg@10",
    "precision@5",
    "recall@100",
    "r_precision",
    "bpref",
    "rr",
    "hit_rate@10",
    "err(g_max=3)@20",
    "rbp(p=0.8)",
    "infap",
    "judged@10",
    "auc",
    "ap_condensed",
    "num_rel",
    "num_rel_ret",
    "num_ret",
]
BATCHES = [1, 200, 1 << 10, 1 << 14, 1 << 20]
"""Batch sizes in bytes: smaller than a line, than a query, a few queries, the whole file."""


def assert_same(batched: Scores | None, whole: Scores) -> None:
    """Equal queries and values: exactly, but for the last bits of sums over the grade
    matrix, whose width (the deepest ranking of the batch, not of the whole run) sets the
    order in which BLAS adds the terms."""
    assert batched is not None
    assert batched.query_ids == whole.query_ids
    assert list(batched.values) == list(whole.values)
    for name, values in whole.values.items():
        np.testing.assert_allclose(batched.values[name], values, rtol=1e-14, err_msg=name)
    assert batched.missing_queries == whole.missing_queries
    assert batched.ignored_queries == whole.ignored_queries


def scored_whole(qrels_path: Path, run_path: Path) -> Scores:
    return evaluate(read_run(run_path), read_qrels(qrels_path), METRICS)


def write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_text(end.join(lines) + end, newline="")
    return path


@pytest.fixture
def trec_files(trec_eval_test: Path, tmp_path: Path) -> tuple[Path, Path]:
    """trec_eval's test run with single spaces (the fast reader's clean form), rows as they
    are: not sorted by score within a query. One labelled query (302) is left out of the
    run and the run gets an unlabelled one."""
    lines = [
        " ".join(line.split())
        for line in (trec_eval_test / "results.test").read_text().splitlines()
    ]
    lines = [line for line in lines if not line.startswith("302 ")]
    lines += [f"999 Q0 doc{i} {i} {10 - i}.5 extra" for i in range(3)]
    return trec_eval_test / "qrels.test", write(tmp_path / "run.txt", lines)


@pytest.mark.parametrize("batch_bytes", BATCHES)
def test_unsorted_trec_eval_run_equals_the_whole_file(
    trec_files: tuple[Path, Path], batch_bytes: int
) -> None:
    qrels_path, run_path = trec_files
    whole = scored_whole(qrels_path, run_path)
    assert whole.missing_queries == ("302",)
    assert whole.ignored_queries == ("999",)
    batched = evaluate_run_file(run_path, read_qrels(qrels_path), METRICS, batch_bytes=batch_bytes)
    assert_same(batched, whole)


def deep_case(tmp_path: Path, *, sort: bool, seed: int = 7) -> tuple[Path, Path]:
    """Queries whose ids share prefixes (1, 10, 100), 2-decimal scores with many ties in file
    order (not trec_eval's doc id order), 40 results each."""
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for q in ["1", "10", "100", "11", "2", "20", "3"]:
        docs = rng.choice(200, size=40, replace=False)
        scores = np.round(rng.choice([1.0, 0.9, 0.85, 0.5], size=40), 2)
        order = np.argsort(-scores, kind="stable") if sort else np.arange(40)
        run += [f"{q} Q0 d{docs[i]} {r} {scores[i]:.2f} t" for r, i in enumerate(order, 1)]
        judged = rng.choice(200, size=15, replace=False)
        qrels += [f"{q} 0 d{d} {rng.integers(0, 3)}" for d in judged]
    return write(tmp_path / "qrels.txt", qrels), write(tmp_path / "run.txt", run)


@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("batch_bytes", [*BATCHES, 700, 1500])
def test_ties_and_split_queries_across_batches(
    tmp_path: Path, sort: bool, batch_bytes: int
) -> None:
    """Batch ends fall inside a query's rows and inside runs of tied scores: the query is
    never split, and ties break by doc id descending as trec_eval's do."""
    qrels_path, run_path = deep_case(tmp_path, sort=sort)
    batched = evaluate_run_file(run_path, read_qrels(qrels_path), METRICS, batch_bytes=batch_bytes)
    assert_same(batched, scored_whole(qrels_path, run_path))


def test_a_query_met_again_later_is_merged_as_trec_eval_does(tmp_path: Path) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    lines = run_path.read_text().splitlines()
    moved = [line for line in lines if line.startswith("10 ")][:5]
    rest = [line for line in lines if line not in moved]
    write(run_path, rest + moved)  # query 10's last rows come after every other query's
    qrels = read_qrels(qrels_path)
    whole = scored_whole(qrels_path, run_path)
    # Within one batch the rows are merged there; across batches the file is scored whole.
    assert_same(evaluate_run_file(run_path, qrels, METRICS, batch_bytes=1 << 20), whole)
    assert evaluate_run_file(run_path, qrels, METRICS, batch_bytes=200) is None
    merged = run_cli("evaluate", qrels_path, run_path, "-m", "ap", "ndcg@10", "-f", "json")
    cleaned = run_cli("evaluate", qrels_path, write(tmp_path / "sorted.txt", lines), "-m", "ap")
    assert merged.ret == 0
    assert cleaned.ret == 0
    assert '"ap": ' + str(whole.mean()["ap"]) in merged.out.replace("\n", "")


@pytest.mark.parametrize("batch_bytes", BATCHES)
def test_crlf_and_no_final_newline(tmp_path: Path, batch_bytes: int) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    lines = run_path.read_text().splitlines()
    whole = scored_whole(qrels_path, run_path)
    qrels = read_qrels(qrels_path)
    crlf = write(tmp_path / "crlf.txt", lines, end="\r\n")
    assert evaluate_run_file(crlf, qrels, METRICS, batch_bytes=batch_bytes) is None
    assert_same(scored_whole(qrels_path, crlf), whole)  # what the command falls back to
    bare = tmp_path / "bare.txt"
    bare.write_text("\n".join(lines))
    assert_same(evaluate_run_file(bare, qrels, METRICS, batch_bytes=batch_bytes), whole)


def trec_lines(out: str) -> dict[tuple[str, str], str]:
    """`-f trec` output as {(metric, query): printed value}."""
    rows = [line.split("\t") for line in out.splitlines()]
    return {(name.strip(), qid): value for name, qid, value in rows}


def test_command_output_equals_the_whole_file_path(tmp_path: Path) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=False)
    result = run_cli("evaluate", qrels_path, run_path, "-m", *METRICS, "-q", "-f", "trec")
    assert result.ret == 0, result.err
    whole = scored_whole(qrels_path, run_path)
    printed = trec_lines(result.out)
    for name, values in whole.values.items():
        for qid, value in zip(whole.query_ids, values.tolist(), strict=True):
            if not np.isnan(value):
                assert float(printed[name, qid]) == pytest.approx(value, abs=0.5e-4), name


@pytest.mark.parametrize(
    "line",
    [
        "10 Q0 d1 1 0.5 t\x1b[31m",
        "10 Q0 d\x1b]8;;x\x07 1 0.5 t",
        "::error::x Q0 d1 1 0.5 t",
        "10 Q0 d1 1 nan t",
        "10 Q0 d1 1 1e999 t",
        "10 Q0 d1 1 0.5",
        "10 Q0 d1 1 0.5 t\r",
        "",
        "# a comment",
        "10\u00a0Q0 d1 1 0.5 t",
    ],
)
def test_a_bad_line_in_a_later_batch_gives_what_the_whole_file_gives(
    tmp_path: Path, line: str
) -> None:
    """The fast path declines after earlier batches were scored and the exact reader reads
    the whole file: the same error naming the line, or the same values."""
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    lines = run_path.read_text().splitlines()
    lines.insert(241, line)
    write(run_path, lines)
    result = run_cli("evaluate", qrels_path, run_path, "-m", "ap", "-f", "trec")
    try:
        whole = scored_whole(qrels_path, run_path)
    except InputError as error:
        message = str(error)
    else:
        message = ""
    if message:
        assert result.ret == 2
        assert message in result.err
        assert ":242:" in result.err
        return
    assert result.ret == 0, result.err
    assert float(trec_lines(result.out)["ap", "all"]) == pytest.approx(
        whole.mean()["ap"], abs=0.5e-4
    )


def test_a_doc_retrieved_twice_in_a_later_batch_is_named(tmp_path: Path) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    lines = run_path.read_text().splitlines()
    lines.insert(250, lines[249])
    write(run_path, lines)
    result = run_cli("evaluate", qrels_path, run_path, "-m", "ap")
    assert result.ret == 2
    assert "250" in result.err
    assert "251" in result.err


def test_tabs_and_a_byte_order_mark(tmp_path: Path) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    lines = [line.replace(" ", "\t") for line in run_path.read_text().splitlines()]
    tabbed = tmp_path / "tabbed.txt"
    tabbed.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    qrels = read_qrels(qrels_path)
    whole = scored_whole(qrels_path, run_path)
    for batch_bytes in (1, 300, 1 << 20):
        assert_same(evaluate_run_file(tabbed, qrels, METRICS, batch_bytes=batch_bytes), whole)


def test_diversity_metrics_take_the_whole_file_path(tmp_path: Path) -> None:
    qrels_path, run_path = deep_case(tmp_path, sort=True)
    assert evaluate_run_file(run_path, read_qrels(qrels_path), ["alpha_ndcg@10"]) is None
