"""Evaluator exports joined to the labelled queries: matching, coverage, ranges, the reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.core.model import Query
from retrieval_gate.errors import CoverageError, GateError, InputError
from retrieval_gate.pipeline.evaluator_scores import (
    evaluator_columns,
    evaluators_at,
    unchanged_where_unscored,
)
from tests.helpers.builders import write

QUERIES = tuple(Query(f"q{i}", f"question  number {i}") for i in range(1, 11))


def _config(tmp_path: Path, evaluator: dict[str, Any], **metrics: Any) -> Any:
    document = {
        "version": 1,
        "dataset": {"path": "set"},
        "retriever": {"type": "bm25"},
        "metrics": {"ndcg@10": {}, **metrics},
        "evaluators": {"tool": {"format": "jsonl", "current": "now.jsonl", **evaluator}},
    }
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(json.dumps(document))
    return load(path)


def _lines(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    return write(tmp_path, name, "".join(json.dumps(row) + "\n" for row in rows))


def test_rows_match_by_id_and_fill_a_column_over_the_queries(tmp_path: Path) -> None:
    rows = [{"query_id": q.id, "scores": {"f": i / 10}} for i, q in enumerate(QUERIES)]
    _lines(tmp_path, "now.jsonl", list(reversed(rows)))
    config = _config(tmp_path, {}, **{"tool:f": {"max_drop": "3pt"}})
    columns = evaluator_columns(config, QUERIES)
    assert list(columns.values) == ["tool:f"]
    assert columns.values["tool:f"].tolist() == [i / 10 for i in range(10)]
    assert not columns.values["tool:f"].flags.writeable
    assert columns.warnings == ()


def test_rows_without_ids_match_by_text_after_whitespace_is_collapsed(tmp_path: Path) -> None:
    rows = [{"query": f" question number {i}\n", "scores": {"f": 1}} for i in range(1, 11)]
    _lines(tmp_path, "now.jsonl", [*rows, {"query": "not labelled", "scores": {"f": 0}}])
    columns = evaluator_columns(_config(tmp_path, {}, **{"tool:f": {}}), QUERIES)
    assert columns.values["tool:f"].tolist() == [1.0] * 10
    assert columns.warnings == (
        "evaluator tool (now.jsonl): 1 row matched no labelled query and were left out (line 11)",
    )


def test_match_text_ignores_ids_and_match_id_needs_them(tmp_path: Path) -> None:
    rows = [{"query_id": "x" + q.id, "query": q.text, "scores": {"f": 0.5}} for q in QUERIES]
    _lines(tmp_path, "now.jsonl", rows)
    by_text = evaluator_columns(_config(tmp_path, {"match": "text"}, **{"tool:f": {}}), QUERIES)
    assert by_text.values["tool:f"].tolist() == [0.5] * 10
    _lines(tmp_path, "now.jsonl", [{"query": q.text, "scores": {"f": 0.5}} for q in QUERIES])
    with pytest.raises(InputError, match=r"now\.jsonl:1: line 1: no query id to match"):
        evaluator_columns(_config(tmp_path, {"match": "id"}, **{"tool:f": {}}), QUERIES)


def test_unscored_queries_take_the_mean_within_the_coverage_floor(tmp_path: Path) -> None:
    rows = [
        {"query_id": q.id, "scores": {"f": 0.2 if i % 2 else 0.6}} for i, q in enumerate(QUERIES)
    ]
    _lines(tmp_path, "now.jsonl", [*rows[:9], {"query_id": "q10", "scores": {"other": 1}}])
    columns = evaluator_columns(_config(tmp_path, {}, **{"tool:f": {}}), QUERIES)
    column = columns.values["tool:f"]
    assert column[9] == pytest.approx(np.mean(column[:9]))
    assert column.mean() == pytest.approx(np.mean(column[:9]))
    assert columns.warnings == (
        "evaluator tool (now.jsonl): f: 1 labelled query unscored ('q10'), each counted as "
        "unchanged against the other side",
    )
    assert columns.unscored == {"tool:f": ("q10",)}


def test_a_query_unscored_on_one_side_takes_the_other_sides_value() -> None:
    before = np.array([0.1, 0.2, 0.5, 0.4])  # 0.5: the mean its side was filled with
    after = np.array([0.3, 0.9, 0.5, 0.6])
    held, now = unchanged_where_unscored(before, after, [2, 3], [1, 2])
    assert held.tolist() == [0.1, 0.2, 0.5, 0.6]
    assert now.tolist() == [0.3, 0.2, 0.5, 0.6]
    assert not held.flags.writeable
    assert not now.flags.writeable
    assert before.tolist() == [0.1, 0.2, 0.5, 0.4]  # the inputs are left as they were


def test_coverage_below_the_floor_is_an_error_listing_the_unscored(tmp_path: Path) -> None:
    _lines(tmp_path, "now.jsonl", [{"query_id": q.id, "scores": {"f": 1}} for q in QUERIES[:8]])
    with pytest.raises(CoverageError) as caught:
        evaluator_columns(_config(tmp_path, {}, **{"tool:f": {}}), QUERIES)
    assert str(caught.value).endswith(
        "now.jsonl: score f covers 8 of 10 labelled queries (80%), below gate.min_coverage "
        "90%; none for 'q9', 'q10'. Score every labelled query, or check evaluators.*.match"
    )
    assert caught.value.exit_code == 2


def test_a_second_row_for_a_query_is_an_error_naming_both(tmp_path: Path) -> None:
    rows = [{"query_id": q.id, "scores": {"f": 1}} for q in QUERIES]
    _lines(tmp_path, "now.jsonl", [*rows, {"query_id": "q3", "scores": {"f": 0}}])
    with pytest.raises(InputError, match=r"now\.jsonl:11: line 11: a second row for query 'q3' "
                       r"\(the first is line 3\)"):  # fmt: skip
        evaluator_columns(_config(tmp_path, {}, **{"tool:f": {}}), QUERIES)


def test_a_text_two_queries_share_cannot_match_by_text(tmp_path: Path) -> None:
    queries = (*QUERIES, Query("q11", "question number 1"))
    _lines(tmp_path, "now.jsonl", [{"query": "question number 1", "scores": {"f": 1}}])
    with pytest.raises(InputError, match="several labelled queries have the text"):
        evaluator_columns(_config(tmp_path, {}, **{"tool:f": {}}), queries)


def test_scores_outside_zero_one_need_a_unit(tmp_path: Path) -> None:
    _lines(tmp_path, "now.jsonl", [{"query_id": q.id, "scores": {"stars": 4.5}} for q in QUERIES])
    with pytest.raises(InputError, match=r"line 1: score stars 4\.5 is outside \[0, 1\]"):
        evaluator_columns(_config(tmp_path, {}, **{"tool:stars": {}}), QUERIES)
    config = _config(tmp_path, {"units": {"stars": "stars"}}, **{"tool:stars": {}})
    assert evaluator_columns(config, QUERIES).values["tool:stars"].tolist() == [4.5] * 10


def test_a_score_the_export_lacks_is_an_error_listing_its_scores(tmp_path: Path) -> None:
    _lines(tmp_path, "now.jsonl", [{"query_id": q.id, "scores": {"f": 1}} for q in QUERIES])
    with pytest.raises(
        InputError, match=r"no score 'faith' in this jsonl export \(its scores: 'f'\)"
    ):
        evaluator_columns(_config(tmp_path, {}, **{"tool:faith": {}}), QUERIES)


def test_the_reference_side_reads_the_reference_export(tmp_path: Path) -> None:
    _lines(tmp_path, "now.jsonl", [{"query_id": q.id, "scores": {"f": 1}} for q in QUERIES])
    _lines(tmp_path, "then.jsonl", [{"query_id": q.id, "scores": {"f": 0.5}} for q in QUERIES])
    config = _config(tmp_path, {"reference": "then.jsonl"}, **{"tool:f": {}})
    assert evaluator_columns(config, QUERIES, "reference").values["tool:f"].tolist() == [0.5] * 10
    unset = _config(tmp_path, {}, **{"tool:f": {}})
    assert evaluator_columns(unset, QUERIES, "reference").values == {}


def test_against_reads_the_export_the_reference_commit_names(tmp_path: Path) -> None:
    head = _config(tmp_path, {}, **{"tool:f": {}})
    old = tmp_path / "old"
    old.mkdir()
    document = json.loads(head.path.read_text())
    document["evaluators"]["tool"]["current"] = "old-scores.jsonl"
    (old / "retrieval-gate.yaml").write_text(json.dumps(document))
    at_ref = load(old / "retrieval-gate.yaml")
    assert evaluators_at(head, at_ref)["tool"].current == str(old / "old-scores.jsonl")
    del document["evaluators"]
    del document["metrics"]["tool:f"]
    (old / "retrieval-gate.yaml").write_text(json.dumps(document))
    with pytest.raises(GateError, match=r"set evaluators\.tool\.reference to its export"):
        evaluators_at(head, load(old / "retrieval-gate.yaml"))
    given = _config(tmp_path, {"reference": "then.jsonl"}, **{"tool:f": {}})
    assert evaluators_at(given, at_ref)["tool"].current == str(tmp_path / "then.jsonl")
