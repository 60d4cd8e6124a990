"""The gate: score the change, compare it query by query with the baseline, decide."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import numpy as np

from retrieval_gate import __version__
from retrieval_gate.baseline import (
    Baseline,
    Fingerprints,
    comparability_problems,
    fingerprint_slices,
    make_baseline,
    read_baseline,
)
from retrieval_gate.compare import Comparison, GateSettings, Threshold, compare
from retrieval_gate.config import GateConfig, MetricGate, load
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError
from retrieval_gate.ids import FloatArray, IntArray
from retrieval_gate.metrics import parse_metric
from retrieval_gate.qrels import is_judged
from retrieval_gate.slicing import slice_definition, slice_queries
from retrieval_gate.wording import json_text

if TYPE_CHECKING:
    from retrieval_gate.adapters.base import Hit

RESULT_SCHEMA_VERSION = 2
"""2: the one-sided rule (inconclusive, detectable_drop, level, p_bound, failed per check)."""
QUERY_CHANGES = 10
"""Most-regressed queries listed in a result."""
JUDGED_DROP = 0.01
"""The fall of mean judged@k on a failing check's queries (1 point), with a rise of the share of
unjudged documents in their top k by as much, from which the reports call the failure a possible
labelling gap. Unjudged documents count as non-relevant, so a retriever that ranks documents
nobody judged loses points whether or not they are relevant. judged@k alone also falls when a
retriever returns fewer documents, which is no labelling gap; hence the second condition. A
smaller change (less than one document in ten queries at k = 10) is not worth the note. The
check fails either way; the note only says where to look before blaming the retriever."""

Status = Literal["pass", "fail", "error"]


class NotComparableError(GateError):
    """The baseline was made with another labelled set, k, metric set or slice definition."""


@dataclass(frozen=True)
class DocMove:
    """Where a relevant document sat in the baseline's and the current top k (None: absent)."""

    doc_id: str
    grade: float
    before: int | None
    after: int | None


@dataclass(frozen=True)
class QueryChange:
    """One query's value of a metric before and after, and its relevant documents' moves."""

    query_id: str
    text: str
    metric: str
    before: float
    after: float
    moves: tuple[DocMove, ...]

    @property
    def delta(self) -> float:
        """after - before."""
        return self.after - self.before


@dataclass(frozen=True)
class Unjudged:
    """Documents in the current top k that no judgment covers: they count as non-relevant.

    Judged means what the judged@k metric counts: the query's qrels grade the document >= 0
    (a grade < 0 marks a document that was pooled but not judged)."""

    retrieved: int
    """Documents in every query's current top k."""
    unjudged: int
    """Of them, documents not judged for the query."""
    new: int
    """Unjudged documents that were not in the query's baseline top k."""
    queries: tuple[str, ...]
    """Queries with at least one new unjudged document, sorted."""
    baseline_unjudged: int
    """Unjudged documents in the baseline's top k, for comparison."""
    judged_before: float
    """Mean judged@k (k = the config's k) of the baseline's top k over the labelled queries."""
    judged_after: float
    """Mean judged@k of the current top k over the labelled queries."""


@dataclass(frozen=True)
class LabellingGap:
    """A failing check whose queries' mean judged@k fell by JUDGED_DROP or more as unjudged
    documents entered their top k: part of the drop may be documents nobody judged rather than
    a worse retriever."""

    metric: str
    slice: str
    judged_before: float
    """Mean judged@k of the baseline's top k over the slice's queries."""
    judged_after: float
    """Mean judged@k of the current top k over the slice's queries."""


@dataclass(frozen=True)
class GateContext:
    """What the result was decided under, for the report footer."""

    config_file: str
    config_sha256: str
    """sha256 of the validated config as canonical JSON."""
    k: int
    settings: GateSettings


@dataclass(frozen=True)
class CurrentRun:
    """The current retriever's record in baseline form and what came with it."""

    record: Baseline
    dataset: Dataset
    warnings: tuple[str, ...]
    failed_queries: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class GateResult:
    """Everything `check` decided; nothing in it prints. `document()` is the canonical JSON."""

    name: str
    comparisons: tuple[Comparison, ...]
    query_changes: tuple[QueryChange, ...]
    hits_lost: tuple[str, ...]
    hits_gained: tuple[str, ...]
    warnings: tuple[str, ...]
    failed_queries: tuple[str, ...]
    """Queries the retriever failed on (scored 0, within the error budget)."""
    unjudged: Unjudged
    labelling_gaps: tuple[LabellingGap, ...]
    """Failing checks whose queries' judged@k fell by JUDGED_DROP or more, in failure order."""
    context: GateContext
    baseline: Baseline
    current: Baseline

    @property
    def failures(self) -> tuple[Comparison, ...]:
        """Every failing (metric, slice), regressions first."""
        failed = [c for c in self.comparisons if c.failed]
        return tuple(sorted(failed, key=lambda c: (c.verdict != "regressed", c.verdict, c.delta)))

    @property
    def status(self) -> Status:
        """`fail` when any gated (metric, slice) regressed or fell below its floor."""
        return "fail" if self.failures else "pass"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression or floor breached (DESIGN's exit codes)."""
        return 1 if self.failures else 0

    def document(self) -> dict[str, Any]:
        """The canonical record: stable key order, no clock, so equal inputs give equal bytes."""
        from retrieval_gate.baseline import baseline_document

        return {
            "schema_version": RESULT_SCHEMA_VERSION,
            "tool_version": __version__,
            "name": self.name,
            "status": self.status,
            "failures": [_comparison(c) for c in self.failures],
            "comparisons": [_comparison(c) for c in self.comparisons],
            "query_changes": [
                {**asdict(change), "delta": change.delta} for change in self.query_changes
            ],
            "hits_lost": list(self.hits_lost),
            "hits_gained": list(self.hits_gained),
            "warnings": list(self.warnings),
            "failed_queries": list(self.failed_queries),
            "unjudged": asdict(self.unjudged),
            "labelling_gaps": [asdict(gap) for gap in self.labelling_gaps],
            "config": {
                "file": self.context.config_file,
                "sha256": self.context.config_sha256,
                "k": self.context.k,
                "gate": asdict(self.context.settings),
            },
            "baseline": {
                "created_at": self.baseline.created_at,
                "git_commit": self.baseline.git_commit,
                "git_dirty": self.baseline.git_dirty,
                "tool_version": self.baseline.tool_version,
                "retriever": dict(self.baseline.retriever),
                "fingerprints": asdict(self.baseline.fingerprints),
                "scores": _aligned_scores(self.baseline, self.current.query_ids),
            },
            "current": baseline_document(self.current, clock=False),
        }

    def to_json(self) -> str:
        """`document()` as indented JSON, one trailing newline."""
        return canonical_json(self.document())


def canonical_json(document: dict[str, Any]) -> str:
    """A result document as the JSON report: indented, key order as built, one newline."""
    return json_text(document) + "\n"


def error_document(name: str, message: str) -> dict[str, Any]:
    """The result of a check that could not decide (exit 2), so reports can say why."""
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "tool_version": __version__,
        "name": name,
        "status": "error",
        "error": message,
    }


def check(
    config: GateConfig | str | Path,
    *,
    run_path: str | Path | None = None,
    baseline_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    trust_cache: bool = False,
    progress: TextIO | None = None,
) -> GateResult:
    """Run (or read `run_path`), score, and compare with the baseline. No printing.

    Cached answers are read only when the retriever's description proves them current,
    unless `trust_cache` (then the result's warnings count them). Raises NotComparableError
    when the baseline cannot be compared (exit 2).
    """
    config = config if isinstance(config, GateConfig) else load(config)
    current = record_current(
        config,
        run_path=run_path,
        cache=cache,
        refresh_cache=refresh_cache,
        prove_cache=not trust_cache,
        progress=progress,
    )
    baseline = read_baseline(
        Path(baseline_path) if baseline_path else config.resolve(config.baseline)
    )
    return decide(
        baseline,
        current.record,
        config,
        current.dataset,
        current.warnings,
        failed_queries=current.failed_queries,
    )


def record_current(
    config: GateConfig,
    *,
    run_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    prove_cache: bool = False,
    progress: TextIO | None = None,
    repo_dir: Path | None = None,
) -> CurrentRun:
    """The current retriever's record in baseline form, the labelled set, and warnings."""
    from retrieval_gate.adapters import fingerprint
    from retrieval_gate.pipeline import execute

    if run_path is not None:  # a saved run is the run_file retriever, cached by its hash
        from retrieval_gate.adapters.run_file import RunFileConfig

        saved = RunFileConfig.given(run_path, "--run")  # messages name --run, not a field
        config = config.model_copy(update={"retriever": saved})
    execution = execute(
        config,
        cache=cache,
        refresh_cache=refresh_cache,
        prove_cache=prove_cache,
        progress=progress,
    )
    scores, dataset, warnings = execution.scores, execution.dataset, execution.warnings
    top_k = {q: _ranked(hits) for q, hits in execution.run.hits.items()}
    description = dict(execution.retriever)
    slices = config.slices
    definition = slice_definition(
        slices.by, slices.combine, slices.query_length.bins, slices.min_size
    )
    record = make_baseline(
        fingerprints=Fingerprints(
            dataset=dataset.fingerprint,
            k=config.k,
            metrics=tuple(str(spec) for spec in scores.metrics),
            slices=fingerprint_slices(definition),
            retriever=fingerprint(description),
            queries=dataset.queries_fingerprint,
        ),
        retriever=description,
        slice_definition=definition,
        query_ids=scores.query_ids,
        scores=scores.values,
        top_k={q: docs[: config.k] for q, docs in sorted(top_k.items())},
        tool_version=__version__,
        repo_dir=repo_dir if repo_dir is not None else config.base_dir,
    )
    failed = tuple(failure.query_id for failure in execution.run.failures)
    return CurrentRun(record, dataset, tuple(warnings), failed)


def decide(
    baseline: Baseline,
    current: Baseline,
    config: GateConfig,
    dataset: Dataset,
    warnings: Sequence[str] = (),
    *,
    failed_queries: Sequence[str] = (),
) -> GateResult:
    """Compare two records under `config`'s thresholds; NotComparableError if unlike.

    When only the judgments changed since the baseline, it is re-scored under the current ones
    and a warning says so (`comparable_baseline`).
    """
    baseline, note = comparable_baseline(baseline, current, dataset)
    if note:
        warnings = (*warnings, note)
    slices = slice_queries(
        dataset.queries, config.slices.by, config.slices.combine, config.slices.query_length.bins
    )
    thresholds, overrides = gate_thresholds(config)
    unknown = sorted(set(overrides) - set(slices))
    if unknown:
        warnings = (
            *warnings,
            f"slices.overrides names slices that do not exist: {', '.join(unknown)}",
        )
    settings = gate_settings(config)
    comparisons = compare(baseline.scores, current.scores, slices, thresholds, overrides, settings)
    primary = next(iter(thresholds))
    changes = _query_changes(baseline, current, dataset, primary)
    lost, gained = _hit_changes(baseline, current, dataset)
    context = GateContext(_config_file(config), _config_sha256(config), config.k, settings)
    judged_before, unjudged_before = _judged_at_k(baseline, current.query_ids, dataset, config.k)
    judged_after, unjudged_after = _judged_at_k(current, current.query_ids, dataset, config.k)
    result = GateResult(
        config.name,
        comparisons,
        changes,
        lost,
        gained,
        tuple(warnings),
        tuple(failed_queries),
        _unjudged(baseline, current, dataset, judged_before, judged_after),
        (),
        context,
        baseline,
        current,
    )
    gaps = _labelling_gaps(
        result.failures,
        slices,
        (judged_before, judged_after),
        (unjudged_before, unjudged_after),
        _explainable(result.failures, baseline, current, dataset, slices),
    )
    return dataclasses.replace(result, labelling_gaps=gaps)


def comparable_baseline(
    baseline: Baseline, current: Baseline, dataset: Dataset
) -> tuple[Baseline, str | None]:
    """`baseline` ready to compare with `current`, and a warning when it had to be re-scored.

    When only the judgments changed since the baseline (same queries, k, metrics and slices),
    its stored rankings are re-scored under `dataset`'s (`rescored_baseline`). Anything else
    that differs is a NotComparableError listing what.
    """
    problems = comparability_problems(baseline.fingerprints, current.fingerprints)
    if not problems:
        return baseline, None
    if _judgments_changed_only(baseline, current, dataset):
        before = baseline.fingerprints.dataset
        return rescored_baseline(baseline, dataset), (
            f"the judgments changed since the baseline (dataset {before[:12]} -> "
            f"{dataset.fingerprint[:12]}); the baseline's stored top-{baseline.fingerprints.k} "
            "rankings were re-scored with the current judgments"
        )
    raise NotComparableError(
        "the baseline cannot be compared with this run:\n  - "
        + "\n  - ".join(problems)
        + "\nrecreate it on the main branch with `retrieval-gate baseline --force`"
    )


def rescored_baseline(baseline: Baseline, dataset: Dataset) -> Baseline:
    """`baseline` with every metric recomputed from its stored top-k rankings under `dataset`'s
    judgments, carrying the dataset's fingerprint.

    Exact: a run is scored on the at most k documents the runner keeps per query, which are
    the stored top k, in the order the metrics rank them (see `record_current`). A query with
    no stored top k retrieved nothing (or failed) and scores 0, as it did. Raises ValueError
    when the baseline's queries are not `dataset`'s.
    """
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import run_from_dict

    run = run_from_dict({query: list(docs) for query, docs in baseline.top_k.items()})
    metrics = baseline.fingerprints.metrics
    scores = evaluate(run, dataset.qrels, metrics)
    if scores.query_ids != baseline.query_ids:
        raise ValueError("the baseline's query ids are not the labelled set's")
    values = {}
    for metric in metrics:
        column = scores.values[metric].copy()
        column.flags.writeable = False
        values[metric] = column
    fingerprints = dataclasses.replace(baseline.fingerprints, dataset=dataset.fingerprint)
    return dataclasses.replace(baseline, fingerprints=fingerprints, scores=values)


def _judgments_changed_only(baseline: Baseline, current: Baseline, dataset: Dataset) -> bool:
    """Whether the records differ in judgments alone: the queries (recorded on both sides) and
    everything else the comparison needs are the same, and `dataset` is the current one."""
    old, new = baseline.fingerprints, current.fingerprints
    return (
        old.queries is not None
        and old.queries == new.queries
        and new.dataset == dataset.fingerprint
        and baseline.query_ids == current.query_ids
        and not comparability_problems(dataclasses.replace(old, dataset=new.dataset), new)
    )


def _ranked(hits: Sequence[Hit]) -> tuple[str, ...]:
    """Doc ids in the order the metrics rank them: score descending, doc id descending on ties
    (DESIGN); hits without scores keep the retriever's order (`runner.ranked_scores`)."""
    from retrieval_gate.runner import ranked_scores

    pairs = sorted(zip((h.doc_id for h in hits), ranked_scores(hits), strict=True), reverse=True)
    pairs.sort(key=lambda pair: pair[1], reverse=True)  # stable: ties stay by doc id descending
    return tuple(doc for doc, _ in pairs)


def _config_file(config: GateConfig) -> str:
    """The config's path relative to the working directory when inside it (as CI shows it)."""
    path = config.path.resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def _config_sha256(config: GateConfig) -> str:
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _aligned_scores(baseline: Baseline, query_ids: Sequence[str]) -> dict[str, list[float]]:
    """The baseline's per-query scores in `query_ids` order (comparable records share them)."""
    position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
    order = [position[query_id] for query_id in query_ids]
    return {metric: values[order].tolist() for metric, values in baseline.scores.items()}


def _judged_at_k(
    record: Baseline, query_ids: Sequence[str], dataset: Dataset, k: int
) -> tuple[FloatArray, FloatArray]:
    """judged@k of each query's stored top k (aligned with `query_ids`), judged docs / k, and
    the share of unjudged docs, unjudged docs / k (the rest of k is what was not returned)."""
    qrels = dataset.qrels
    judged = []
    returned = []
    for query_id in query_ids:
        docs = record.top_k.get(query_id, ())
        judgments = qrels.by_query[qrels.position[query_id]]
        judged.append(sum(is_judged(judgments, doc) for doc in docs))
        returned.append(len(docs))
    judged_at_k = np.asarray(judged, dtype=np.float64) / float(k)
    unjudged_at_k = (np.asarray(returned, dtype=np.float64) - judged) / float(k)
    return judged_at_k, unjudged_at_k


def _unjudged(
    baseline: Baseline,
    current: Baseline,
    dataset: Dataset,
    judged_before: FloatArray,
    judged_after: FloatArray,
) -> Unjudged:
    retrieved = unjudged = new = old = 0
    queries = []
    for query_id in current.query_ids:
        judgments = dataset.qrels.by_query[dataset.qrels.position[query_id]]
        before = baseline.top_k.get(query_id, ())
        after = current.top_k.get(query_id, ())
        old += sum(not is_judged(judgments, doc) for doc in before)
        retrieved += len(after)
        missing = [doc for doc in after if not is_judged(judgments, doc)]
        unjudged += len(missing)
        fresh = len(set(missing) - set(before))
        new += fresh
        if fresh:
            queries.append(query_id)
    return Unjudged(
        retrieved,
        unjudged,
        new,
        tuple(queries),
        old,
        _mean(judged_before),
        _mean(judged_after),
    )


def _labelling_gaps(
    failures: Sequence[Comparison],
    slices: Mapping[str, IntArray],
    judged: tuple[FloatArray, FloatArray],
    unjudged: tuple[FloatArray, FloatArray],
    explainable: Set[tuple[str, str]],
) -> tuple[LabellingGap, ...]:
    """Each failing check whose queries' mean judged@k fell by JUDGED_DROP or more while their
    share of unjudged documents rose by as much (`judged` and `unjudged`: before, after), and
    whose verdict the unjudged documents could change (`explainable`: (metric, slice))."""
    gaps = []
    for failure in failures:
        rows = slices[failure.slice]
        if not len(rows) or (failure.metric, failure.slice) not in explainable:
            continue
        before, after = _mean(judged[0][rows]), _mean(judged[1][rows])
        entered = _mean(unjudged[1][rows]) - _mean(unjudged[0][rows])
        # Rounded: means of k-ths can miss an exact 1-point change by a float rounding error.
        if round(before - after, 12) >= JUDGED_DROP and round(entered, 12) >= JUDGED_DROP:
            gaps.append(LabellingGap(failure.metric, failure.slice, before, after))
    return tuple(gaps)


def _explainable(
    failures: Sequence[Comparison],
    baseline: Baseline,
    current: Baseline,
    dataset: Dataset,
    slices: Mapping[str, IntArray],
) -> set[tuple[str, str]]:
    """(metric, slice) of the failing checks that would pass if every document nobody judged
    in either top k were relevant at the highest grade given: only those can be labelling
    gaps. A check that fails even then is a worse retriever, whatever the missing labels say.
    """
    if not failures:
        return set()
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import qrels_from_dict, run_from_dict

    qrels = dataset.qrels
    best = max(float(qrels.grade.max()) if len(qrels) else 1.0, 1.0)
    augmented = {}
    for query_id in current.query_ids:
        judgments = dict(qrels.by_query[qrels.position[query_id]])
        for doc in (*baseline.top_k.get(query_id, ()), *current.top_k.get(query_id, ())):
            if not is_judged(judgments, doc):
                judgments[doc] = best
        augmented[query_id] = judgments
    optimistic = qrels_from_dict(augmented)
    metrics = sorted({failure.metric for failure in failures})
    before, after = (
        evaluate(run_from_dict({q: list(d) for q, d in r.top_k.items()}), optimistic, metrics)
        for r in (baseline, current)
    )
    if before.query_ids != tuple(current.query_ids):
        return set()  # not aligned with the slices: claim nothing
    found = set()
    for failure in failures:
        rows = slices[failure.slice]
        if not len(rows):
            continue
        old = _mean(before.values[failure.metric][rows])
        new = _mean(after.values[failure.metric][rows])
        within = failure.max_drop is None or old - new <= failure.max_drop + 1e-12
        above = failure.floor is None or new >= failure.floor - 1e-12
        if within and above:
            found.add((failure.metric, failure.slice))
    return found


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if len(values) else 0.0


def gate_settings(config: GateConfig) -> GateSettings:
    """The comparison settings `config` gates with."""
    gate = config.gate
    return GateSettings(
        alpha=gate.alpha,
        correction=gate.correction,
        test=gate.test,
        resamples=gate.resamples,
        seed=gate.seed,
        require_significance=gate.require_significance,
        min_size=config.slices.min_size,
        on_inconclusive=gate.on_inconclusive,
        overall_share=gate.overall_share,
    )


def gate_thresholds(
    config: GateConfig,
) -> tuple[dict[str, Threshold], dict[str, dict[str, Threshold]]]:
    """Canonical metric -> threshold, and slice -> canonical metric -> override."""
    thresholds = {_canonical(key): _threshold(gate) for key, gate in config.metrics.items()}
    overrides = {
        name: {_canonical(key): _threshold(gate) for key, gate in gates.items()}
        for name, gates in config.slices.overrides.items()
    }
    return thresholds, overrides


def _canonical(name: str) -> str:
    return str(parse_metric(name))


def _threshold(gate: MetricGate) -> Threshold:
    drop = gate.max_drop
    return Threshold(
        max_drop=drop.value if drop else None,
        relative=bool(drop and drop.relative),
        floor=gate.min,
    )


def _relevant(dataset: Dataset, query_id: str) -> dict[str, float]:
    judged = dataset.qrels.by_query[dataset.qrels.position[query_id]]
    return {doc: grade for doc, grade in judged.items() if grade >= 1}


def _query_changes(
    baseline: Baseline, current: Baseline, dataset: Dataset, metric: str
) -> tuple[QueryChange, ...]:
    before, after = baseline.scores[metric], current.scores[metric]
    order = np.argsort(after - before, kind="stable")
    changes = []
    for i in order[:QUERY_CHANGES].tolist():
        if after[i] >= before[i]:
            break
        query_id = current.query_ids[i]
        old = _positions(baseline.top_k.get(query_id, ()))
        new = _positions(current.top_k.get(query_id, ()))
        moves = tuple(
            DocMove(doc, grade, old.get(doc), new.get(doc))
            for doc, grade in sorted(_relevant(dataset, query_id).items(), key=lambda d: -d[1])
            if old.get(doc) != new.get(doc)
        )
        changes.append(
            QueryChange(
                query_id,
                dataset.query(query_id).text,
                metric,
                float(before[i]),
                float(after[i]),
                moves,
            )
        )
    return tuple(changes)


def _positions(docs: Sequence[str]) -> dict[str, int]:
    return {doc: rank for rank, doc in enumerate(docs, 1)}


def _hit_changes(
    baseline: Baseline, current: Baseline, dataset: Dataset
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Queries whose top k went from holding a relevant doc to none (lost), and back (gained)."""
    lost, gained = [], []
    for query_id in current.query_ids:
        relevant = _relevant(dataset, query_id)
        before = any(doc in relevant for doc in baseline.top_k.get(query_id, ()))
        after = any(doc in relevant for doc in current.top_k.get(query_id, ()))
        if before and not after:
            lost.append(query_id)
        elif after and not before:
            gained.append(query_id)
    return tuple(lost), tuple(gained)


def _comparison(comparison: Comparison) -> dict[str, Any]:
    return asdict(comparison)
