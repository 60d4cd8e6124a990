"""gate.labels human+llm: which human-judged queries correct the judge, and by what weight."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.datasets import Dataset

VALID_QUEUES = (
    "`label-queue --sample N` (uniform) or `label-queue --active N` (by the judge's doubt)"
)
"""The queues whose queries keep the prediction-powered estimate valid."""


@dataclass(frozen=True)
class Rectifier:
    """The human-judged queries the estimate's correction reads, and their weights."""

    labelled: np.ndarray
    """Per query of the estimate: in the correction (human-judged, not targeted alone)."""
    inclusion: FloatArray | None
    """Per query: its probability of being labelled, for the weighted estimate; None when
    every draw was uniform (or unrecorded): then the plain PPI++ estimate, as before draws
    were recorded."""
    notes: tuple[str, ...]
    """What the report says of the draw."""


def rectifier_of(dataset: Dataset, labelled: np.ndarray, ids: Sequence[str]) -> Rectifier:
    """The rectifier of the queries `ids` (in the estimate's order) whose human judgments
    `labelled` marks, by the draw record of `dataset` (`datasets.draws`).

    A query only targeted queues chose (impact, the judge's doubt, label holes) has an
    unknown probability: it stays out of the correction. A query a sample or active round
    drew has its composed inclusion probability (`DrawRecord.inclusion`). A query the record
    does not name is taken as a uniform sample, as the estimate always took every query."""
    record = dataset.draws
    count = int(labelled.sum())
    if record is None:
        missing = (
            (
                f"how the {plural(count, 'human-judged query', 'human-judged queries')} were "
                "chosen is not recorded (no draw record beside the qrels): the estimate takes "
                "them as a uniform random sample; queries chosen by impact or by the judge's "
                f"doubt would bias it. Draw the next ones with {VALID_QUEUES}"
            ),
        )
        return Rectifier(labelled, None, missing if count else ())
    kinds = record.kinds()
    inclusion_of = record.inclusion()
    keep = labelled.copy()
    targeted: list[str] = []
    unrecorded: list[int] = []
    active = 0
    for i, query in enumerate(ids):
        if not labelled[i]:
            continue
        found = kinds.get(query)
        if found is None:
            unrecorded.append(i)
        elif query in inclusion_of:
            active += "active" in found
        else:
            keep[i] = False
            targeted.append(query)
    notes: list[str] = []
    if targeted:
        shown = ", ".join(one_line(q) for q in targeted[:5])
        more = f" and {len(targeted) - 5} more" if len(targeted) > 5 else ""
        notes.append(
            f"{plural(len(targeted), 'human-judged query', 'human-judged queries')} "
            f"({shown}{more}) {_were(len(targeted))} chosen by a targeted queue (by impact, "
            "the judge's doubt or a label hole; their probability is unknown): they stay out "
            "of the estimate's correction of the judge, and still calibrate it on the card. "
            f"Draw queries for the estimate with {VALID_QUEUES}"
        )
    if unrecorded:
        notes.append(
            f"{plural(len(unrecorded), 'human-judged query', 'human-judged queries')} "
            f"{'has' if len(unrecorded) == 1 else 'have'} no line in {record.source}: the "
            "estimate takes them as a uniform random sample"
        )
    if not active:
        return Rectifier(keep, None, tuple(notes))
    inclusion = np.ones(len(ids), dtype=np.float64)
    for i, query in enumerate(ids):
        if query in inclusion_of:
            inclusion[i] = inclusion_of[query]
    # Queries the record does not name: a uniform sample of their count, as before.
    inclusion[unrecorded] = len(unrecorded) / len(ids)
    notes.append(
        f"{plural(active, 'human-judged query', 'human-judged queries')} of the estimate "
        f"{_were(active)} drawn by the judge's doubt (`label-queue --active`): the estimate "
        "weights each human-judged query by its inclusion probability"
    )
    return Rectifier(keep, inclusion, tuple(notes))


def _were(count: int) -> str:
    return "was" if count == 1 else "were"
