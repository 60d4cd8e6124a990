"""The `evaluators:` block: another tool's per-query scores (Ragas, DeepEval, promptfoo, JSONL)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator

from retrieval_gate.config.columns import OWN_UNITS, Column
from retrieval_gate.core.strict import StrictModel

RESERVED = ("candidates", "trec_eval", "ir_measures", "ranx")
"""Prefixes a metrics key already means something by: not evaluator names."""
SCORE_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
_SCORE = re.compile(SCORE_PATTERN)
_NAME_RULE = "1-64 letters, digits, '_', '.' or '-', starting with a letter, digit or '_'"


class EvaluatorConfig(StrictModel):
    """One evaluator's per-query export, read for this run and (optionally) the reference."""

    format: Literal["jsonl", "ragas", "deepeval", "promptfoo"] = Field(
        description="the export's shape: jsonl ({query_id, query, scores: {name: value}} per "
        "line), ragas (EvaluationResult.to_pandas() written as CSV or JSONL), deepeval (a test "
        "run's JSON with testCases[].metricsData[], or EvaluationResult.test_results[]), "
        "promptfoo (`promptfoo eval -o results.json`)"
    )
    current: str = Field(description="this run's export")
    reference: str | None = Field(
        None,
        description="the reference side's export; unset: the scores the baseline stored when "
        "`retrieval-gate baseline` ran",
    )
    match: Literal["auto", "id", "text"] = Field(
        "auto",
        description="how a row finds its query: id (the row's query id), text (the query "
        "text, exact after whitespace is collapsed) or auto (id when the rows carry one)",
    )
    lower_is_better: list[str] = Field(
        default_factory=list,
        description="scores where lower is better, e.g. [hallucination, toxicity]: they gate "
        "an increase",
    )
    units: dict[str, str] = Field(
        default_factory=dict,
        description="scores not on the [0, 1] scale -> their unit word, e.g. {helpfulness: "
        f"stars}} ({OWN_UNITS}: no word): not range-checked; thresholds in their own units "
        "(max_drop: 0.5 stars) or relative (5%)",
    )

    @field_validator("lower_is_better")
    @classmethod
    def _score_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if problem := _score_name_problem(name):
                raise ValueError(problem)
        return names

    @field_validator("units")
    @classmethod
    def _unit_words(cls, units: dict[str, str]) -> dict[str, str]:
        for name, unit in units.items():
            if problem := _score_name_problem(name):
                raise ValueError(problem)
            if not re.fullmatch(r"[A-Za-z%$][A-Za-z0-9 %$/_.-]{0,23}", unit):
                raise ValueError(
                    f"unit {unit!r} of {name}: a short word such as stars or points "
                    "(letters, digits, spaces, % $ / _ . -; at most 24 characters)"
                )
        return units


def _score_name_problem(name: str) -> str | None:
    """Why `name` cannot name a score, or None."""
    if not _SCORE.fullmatch(name):
        return f"{name!r} is not a score name ({_NAME_RULE})"
    return None


def evaluator_key(key: str) -> tuple[str, str] | None:
    """(evaluator, score) of a metrics key `<evaluator>:<score>`; None for any other key
    (a relevance metric, or a reserved prefix such as `trec_eval:` or `candidates:`)."""
    evaluator, colon, score = key.partition(":")
    if not colon or evaluator in RESERVED or "(" in evaluator or "@" in evaluator:
        return None
    return evaluator, score


def evaluator_column(key: str, evaluators: Mapping[str, EvaluatorConfig]) -> Column | None:
    """The direction and unit of the evaluator check `key` (`lower_is_better`, `units`), or
    None when `key` is not one of a configured evaluator."""
    named = evaluator_key(key)
    if named is None or named[0] not in evaluators:
        return None
    settings, score = evaluators[named[0]], named[1]
    return Column(
        "lower" if score in settings.lower_is_better else "higher", settings.units.get(score, "")
    )


def evaluator_problem(key: str, evaluators: dict[str, EvaluatorConfig]) -> str | None:
    """What is wrong with the evaluator check `key`, or None when it names a configured
    evaluator and a well-formed score name."""
    evaluator, score = evaluator_key(key) or ("", "")
    if evaluator not in evaluators:
        known = ", ".join(sorted(evaluators)) or "none is configured"
        return (
            f"no evaluator {evaluator!r} (evaluators: {known}); add it under evaluators: "
            f"with its format and current export, or fix the name"
        )
    return _score_name_problem(score)


def evaluator_name_problem(name: str) -> str | None:
    """Why `name` cannot name an evaluator, or None."""
    if name in RESERVED:
        return (
            f"{name!r} is reserved (metrics keys {', '.join(r + ':' for r in RESERVED)} "
            "already mean something): name the evaluator after its tool, e.g. ragas"
        )
    if not _SCORE.fullmatch(name):
        return f"{name!r} is not an evaluator name ({_NAME_RULE})"
    return None
