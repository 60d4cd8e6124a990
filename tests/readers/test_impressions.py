"""Impression logs: the rows as judgments (clicked = 1) and as a run (score, or -rank), the
query metadata, and every bad row refused with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_qrels, read_run
from retrieval_gate.readers.impressions import read_impressions


def _log(tmp_path: Path, rows: list[object], name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows),
        encoding="utf-8",
    )
    return path


def test_a_log_is_both_the_labels_and_the_run(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        [
            {"user": "u1", "item": "a", "score": 0.9, "clicked": True, "country": "fr"},
            {"user": "u1", "item": "b", "score": 0.2, "clicked": False, "country": "fr"},
            {"user": 7, "item": "a", "score": 1, "clicked": 0},
            {"user": 7, "item": "c", "score": -2.5, "clicked": 1, "device": "phone"},
        ],
    )
    log = read_impressions(path)
    assert [(q.id, q.text, dict(q.metadata)) for q in log.queries] == [
        ("7", "7", {"device": "phone"}),
        ("u1", "u1", {"country": "fr"}),
    ]
    assert log.judgments.qrels().to_dict() == {"7": {"a": 0, "c": 1}, "u1": {"a": 1, "b": 0}}
    assert log.run.to_dict() == {"7": {"a": 1.0, "c": -2.5}, "u1": {"a": 0.9, "b": 0.2}}
    # The registered formats read the same file.
    assert read_qrels(path, "impressions").to_dict() == log.judgments.qrels().to_dict()
    assert read_run(path, "impressions").to_dict() == log.run.to_dict()


def test_rank_rows_score_minus_the_rank(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        [
            {"query": "q", "item_id": "x", "rank": 2, "click": False},
            {"query": "q", "item_id": "y", "rank": 1, "click": True},
        ],
    )
    assert read_impressions(path).run.to_dict() == {"q": {"x": -2.0, "y": -1.0}}


def test_an_item_shown_twice_keeps_its_highest_score(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        [
            {"user": "u", "item": "a", "score": 0.1, "clicked": True},
            {"user": "u", "item": "a", "score": 0.7, "clicked": True},
            {"user": "u", "item": "a", "score": 0.3, "clicked": True},
        ],
    )
    assert read_impressions(path).run.to_dict() == {"u": {"a": 0.7}}


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([{"item": "a", "score": 1, "clicked": True}], 1, "no query \\(or user\\) id"),
        ([{"user": "u", "score": 1, "clicked": True}], 1, "no item id"),
        ([{"user": "u", "item": "a", "clicked": True}], 1, "no score or rank"),
        ([{"user": "u", "item": "a", "score": 1}], 1, "no click label"),
        ([{"user": "u", "item": "a", "score": 1, "clicked": "yes"}], 1, "must be true, false"),
        ([{"user": "u", "item": "a", "score": 1, "clicked": 2}], 1, "must be true, false"),
        ([{"user": "u", "item": "a", "score": 1, "clicked": 1.0}], 1, "must be true, false"),
        (['{"user": "u", "item": "a", "score": NaN, "clicked": true}'], 1, "not a finite"),
        (['{"user": "u", "item": "a", "score": Infinity, "clicked": true}'], 1, "not a finite"),
        ([{"user": "u", "item": "a", "score": "0.5", "clicked": True}], 1, "must be a number"),
        ([{"user": "u", "item": "a", "score": True, "clicked": True}], 1, "must be a number"),
        ([{"user": "u", "item": "a", "rank": 0, "clicked": True}], 1, "whole number from 1"),
        ([{"user": "u", "item": "a", "rank": 1.5, "clicked": True}], 1, "whole number from 1"),
        ([{"user": "u", "item": "a", "rank": 1, "score": 1, "clicked": True}], 1, "not both"),
        (
            [
                {"user": "u", "item": "a", "rank": 1, "clicked": True},
                {"user": "u", "item": "b", "score": 1, "clicked": True},
            ],
            2,
            "gives a score but earlier rows give a rank",
        ),
        (
            [
                {"user": "u", "item": "a", "score": 1, "clicked": True},
                {"user": "v", "item": "b", "score": 1, "clicked": False},
                {"user": "u", "item": "a", "score": 2, "clicked": False},
            ],
            3,
            "clicked on line 1 and not clicked on line 3",
        ),
        (
            [
                {"user": "u", "item": "a", "score": 1, "clicked": True, "country": "fr"},
                {"user": "u", "item": "b", "score": 1, "clicked": True, "country": "de"},
            ],
            2,
            "metadata must agree",
        ),
        (
            [{"user": "u", "item": "a", "score": 1, "clicked": True, "x": {"y": 1}}],
            1,
            "holds a dict",
        ),
        ([{"user": ["u"], "item": "a", "score": 1, "clicked": True}], 1, "must be a string"),
        ([{"user": " ", "item": "a", "score": 1, "clicked": True}], 1, "is empty"),
        (["[1, 2]"], 1, "expected a JSON object"),
        (["{" * 100_000], 1, "nested too deeply|invalid JSON"),
    ],
)
def test_bad_rows_are_refused_with_file_and_line(
    tmp_path: Path, rows: list[object], line: int, message: str
) -> None:
    path = _log(tmp_path, rows)
    with pytest.raises(InputError, match=message) as caught:
        read_impressions(path)
    assert str(path) in str(caught.value)
    assert f":{line}" in str(caught.value)


def test_read_as_a_run_a_log_needs_no_clicks(tmp_path: Path) -> None:
    path = _log(tmp_path, [{"user": "u", "item": "a", "score": 0.5, "note": "x"}])
    assert read_run(path, "impressions").to_dict() == {"u": {"a": 0.5}}
    with pytest.raises(InputError, match="no click label"):
        read_qrels(path, "impressions")


def test_an_empty_log_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no impressions"):
        read_impressions(_log(tmp_path, []))


def test_a_huge_id_is_cut_in_the_error(tmp_path: Path) -> None:
    huge = "u" * 5_000_000
    path = _log(
        tmp_path,
        [
            {"user": huge, "item": "a", "score": 1, "clicked": True, "x": huge},
            {"user": huge, "item": "a", "score": 1, "clicked": True, "x": "other"},
        ],
    )
    with pytest.raises(InputError, match="metadata must agree") as caught:
        read_impressions(path)
    assert len(str(caught.value)) < 1_000


def test_control_characters_in_errors_are_shown_as_marks(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        [
            {"user": "u\x1b[31m\n::error::x", "item": "a\r", "score": 1, "clicked": True},
            {"user": "u\x1b[31m\n::error::x", "item": "a\r", "score": 1, "clicked": False},
        ],
    )
    with pytest.raises(InputError) as caught:
        read_impressions(path)
    text = str(caught.value)
    assert "\x1b" not in text
    assert "\r" not in text
    assert "\n::error::" not in text
