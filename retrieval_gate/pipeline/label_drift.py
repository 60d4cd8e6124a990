"""`label-drift`: each label against the current chunking, counted by slice; what to re-anchor
and what people must grade."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from retrieval_gate.config.check_keys import canonical_name
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.wording import aligned, one_line, plural
from retrieval_gate.datasets import Dataset, load
from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.datasets.label_drift import (
    ANCHORED,
    KINDS,
    Chunking,
    DriftKind,
    LabelDrift,
    drift_counts,
)
from retrieval_gate.datasets.layer_anchors import anchor_of
from retrieval_gate.datasets.llm_layer import LlmJudgment, layer_path, read_layer, write_layer
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.rechunk import label_drift_since
from retrieval_gate.gate.checks.slicing import slice_queries
from retrieval_gate.labels.queue import QueueItem
from retrieval_gate.metrics.spec import format_value

NO_ANCHORS = (
    "the baseline holds no chunk anchors: it was made before retrieval-gate recorded them, or "
    "on a corpus whose documents name no metadata.source; recreate it on the chunking the "
    "labels were given on (`retrieval-gate baseline --force` on the main branch)"
)
NOT_CHUNKED = (
    "the corpus is not chunked: no document names its source document in metadata.source "
    "(see docs/changing-the-chunker.md)"
)


@dataclass(frozen=True)
class DriftReport:
    """Every label's drift, the counts by slice, and what `--fix` and `--queue` write."""

    drift: tuple[LabelDrift, ...]
    slices: tuple[tuple[str, dict[DriftKind, int]], ...]
    """Slice name -> the drift counts of its queries' labels; `all` first."""
    queue: tuple[QueueItem, ...]
    """The (query, chunk) pairs that hold a merged or split label's text, ungraded."""
    baseline: Path
    judge: tuple[LabelDrift, ...] | None = None
    """The judge's layer's labels (every judge's), when the config names a judge and its
    layer exists, each anchored where its row says it read (else where the baseline's
    chunking had its doc)."""
    judge_rows: tuple[LlmJudgment, ...] = ()
    """The layer's row of each of `judge`, in the same order."""
    layer: Path | None = None
    """The judge's layer, when `judge` was read from it."""
    anchors: Mapping[str, Anchor] = dataclasses.field(default_factory=dict)
    """The current chunking's anchors, by chunk id."""

    def reanchored(self) -> str:
        """The labels whose text is one chunk's whole text now, on that chunk, as BEIR qrels
        (`--fix`); InputError when an id cannot be written on a qrels line."""
        return _reanchored(self.drift)

    def judge_reanchored(self) -> tuple[LlmJudgment, ...]:
        """The judge's re-anchorable labels moved to the chunk holding their text, anchored
        there: the same row (grade, answer, time, the judge that gave it), another chunk id.
        Still the judge's grades: they go to its layer, never to people's qrels."""
        moved = {}
        for drift, row in zip(self.judge or (), self.judge_rows, strict=True):
            if drift.drift.kind == "re-anchorable":
                chunk = drift.drift.chunks[0]
                kept = dataclasses.replace(row, doc=chunk, anchor=self.anchors.get(chunk))
                moved[kept.key] = kept
        return tuple(moved[key] for key in sorted(moved))


def drift_report(config: GateConfig, baseline_path: str | Path | None = None) -> DriftReport:
    """The labels of `config`'s labelled set against its corpus's chunking, each anchored where
    the baseline's chunking had it. InputError when either side has no anchors."""
    path = Path(baseline_path) if baseline_path is not None else config.resolve(config.baseline)
    baseline = read_baseline(path)
    dataset = load(config.dataset, config.base_dir, keep_unjudged=config.gate.uses_llm_labels)
    if baseline.chunk_anchors is None:
        raise InputError(NO_ANCHORS, source=str(path))
    drift = label_drift_since(baseline, dataset)
    if drift is None:
        raise InputError(NOT_CHUNKED, source=config.dataset.corpus or "dataset.corpus")
    groups = slice_queries(
        dataset.queries, config.slices.by, config.slices.combine, config.slices.query_length.bins
    )
    slices = []
    for name, rows in groups.items():
        members = {dataset.queries[int(i)].id for i in rows}
        slices.append((name, drift_counts([row for row in drift if row.query_id in members])))
    metric = canonical_name(next(iter(config.metrics)))
    judged = _judge_drift(config, baseline.chunk_anchors, dataset)
    judge = tuple(drift for drift, _ in judged) if judged is not None else None
    return DriftReport(
        drift=drift,
        slices=tuple(slices),
        queue=_queue((*drift, *(judge or ())), dataset, metric),
        baseline=path,
        judge=judge,
        judge_rows=tuple(row for _, row in judged or ()),
        layer=layer_path(config) if judged is not None else None,
        anchors=dataset.anchors.anchors if dataset.anchors is not None else {},
    )


def _judge_drift(
    config: GateConfig, anchors: Mapping[str, Anchor], dataset: Dataset
) -> list[tuple[LabelDrift, LlmJudgment]] | None:
    """The judge's layer's labels against the current chunking, each anchored where its row
    recorded the text the judge read (else where the baseline's chunking had its doc; else,
    a chunk nobody anchored, the current one of its id), sorted by (query, doc); None
    without a judge or a layer."""
    if config.judge is None or dataset.corpus is None or dataset.anchors is None:
        return None
    path = layer_path(config)
    if not path.is_file():
        return None
    chunking = Chunking(dataset.corpus, dataset.anchors)
    found = [
        (LabelDrift(row.query, row.doc, float(row.grade), chunking.drift(row.doc, anchor)), row)
        for row in read_layer(path)
        for anchor in (anchor_of(row, anchors),)
    ]
    return sorted(found, key=lambda pair: (pair[0].query_id, pair[0].doc_id))


def write_judge_reanchored(report: DriftReport) -> int:
    """Add the judge's re-anchored labels to its layer (`DriftReport.judge_reanchored`);
    the rows it held stay. Returns how many were added or already there."""
    rows = report.judge_reanchored()
    if rows and report.layer is not None:
        write_layer(report.layer, rows)
    return len(rows)


def drift_table(report: DriftReport) -> str:
    """The counts by slice as a plain-text table, and the orphaned labels named."""
    header = ("slice", "labels", *KINDS)
    rows = [header] + [
        (name, str(sum(counts.values())), *(str(counts[kind]) for kind in KINDS))
        for name, counts in report.slices
    ]
    lines = aligned([tuple(one_line(cell) for cell in row) for row in rows], right_from=1)
    orphaned = [f"{r.query_id}/{r.doc_id}" for r in report.drift if r.drift.kind == "orphaned"]
    if orphaned:
        shown = ", ".join(one_line(pair) for pair in orphaned[:5])
        more = f" and {len(orphaned) - 5} more" if len(orphaned) > 5 else ""
        lines.append(
            f"orphaned: {plural(len(orphaned), 'label')} whose judged text is in no chunk now "
            f"({shown}{more}): nothing to re-anchor or grade; label the queries' new top k "
            "(`retrieval-gate label-queue`)"
        )
    if report.judge is not None:
        counts = drift_counts(report.judge)
        kinds = ", ".join(f"{counts[kind]} {kind}" for kind in KINDS)
        lines.append(
            f"the judge's layer: {plural(len(report.judge), 'label')} ({kinds}); --fix "
            "re-anchors the re-anchorable ones in the layer (still the judge's grades), "
            "--queue lists the chunks holding the merged and split ones' text to grade "
            "(`retrieval-gate judge` grades those a run ranks)"
        )
    return "\n".join(lines) + "\n"


def _reanchored(drift: tuple[LabelDrift, ...]) -> str:
    """The valid and re-anchorable labels on the chunk holding their text, as BEIR qrels
    (query-id, corpus-id, score), sorted; the highest grade where two land on one chunk."""
    kept: dict[tuple[str, str], float] = {}
    for row in drift:
        if row.drift.kind in ANCHORED:
            key = (row.query_id, row.drift.chunks[0])
            kept[key] = max(kept.get(key, row.grade), row.grade)
    for query, doc in kept:
        if any(c in query + doc for c in "\t\r\n"):
            raise InputError(
                f"the label {query!r}/{doc!r} has a tab or line break in an id, which a qrels "
                "line cannot hold: rename the query or chunk, or leave out --fix"
            )
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{format_value(g)}" for (q, d), g in sorted(kept.items())]
    return "\n".join(lines) + "\n"


def _queue(drift: tuple[LabelDrift, ...], dataset: Dataset, metric: str) -> tuple[QueueItem, ...]:
    """Each chunk holding a merged or split label's text (people's or the judge's), for its
    query, unless a valid or re-anchorable label already grades it: no grade is carried
    over to it."""
    graded = {(r.query_id, r.drift.chunks[0]) for r in drift if r.drift.kind in ANCHORED}
    corpus = dataset.corpus or {}
    wanted = sorted(
        {
            (row.query_id, chunk)
            for row in drift
            if row.drift.kind in ("merged", "split")
            for chunk in row.drift.chunks
        }
        - graded
    )
    return tuple(
        QueueItem(
            query_id=query,
            query=dataset.query(query).text,
            doc_id=chunk,
            rank=None,
            new=None,
            delta=None,
            metric=metric,
            title=corpus[chunk].title if chunk in corpus else None,
            text=corpus[chunk].text if chunk in corpus else None,
        )
        for query, chunk in wanted
    )
