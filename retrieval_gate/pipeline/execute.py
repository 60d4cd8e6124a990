"""From a config to scores: load the labelled set, call the retriever, score the answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.model import Document, Query
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.datasets import Dataset, assemble, load_labels
from retrieval_gate.execution.runner import RunResult, RunSettings
from retrieval_gate.metrics import Scores, evaluate
from retrieval_gate.pipeline.candidates import StageScores, score_candidates

if TYPE_CHECKING:
    from retrieval_gate.adapters.interface import Retriever
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.execution.progress import Progress

FAILURES_SHOWN = 5


@dataclass(frozen=True)
class Looks:
    """A sequential run: the queries in `order`'s order, `batch` at a time; after each batch
    `stop` says whether to run no more."""

    order: Callable[[Dataset], Sequence[Query]]
    batch: int
    stop: Callable[[Dataset, RunResult], bool]
    """Given the answers of the batch just run (the earlier ones it was given before)."""
    before: Callable[[int], None] | None = None
    """Called with the batch's number before it runs (an interleaved check's other side)."""


@dataclass(frozen=True, eq=False)
class Execution:
    """Everything one run of the retriever produced, and the warnings to show with it."""

    config: GateConfig
    dataset: Dataset
    run: RunResult
    scores: Scores
    warnings: tuple[str, ...]
    retriever: Mapping[str, Any]
    """The retriever's description (no secrets), for provenance."""
    unrun: tuple[str, ...] = ()
    """Queries never run: a sequential run stopped before them. They score 0 in `scores`."""
    stage: StageScores | None = None
    """The `candidates:` check columns, when the config has them (`scores` has the others)."""


def execute(
    config: GateConfig | str | Path,
    *,
    cache: bool = True,
    refresh_cache: bool = False,
    prove_cache: bool = False,
    progress: TextIO | None = None,
    retriever_dir: Path | None = None,
    dataset: Dataset | None = None,
    looks: Looks | None = None,
    index_corpus: Mapping[str, Document] | None = None,
) -> Execution:
    """Run the configured retriever on every labelled query and score it.

    A labelled set with errors `retrieval-gate lint` would report (duplicate judgments, ids
    that match nothing, annotators below an enforced agreement floor) is an InputError before
    the retriever is called. So is a saved run (the `run_file` retriever, `--run FILE`) that
    answers none of the labelled queries or fewer than `gate.min_coverage` of them: its
    missing queries would score 0 and read as a regression (a CoverageError, exit 2). More
    failed queries than `gate.error_budget` is a GateError (exit 2); fewer are scored 0 and
    listed in the warnings. When the first queries all fail the same way (10 of them, or more
    when the budget allows more), the rest are not run: a GateError says so (exit 2). With
    `prove_cache` (what `check` does), cached answers are read only when the retriever's
    description proves them current; otherwise the retriever is called again and a warning
    says why. Cached answers that cannot be proven current are
    counted in the warnings whenever they are used. Progress goes to `progress` when given;
    nothing else prints. The retriever's relative paths start at `retriever_dir` when given
    (a checkout of another commit), else at the config's folder, as the labelled set's do.
    `dataset`, when given, is the labelled set an earlier execution of `config` loaded and
    checked: repeated runs read it once. `looks`: run the queries in its order and batches
    and stop when it says (a saved run is read whole: it costs nothing). `index_corpus`: the
    corpus the retriever is built over, when not the labelled set's (bm25 at another commit).
    """
    from retrieval_gate.adapters import build_retriever
    from retrieval_gate.adapters.interface import Adapter, fingerprint
    from retrieval_gate.adapters.run_file import RunFileRetriever
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.execution.runner import check_budget, read_saved
    from retrieval_gate.lint import refuse_broken

    config = config if isinstance(config, GateConfig) else load(config)
    if dataset is None:
        assisted = config.gate.uses_llm_labels
        labels = load_labels(config.dataset, config.base_dir, judgments_required=not assisted)
        refuse_broken(config, labels)
        dataset = assemble(
            labels,
            combine=config.dataset.annotators.combine,
            keep_unjudged=assisted,
        )
    retriever = build_retriever(
        config.retriever,
        base_dir=retriever_dir or config.base_dir,
        corpus=dataset.corpus if index_corpus is None else index_corpus,
    )
    if isinstance(retriever, RunFileRetriever):  # before the cache: it is keyed by the hash
        try:
            retriever.check_coverage([q.id for q in dataset.queries], config.gate.min_coverage)
        except BaseException:
            retriever.close()
            raise
    description = dict(retriever.describe())
    settings = run_settings(config)
    cached = cache and bool(getattr(retriever, "cacheable", False))
    store = ResultCache(config.resolve(config.cache)) if cached else None
    notes: list[str] = []
    unrun: tuple[str, ...] = ()
    # Like `cacheable`, an adapter's own attribute: custom Retriever objects are never cached.
    unproven = retriever.unproven_cache() if isinstance(retriever, Adapter) and cached else None
    if unproven and prove_cache and not refresh_cache:
        refresh_cache = True
        notes.append(
            f"{unproven}: called it for every query (set retriever.version, or pass --cache "
            "to use the cached answers anyway)"
        )
    if isinstance(retriever, RunFileRetriever):  # nothing to call: its arrays are the answers
        retriever.close()
        result = read_saved(retriever.run, dataset.queries, config.k, fingerprint(description))
        del retriever  # frees the whole file's arrays: only each query's top k goes on
    elif looks is not None:
        result = _call_in_batches(
            retriever, dataset, config.k, settings, store, refresh_cache, progress, looks
        )
        ran = {*result.hits, *(failure.query_id for failure in result.failures)}
        unrun = tuple(q.id for q in dataset.queries if q.id not in ran)
    else:
        result = _call(retriever, dataset, config.k, settings, store, refresh_cache, progress)
    check_budget(result, len(dataset.queries), settings.error_budget)
    relevance = ranking_keys(config.metrics)
    scores = evaluate(result.run, dataset.qrels, relevance, dataset.subtopics)
    stage = score_candidates(config, dataset, result, description)
    warnings = [str(warning) for warning in dataset.warnings] + notes
    if unproven and result.cached:
        warnings.append(
            f"{plural(result.cached, 'query', 'queries')} of {len(dataset.queries)} answered "
            f"from the cache, not proven current: {unproven}"
        )
    if result.failures:
        shown = "; ".join(
            f"{one_line(f.query_id)}: {one_line(f.error)}" for f in result.failures[:FAILURES_SHOWN]
        )
        more = len(result.failures) - FAILURES_SHOWN
        warnings.append(
            f"{plural(len(result.failures), 'query')} failed and score 0 "
            f"(within the error budget): {shown}" + (f"; and {more} more" if more > 0 else "")
        )
    return Execution(config, dataset, result, scores, tuple(warnings), description, unrun, stage)


def run_settings(config: GateConfig) -> RunSettings:
    """How the runner calls `config`'s retriever."""
    return RunSettings(
        concurrency=config.retriever.concurrency,
        timeout=config.retriever.timeout,
        retries=config.retriever.retries,
        error_budget=config.gate.error_budget,
        seed=config.gate.seed,
    )


def _call(
    retriever: Retriever,
    dataset: Dataset,
    k: int,
    settings: RunSettings,
    store: ResultCache | None,
    refresh_cache: bool,
    progress: TextIO | None,
) -> RunResult:
    """Every labelled query through the runner; the retriever and the cache are closed after."""
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.execution.runner import run_queries

    try:
        return run_queries(
            retriever,
            dataset.queries,
            k,
            settings,
            cache=store,
            refresh_cache=refresh_cache,
            progress=make_progress(progress, enabled=True) if progress is not None else None,
        )
    finally:
        retriever.close()
        if store is not None:
            store.close()


def _call_in_batches(
    retriever: Retriever,
    dataset: Dataset,
    k: int,
    settings: RunSettings,
    store: ResultCache | None,
    refresh_cache: bool,
    progress: TextIO | None,
    looks: Looks,
) -> RunResult:
    """The queries in `looks`' order, a batch at a time, until it says stop or all ran; the
    retriever and the cache are closed after."""
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.execution.runner import allowed_failures, merged, run_queries

    order = looks.order(dataset)
    bar = make_progress(progress, enabled=True) if progress is not None else None
    results: list[RunResult] = []
    try:
        if bar is not None:
            bar.start(len(order))
        for start in range(0, len(order), looks.batch):
            batch = order[start : start + looks.batch]
            if looks.before is not None:
                looks.before(start // looks.batch)
            results.append(
                run_queries(
                    retriever,
                    batch,
                    k,
                    settings,
                    cache=store,
                    refresh_cache=refresh_cache,
                    progress=_Continued(bar) if bar is not None else None,
                )
            )
            failed = sum(len(result.failures) for result in results)
            # Past the whole run's error budget already: the run is an error, not a verdict.
            spent = failed > allowed_failures(len(order), settings.error_budget)
            if results[-1].stopped or spent or looks.stop(dataset, results[-1]):
                break
    finally:
        if bar is not None:
            bar.close()
        retriever.close()
        if store is not None:
            store.close()
    return merged(results)


class _Continued:
    """One progress bar across the batches: each batch's run only advances it."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar

    def start(self, total: int) -> None:
        pass

    def advance(self, n: int, *, failed: bool = False, cached: bool = False) -> None:
        self.bar.advance(n, failed=failed, cached=cached)

    def close(self) -> None:
        pass
