"""The current retriever's record: run once, or repeated and averaged, in baseline form."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.config.check_keys import canonical_name, kind_of
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.model import Document
from retrieval_gate.core.version import __version__
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError
from retrieval_gate.gate.baseline.corpus_changes import judged_document_hashes
from retrieval_gate.gate.baseline.rechunk import recorded_anchors
from retrieval_gate.gate.baseline.record import (
    Baseline,
    Fingerprints,
    fingerprint_slices,
    make_baseline,
)
from retrieval_gate.gate.baseline.repeats import averaged
from retrieval_gate.gate.baseline.retrieved_ids import only_labelled_checks, unknown_retrieval
from retrieval_gate.gate.checks.slicing import slice_definition
from retrieval_gate.pipeline.evaluator_scores import evaluator_columns

if TYPE_CHECKING:
    from retrieval_gate.pipeline.execute import Looks


@dataclass(frozen=True)
class CurrentRun:
    """The current retriever's record in baseline form and what came with it."""

    record: Baseline
    dataset: Dataset
    warnings: tuple[str, ...]
    failed_queries: tuple[str, ...]
    unrun: tuple[str, ...] = ()
    """Queries a sequential run stopped before (they score 0 in `record`)."""
    unscored: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Evaluator column -> the queries its export holds no score of (filled with its mean)."""


def record_current(
    config: GateConfig,
    *,
    run_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    prove_cache: bool = False,
    progress: TextIO | None = None,
    repo_dir: Path | None = None,
    retriever_dir: Path | None = None,
    repeats: int = 1,
    looks: Looks | None = None,
    known_ids: bool = False,
    index_corpus: Mapping[str, Document] | None = None,
) -> CurrentRun:
    """The current retriever's record in baseline form, the labelled set, and warnings.

    With `repeats` above 1 the retriever is run that many times, never from the cache, and the
    record is their mean (`repeats.averaged`). `retriever_dir` is where the retriever's
    relative paths start (a checkout of another commit), when not the config's folder, and
    `index_corpus` the corpus a retriever that indexes the labelled set's (bm25) indexes
    there, when not the labelled set's (the corpus at that commit).
    `looks`: a sequential run (one run, no repeats), which may stop before every query ran.
    With `known_ids` (a baseline being made), a run none of whose retrieved ids is in the
    corpus or the judgments is a GateError: it scores 0 everywhere, and no check against a
    baseline of it could fail (`check` warns of either side, and refuses when both are).
    """
    if repeats > 1 and run_path is not None:  # `baseline --run`; `check`'s plan refuses it first
        raise GateError(saved_run_repeats(repeats))
    if run_path is not None:  # a saved run is the run_file retriever, cached by its hash
        from retrieval_gate.adapters.run_file import RunFileConfig

        saved = RunFileConfig.given(run_path, "--run")  # messages name --run, not a field
        config = config.model_copy(update={"retriever": saved})
    first = _record_once(
        config,
        cache=cache and repeats == 1,
        refresh_cache=refresh_cache,
        prove_cache=prove_cache,
        progress=progress,
        repo_dir=repo_dir,
        retriever_dir=retriever_dir,
        dataset=None,
        looks=looks,
        index_corpus=index_corpus,
    )
    found = repeated(
        config,
        first,
        repeats,
        progress=progress,
        repo_dir=repo_dir,
        retriever_dir=retriever_dir,
        index_corpus=index_corpus,
    )
    record, dataset = found.record, found.dataset
    unknown = known_ids and unknown_retrieval(record.top_k, dataset.qrels.docs, dataset.corpus)
    if unknown:
        message = f"retriever ({config.retriever.type}): {unknown}"
        if only_labelled_checks(config):
            raise GateError(f"{message}; no check against such a baseline could ever fail")
        # Latency, cost, evaluator or label-free checks can still fail: said, not refused.
        return dataclasses.replace(found, warnings=(*found.warnings, message))
    return found


def repeated(
    config: GateConfig,
    first: CurrentRun,
    runs: int,
    *,
    progress: TextIO | None = None,
    repo_dir: Path | None = None,
    retriever_dir: Path | None = None,
    index_corpus: Mapping[str, Document] | None = None,
) -> CurrentRun:
    """`first` (one run) and `runs` - 1 more, never from the cache, as one record: their mean
    (`repeats.averaged`). The labelled set is `first`'s,
    read and checked once."""
    more = [first]
    for _ in range(runs - 1):
        more.append(
            _record_once(
                config,
                cache=False,
                refresh_cache=False,
                prove_cache=False,
                progress=progress,
                repo_dir=repo_dir,
                retriever_dir=retriever_dir,
                dataset=first.dataset,
                index_corpus=index_corpus,
            )
        )
    warnings = tuple(dict.fromkeys(w for run in more for w in run.warnings))
    failed = tuple(sorted({q for run in more for q in run.failed_queries}))
    record = averaged([run.record for run in more])
    return CurrentRun(record, first.dataset, warnings, failed, first.unrun, first.unscored)


def saved_run_repeats(repeats: int) -> str:
    """Why a saved run cannot be repeated, and what to do."""
    return (
        f"repeats {repeats} needs a retriever to call again: a saved run (--run) is one "
        "run; drop --repeats (or set gate.repeats: 1) to gate on it"
    )


def _record_once(
    config: GateConfig,
    *,
    cache: bool,
    refresh_cache: bool,
    prove_cache: bool,
    progress: TextIO | None,
    repo_dir: Path | None,
    retriever_dir: Path | None,
    dataset: Dataset | None,
    looks: Looks | None = None,
    index_corpus: Mapping[str, Document] | None = None,
) -> CurrentRun:
    from retrieval_gate.adapters import fingerprint
    from retrieval_gate.execution.timing import operational_columns
    from retrieval_gate.metrics.top_k import top_k_ids
    from retrieval_gate.pipeline.execute import execute

    execution = execute(
        config,
        cache=cache,
        refresh_cache=refresh_cache,
        prove_cache=prove_cache,
        progress=progress,
        retriever_dir=retriever_dir,
        dataset=dataset,
        looks=looks,
        index_corpus=index_corpus,
    )
    scores, dataset, warnings = execution.scores, execution.dataset, execution.warnings
    evaluated = evaluator_columns(config, dataset.queries)
    if evaluated.values and tuple(q.id for q in dataset.queries) != scores.query_ids:
        raise ValueError("the labelled queries are not the scored ones, in order")
    description = dict(execution.retriever)
    # Latency and cost sit beside the relevance metrics, in the config's order.
    measured = operational_columns(
        [key for key in config.metrics if kind_of(key) == "operational"],
        scores.query_ids,
        execution.run.timings,
        config.gate.latency.source,
    )
    slices = config.slices
    definition = slice_definition(
        slices.by, slices.combine, slices.query_length.bins, slices.min_size
    )
    stage = execution.stage
    columns = {**scores.values, **(stage.values if stage is not None else {})}
    top_k = top_k_ids(execution.run.run, config.k)
    record = make_baseline(
        fingerprints=Fingerprints(
            dataset=dataset.fingerprint,
            k=config.k,
            metrics=tuple(canonical_name(key) for key in config.metrics),
            slices=fingerprint_slices(definition),
            retriever=fingerprint(description),
            queries=dataset.queries_fingerprint,
        ),
        retriever=description,
        slice_definition=definition,
        query_ids=scores.query_ids,
        scores={**columns, **evaluated.values, **measured},
        top_k=top_k,
        candidates=stage.top if stage is not None else None,
        tool_version=__version__,
        repo_dir=repo_dir if repo_dir is not None else config.base_dir,
        judged_documents=judged_document_hashes(dataset),
        chunk_anchors=recorded_anchors(dataset, top_k),
    )
    failed = tuple(failure.query_id for failure in execution.run.failures)
    warnings = (*warnings, *evaluated.warnings)
    return CurrentRun(record, dataset, tuple(warnings), failed, execution.unrun, evaluated.unscored)
