"""attempt(): a malformed answer's pieces shown in its error safely, on one line, short."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from retrieval_gate.core.model import Hit, Query
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.attempt import attempt


class _Answers:
    """A retriever whose `search` returns `answer` as it is."""

    name = "canned"

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def search(self, query: Query, k: int) -> Any:
        return self.answer

    def search_batch(self, queries: Sequence[Query], k: int) -> Any:
        return self.answer


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _Loud:
    def __repr__(self) -> str:
        return "x\n::error::boom " + "y" * 5000


def _error(answer: Any, *, batched: bool = False) -> str:
    with pytest.raises(RetrieverError) as caught:
        attempt(_Answers(answer), [Query("q", "text")], batched, 3)  # type: ignore[arg-type]
    return str(caught.value)


@pytest.mark.parametrize(
    ("answer", "start"),
    [
        ([_NoRepr()], "hit 1 is <_NoRepr>, not a Hit"),
        ([_Loud()], "hit 1 is x ::error::boom yyy"),
        ([Hit(["z"] * 10_000)], "hit 1 has doc id ['z', 'z'"),  # type: ignore[arg-type]
        ([Hit("ok", _Loud())], "hit 1 ('ok') has score x ::error::boom yyy"),  # type: ignore[arg-type]
        (_Loud(), "expected a list of Hit, got x ::error::boom yyy"),
    ],
)
def test_a_malformed_answer_is_shown_on_one_short_line(answer: Any, start: str) -> None:
    error = _error(answer)
    assert error.startswith(start)
    assert "\n" not in error
    assert len(error) < 200


def test_a_batch_answer_that_is_no_list_is_shown_short() -> None:
    error = _error(_Loud(), batched=True)
    assert error.startswith("search_batch returned x ::error::boom yyy")
    assert "\n" not in error
    assert len(error) < 250
