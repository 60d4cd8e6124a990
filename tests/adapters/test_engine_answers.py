"""Errors inside an engine's answer, hit lists it leaves out, and ids inside document ids."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_gate.adapters.engine_answers import (
    absent_hits,
    error_text,
    id_pattern,
    id_within,
    reported_errors,
)
from retrieval_gate.adapters.paths import parse_path
from retrieval_gate.errors import GateError

CHILDREN = parse_path("root.children[*]", "results")
VESPA_ID = "^id:[^:]*:[^:]*:[^:]*:(.+)$"


@pytest.mark.parametrize(
    ("answer", "absent"),
    [
        ({"root": {"id": "toplevel", "fields": {"totalCount": 0}}}, True),
        ({"root": {"children": []}}, False),  # there: read as usual
        ({"rot": {"id": "toplevel"}}, False),  # a path wrong higher up still fails
        ({"root": [1, 2]}, False),
        ({"root": None}, False),
    ],
)
def test_only_a_missing_last_key_means_no_hits(answer: Any, absent: bool) -> None:
    assert absent_hits(answer, CHILDREN) is absent


def test_a_path_ending_in_an_index_is_never_absent() -> None:
    assert not absent_hits({"root": {}}, parse_path("root.children[0]", "results"))
    assert not absent_hits([], parse_path("[*]", "results"))


def test_errors_count_only_when_present_and_not_empty() -> None:
    steps = parse_path("_shards.failures", "errors")
    assert reported_errors({"_shards": {"failed": 0}}, steps) is None
    assert reported_errors({"_shards": {"failures": []}}, steps) is None
    assert reported_errors([], steps) is None
    failure = {"shard": 1, "reason": {"type": "x\n::error::y"}}
    shown = reported_errors({"_shards": {"failures": [failure]}}, steps)
    assert shown is not None
    assert shown.startswith('[{"shard": 1, "reason": {"type": "x')
    assert "\n" not in shown  # one line: no workflow command at a line start


def test_an_http_error_shows_the_errors_else_the_body() -> None:
    steps = parse_path("root.errors", "errors")
    body = '{"root": {"errors": [{"code": 4, "message": "bad"}]}}'
    assert error_text(body, steps) == '[{"code": 4, "message": "bad"}]'
    assert error_text("<html>Bad gateway</html>", steps) == "<html>Bad gateway</html>"
    assert error_text('{"message": "nope"}', steps) == '{"message": "nope"}'
    assert error_text(body, None) == body


def test_ids_are_taken_out_of_document_ids() -> None:
    pattern = id_pattern(VESPA_ID)
    assert pattern is not None
    assert id_within("id:help:doc::kb-101", pattern) == "kb-101"
    assert id_within("id:help:doc:g=eu:a:b", pattern) == "a:b"  # ids may hold colons
    with pytest.raises(ValueError, match=r"id 'kb-101' that retriever\.id_pattern does not match"):
        id_within("kb-101", pattern)
    assert id_pattern(None) is None


@pytest.mark.parametrize(("pattern", "says"), [("id:(.+", "not a regular"), ("id:.+", "one")])
def test_a_pattern_without_one_group_fails_at_build(pattern: str, says: str) -> None:
    with pytest.raises(GateError, match=says):
        id_pattern(pattern)
