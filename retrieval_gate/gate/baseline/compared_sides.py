"""The two records and the labelled set a decision compares: the corpus checked, a re-chunk
anchored, or both sides rolled up to documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.corpus_changes import CorpusCheck, corpus_checked
from retrieval_gate.gate.baseline.document_level import document_level
from retrieval_gate.gate.baseline.rechunk import Rechunk, rechunked
from retrieval_gate.gate.baseline.record import Baseline


@dataclass(frozen=True, kw_only=True, eq=False)
class ComparedSides:
    """What `decide` compares, and the current record as the result keeps it whole."""

    whole_current: Baseline
    """The current record over every query: re-scored under its anchored labels after a
    re-chunk, else as given."""
    baseline: Baseline
    current: Baseline
    dataset: Dataset
    corpus: CorpusCheck
    notes: tuple[str, ...]
    other: OtherLevel | None = None
    """A chunked corpus's other level (dataset.other_level), unless off."""
    rechunk: Rechunk | None = None
    """The re-chunk compared across, for the judge's labels to follow (`judge_across`)."""


@dataclass(frozen=True, eq=False)
class OtherLevel:
    """The two records and the labelled set at the level dataset.level does not name."""

    level: Literal["chunk", "document"]
    gated: bool
    baseline: Baseline
    current: Baseline
    dataset: Dataset


_LLM = (
    "gate.labels human+llm reads the judge's labels of chunks, which do not roll up to "
    "documents: set dataset.other_level to off or report, or gate with people's labels alone "
    "(gate.labels: human)"
)


def compared_sides(
    baseline: Baseline, current: Baseline, dataset: Dataset, config: GateConfig
) -> ComparedSides:
    """A re-chunk gated on each side's anchored labels (`rechunked`); otherwise the queries
    whose judged documents changed left out (`corpus_checked`). With dataset.level document,
    both sides then rolled up to source documents (`document_level`), across a re-chunk from
    the records as their own chunkings scored them. A chunked corpus's other level comes
    along as `other` unless dataset.other_level is off; one it cannot report is a note
    (NotComparableError when it gates)."""
    llm = config.gate.uses_llm_labels
    rechunk = rechunked(baseline, current, dataset)
    notes: tuple[str, ...] = ()
    if rechunk is None:
        whole = current
        baseline, current, dataset, corpus = corpus_checked(
            baseline, current, dataset, config.gate.min_coverage
        )
        rolled_from = (baseline, current, dataset)
    else:
        whole, notes = rechunk.current, (rechunk.note,)
        rolled_from = (baseline, whole, dataset)
        baseline, current, dataset = rechunk.baseline, rechunk.current, rechunk.dataset
        corpus = CorpusCheck(checked=True)
    drift = rechunk.drift if rechunk is not None else None
    also = config.dataset.other_level
    other: OtherLevel | None = None
    if config.dataset.level == "document":
        chunks = (baseline, current, dataset)
        baseline, current, dataset, rolled = document_level(*rolled_from, drift, llm_labels=llm)
        notes = (*notes, *rolled)
        if rolled and also != "off":  # chunked: the chunk level is the other one
            other = OtherLevel("chunk", also == "gate", *chunks)
    elif also != "off":
        try:
            up, now, rolled_set, rolled = document_level(
                *rolled_from, drift, llm_labels=llm, why=f"dataset.other_level is {also}"
            )
        except NotComparableError as error:
            reason = _LLM if llm else str(error)
            if also == "gate":
                raise NotComparableError(f"the document level cannot gate: {reason}") from None
            # Shown beside the gate, never a reason to refuse it.
            notes = (*notes, f"the document level is not reported: {reason}")
        else:
            notes = (*notes, *rolled)
            if rolled:
                other = OtherLevel("document", also == "gate", up, now, rolled_set)
    return ComparedSides(
        whole_current=whole,
        baseline=baseline,
        current=current,
        dataset=dataset,
        corpus=corpus,
        notes=notes,
        other=other,
        rechunk=rechunk,
    )
