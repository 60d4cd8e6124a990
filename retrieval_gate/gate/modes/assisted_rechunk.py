"""The judge's labels across a re-chunk: each grade on each side's chunk holding its text."""

from __future__ import annotations

import dataclasses

from retrieval_gate.gate.baseline.rechunk import Rechunk, judge_across, pairs_qrels
from retrieval_gate.gate.modes.assisted import JudgeLabels


def rechunked_judge(judge: JudgeLabels, rechunk: Rechunk) -> tuple[JudgeLabels, str]:
    """`judge`'s labels in the re-chunk's two-sided id space (`judge_across`), each still
    the judge's grade, by the judge that gave it; and the note saying what each side
    anchored."""
    found, note = judge_across(judge.texts, rechunk)
    grades = {key: text.grade for key, text in found.items()}
    qrels = pairs_qrels(judge.qrels.query_ids, grades, judge.qrels.source)
    graded_by = {key: text.identity for key, text in found.items()}
    return dataclasses.replace(judge, qrels=qrels, graded_by=graded_by), note
