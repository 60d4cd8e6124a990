"""Merging filled label queues into qrels files: each format, existing bytes kept, annotators,
idempotence, conflicts, and `retrieval-gate qrels merge`."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from retrieval_gate.datasets.draws import Draw, draws_path, read_draws
from retrieval_gate.errors import InputError
from retrieval_gate.labels.merge import describe_merge, merge_judgments
from retrieval_gate.labels.queue import QueueJudgment, read_judged_queue
from retrieval_gate.readers import read_judgments, read_qrels
from tests.helpers.builders import write
from tests.helpers.cli import run_cli


def row(
    query_id: str, doc_id: str, grade: float, annotator: str | None = None, line: int = 1
) -> QueueJudgment:
    return QueueJudgment(query_id, doc_id, grade, annotator, line, "queue.jsonl")


# ---- each format ----------------------------------------------------------------------------


def test_trec_appends_after_the_existing_bytes_with_the_annotator_column(tmp_path: Path) -> None:
    before = "# judged in 2024\nq1 0 d1 1\n\nq1 0 d2 0\nq2 0 d3 2"  # no final newline
    path = write(tmp_path, "qrels.txt", before)
    outcome = merge_judgments(path, [row("q1", "d4", 2, "alice"), row("q2", "d5", 1)])
    assert path.read_bytes().decode() == before + "\nq1 alice d4 2\nq2 0 d5 1\n"
    assert outcome.format == "trec"
    assert [(j.query_id, j.doc_id) for j in outcome.added] == [("q1", "d4"), ("q2", "d5")]
    assert outcome.relevant == 2
    assert outcome.annotators_dropped == 0
    assert read_qrels(path).to_dict() == {
        "q1": {"d1": 1.0, "d2": 0.0, "d4": 2.0},
        "q2": {"d3": 2.0, "d5": 1.0},
    }
    assert read_judgments(path).annotators == ("0", "alice")


def test_trec_keeps_the_files_separator_line_ending_and_second_column(tmp_path: Path) -> None:
    before = "q1\tQ0\td1\t1\r\n"
    path = write(tmp_path, "qrels.txt", before)
    merge_judgments(path, [row("q1", "d2", 0), row("q1", "d3", 1.5)])
    assert path.read_bytes() == (before + "q1\tQ0\td2\t0\r\nq1\tQ0\td3\t1.5\r\n").encode()
    assert read_judgments(path).annotator is None  # still one value in the second column
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5}}


def test_beir_appends_three_columns_and_says_annotators_were_not_written(tmp_path: Path) -> None:
    before = "query-id\tcorpus-id\tscore\n# a comment\nq1\td1\t1\n"
    path = write(tmp_path, "test.tsv", before)
    outcome = merge_judgments(path, [row("q1", "d2", 2.0, "alice"), row("q2", "d1", 0)])
    assert path.read_bytes().decode() == before + "q1\td2\t2\nq2\td1\t0\n"
    assert outcome.format == "beir"
    assert outcome.annotators_dropped == 1
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d1": 0.0}}
    summary = describe_merge(outcome, queues=1, skipped=0)
    assert "annotators not written for 1 judgment" in summary[1]
    assert "has no annotator column" in summary[1]


def test_beir_with_an_annotator_column_writes_it(tmp_path: Path) -> None:
    before = "query-id\tcorpus-id\tscore\tannotator\nq1\td1\t1\tbob\n"
    path = write(tmp_path, "test.tsv", before)
    outcome = merge_judgments(path, [row("q1", "d2", 2, "alice"), row("q1", "d3", 0)])
    assert path.read_bytes().decode() == before + "q1\td2\t2\talice\nq1\td3\t0\t0\n"
    assert outcome.annotators_dropped == 0
    assert read_judgments(path).annotators == ("0", "alice", "bob")
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 2.0, "d3": 0.0}}


def test_jsonl_without_annotators_writes_none(tmp_path: Path) -> None:
    before = '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n'
    path = write(tmp_path, "qrels.jsonl", before)
    outcome = merge_judgments(path, [row("q1", "d2", 2.0, "alice"), row("q2", "dé", 0.5)])
    assert path.read_bytes().decode() == before + (
        '{"query_id": "q1", "doc_id": "d2", "relevance": 2}\n'
        '{"query_id": "q2", "doc_id": "dé", "relevance": 0.5}\n'
    )
    assert outcome.annotators_dropped == 1
    assert "names no annotators" in describe_merge(outcome, queues=1, skipped=0)[1]
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"dé": 0.5}}


def test_jsonl_with_annotators_names_one_on_every_new_line(tmp_path: Path) -> None:
    before = '{"query_id": "q1", "doc_id": "d1", "relevance": 1, "annotator": "bob"}\n'
    path = write(tmp_path, "qrels.jsonl", before)
    merge_judgments(path, [row("q1", "d2", 3, "alice"), row("q1", "d3", 0)])
    assert path.read_bytes().decode() == before + (
        '{"query_id": "q1", "doc_id": "d2", "relevance": 3, "annotator": "alice"}\n'
        '{"query_id": "q1", "doc_id": "d3", "relevance": 0, "annotator": "0"}\n'
    )
    assert read_judgments(path).annotators == ("0", "alice", "bob")


# ---- already judged, conflicts, idempotence --------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("qrels.txt", "q1 0 d1 1\n"),
        ("test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n"),
        ("qrels.jsonl", '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n'),
    ],
)
def test_merging_again_adds_nothing(tmp_path: Path, name: str, text: str) -> None:
    path = write(tmp_path, name, text)
    rows = [row("q1", "d2", 2, "alice"), row("q2", "d1", 0), row("q1", "d1", 1)]
    first = merge_judgments(path, rows)
    assert len(first.added) == 2
    assert first.already_judged == 1
    merged = path.read_bytes()
    second = merge_judgments(path, rows)
    assert second.added == ()
    assert second.already_judged == 3
    assert second.conflicts == ()
    assert not second.written
    assert path.read_bytes() == merged


def test_a_different_grade_for_a_judged_pair_is_a_conflict_not_a_change(tmp_path: Path) -> None:
    before = "q1 0 d1 1\nq1 0 d2 0\n"
    path = write(tmp_path, "qrels.txt", before)
    outcome = merge_judgments(
        path, [row("q1", "d1", 1, line=2), row("q1", "d2", 3, line=3), row("q1", "d9", 1, line=4)]
    )
    assert path.read_bytes().decode() == before + "q1 0 d9 1\n"
    assert outcome.already_judged == 1
    [conflict] = outcome.conflicts
    assert (conflict.query_id, conflict.doc_id, conflict.existing) == ("q1", "d2", 0.0)
    assert [r.line for r in conflict.rows] == [3]
    text = conflict.describe()
    assert "graded 0 in the qrels file, but queue.jsonl:3 grades it 3" in text
    assert "edit the qrels file to change an existing judgment" in text
    summary = describe_merge(outcome, queues=1, skipped=4)
    assert summary[0] == (
        f"merged 1 queue into {path}: added 1 judgment (1 relevant), 4 rows without a grade "
        "skipped, 1 already judged, 1 row in 1 conflict not added"
    )
    assert summary[1] == f"  conflict: {text}"


def test_a_pooled_pair_graded_below_zero_is_left_for_the_user(tmp_path: Path) -> None:
    before = "query-id\tcorpus-id\tscore\nq1\td1\t-1\nq1\td2\t1\n"
    path = write(tmp_path, "test.tsv", before)
    outcome = merge_judgments(path, [row("q1", "d1", 2, "alice")])
    assert path.read_bytes().decode() == before
    assert not outcome.written
    [conflict] = outcome.conflicts
    assert conflict.existing == -1.0
    assert "pooled but not judged" in conflict.describe()
    assert "replace that line by hand" in conflict.describe()


def test_an_unnamed_trec_file_treats_any_row_for_a_judged_pair_as_the_same(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2 -1\n")
    outcome = merge_judgments(path, [row("q1", "d1", 2, "alice"), row("q1", "d2", 1)])
    assert outcome.added == ()
    assert [c.existing for c in outcome.conflicts] == [1.0, -1.0]


def test_a_file_naming_annotators_takes_another_annotators_grade(tmp_path: Path) -> None:
    before = "q1 bob d1 1\nq1 0 d2 -1\nq1 carol d3 0\n"
    path = write(tmp_path, "qrels.txt", before)
    outcome = merge_judgments(
        path,
        [
            row("q1", "d1", 3, "alice"),  # a second opinion
            row("q1", "d1", 2, "bob"),  # bob changing his grade: a conflict
            row("q1", "d2", 2, "alice"),  # judges the pooled doc
            row("q1", "d2", 1),  # the pooled line's own (unnamed) judgment: a conflict
        ],
    )
    assert path.read_bytes().decode() == before + "q1 alice d1 3\nq1 alice d2 2\n"
    assert [(c.doc_id, c.existing) for c in outcome.conflicts] == [("d1", 1.0), ("d2", -1.0)]
    # median of bob's 1 and alice's 3 is the lower one; the pooled -1 no longer counts.
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 2.0, "d3": 0.0}}


def test_queues_disagreeing_on_a_new_pair_add_nothing_without_annotators(tmp_path: Path) -> None:
    before = "query-id\tcorpus-id\tscore\nq1\td1\t1\n"
    path = write(tmp_path, "test.tsv", before)
    rows = [row("q1", "d2", 2, "alice", 1), row("q1", "d2", 0, "bob", 7), row("q1", "d3", 1)]
    outcome = merge_judgments(path, rows)
    assert path.read_bytes().decode() == before + "q1\td3\t1\n"
    [conflict] = outcome.conflicts
    assert conflict.existing is None
    assert "the queues grade it differently" in conflict.describe()
    assert "queue.jsonl:1 grades it 2 (alice), queue.jsonl:7 grades it 0 (bob)" in (
        conflict.describe()
    )
    # Two queues agreeing add one line.
    agreeing = merge_judgments(path, [row("q3", "d1", 1, "alice"), row("q3", "d1", 1, "bob")])
    assert len(agreeing.added) == 1
    assert agreeing.already_judged == 1


def test_with_an_annotator_column_both_annotators_are_added(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    outcome = merge_judgments(path, [row("q1", "d2", 2, "alice"), row("q1", "d2", 0, "bob")])
    assert len(outcome.added) == 2
    assert read_qrels(path).to_dict() == {"q1": {"d1": 1.0, "d2": 0.0}}
    assert read_qrels(path, combine="max").to_dict() == {"q1": {"d1": 1.0, "d2": 2.0}}


# ---- where it writes, and what it refuses -------------------------------------------------


def test_out_leaves_the_qrels_file_as_it_was(tmp_path: Path) -> None:
    before = "q1 0 d1 1\n"
    path = write(tmp_path, "qrels.txt", before)
    out = tmp_path / "merged" / "qrels.txt"
    outcome = merge_judgments(path, [row("q1", "d2", 1)], out=out)
    assert path.read_bytes().decode() == before
    assert out.read_bytes().decode() == before + "q1 0 d2 1\n"
    assert (outcome.source, outcome.path, outcome.written) == (path, out, True)
    assert f"into {path}, written to {out}:" in describe_merge(outcome, queues=2, skipped=0)[0]
    copy = tmp_path / "copy.txt"
    assert merge_judgments(path, [], out=copy).written  # a copy even when nothing is added
    assert copy.read_bytes() == path.read_bytes()


def test_format_option_overrides_detection(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels.jsonl", "q1 0 d1 1\n")  # named .jsonl, holding TREC
    with pytest.raises(InputError, match="invalid JSON"):
        merge_judgments(path, [row("q1", "d2", 1)])
    merge_judgments(path, [row("q1", "d2", 1, "alice")], format="trec")
    assert path.read_text() == "q1 0 d1 1\nq1 alice d2 1\n"


def test_gzip_and_nested_json_are_refused(tmp_path: Path) -> None:
    packed = tmp_path / "qrels.txt.gz"
    packed.write_bytes(gzip.compress(b"q1 0 d1 1\n"))
    with pytest.raises(InputError, match=r"qrels\.txt\.gz: is gzip-compressed .* decompress it"):
        merge_judgments(packed, [row("q1", "d2", 1)])
    disguised = tmp_path / "qrels.txt"
    disguised.write_bytes(gzip.compress(b"q1 0 d1 1\n"))
    with pytest.raises(InputError, match="gzip"):
        merge_judgments(disguised, [row("q1", "d2", 1)])
    nested = write(tmp_path, "qrels.json", '{"q1": {"d1": 1}}')
    with pytest.raises(InputError, match=r"qrels\.json: a JSON qrels file .* convert it"):
        merge_judgments(nested, [row("q1", "d2", 1)])
    assert nested.read_text() == '{"q1": {"d1": 1}}'


def test_an_id_trec_cannot_hold_names_the_queue_line(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    with pytest.raises(InputError, match=r"queue\.jsonl:4: annotator 'Ann Lee' holds whitespace"):
        merge_judgments(path, [row("q1", "d2", 1, "Ann Lee", line=4)])
    assert path.read_text() == "q1 0 d1 1\n"


def test_a_malformed_qrels_file_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d2\n")
    with pytest.raises(InputError, match=r"qrels\.txt:2"):
        merge_judgments(path, [row("q1", "d3", 1)])
    with pytest.raises(InputError, match="file not found"):
        merge_judgments(tmp_path / "missing.txt", [])


# ---- the command ---------------------------------------------------------------------------


def test_merging_a_filled_queue_adds_exactly_its_graded_rows(configs: Path) -> None:
    config = configs / "example-regressed.yaml"
    qrels = configs / "example" / "qrels" / "test.tsv"
    before_bytes = qrels.read_bytes()
    before = read_qrels(qrels).to_dict()
    queue = configs / "queue.csv"
    code, _, err = run_cli("label-queue", "-c", config, "-o", queue, "--quiet")
    assert code == 0, err
    with queue.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    graded: dict[tuple[str, str], float] = {}
    for number, record in enumerate(rows):
        if number % 3 == 0:  # grade every third row, 0 to 3
            graded[(record["query_id"], record["doc_id"])] = float(number % 4)
            record["grade"], record["annotator"] = str(number % 4), "alice"
    with queue.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert len(graded) > 5
    code, out, err = run_cli("qrels", "merge", qrels, queue)
    assert code == 0, err
    skipped = len(rows) - len(graded)
    relevant = sum(grade >= 1 for grade in graded.values())
    assert out.splitlines()[0] == (
        f"merged 1 queue into {qrels}: added {len(graded)} judgments ({relevant} relevant), "
        f"{skipped} rows without a grade skipped, 0 already judged"
    )
    assert "annotators not written" in out
    assert qrels.read_bytes().startswith(before_bytes)
    after = read_qrels(qrels).to_dict()
    added = {(q, d): g for q, docs in after.items() for d, g in docs.items()}
    for q, docs in before.items():
        for d in docs:
            assert added.pop((q, d)) == before[q][d]
    assert added == graded
    # Again: nothing new; the queue no longer lists what was judged.
    code, out, _ = run_cli("qrels", "merge", qrels, queue)
    assert code == 0
    assert f"added 0 judgments (0 relevant), {skipped} rows" in out
    assert f"{len(graded)} already judged" in out
    code, _, err = run_cli("label-queue", "-c", config, "-o", configs / "again.csv", "--quiet")
    assert code == 0, err
    # As check does: the baseline's stored top 10 is re-scored under the merged judgments.
    assert "the judgments changed since the baseline" in err
    assert "rankings were re-scored with the current judgments" in err
    remaining = read_judged_queue(configs / "again.csv")
    assert remaining.skipped == len(rows) - len(graded)
    assert remaining.judgments == ()


def test_merge_output_option_and_two_queues(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    one = write(tmp_path, "one.jsonl", '{"query_id": "q1", "doc_id": "d2", "grade": 1}\n')
    two = write(
        tmp_path,
        "two.csv",
        "query_id,doc_id,grade,annotator\nq1,d3,0,bob\nq1,d4,,\nq1,d2,1,\n",
    )
    out = tmp_path / "out.txt"
    code, stdout, err = run_cli("qrels", "merge", qrels, one, two, "-o", out, "--format", "trec")
    assert code == 0, err
    assert stdout == (
        f"merged 2 queues into {qrels}, written to {out}: added 2 judgments (1 relevant), "
        "1 row without a grade skipped, 1 already judged\n"
    )
    assert qrels.read_text() == "q1 0 d1 1\n"
    assert out.read_text() == "q1 0 d1 1\nq1 0 d2 1\nq1 bob d3 0\n"


def test_merge_bad_input_is_exit_2(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 1\n")
    queue = write(tmp_path, "queue.jsonl", '{"query_id": "q1", "doc_id": "d2", "grade": "x"}\n')
    code, out, err = run_cli("qrels", "merge", qrels, queue)
    assert code == 2
    assert out == ""
    assert f"{queue}:1: grade 'x' is not a finite number" in err
    assert qrels.read_text() == "q1 0 d1 1\n"
    code, _, err = run_cli("qrels", "merge", qrels, tmp_path / "missing.jsonl")
    assert code == 2
    assert "file not found" in err
    code, _, err = run_cli("qrels", "merge", qrels)
    assert code == 2


@pytest.mark.parametrize(
    ("name", "text", "changed"),
    [
        ("q.txt", "q1 0 d1 2\r\nq1\t0\td2   1  \r\nq2 0 d1 0\r\n", "q1\t0\td2   3  \r"),
        ("q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td1\t0\n", "q1\td2\t3"),
        (
            "q.jsonl",
            '{"query_id": "q1", "doc_id": "d1", "relevance": 2}\n'
            '{"doc_id": "d2", "query_id": "q1", "grade": 1, "note": "é"}\n'
            '{"query_id": "q2", "doc_id": "d1", "relevance": 0}\n',
            '{"doc_id": "d2", "query_id": "q1", "grade": 3, "note": "é"}',
        ),
    ],
)
def test_a_second_look_replaces_the_grade_on_its_own_line_alone(
    tmp_path: Path, name: str, text: str, changed: str
) -> None:
    """--revise: q1/d2, shown as people's 1, graded 3: that line's grade changes, its
    separators, other fields and line ending kept, and every other line byte for byte; a
    second look at a grade the file no longer holds (q2/d1 shown as 1, the file says 0) is a
    conflict; without --revise both are."""
    path = write(tmp_path, name, text)
    second = QueueJudgment("q1", "d2", 3.0, None, 1, "queue.jsonl", revises=1.0)
    stale = QueueJudgment("q2", "d1", 2.0, None, 2, "queue.jsonl", revises=1.0)
    plain = merge_judgments(path, [second, stale])
    assert len(plain.conflicts) == 2
    assert not plain.written
    assert "merge with --revise" in plain.conflicts[0].describe()
    outcome = merge_judgments(path, [second, stale], revise=True)
    assert outcome.revised == (second,)
    assert [c.query_id for c in outcome.conflicts] == ["q2"]
    old, new = text.split("\n"), path.read_bytes().decode().split("\n")
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [
        2 if name.endswith(".tsv") else 1
    ]
    assert changed in new
    assert read_qrels(path).to_dict()["q1"]["d2"] == 3.0


# ---- the draw record ------------------------------------------------------------------------


def drawn_queue(tmp_path: Path, *rows: dict[str, object]) -> Path:
    path = tmp_path / "queue.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ACTIVE = {"draw": "active", "round": "active-1", "rate": 0.1, "weight": 2.0, "p": 0.2}


def test_merge_records_each_querys_draw_once_beside_the_qrels(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q0 0 d0 1\n")
    queue = drawn_queue(
        tmp_path,
        {"query_id": "q1", "doc_id": "d1", "grade": 1, **ACTIVE},
        {"query_id": "q1", "doc_id": "d2", "grade": 0, **ACTIVE},
        {"query_id": "q2", "doc_id": "d3", "grade": None, **ACTIVE},  # not graded: not drawn in
        {"query_id": "q3", "doc_id": "d4", "grade": 2, "draw": "targeted", "round": "impact"},
    )
    outcome = merge_judgments(qrels, read_judged_queue(queue).judgments)
    record = read_draws(draws_path(qrels))
    assert record is not None
    assert [(d.query_id, d.kind, d.p) for d in record.draws] == [
        ("q1", "active", 0.2),
        ("q3", "targeted", None),
    ]
    lines = describe_merge(outcome, queues=1, skipped=1)
    assert (
        f"recorded the draw of 2 queries (1 active, 1 targeted) in {draws_path(qrels)}"
        in (lines[1])
    )
    before = draws_path(qrels).read_bytes()
    again = merge_judgments(qrels, read_judged_queue(queue).judgments)
    assert again.draws == ()
    assert draws_path(qrels).read_bytes() == before
    out = tmp_path / "merged" / "qrels.txt"
    merge_judgments(qrels, [], out=out)  # the record goes with the qrels it describes
    assert draws_path(out).read_bytes() == before


def test_a_queue_without_draw_columns_records_nothing(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q0 0 d0 1\n")
    outcome = merge_judgments(qrels, [row("q1", "d1", 1)])
    assert outcome.draws == ()
    assert not draws_path(qrels).exists()
    assert not any("recorded" in line for line in describe_merge(outcome, queues=1, skipped=0))


def test_a_csv_queue_carries_its_draw(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "queue.csv",
        "query_id,doc_id,grade,draw,round,rate,weight,p\r\n"
        "q1,d1,1,sample,sample-1,0.25,1.0,0.25\r\nq2,d2,1,,,,,\r\n",
    )
    first, second = read_judged_queue(path).judgments
    assert first.draw == Draw("q1", "sample-1", "sample", 0.25, 1.0, 0.25)
    assert second.draw is None


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"draw": "=cmd|' /C calc'!A0"}, "is not one of sample, active, targeted"),
        ({"round": "::error::x y"}, "round '::error::x y' must be the id"),
        ({"p": "NaN"}, "p 'NaN' is not a finite number"),
        ({"p": 0.5}, "must be min(1, rate * weight)"),
        ({"weight": None}, "needs its rate and weight above 0"),
    ],
)
def test_a_hostile_draw_column_names_the_queue_line(
    tmp_path: Path, fields: dict[str, object], says: str
) -> None:
    queue = drawn_queue(
        tmp_path,
        {"query_id": "q1", "doc_id": "d1", "grade": 1, **ACTIVE},
        {"query_id": "q2", "doc_id": "d1", "grade": 1, **ACTIVE, **fields},
    )
    with pytest.raises(InputError, match=r"queue\.jsonl:2: ") as raised:
        read_judged_queue(queue)
    assert says in str(raised.value)


def test_one_round_given_two_rates_is_refused_at_the_merge(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q0 0 d0 1\n")
    queue = drawn_queue(
        tmp_path,
        {"query_id": "q1", "doc_id": "d1", "grade": 1, **ACTIVE},
        {"query_id": "q2", "doc_id": "d1", "grade": 1, **ACTIVE, "rate": 0.2, "p": 0.4},
    )
    with pytest.raises(
        InputError, match=r"queue\.jsonl:2: round 'active-1' is active at rate 0\.2"
    ):
        merge_judgments(qrels, read_judged_queue(queue).judgments)
