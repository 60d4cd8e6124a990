"""One history record: made from a `check` result, written as a line, read back, refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.document import baseline_document
from retrieval_gate.gate.result import RESULT_SCHEMA_VERSION
from retrieval_gate.history.record import (
    MAX_TEXT,
    AcceptEntry,
    ResultEntry,
    accept_entry,
    entry_line,
    entry_summary,
    parse_entry,
    pr_number,
    read_result,
    result_entry,
)
from tests.helpers.baselines import make

SHA = "0123456789abcdef" * 2 + "01234567"
TIME = "2024-05-01T12:00:00Z"


def _document(**changes: Any) -> dict[str, Any]:
    """A decided `check` result of configs/tiny's shape, as parsed from its JSON."""
    document = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "status": "fail",
        "name": "tiny",
        "tool_version": "0.1.0",
        "config": {"sha256": "ab" * 32},
        "current": baseline_document(make()),
        "comparisons": [
            {"metric": "ndcg@10", "slice": "all", "current_mean": 0.5},
            {"metric": "recall@10", "slice": "query_length=long", "current_mean": 0.4},
            {"metric": "ndcg@10", "slice": "intent=nav", "current_mean": 0.25},
        ],
    }
    parsed: dict[str, Any] = json.loads(json.dumps(document | changes))
    return parsed


def _entry(subject: str = "Faster reranker (#44)\n\nbody", **changes: Any) -> ResultEntry:
    return result_entry(
        _document(**changes), "r.json", commit=SHA, time=TIME, ref="refs/heads/main",
        subject=subject,
    )  # fmt: skip


def _line(entry: ResultEntry | AcceptEntry | None = None, **changes: Any) -> str:
    """A history line of `entry` (a result by default), its fields replaced by `changes`
    (None deletes one)."""
    data = json.loads(entry_line(entry or _entry()))
    for name, value in changes.items():
        if value is None:
            del data[name]
        else:
            data[name] = value
    return json.dumps(data)


def _refusal(text: str) -> str:
    with pytest.raises(InputError) as caught:
        parse_entry(text, "h.jsonl", 7)
    message = str(caught.value)
    assert message.startswith("h.jsonl:7: ")
    return message.removeprefix("h.jsonl:7: ")


def test_a_result_keeps_its_means_its_slices_and_its_subject_line() -> None:
    entry = _entry()
    # Overall means from the record's scores (0.1, 1/3, 1 and 0, 0.5, 1); slice means from
    # the comparisons, sorted by slice, the overall comparison left out.
    assert entry.means == pytest.approx({"ndcg@10": (0.1 + 1 / 3 + 1.0) / 3, "recall@10": 0.5})
    assert entry.slices == {
        "intent=nav": {"ndcg@10": 0.25},
        "query_length=long": {"recall@10": 0.4},
    }
    assert list(entry.slices) == ["intent=nav", "query_length=long"]
    assert (entry.pr, entry.subject, entry.status, entry.line) == (
        44,
        "Faster reranker (#44)",
        "fail",
        0,
    )
    assert entry.fingerprints["config"] == "ab" * 32
    assert entry.label == "#44 (0123456)"
    assert _entry("Fix the reranker").label == "0123456"
    assert _entry("  \n ").subject == ""


def test_free_text_is_kept_up_to_max_text_characters() -> None:
    assert _entry("x" * MAX_TEXT).subject == "x" * MAX_TEXT
    assert _entry("x" * (MAX_TEXT + 1)).subject == "x" * MAX_TEXT + "..."
    assert accept_entry("tiny", SHA, TIME, "y" * (MAX_TEXT + 1)).reason == "y" * MAX_TEXT + "..."
    assert MAX_TEXT == 2000  # a commit subject of a few lines' length stays whole


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schema_version": RESULT_SCHEMA_VERSION + 1}, "schema_version: "),
        ({"status": "error"}, "status: 'error'; only a decided result"),
        ({"name": "no spaces allowed"}, "name: 'no spaces allowed' is not a gate name"),
        ({"name": 7}, "name: 7 is not a gate name"),
        ({"config": "ab"}, "config.sha256: missing"),
        ({"config": {"sha256": 5}}, "config.sha256: missing"),
        ({"comparisons": {}}, "comparisons: missing"),
        ({"comparisons": [3]}, "comparisons[0]: not an object"),
        ({"comparisons": [{"metric": "ndcg@10", "slice": "all"}]}, "comparisons[0]: needs"),
        (
            {"comparisons": [{"metric": "ndcg@10", "slice": 1, "current_mean": 0.5}]},
            "comparisons[0]: needs",
        ),
        (
            {"comparisons": [{"metric": 1, "slice": "all", "current_mean": 0.5}]},
            "comparisons[0]: needs",
        ),
        (
            {"comparisons": [{"metric": "ndcg@10", "slice": "all", "current_mean": True}]},
            "comparisons[0]: needs",
        ),
    ],
)
def test_anything_but_a_decided_result_is_refused_naming_the_field(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match="^r.json: " + message.replace("[", r"\[")):
        _entry(**changes)


def test_only_a_json_object_is_a_result() -> None:
    with pytest.raises(InputError, match="expected a JSON object"):
        result_entry([], "r.json", commit=SHA, time=TIME, ref="", subject="")


def test_a_result_file_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{\n"status": "pass",\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_result(path)
    assert str(caught.value).startswith(f"{path}:3: not valid JSON")
    path.write_text("[" * 100_000, encoding="utf-8")  # too deep for the parser: no line
    with pytest.raises(InputError) as caught:
        read_result(path)
    assert str(caught.value).startswith(f"{path}: not valid JSON")
    with pytest.raises(InputError, match="no result file at"):
        read_result(tmp_path / "missing.json")


def test_a_line_reads_back_as_the_entry_it_was_written_from() -> None:
    entry = _entry()
    line = entry_line(entry)
    assert line.isascii()
    assert "\n" not in line
    assert json.loads(line)["history_schema"] == 1
    assert "record" in json.loads(line)
    back = parse_entry(line, "h.jsonl", 3)
    assert isinstance(back, ResultEntry)
    assert back.line == 3
    assert entry_summary(back) == entry_summary(entry)
    assert back.record.query_ids == entry.record.query_ids
    accepted = accept_entry("tiny", SHA, TIME, "a known drop")
    assert accepted.line == 0
    assert json.loads(entry_line(accepted)) == {
        "history_schema": 1,
        "kind": "accept",
        "config": "tiny",
        "commit": SHA,
        "time": TIME,
        "reason": "a known drop",
    }
    assert parse_entry(entry_line(accepted), "h.jsonl", 4) == AcceptEntry(
        config="tiny", commit=SHA, time=TIME, reason="a known drop", line=4
    )
    # A result without a pull request, and with pull request 1.
    assert parse_entry(_line(pr=None), "h.jsonl", 1).pr is None  # type: ignore[union-attr]
    assert parse_entry(_line(pr=1), "h.jsonl", 1).pr == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("version", [0, -1, True, "1", 1.0])
def test_a_line_of_no_schema_version_is_refused(version: object) -> None:
    assert _refusal(_line(history_schema=version)).startswith(
        f"history_schema: {version!r} is not a history schema version"
    )


def test_a_line_of_a_newer_schema_asks_for_an_upgrade() -> None:
    assert _refusal(_line(history_schema=2)).startswith(
        "history_schema 2 was written by a newer retrieval-gate (this one reads 1)"
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"config": "no spaces allowed"}, "config: 'no spaces allowed' is not a gate name"),
        ({"commit": "abc1234"}, "commit: 'abc1234' is not a full commit sha"),
        ({"kind": "merge"}, "kind: 'merge'; a history line is a result or an accept"),
        ({"pr": 0}, "pr: 0 is not a pull request number"),
        ({"pr": True}, "pr: True is not a pull request number"),
        ({"pr": "41"}, "pr: '41' is not a pull request number"),
        ({"fingerprints": {"config": 5}}, "fingerprints: values are strings"),
        ({"means": {"ndcg@10": "0.5"}}, "means: values are finite numbers"),
        ({"slices": {"intent=nav": {"ndcg@10": "0.5"}}}, "slices.'intent=nav': metric ->"),
        ({"slices": {"intent=nav": 0.5}}, "slices.'intent=nav': metric ->"),
        ({"record": {"scores": 1}}, "record: "),
        ({"config": None}, "config: missing; expected a string"),
        ({"subject": 5}, "subject: 5; expected a string"),
        ({"means": None}, "means: missing; expected an object"),
        ({"means": [0.5]}, "means: [0.5]; expected an object"),
    ],
)
def test_a_bad_field_is_named_with_what_it_should_be(changes: dict[str, Any], message: str) -> None:
    assert _refusal(_line(**changes)).startswith(message)


def test_a_line_that_is_not_a_json_object_is_refused() -> None:
    assert _refusal('{"kind": ').startswith("not valid JSON (Expecting value)")
    assert _refusal("[" * 100_000).startswith("not valid JSON (nested too deeply)")
    assert _refusal("[1]") == "a history line is a JSON object"


def test_a_value_in_a_message_is_cut_to_80_characters() -> None:
    shown = _refusal(_line(commit="f" * 200)).removeprefix("commit: ")
    assert shown == "'" + "f" * 79 + "... is not a full commit sha"


def test_pr_numbers_come_from_the_subject_line_only() -> None:
    assert pr_number("Faster reranker (#44)\n\nsee (#45)") == 44
    assert pr_number("Faster reranker\n\n(#45)") is None
    assert pr_number("  Merge pull request #7 from a/b  ") == 7
    assert pr_number(" \n ") is None
