"""The label queue: which documents are unjudged, their order, the two file formats, reading
a filled queue back, and `retrieval-gate label-queue` on the example gate."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.core.model import Document
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.labels.queue import (
    COLUMNS,
    QueueItem,
    queue_format,
    read_judged_queue,
    render_queue,
    unjudged_items,
)
from retrieval_gate.pipeline.record import record_current
from tests.helpers.builders import EXAMPLE_BASELINE, queue_dataset, queue_keys, write
from tests.helpers.cli import run_cli


def item(**fields: object) -> QueueItem:
    values: dict[str, object] = {
        "query_id": "q1",
        "query": "reset password",
        "doc_id": "d1",
        "rank": 1,
        "new": True,
        "delta": -0.25,
        "metric": "ndcg@10",
        "title": "Reset",
        "text": "Open settings.",
    }
    values.update(fields)
    return QueueItem(**values)  # type: ignore[arg-type]


# ---- which documents, in which order ----------------------------------------------------


def test_items_sort_by_rank_then_most_regressed_then_ids() -> None:
    data = queue_dataset({"q1": {"j": 1}, "q2": {"j": 1}, "q3": {"j": 1}, "q4": {"j": 1}})
    top_k = {"q1": ["j", "a", "b"], "q2": ["c", "j"], "q3": ["e", "d"], "q4": ["f"]}
    deltas = {"q1": 0.1, "q2": -0.5, "q3": -0.5}  # q4 has none: last among equal ranks
    items = unjudged_items(data, top_k, k=10, metric="ndcg@10", deltas=deltas)
    assert queue_keys(items) == [
        ("q2", "c", 1),  # delta -0.5
        ("q3", "e", 1),  # delta -0.5, then by query id
        ("q4", "f", 1),  # no delta
        ("q3", "d", 2),
        ("q1", "a", 2),
        ("q1", "b", 3),
    ]
    assert [i.delta for i in items] == [-0.5, -0.5, None, -0.5, 0.1, 0.1]


def test_the_same_doc_id_in_two_queries_ties_on_query_id() -> None:
    data = queue_dataset({"b": {"j": 1}, "a": {"j": 1}})
    items = unjudged_items(data, {"b": ["x", "y"], "a": ["y", "x"]}, k=10, metric="ndcg@10")
    assert queue_keys(items) == [("a", "y", 1), ("b", "x", 1), ("a", "x", 2), ("b", "y", 2)]


def test_judged_docs_are_left_out_and_graded_below_zero_are_unjudged() -> None:
    data = queue_dataset({"q1": {"rel": 2, "nonrel": 0, "pooled": -1}})
    items = unjudged_items(
        data, {"q1": ["rel", "nonrel", "pooled", "absent"]}, k=10, metric="ndcg@10"
    )
    assert queue_keys(items) == [("q1", "pooled", 3), ("q1", "absent", 4)]


def test_only_the_top_k_and_labelled_queries_count() -> None:
    data = queue_dataset({"q1": {"j": 1}})
    top_k = {"q1": ["a", "b", "c"], "unlabelled": ["x"]}
    items = unjudged_items(data, top_k, k=2, metric="ndcg@10")
    assert queue_keys(items) == [("q1", "a", 1), ("q1", "b", 2)]


def test_new_compares_with_the_baseline_top_k_and_is_null_without_one() -> None:
    data = queue_dataset({"q1": {"j": 1}, "q2": {"j": 1}})
    top_k = {"q1": ["kept", "fresh"], "q2": ["other"]}
    without = unjudged_items(data, top_k, k=10, metric="ndcg@10")
    assert [(i.doc_id, i.new, i.delta) for i in without] == [
        ("kept", None, None),
        ("other", None, None),
        ("fresh", None, None),
    ]
    baseline_top_k = {"q1": ["kept", "gone"]}  # q2 retrieved nothing in the baseline
    with_baseline = unjudged_items(
        data, top_k, k=10, metric="ndcg@10", deltas={}, baseline_top_k=baseline_top_k
    )
    assert {i.doc_id: i.new for i in with_baseline} == {"kept": False, "fresh": True, "other": True}
    assert all(i.delta is None for i in with_baseline)  # no delta for these queries


def test_delta_is_rounded_to_four_decimals_without_negative_zero() -> None:
    data = queue_dataset({"q1": {"j": 1}, "q2": {"j": 1}})
    items = unjudged_items(
        data,
        {"q1": ["a"], "q2": ["b"]},
        k=10,
        metric="recall@10",
        deltas={"q1": -0.123456, "q2": -0.00001},
    )
    assert [(i.query_id, i.delta) for i in items] == [("q1", -0.1235), ("q2", 0.0)]
    assert json.dumps(items[1].delta) == "0.0"
    assert {i.metric for i in items} == {"recall@10"}


def test_title_and_text_come_from_the_corpus_when_it_has_the_doc() -> None:
    corpus = {"a": Document("a", title="Reset", text="Open settings.")}
    items = unjudged_items(
        queue_dataset({"q1": {"j": 1}}, corpus), {"q1": ["a", "b"]}, k=10, metric="ndcg@10"
    )
    assert [(i.doc_id, i.query, i.title, i.text) for i in items] == [
        ("a", "Q1", "Reset", "Open settings."),
        ("b", "Q1", None, None),
    ]
    no_corpus = unjudged_items(queue_dataset({"q1": {"j": 1}}), {"q1": ["a"]}, k=10, metric="m")
    assert (no_corpus[0].title, no_corpus[0].text) == (None, None)
    assert (no_corpus[0].grade, no_corpus[0].annotator) == (None, None)


def test_the_pairs_of_label_dependent_checks_come_first_with_the_baseline_s() -> None:
    data = queue_dataset({"q1": {"j": 1}, "q2": {"j": 1, "p": -1}, "q3": {"j": 1}})
    items = unjudged_items(
        data,
        {"q1": ["a", "j"], "q2": ["b", "j"]},
        k=10,
        metric="m",
        baseline_top_k={"q1": ["j", "z"], "q2": ["c", "b", "j", "p"], "q3": ["e"]},
        dependent={"q2", "q3"},
    )
    # q2 and q3 first: their current pairs, then the baseline's only (no current rank),
    # q3 too though the current run retrieved nothing for it; q1's baseline-only z is not
    # listed, its checks hold whatever it is.
    assert [(i.query_id, i.doc_id, i.rank, i.depends, i.new) for i in items] == [
        ("q2", "b", 1, True, False),
        ("q2", "c", None, True, False),
        ("q2", "p", None, True, False),
        ("q3", "e", None, True, False),
        ("q1", "a", 1, False, True),
    ]


# ---- writing ------------------------------------------------------------------------------


def test_jsonl_has_one_object_per_line_with_the_columns_in_order() -> None:
    text = render_queue([item(text='Café, "quoted"\nsecond line\u2028')], "jsonl")
    assert text == (
        '{"query_id": "q1", "query": "reset password", "doc_id": "d1", "rank": 1, '
        '"new": true, "delta": -0.25, "metric": "ndcg@10", "title": "Reset", '
        '"text": "Café, \\"quoted\\"\\nsecond line\u2028", "grade": null, "annotator": null, '
        '"depends": null, "people_grade": null, "judge_grade": null, "draw": null, '
        '"round": null, "rate": null, "weight": null, "p": null}\n'
    )
    assert list(json.loads(text)) == list(COLUMNS)


def test_csv_quotes_per_rfc_4180_and_writes_empty_cells_for_null() -> None:
    items = [
        item(text='a, "b"\nc'),
        item(query_id="q2", doc_id="d2", rank=2, new=None, delta=None, title=None, text=None),
        item(query_id="q3", new=False, delta=0.0),
    ]
    assert render_queue(items, "csv") == (
        "query_id,query,doc_id,rank,new,delta,metric,title,text,grade,annotator,depends,"
        "people_grade,judge_grade,draw,round,rate,weight,p\r\n"
        'q1,reset password,d1,1,true,-0.25,ndcg@10,Reset,"a, ""b""\nc",,,,,,,,,,\r\n'
        "q2,reset password,d2,2,,,ndcg@10,,,,,,,,,,,,\r\n"
        "q3,reset password,d1,1,false,0.0,ndcg@10,Reset,Open settings.,,,,,,,,,,\r\n"
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_equal_inputs_give_equal_bytes(fmt: str) -> None:
    def build() -> str:
        data = queue_dataset({"q2": {"j": 1}, "q1": {"j": 1}}, {"a": Document("a", "T", "x")})
        found = unjudged_items(
            data,
            {"q2": ["a", "b"], "q1": ["b", "a"]},
            k=10,
            metric="ndcg@10",
            deltas={"q1": -0.1, "q2": 0.2},
            baseline_top_k={"q1": ["a"]},
        )
        return render_queue(found, fmt)  # type: ignore[arg-type]

    first = build()
    assert first == build()
    assert first.count("q1") == 2


def test_format_comes_from_the_option_else_the_suffix_else_jsonl() -> None:
    assert queue_format("queue.csv") == "csv"
    assert queue_format("queue.CSV") == "csv"
    assert queue_format("queue.jsonl") == "jsonl"
    assert queue_format(None) == "jsonl"
    assert queue_format("queue.csv", "jsonl") == "jsonl"
    with pytest.raises(InputError, match="unknown label queue format 'xml'"):
        queue_format(None, "xml")


# ---- reading a filled queue back ----------------------------------------------------------


def queue_items() -> list[QueueItem]:
    return [
        item(doc_id="d1", text="first, with a comma"),
        item(doc_id="d2", rank=2, text="two\nlines"),
        item(query_id="q2", doc_id="d3", rank=3, new=None, delta=None, title=None, text=None),
    ]


def test_round_trip_jsonl(tmp_path: Path) -> None:
    lines = render_queue(queue_items(), "jsonl").splitlines()
    rows = [json.loads(line) for line in lines]
    rows[0]["grade"] = 2
    rows[0]["annotator"] = "alice"
    rows[2]["grade"] = "0"  # a grade typed as text counts too
    path = write(tmp_path, "queue.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    queue = read_judged_queue(path)
    assert [(j.query_id, j.doc_id, j.grade, j.annotator, j.line) for j in queue.judgments] == [
        ("q1", "d1", 2.0, "alice", 1),
        ("q2", "d3", 0.0, None, 3),
    ]
    assert queue.skipped == 1
    assert queue.source == str(path)
    assert queue.judgments[0].where == f"{path}:1"


def test_round_trip_csv_as_a_spreadsheet_saves_it(tmp_path: Path) -> None:
    rows = list(csv.reader(io.StringIO(render_queue(queue_items(), "csv"), newline="")))
    grade, annotator = rows[0].index("grade"), rows[0].index("annotator")
    rows[2][grade] = "1"  # the row with the two-line text
    rows[3][grade] = "3.0"
    rows[3][annotator] = " bob "
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    path = tmp_path / "queue.csv"
    path.write_bytes(b"\xef\xbb\xbf" + buffer.getvalue().encode("utf-8"))  # Excel's BOM
    queue = read_judged_queue(path)
    # The row after the two-line text starts on line 5 of the file.
    assert [(j.query_id, j.doc_id, j.grade, j.annotator, j.line) for j in queue.judgments] == [
        ("q1", "d2", 1.0, None, 3),
        ("q2", "d3", 3.0, "bob", 5),
    ]
    assert queue.skipped == 1


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_text_never_opens_as_a_formula(start: str) -> None:
    formula = f'{start}HYPERLINK("http://x", "y")'
    found = item(query_id=formula, query=formula, doc_id=formula, title=formula, text=formula)
    rows = list(csv.reader(io.StringIO(render_queue([found], "csv"), newline="")))
    cells = dict(zip(rows[0], rows[1], strict=True))
    for column in ("query_id", "query", "doc_id", "title", "text"):
        assert cells[column] == "'" + formula
    assert cells["delta"] == "-0.25"  # a number stays a number


def test_formula_safe_ids_read_back_as_written(tmp_path: Path) -> None:
    found = item(query_id="-q1", doc_id="=d1", text="@mention")
    rows = list(csv.reader(io.StringIO(render_queue([found], "csv"), newline="")))
    rows[1][rows[0].index("grade")] = "2"
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    path = write(tmp_path, "queue.csv", buffer.getvalue())
    judged = read_judged_queue(path).judgments
    assert [(j.query_id, j.doc_id, j.grade) for j in judged] == [("-q1", "=d1", 2.0)]


def test_the_format_is_detected_from_the_first_line_without_a_suffix(tmp_path: Path) -> None:
    jsonl = write(tmp_path, "filled", '{"query_id": "q1", "doc_id": "d1", "grade": 1}\n')
    assert [j.doc_id for j in read_judged_queue(jsonl).judgments] == ["d1"]
    as_csv = write(tmp_path, "filled.txt", "query_id,doc_id,grade\nq1,d2,1\n")
    assert [j.doc_id for j in read_judged_queue(as_csv).judgments] == ["d2"]


@pytest.mark.parametrize("grade", ['"high"', '"nan"', '"inf"', "true", "[1]"])
def test_a_grade_that_is_not_a_finite_number_names_the_line(tmp_path: Path, grade: str) -> None:
    path = write(
        tmp_path,
        "queue.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "grade": 1}\n\n'
        f'{{"query_id": "q1", "doc_id": "d2", "grade": {grade}}}\n',
    )
    with pytest.raises(InputError, match=r"queue\.jsonl:3: grade .* is not a finite number"):
        read_judged_queue(path)


def test_a_negative_grade_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "queue.csv", "query_id,doc_id,grade\nq1,d1,2\nq1,d2,-1\n")
    with pytest.raises(InputError, match=r"queue\.csv:3: grade '-1' is negative"):
        read_judged_queue(path)


def test_a_csv_grade_that_is_not_a_number_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "queue.csv", "query_id,doc_id,grade\nq1,d1,2\nq1,d2,1,5\nq1,d3,n/a\n")
    with pytest.raises(InputError, match=r"queue\.csv:4: grade 'n/a' is not a finite number"):
        read_judged_queue(path)


def test_a_missing_column_is_named_with_the_header_line(tmp_path: Path) -> None:
    path = write(tmp_path, "queue.csv", "\nquery_id,grade\nq1,1\n")
    with pytest.raises(InputError, match=r"queue\.csv:2: no doc_id column"):
        read_judged_queue(path)


def test_a_row_without_its_ids_names_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "queue.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "grade": 1}\n{"query_id": "q1", "grade": 1}\n',
    )
    with pytest.raises(InputError, match=r"queue\.jsonl:2: no doc_id"):
        read_judged_queue(path)
    empty_id = write(tmp_path, "queue.csv", "query_id,doc_id,grade\n,d1,1\n")
    with pytest.raises(InputError, match=r"queue\.csv:2: no query_id"):
        read_judged_queue(empty_id)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "queue.jsonl", '{"query_id": "q1", "doc_id": "d1"}\n{"query_id": \n')
    with pytest.raises(InputError, match=r"queue\.jsonl:2: invalid JSON"):
        read_judged_queue(path)
    deep = write(tmp_path, "deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match=r"deep\.jsonl:1: nested too deeply"):
        read_judged_queue(deep)


def test_one_annotator_grading_a_pair_twice_differently_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "queue.csv",
        "query_id,doc_id,grade,annotator\n"
        "q1,d1,2,alice\n"
        "q1,d1,1,bob\n"  # another annotator: fine
        "q1,d1,2,alice\n"  # the same grade again: fine
        "q1,d1,1,alice\n",
    )
    with pytest.raises(
        InputError, match=r"queue\.csv:5: query 'q1', doc 'd1' is graded 1 here and 2 on line 2"
    ):
        read_judged_queue(path)
    path.write_text("query_id,doc_id,grade,annotator\nq1,d1,2,alice\nq1,d1,1,bob\n")
    assert [j.grade for j in read_judged_queue(path).judgments] == [2.0, 1.0]


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_judged_queue(tmp_path / "nope.jsonl")


# ---- the command, on a copy of the example gate --------------------------------------------


def expected_queue(config_path: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Independently: the unjudged (query, doc) pairs of the regressed run's top 10, and
    those of them that entered the top 10 since the baseline."""
    config = load(config_path)
    current = record_current(config, cache=False)
    qrels = current.dataset.qrels.to_dict()
    baseline = read_baseline(config.resolve(config.baseline))
    unjudged = set()
    entered = set()
    for query_id, docs in current.record.top_k.items():
        for doc_id in docs[: config.k]:
            if qrels[query_id].get(doc_id, -1.0) < 0:
                unjudged.add((query_id, doc_id))
                if doc_id not in baseline.top_k.get(query_id, ()):
                    entered.add((query_id, doc_id))
    return unjudged, entered


def test_label_queue_lists_exactly_the_unjudged_docs_of_the_regressed_top_10(
    configs: Path,
) -> None:
    queue = configs / "q.jsonl"
    code, out, err = run_cli("label-queue", "-c", configs / "example-regressed.yaml", "-o", queue)
    assert code == 0, err
    assert out == ""
    assert "131/131 queries (0 failed" in err  # progress, without --quiet
    rows = [json.loads(line) for line in queue.read_text(encoding="utf-8").splitlines()]
    unjudged, entered = expected_queue(configs / "example-regressed.yaml")
    assert len(rows) == len(unjudged) > 0
    assert {(r["query_id"], r["doc_id"]) for r in rows} == unjudged
    assert {(r["query_id"], r["doc_id"]) for r in rows if r["new"]} == entered
    assert all(isinstance(r["new"], bool) and isinstance(r["delta"], float) for r in rows)
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    assert {r["metric"] for r in rows} == {"ndcg@10"}
    assert all(r["grade"] is None and r["annotator"] is None for r in rows)
    assert all(r["text"] for r in rows)  # the example's corpus has every retrieved doc
    queries = len({r["query_id"] for r in rows})
    assert (
        f"wrote {queue}: {len(rows)} unjudged documents in the top 10 of {queries} queries "
        f"({len(entered)} new since the baseline)"
    ) in err


def test_label_queue_from_a_check_result_puts_the_label_dependent_pairs_first(
    configs: Path,
) -> None:
    config = configs / "example-regressed.yaml"
    code, _, err = run_cli("label-queue", "-c", config, "-o", configs / "direct.jsonl", "--quiet")
    assert code == 0, err
    result = configs / "result.json"
    code, _, err = run_cli("check", "-c", config, "--quiet", "--json", result)
    assert code == 1, err
    code, _, err = run_cli(
        "label-queue", "-c", config, "--run", result, "-o", configs / "run.jsonl"
    )
    assert code == 0, err
    direct = [json.loads(line) for line in (configs / "direct.jsonl").read_text().splitlines()]
    rows = [json.loads(line) for line in (configs / "run.jsonl").read_text().splitlines()]
    assert direct
    assert all(r["depends"] is None for r in direct)  # no result: no bounds to go by
    # Every check of the example depends on its unjudged documents, the overall ones too: the
    # queue is then exactly the pairs the bounds count, the current top k's first (as the
    # queue without a result lists them), then those only the baseline's top k holds.
    holes = json.loads(result.read_text())["label_holes"]
    overall = next(h for h in holes if h["slice"] == "all" and h["metric"] == "ndcg@10")
    assert not overall["robust"]
    assert all(r["depends"] is True for r in rows)
    assert len(rows) == len({(r["query_id"], r["doc_id"]) for r in rows}) == overall["unjudged"]
    current = [r for r in rows if r["rank"] is not None]
    assert [{**r, "depends": None} for r in current] == direct
    assert rows[len(current) :] == [r for r in rows if r["rank"] is None]
    assert all(r["new"] is False for r in rows[len(current) :])
    # A baseline file as RESULT: its top k, compared with the config's baseline.
    code, out, err = run_cli(
        "label-queue", "-c", config, "--run", configs / EXAMPLE_BASELINE, "--limit", "3"
    )
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3
    assert all(r["new"] is False and r["delta"] == 0.0 for r in rows)
    assert "the first 3 of " in err


def test_label_queue_writes_csv_to_stdout_and_limits(configs: Path) -> None:
    config = configs / "example-regressed.yaml"
    code, out, err = run_cli(
        "label-queue", "-c", config, "--format", "csv", "--limit", "4", "--quiet"
    )
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[0] == list(COLUMNS)
    assert len(rows) == 5
    assert {row[3] for row in rows[1:]} == {"1"}  # the four most impactful are at rank 1
    assert "retrieval-gate: the first 4 of " in err
    assert "queries (0 failed" not in err  # --quiet: no progress line


def test_label_queue_without_a_baseline_leaves_new_and_delta_empty(configs: Path) -> None:
    text = (configs / "example-regressed.yaml").read_text(encoding="utf-8")
    config = configs / "no-baseline.yaml"
    config.write_text(text.replace("example/baseline.json", "none/baseline.json"))
    code, out, err = run_cli("label-queue", "-c", config, "--quiet")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows
    assert all(r["new"] is None and r["delta"] is None for r in rows)
    assert "no baseline at " in err
    assert "`new` and `delta` are empty" in err


def test_label_queue_reads_a_run_file_as_check_does(configs: Path) -> None:
    config = configs / "example-regressed.yaml"
    code, _, err = run_cli("label-queue", "-c", config, "-o", configs / "direct.jsonl", "--quiet")
    assert code == 0, err
    run = configs / "run.trec"
    code, _, err = run_cli("run", "-c", config, "-o", run, "--quiet")
    assert code == 0, err
    code, _, err = run_cli(
        "label-queue", "-c", config, "--run", run, "-o", configs / "from-run.jsonl"
    )
    assert code == 0, err
    assert (configs / "from-run.jsonl").read_bytes() == (configs / "direct.jsonl").read_bytes()
    empty = configs / "empty.trec"
    empty.write_text("")
    # An empty run answered no labelled query: bad input, not a queue with nothing in it.
    code, out, err = run_cli("label-queue", "-c", config, "--run", empty, "--quiet")
    assert code == 2
    assert out == ""
    assert "empty.trec: shares no query id with the labelled set" in err


def test_label_queue_bad_input_is_exit_2(configs: Path) -> None:
    bad = configs / "bad.json"
    bad.write_text('{"schema_version": 1, "current": []}')
    code, _, err = run_cli("label-queue", "-c", configs / "example-regressed.yaml", "--run", bad)
    assert code == 2
    assert "bad.json" in err
    code, _, err = run_cli("label-queue", "-c", configs / "example.yaml", "--limit", "0")
    assert code == 2
    assert "expected a number of rows" in err


def test_merging_a_judged_queue_changes_the_next_check_accordingly(configs: Path) -> None:
    """The loop the issue asks for: queue the unjudged documents that entered the regressed
    top 10, judge them, merge them into the qrels, check again. Both sides are scored under
    the new judgments: the baseline from its stored top 10, the current run afresh."""
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import read_qrels, run_from_dict

    config_path = configs / "example-regressed.yaml"
    before = configs / "before.json"
    assert run_cli("check", "-c", config_path, "--quiet", "--json", before)[0] == 1
    queue = configs / "q.jsonl"
    assert run_cli("label-queue", "-c", config_path, "--run", before, "-o", queue)[0] == 0
    rows = [json.loads(line) for line in queue.read_text(encoding="utf-8").splitlines()]
    entered = [row for row in rows if row["new"]]
    # An annotator's verdict: the new documents at ranks 1-3 are relevant, the rest are not.
    for row in rows:
        row["grade"] = (2 if row["rank"] <= 3 else 0) if row["new"] else None
    queue.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    qrels_path = configs / "example" / "qrels" / "test.tsv"
    code, out, _ = run_cli("qrels", "merge", qrels_path, queue)
    assert code == 0
    relevant = sum(1 for row in entered if row["rank"] <= 3)
    assert f"added {len(entered)} judgments ({relevant} relevant)" in out

    after = configs / "after.json"
    code, _, err = run_cli("check", "-c", config_path, "--quiet", "--json", after)
    assert code in (0, 1)
    assert "the baseline's stored top-10 rankings were re-scored" in err
    result = json.loads(after.read_text(encoding="utf-8"))
    old = json.loads(before.read_text(encoding="utf-8"))
    qrels = read_qrels(qrels_path)
    current_run = run_from_dict({q: list(d) for q, d in result["current"]["top_k"].items()})
    baseline = read_baseline(configs / EXAMPLE_BASELINE)
    baseline_run = run_from_dict({q: list(d) for q, d in baseline.top_k.items()})
    metrics = list(result["current"]["scores"])
    current_scores = evaluate(current_run, qrels, metrics)
    baseline_scores = evaluate(baseline_run, qrels, metrics)
    for metric in metrics:
        assert result["current"]["scores"][metric] == current_scores.values[metric].tolist()
        assert result["baseline"]["scores"][metric] == baseline_scores.values[metric].tolist()
    # The judgments moved the current run's numbers: new relevant documents count now.
    assert result["current"]["scores"]["ndcg@10"] != old["current"]["scores"]["ndcg@10"]
    assert result["unjudged"]["new"] < old["unjudged"]["new"]


@pytest.mark.parametrize("shown", ["nan", "-1", "two", "inf"])
def test_a_people_grade_that_is_no_grade_names_its_line(tmp_path: Path, shown: str) -> None:
    """The second look's `people_grade` is read as a grade: a value that is none is refused
    at its line, not taken as a grade to revise."""
    path = tmp_path / "second.csv"
    path.write_text(
        "query_id,doc_id,grade,people_grade\nq1,d1,2,1\nq1,d2,3," + shown + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"second\.csv:3: people_grade"):
        read_judged_queue(path)
