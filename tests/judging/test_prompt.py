"""The grade read from a judge's answer: its first digit 0-3, never part of another number."""

from __future__ import annotations

import pytest

from retrieval_gate.judging.prompt import parse_grade


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("2", 2),
        ("Grade: 3", 3),
        ("relevance: 0", 0),
        ("**1**", 1),
        ("3/3", 3),
        ("-1", None),
        ("Grade: -1", None),
        ("-3", None),
        ("\u22122", None),
        ("2.5", None),
        ("12", None),
        ("4", None),
        ("I cannot tell.", None),
    ],
)
def test_the_grade_of_an_answer(answer: str, grade: int | None) -> None:
    assert parse_grade(answer) == grade
