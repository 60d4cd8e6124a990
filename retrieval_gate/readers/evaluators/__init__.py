"""Readers of evaluator exports (Ragas, DeepEval, promptfoo, JSONL): per-query named scores."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from retrieval_gate.errors import InputError
from retrieval_gate.readers.evaluators.deepeval import read_deepeval_scores
from retrieval_gate.readers.evaluators.jsonl import read_jsonl_scores
from retrieval_gate.readers.evaluators.promptfoo import read_promptfoo_scores
from retrieval_gate.readers.evaluators.ragas import read_ragas_scores
from retrieval_gate.readers.evaluators.rows import EvaluatorExport, EvaluatorRow, score_key

EVALUATOR_FORMATS: dict[str, Callable[[Path, Sequence[str]], EvaluatorExport]] = {
    "jsonl": read_jsonl_scores,
    "ragas": read_ragas_scores,
    "deepeval": read_deepeval_scores,
    "promptfoo": read_promptfoo_scores,
}


def read_evaluator_scores(path: Path, format: str, wanted: Sequence[str]) -> EvaluatorExport:
    """The rows of the `format` export at `path`, with the `wanted` scores each holds; an
    export without a row is an error."""
    if format not in EVALUATOR_FORMATS:
        raise InputError(
            f"unknown evaluator format {format!r}; available: {', '.join(EVALUATOR_FORMATS)}"
        )
    export = EVALUATOR_FORMATS[format](path, wanted)
    if not export.rows:
        raise InputError(
            f"no scored rows (read as {format}); export the evaluator's per-query results",
            source=str(path),
        )
    return export


__all__ = [
    "EVALUATOR_FORMATS",
    "EvaluatorExport",
    "EvaluatorRow",
    "read_evaluator_scores",
    "score_key",
]
