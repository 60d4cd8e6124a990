"""The draw record: its lines, each round's probabilities composed, hostile lines refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.config.schema import DatasetConfig
from retrieval_gate.datasets import load
from retrieval_gate.datasets.draws import Draw, DrawRecord, draw_lines, draws_path, read_draws
from retrieval_gate.errors import InputError
from tests.helpers.builders import copy_example


def sample(query: str, round_id: str, rate: float) -> Draw:
    return Draw(query, round_id, "sample", rate, 1.0, rate)


def active(query: str, round_id: str, rate: float, weight: float) -> Draw:
    return Draw(query, round_id, "active", rate, weight, min(1.0, rate * weight))


def test_two_uniform_rounds_compose_to_one_uniform_sample() -> None:
    # 2 of 10, then 3 of the 8 left: every query had 5 / 10 of being labelled.
    draws = [sample("a", "s1", 0.2), sample("b", "s1", 0.2)]
    draws += [sample(q, "s2", 3 / 8) for q in ("c", "d", "e")]
    inclusion = DrawRecord(tuple(draws), "r").inclusion()
    assert inclusion == pytest.approx(dict.fromkeys("abcde", 0.5), abs=1e-15)


def test_active_rounds_compose_with_each_querys_recorded_weight() -> None:
    draws = (active("a", "x1", 0.1, 2.0), active("b", "x2", 0.2, 0.5), sample("c", "s", 0.3))
    inclusion = DrawRecord(draws, "r").inclusion()
    # a: weight 2 in both active rounds, 1 - (1 - 0.1 * 2)(1 - 0.2 * 2)(1 - 0.3); b: weight 0.5;
    # c: never drawn by an active round, its weight there taken as 1.
    assert inclusion["a"] == pytest.approx(1 - 0.8 * 0.6 * 0.7, abs=1e-15)
    assert inclusion["b"] == pytest.approx(1 - 0.95 * 0.9 * 0.7, abs=1e-15)
    assert inclusion["c"] == pytest.approx(1 - 0.9 * 0.8 * 0.7, abs=1e-15)


def test_targeted_queries_have_no_probability_and_their_kinds_are_kept() -> None:
    record = DrawRecord((Draw("t", "impact", "targeted"), sample("t", "s", 0.5)), "r")
    assert record.kinds() == {"t": {"targeted", "sample"}}
    assert DrawRecord((Draw("u", "judge-unsure", "targeted"),), "r").inclusion() == {}


def test_the_record_reads_back_what_it_writes(tmp_path: Path) -> None:
    draws = (active("q 1", "active-1", 0.1, 2.5), Draw("é", "impact", "targeted"))
    path = draws_path(tmp_path / "qrels.tsv")
    assert path.name == "qrels.tsv.draws.jsonl"
    path.write_text(draw_lines(draws), encoding="utf-8")
    record = read_draws(path)
    assert record is not None
    assert record.draws == draws
    assert read_draws(tmp_path / "none.draws.jsonl") is None


GOOD: dict[str, Any] = {
    "query_id": "q1",
    "round": "r1",
    "draw": "active",
    "rate": 0.1,
    "weight": 2.0,
    "p": 0.2,
}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{", "invalid JSON"),
        ("[1]", "a JSON object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (json.dumps({**GOOD, "draw": "::error::x"}), "draw '::error::x' is not one of"),
        (json.dumps({**GOOD, "draw": None}), "no draw"),
        (json.dumps({**GOOD, "round": "a\u0007b"}), "round 'a\\x07b'"),
        (json.dumps({**GOOD, "round": "x" * 65}), "at most 64"),
        (json.dumps({**GOOD, "query_id": ""}), "query_id must be"),
        (json.dumps({**GOOD, "rate": True}), "rate True is not a finite number"),
        (
            '{"query_id": "q1", "round": "r", "draw": "sample", "rate": NaN, "weight": 1, "p": 1}',
            "rate nan is not a finite number",
        ),
        (json.dumps({**GOOD, "weight": 1e400}), "weight inf"),
        (json.dumps({**GOOD, "p": 0.3}), "must be min(1, rate * weight)"),
        (json.dumps({**GOOD, "rate": -0.1, "p": -0.2}), "rate and weight above 0"),
        (json.dumps({**GOOD, "weight": {"a": [1]}}), "weight {'a': [1]} is not a finite"),
    ],
)
def test_a_hostile_line_is_refused_naming_the_file_and_line(
    tmp_path: Path, line: str, says: str
) -> None:
    path = tmp_path / "qrels.tsv.draws.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"draws\.jsonl:3: ") as raised:
        read_draws(path)
    assert says in str(raised.value)


def test_one_round_with_two_rates_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.draws.jsonl"
    other = {**GOOD, "query_id": "q2", "rate": 0.2, "p": 0.4}
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(other) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"r.draws.jsonl:2: round 'r1' is active at rate 0.2"):
        read_draws(path)


def test_a_record_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.draws.jsonl"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        read_draws(path)


def test_the_labelled_set_reads_the_record_beside_its_qrels(tmp_path: Path) -> None:
    copy_example(tmp_path)
    plain = load(DatasetConfig(path="example"), tmp_path)
    assert plain.draws is None
    qrels = tmp_path / "example" / "qrels" / "test.tsv"
    draws_path(qrels).write_text(draw_lines([sample("q001", "s", 0.1)]), encoding="utf-8")
    for spec in (DatasetConfig(path="example"), DatasetConfig(path="example", qrels=str(qrels))):
        record = load(spec, tmp_path).draws
        assert record is not None
        assert record.draws == (sample("q001", "s", 0.1),)
    # Its fingerprint is the qrels': a baseline stays comparable when a record is added.
    assert load(DatasetConfig(path="example"), tmp_path).fingerprint == plain.fingerprint
    draws_path(qrels).write_text('{"draw": "sample"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"test\.tsv\.draws\.jsonl:1: query_id must be"):
        load(DatasetConfig(path="example"), tmp_path)
