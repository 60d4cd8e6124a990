"""Judgment rows with annotators: reading them from each format, combining them into qrels."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_judgments, read_qrels
from tests.helpers.builders import write


def test_trec_second_column_is_the_annotator_when_it_varies(tmp_path: Path) -> None:
    path = write(tmp_path, "q.txt", "q1 alice d1 2\nq1 bob d1 1\nq1 carol d1 3\nq2 alice d2 0\n")
    judgments = read_judgments(path)
    assert judgments.annotators == ("alice", "bob", "carol")
    assert judgments.annotator is not None
    assert judgments.annotator.tolist() == ["alice", "bob", "carol", "alice"]
    assert read_qrels(path).to_dict() == {"q1": {"d1": 2.0}, "q2": {"d2": 0.0}}


def test_trec_constant_second_column_names_no_annotator(tmp_path: Path) -> None:
    path = write(tmp_path, "q.txt", "q1 0 d1 2\nq1 0 d2 1\n")
    judgments = read_judgments(path)
    assert judgments.annotator is None
    assert judgments.annotators == ()


def test_without_annotators_a_repeated_pair_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "q.txt", "q1 0 d1 2\nq1 0 d2 1\nq1 0 d1 1\n")
    judgments = read_judgments(path)
    assert judgments.duplicate_groups() == [(0, 2)]
    with pytest.raises(InputError, match=r"q\.txt:3: duplicate judgment .* line 1"):
        judgments.qrels()


def test_one_annotator_judging_a_pair_twice_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "q.txt", "q1 alice d1 2\nq1 bob d1 1\nq1 alice d1 1\n")
    judgments = read_judgments(path)
    assert judgments.duplicate_groups() == [(0, 2)]
    with pytest.raises(InputError, match=r"q\.txt:3: annotator 'alice' judged .* twice"):
        judgments.qrels()


@pytest.mark.parametrize(
    ("combine", "expected"),
    [("median", 1.0), ("mean", 5 / 3), ("max", 3.0), ("min", 1.0)],
)
def test_combining_annotators(combine: str, expected: float) -> None:
    judgments = Judgments.from_rows(
        ["q1", "q1", "q1", "q1"],
        ["d1", "d1", "d1", "d2"],
        [3, 1, 1, 2],
        annotators=["a", "b", "c", "a"],
    )
    qrels = judgments.qrels(combine)  # type: ignore[arg-type]
    assert qrels.to_dict()["q1"]["d1"] == pytest.approx(expected)
    assert qrels.to_dict()["q1"]["d2"] == 2.0


def test_median_of_an_even_count_is_the_lower_grade() -> None:
    judgments = Judgments.from_rows(["q"] * 2, ["d"] * 2, [2, 1], annotators=["a", "b"])
    assert judgments.qrels("median").to_dict() == {"q": {"d": 1.0}}


def test_pooled_grades_count_only_when_nobody_judged_the_document() -> None:
    judgments = Judgments.from_rows(
        ["q", "q", "q", "q"],
        ["d1", "d1", "d2", "d2"],
        [-1, 2, -1, -1],
        annotators=["a", "b", "a", "b"],
    )
    assert judgments.qrels("min").to_dict() == {"q": {"d1": 2.0, "d2": -1.0}}


def test_beir_annotator_column_needs_a_header_naming_it(tmp_path: Path) -> None:
    header = "query-id\tcorpus-id\tscore\tannotator\n"
    path = write(tmp_path, "test.tsv", header + "q1\td1\t1\talice\nq1\td1\t0\tbob\n")
    judgments = read_judgments(path)
    assert judgments.annotators == ("alice", "bob")
    assert judgments.lines is not None
    assert judgments.lines.tolist() == [2, 3]
    unnamed = write(tmp_path, "bad.tsv", "query-id\tcorpus-id\tscore\textra\nq1\td1\t1\tx\n")
    with pytest.raises(InputError, match=r"bad\.tsv:1: expected"):
        read_judgments(unnamed, "beir")


def test_jsonl_annotator_on_every_line_or_none(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "relevance": 1, "annotator": "alice"}\n'
        '{"query_id": "q1", "doc_id": "d1", "relevance": 2, "annotator": "bob"}\n',
    )
    assert read_judgments(path).annotators == ("alice", "bob")
    mixed = write(
        tmp_path,
        "mixed.jsonl",
        '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n'
        '{"query_id": "q1", "doc_id": "d2", "relevance": 2, "annotator": "bob"}\n',
    )
    with pytest.raises(InputError, match=r"mixed\.jsonl:2: some judgments name an annotator"):
        read_judgments(mixed)


def test_where_names_the_line_or_the_entry() -> None:
    with_lines = Judgments.from_rows(["q"], ["d"], [1], source="f.txt", lines=[7])
    assert with_lines.where(0) == "f.txt:7"
    assert Judgments.from_rows(["q"], ["d"], [1], source="<x>").where(0) == "<x> (entry 1)"
