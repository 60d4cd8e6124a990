"""Lint rules on a chunked corpus: chunks not found in their source, labels a re-chunk moved."""

from __future__ import annotations

from collections.abc import Iterator

from retrieval_gate.core.wording import plural
from retrieval_gate.datasets.label_drift import drift_counts
from retrieval_gate.gate.baseline.rechunk import label_drift_since
from retrieval_gate.lint.engine import Draft, LintInput, rule, some


@rule("unanchored-chunk", "warning", "a chunk whose text was not found in its source document")
def _unanchored(given: LintInput) -> Iterator[Draft]:
    anchors = given.labels.anchors
    if anchors is None or not anchors.unanchored:
        return
    where = (
        "its source's text (dataset.documents) does not contain it"
        if given.config.dataset.documents
        else "it gives no metadata.start and dataset.documents names no source texts"
    )
    yield Draft(
        f"{plural(len(anchors.unanchored), 'chunk')} of the corpus "
        f"{'names' if len(anchors.unanchored) == 1 else 'name'} a source document but "
        f"could not be anchored in it ({some(list(anchors.unanchored), 3)}): {where}; their "
        "labels cannot follow a re-chunk",
        "set dataset.documents to the source documents, or give each chunk metadata.start",
        given.config.dataset.corpus or given.labels.source,
    )


@rule("label-drift", "warning", "labels whose judged text a re-chunk moved since the baseline")
def _drift(given: LintInput) -> Iterator[Draft]:
    dataset = given.dataset
    if given.baseline is None or dataset is None:
        return
    drift = label_drift_since(given.baseline, dataset)
    if drift is None:
        return
    counts = drift_counts(drift)
    moved = len(drift) - counts["valid"]
    if not moved:
        return
    kinds = ", ".join(f"{counts[k]} {k}" for k in counts if k != "valid" and counts[k])
    yield Draft(
        f"{plural(moved, 'label')} of {len(drift)} no longer on the chunk they were given to "
        f"({kinds}): at dataset.level chunk, `check` scores the current side on the "
        f"{counts['valid'] + counts['re-anchorable']} it can anchor, the rest are its label "
        "holes",
        f"`retrieval-gate label-drift -c {given.config.path.name} --fix QRELS --queue "
        "QUEUE.csv` re-anchors what it can and queues the chunks to grade",
        given.labels.judgments.source,
    )
