"""The LLM judgment layer: one row per pair and judge, sorted, strict about what it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.datasets.llm_layer import (
    LlmJudgment,
    identities_of,
    judges_of,
    layer_path,
    layer_qrels,
    read_layer,
    write_layer,
)
from retrieval_gate.errors import InputError
from tests.helpers.paths import CONFIGS


def _row(query: str = "q1", doc: str = "d1", grade: int = 2, **other: object) -> LlmJudgment:
    fields: dict[str, object] = {
        "model": "m",
        "prompt_sha256": "ab" * 32,
        "answer": str(grade),
        "time": "2026-11-26T09:00:00Z",
    }
    fields.update(other)
    return LlmJudgment(query, doc, grade, **fields)  # type: ignore[arg-type]


def test_rows_are_merged_by_key_sorted_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "test.llm.jsonl"
    assert write_layer(path, [_row("q2"), _row("q1", grade=1)]) == 2
    assert write_layer(path, [_row("q1", grade=3), _row("q1", model="other")]) == 3
    rows = read_layer(path)
    assert [(r.query, r.model, r.grade) for r in rows] == [
        ("q1", "m", 3),
        ("q1", "other", 2),
        ("q2", "m", 2),
    ]
    assert judges_of(rows) == (("m", "ab" * 32), ("other", "ab" * 32))
    first = path.read_bytes()
    write_layer(path, [])
    assert path.read_bytes() == first  # deterministic: rewriting changes nothing


def test_qrels_of_one_judge_over_the_query_set(tmp_path: Path) -> None:
    rows = (_row("q1", "d1", 3), _row("q1", "d2", 0), _row("q9", "d1", 3), _row("q2", model="x"))
    qrels = layer_qrels(rows, ["q2", "q1"], judge=("m", "ab" * 32))
    assert qrels.to_dict() == {"q1": {"d1": 3.0, "d2": 0.0}, "q2": {}}


def test_a_hostile_answer_stays_one_escaped_line(tmp_path: Path) -> None:
    path = tmp_path / "layer.jsonl"
    answer = "3\n::error::forged\x1b[31m\u2028done"
    write_layer(path, [_row(answer=answer, doc="d\x07")])
    text = path.read_text(encoding="ascii")
    assert text.count("\n") == 1
    assert "::error::" in text  # kept as data, on the row's one line
    assert not text.startswith("::")
    assert read_layer(path)[0].answer == answer


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "invalid JSON"),
        ('["a"]', "a JSON object per line"),
        ('{"query": "q"}', "missing doc, grade"),
        (
            '{"query": "q", "doc": "d", "grade": 4, "model": "m", "prompt_sha256": "s", '
            '"answer": "4", "time": "t"}',
            "grade 4 must be a whole number from 0 to 3",
        ),
        (
            '{"query": "q", "doc": "d", "grade": true, "model": "m", "prompt_sha256": "s", '
            '"answer": "", "time": "t"}',
            "grade True",
        ),
        (
            '{"query": "q", "doc": "d", "grade": 1.5, "model": "m", "prompt_sha256": "s", '
            '"answer": "", "time": "t"}',
            "grade 1.5",
        ),
        (
            '{"query": "", "doc": "d", "grade": 1, "model": "m", "prompt_sha256": "s", '
            '"answer": "", "time": "t"}',
            "query must be a non-empty string",
        ),
        (
            '{"query": "q", "doc": "d", "grade": 1, "model": "m", "prompt_sha256": "s", '
            '"answer": "", "time": "t", "confidence": 2}',
            "confidence 2 must be a probability",
        ),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_a_malformed_row_names_its_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "layer.jsonl"
    good = json.dumps({**_row().__dict__})
    path.write_text(f"{good}\n\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_layer(path)
    assert message in str(error.value)
    assert error.value.line == 3


def test_the_same_pair_twice_by_one_judge_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "layer.jsonl"
    good = json.dumps({**_row().__dict__})
    path.write_text(f"{good}\n{good}\n", encoding="utf-8")
    with pytest.raises(InputError, match="graded twice by the same judge"):
        read_layer(path)


def test_a_missing_layer_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="run `retrieval-gate judge` first"):
        read_layer(tmp_path / "none.jsonl")


def test_the_layer_sits_beside_the_qrels() -> None:
    config = load(CONFIGS / "example.yaml")
    assert layer_path(config) == CONFIGS / "example" / "qrels" / "test.llm.jsonl"
    tiny = config.model_copy(
        update={"dataset": config.dataset.model_copy(update={"qrels": "x/qrels.tsv.gz"})}
    )
    assert layer_path(tiny) == CONFIGS / "x" / "qrels.llm.jsonl"


OLD_LINE = (
    '{"query": "q1", "doc": "d1", "grade": 2, "model": "m", "prompt_sha256": "'
    + "ab" * 32
    + '", "answer": "2", "time": "2026-11-26T09:00:00Z", "confidence": null}\n'
)
"""A row as versions before the judge's identity wrote it."""


def test_a_row_of_an_older_version_is_an_unrecorded_judge_and_rewrites_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.llm.jsonl"
    path.write_text(OLD_LINE, encoding="ascii")
    [row] = read_layer(path)
    assert (row.answered_by, row.system_fingerprint) == ("", "")
    assert (row.temperature, row.max_tokens, row.logprobs) == (None, None, None)
    assert row.identity.answering() == "an unrecorded model"
    assert row.judge == ("m", "ab" * 32)
    write_layer(path, [])
    assert path.read_text(encoding="ascii") == OLD_LINE  # byte for byte, no field added
    # A re-grade under a recorded judge replaces it (one row per pair and configured judge).
    write_layer(path, [_row(grade=3, answered_by="m-2026", system_fingerprint="fp_1")])
    [again] = read_layer(path)
    assert (again.grade, again.identity.answering()) == (3, "m-2026 (fingerprint fp_1)")


def test_the_judges_identity_is_written_read_back_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "test.llm.jsonl"
    known = {"temperature": 0.0, "max_tokens": 16, "logprobs": True}
    rows = [
        _row("q1", answered_by="m-2026-01", system_fingerprint="fp_a", **known),
        _row("q2", answered_by="m-2026-02", system_fingerprint="fp_b", **known),
        _row("q3"),
    ]
    write_layer(path, rows)
    assert read_layer(path) == tuple(rows)
    line = path.read_text(encoding="ascii").splitlines()[0]
    assert line.endswith(
        '"answered_by": "m-2026-01", "system_fingerprint": "fp_a", "temperature": 0.0, '
        '"max_tokens": 16, "logprobs": true}'
    )
    found = identities_of(read_layer(path))
    assert [who.answered_by for who in found] == ["", "m-2026-01", "m-2026-02"]
    assert {(who.model, who.prompt_sha256) for who in found} == {("m", "ab" * 32)}
    assert found[1].describe() == (
        "m-2026-01 (fingerprint fp_a) at temperature 0.0, max_tokens 16, logprobs on"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("answered_by", {"name": "m"}, "answered_by {'name': 'm'} must be a string"),
        ("system_fingerprint", 7, "system_fingerprint 7 must be a string"),
        ("temperature", -1, "temperature -1 must be a number, 0 or more"),
        ("temperature", "hot", "temperature 'hot' must be a number"),
        ("max_tokens", 0, "max_tokens 0 must be a whole number, 1 or more"),
        ("max_tokens", 1.5, "max_tokens 1.5 must be a whole number"),
        ("logprobs", "yes", "logprobs 'yes' must be true, false or absent"),
    ],
)
def test_a_malformed_identity_field_names_its_line_and_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    path = tmp_path / "layer.jsonl"
    bad = json.dumps({**json.loads(OLD_LINE), field: value})
    path.write_text(f"{OLD_LINE}{bad}\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_layer(path)
    assert message in str(error.value)
    assert error.value.line == 2
