"""Which human-judged queries correct the judge, by the draw record, and by what weight."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.draws import Draw, DrawRecord
from retrieval_gate.gate.modes.assisted_draws import rectifier_of
from tests.helpers.builders import queue_dataset

IDS = ["a", "b", "c", "d", "e"]
LABELLED = np.array([True, True, True, False, False])


def with_record(*draws: Draw) -> Dataset:
    dataset = queue_dataset({q: {"d": 1} for q in IDS})
    return dataclasses.replace(dataset, draws=DrawRecord(draws, "qrels.tsv.draws.jsonl"))


def test_no_record_keeps_every_human_judged_query_and_says_the_draw_is_unrecorded() -> None:
    found = rectifier_of(queue_dataset({q: {"d": 1} for q in IDS}), LABELLED, IDS)
    assert found.labelled.tolist() == LABELLED.tolist()
    assert found.inclusion is None
    assert "how the 3 human-judged queries were chosen is not recorded" in found.notes[0]
    assert "label-queue --sample N" in found.notes[0]
    none = rectifier_of(queue_dataset({q: {"d": 1} for q in IDS}), LABELLED & False, IDS)
    assert none.notes == ()


def test_uniform_draws_keep_the_plain_estimate_and_targeted_ones_leave_the_correction() -> None:
    dataset = with_record(
        Draw("a", "s", "sample", 0.5, 1.0, 0.5),
        Draw("b", "impact", "targeted"),
        Draw("c", "s", "sample", 0.5, 1.0, 0.5),
    )
    found = rectifier_of(dataset, LABELLED, IDS)
    assert found.labelled.tolist() == [True, False, True, False, False]
    assert found.inclusion is None
    assert "1 human-judged query (b) was chosen by a targeted queue" in found.notes[0]


def test_an_active_draw_weights_every_query_of_the_correction() -> None:
    dataset = with_record(
        Draw("a", "x", "active", 0.25, 2.0, 0.5),
        Draw("b", "s", "sample", 0.2, 1.0, 0.2),
    )
    found = rectifier_of(dataset, LABELLED, IDS)
    assert found.labelled.tolist() == LABELLED.tolist()
    assert found.inclusion is not None
    # a: 1 - (1 - 0.5)(1 - 0.2); b: 1 - (1 - 0.25)(1 - 0.2); c, unrecorded: 1 of the 5.
    assert found.inclusion[:3] == pytest.approx([0.6, 0.4, 0.2], abs=1e-15)
    assert any("has no line in qrels.tsv.draws.jsonl" in note for note in found.notes)
    assert any(
        note.startswith("1 human-judged query of the estimate was drawn by the judge's doubt")
        for note in found.notes
    )


@pytest.mark.parametrize(
    ("targeted", "shown"),
    [
        (5, "5 human-judged queries (q0, q1, q2, q3, q4) were"),
        (6, "6 human-judged queries (q0, q1, q2, q3, q4 and 1 more) were"),
        (7, "7 human-judged queries (q0, q1, q2, q3, q4 and 2 more) were"),
    ],
)
def test_a_note_on_many_targeted_queries_names_five_and_counts_the_rest(
    targeted: int, shown: str
) -> None:
    ids = [f"q{i}" for i in range(8)]
    dataset = dataclasses.replace(
        queue_dataset({q: {"d": 1} for q in ids}),
        draws=DrawRecord(tuple(Draw(q, "impact", "targeted") for q in ids[:targeted]), "d.jsonl"),
    )
    found = rectifier_of(dataset, np.ones(8, dtype=bool), ids)
    assert found.notes[0].startswith(f"{shown} chosen by a targeted queue")
