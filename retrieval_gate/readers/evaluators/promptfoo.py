"""promptfoo results: `promptfoo eval -o results.json`, whose `results.results[]` are its
EvaluateResult rows: `vars`, `testCase`, `namedScores` {metric: score}, `score`, `success`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError
from retrieval_gate.readers.evaluators.rows import (
    EvaluatorExport,
    EvaluatorRow,
    list_at,
    mapping_at,
    query_id,
    query_text,
    read_json_document,
    score_value,
    wanted_names,
)

TEXT_VARS = ("query", "question")
"""The test's var holding the query's text."""
ID_VAR = "query_id"
OVERALL = "score"
"""The row's overall score (its assertions' weighted mean), gated as `promptfoo:score`."""


def read_promptfoo_scores(path: Path, wanted: Sequence[str]) -> EvaluatorExport:
    """Each result's query (`vars.query_id`, else the text in `vars.query` or
    `vars.question`) and its `wanted` named scores (`namedScores`, filled by assertions
    with a `metric:`), or `score`, the row's overall score."""
    source = str(path)
    document = mapping_at(read_json_document(path), source, "(top level)", "promptfoo results")
    outer = mapping_at(document.get("results"), source, "results", "the results object")
    results = list_at(outer.get("results"), source, "results.results", "the result rows")
    rows: list[EvaluatorRow] = []
    names: dict[str, None] = {OVERALL: None}
    for index, raw in enumerate(results):
        where = f"results.results[{index}]"
        result = mapping_at(raw, source, where, "a result row")
        named = dict(mapping_at(result.get("namedScores") or {}, source, where, "namedScores"))
        if OVERALL in named:
            raise InputError(
                f"{where}: a named score is called {OVERALL!r}, as the row's overall score "
                "is; rename the assertion's metric",
                source=source,
            )
        if "score" in result:
            named[OVERALL] = result["score"]
        names.update(dict.fromkeys(named))
        scores = {
            configured: score_value(named[name], configured, source, where, None)
            for name, configured in wanted_names(named, wanted, source).items()
        }
        identity, text = _query(result, source, where)
        rows.append(EvaluatorRow(where, None, identity, text, scores))
    return EvaluatorExport(source, tuple(rows), tuple(names))


def _query(result: Mapping[str, Any], source: str, where: str) -> tuple[str | None, str | None]:
    test = result.get("testCase")
    variables = result.get("vars")
    if not isinstance(variables, dict) and isinstance(test, dict):
        variables = test.get("vars")
    if not isinstance(variables, dict):
        raise InputError(
            f"{where}: no vars: the row does not say which query it ran", source=source
        )
    identity = text = None
    if ID_VAR in variables:
        identity = query_id(variables[ID_VAR], source, where, None, f"vars.{ID_VAR}")
    for key in TEXT_VARS:
        if key in variables:
            text = query_text(variables[key], source, where, None, f"vars.{key}")
            break
    return identity, text
