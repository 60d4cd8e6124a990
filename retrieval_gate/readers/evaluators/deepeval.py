"""DeepEval results: a test run's JSON (`testCases[]` with `metricsData[]`, as DeepEval saves
it) or `EvaluationResult.test_results[]` dumped (`metrics_data[]`), each metric
{name, score, threshold, success, reason}."""

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
from retrieval_gate.readers.text import quoted

CASE_LISTS = ("testCases", "test_cases", "test_results")
METRIC_LISTS = ("metricsData", "metrics_data")
METADATA = ("additional_metadata", "additionalMetadata", "metadata")
"""Where a test case carries the team's own fields: `query_id` is read from them."""


def read_deepeval_scores(path: Path, wanted: Sequence[str]) -> EvaluatorExport:
    """Each test case's `input` (the query's text), `query_id` from its metadata when set,
    and its `wanted` metrics' scores (matched by name: "Answer Relevancy" is
    answer_relevancy)."""
    source = str(path)
    document = read_json_document(path)
    cases, key = _cases(document, source)
    rows: list[EvaluatorRow] = []
    names: dict[str, None] = {}
    for index, raw in enumerate(cases):
        where = f"{key}[{index}]"
        case = mapping_at(raw, source, where, "a test case")
        listed = next((k for k in METRIC_LISTS if k in case), None)
        if listed is None:
            continue  # a test case no metric ran on (a turn of a conversation)
        named = _metrics(case[listed], source, f"{where}.{listed}")
        names.update(dict.fromkeys(named))
        scores = {}
        for name, configured in wanted_names(named, wanted, source).items():
            metric = named[name]
            if metric.get("score") is None and metric.get("error"):
                # Its error is not quoted: a provider's error may carry the key it was sent,
                # and this message reaches CI logs.
                raise InputError(
                    f"{where}: metric {configured} has no score: it failed (its `error` in the "
                    "export says why); re-run the evaluation on this case",
                    source=source,
                )
            scores[configured] = score_value(metric.get("score"), configured, source, where, None)
        identity = _metadata_id(case, source, where)
        text = query_text(case["input"], source, where, None, "input") if "input" in case else None
        rows.append(EvaluatorRow(where, None, identity, text, scores))
    return EvaluatorExport(source, tuple(rows), tuple(names))


def _cases(document: Any, source: str) -> tuple[list[Any], str]:
    if isinstance(document, list):
        return document, "test_results"
    top = mapping_at(document, source, "(top level)", "a DeepEval test run or evaluation result")
    for key in CASE_LISTS:
        if key in top:
            return list_at(top[key], source, key, "test cases"), key
    raise InputError(
        f"no test cases: a DeepEval export has {' or '.join(CASE_LISTS)}; keys are "
        f"{', '.join(map(quoted, list(top)[:20]))}",
        source=source,
    )


def _metrics(items: Any, source: str, where: str) -> dict[str, Mapping[str, Any]]:
    """Name -> metric of the list at `where` (a case's metricsData or metrics_data)."""
    named: dict[str, Mapping[str, Any]] = {}
    for position, raw in enumerate(list_at(items, source, where, "metrics")):
        metric = mapping_at(raw, source, f"{where}[{position}]", "a metric")
        name = metric.get("name")
        if not isinstance(name, str):
            raise InputError(f"{where}[{position}]: a metric needs its name", source=source)
        if name in named:
            raise InputError(f"{where}: metric {quoted(name)} is given twice", source=source)
        named[name] = metric
    return named


def _metadata_id(case: Mapping[str, Any], source: str, where: str) -> str | None:
    for key in METADATA:
        metadata = case.get(key)
        if isinstance(metadata, dict) and "query_id" in metadata:
            return query_id(metadata["query_id"], source, where, None, f"{key}.query_id")
    return None
