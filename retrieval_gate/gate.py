"""The gate: score the change, compare it query by query with the baseline, decide."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

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
from retrieval_gate.diagnostics import (
    LabellingGap,
    QueryChange,
    Unjudged,
    explainable_failures,
    graded_top_ks,
    hit_changes,
    judged_at_k,
    judged_drops,
    labelling_gaps,
    query_changes,
    unjudged_summary,
)
from retrieval_gate.errors import GateError
from retrieval_gate.metrics import parse_metric
from retrieval_gate.repeats import Noise, averaged, noise_of, runs_of
from retrieval_gate.slicing import ALL, slice_definition, slice_queries
from retrieval_gate.wording import json_text

RESULT_SCHEMA_VERSION = 2
"""2: the one-sided rule (inconclusive, detectable_drop, level, p_bound, failed per check)."""

Status = Literal["pass", "fail", "error"]


class NotComparableError(GateError):
    """The baseline was made with another labelled set, k, metric set or slice definition."""


@dataclass(frozen=True)
class GateContext:
    """What the result was decided under, for the report footer."""

    config_file: str
    config_sha256: str
    """sha256 of the validated config as canonical JSON."""
    k: int
    settings: GateSettings
    reference: str = ""
    """Where the reference record came from: "baseline PATH", "a run at REF (...)"; "" when
    the caller did not say (compare)."""


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
    noise: Noise
    """The repeats of both sides: without them, the retriever's own noise is not measured."""
    dataset: Dataset | None = None
    """The labelled set it was decided on, for what reads it again (main's drift); not part
    of the document."""

    @property
    def failures(self) -> tuple[Comparison, ...]:
        """Every failing (metric, slice), regressions first."""
        return failing_checks(self.comparisons)

    @property
    def status(self) -> Status:
        """`fail` when any gated (metric, slice) regressed or fell below its floor."""
        return "fail" if self.failures else "pass"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression or floor breached (DESIGN's exit codes)."""
        return 1 if self.failures else 0

    def document(self, *, compact: bool = False) -> dict[str, Any]:
        """The canonical record: stable key order, no clock, so equal inputs give equal bytes.
        `compact`: the current top k as the record holds it (`baseline_document`)."""
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
            "noise": {
                **asdict(self.noise),
                "spread": {
                    c.metric: c.run_sd for c in self.comparisons if c.slice == ALL and c.run_sd
                },
            },
            "config": {
                "file": self.context.config_file,
                "sha256": self.context.config_sha256,
                "k": self.context.k,
                "gate": asdict(self.context.settings),
            },
            "baseline": {
                "source": self.context.reference,
                "created_at": self.baseline.created_at,
                "git_commit": self.baseline.git_commit,
                "git_dirty": self.baseline.git_dirty,
                "tool_version": self.baseline.tool_version,
                "retriever": dict(self.baseline.retriever),
                "fingerprints": asdict(self.baseline.fingerprints),
                "scores": _aligned_scores(self.baseline, self.current.query_ids),
                **({"runs": len(self.baseline.repeats.runs)} if self.baseline.repeats else {}),
            },
            "current": baseline_document(self.current, clock=False, compact=compact),
        }

    def to_json(self) -> str:
        """`document()` as indented JSON, one trailing newline."""
        return canonical_json(self.document())


def failing_checks(comparisons: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """The failing checks, regressions first, each kind by its delta (the worst first)."""
    failed = [c for c in comparisons if c.failed]
    return tuple(sorted(failed, key=lambda c: (c.verdict != "regressed", c.verdict, c.delta)))


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
    repeats: int | None = None,
    against: str | None = None,
) -> GateResult:
    """Run (or read `run_path`), score, and compare with the reference. No printing.

    The reference is the committed baseline, or with `against` a run of the retriever at the
    merge-base of HEAD and that git ref (`against.py`), made now in the same environment.
    Cached answers are read only when the retriever's description proves them current,
    unless `trust_cache` (then the result's warnings count them). `repeats` (default
    gate.repeats) runs the retriever that many times a side. Raises NotComparableError when
    the baseline cannot be compared (exit 2).
    """
    config = config if isinstance(config, GateConfig) else load(config)
    times = config.gate.repeats if repeats is None else repeats
    if against is not None:
        if run_path is not None or baseline_path is not None:
            raise GateError(
                "--against runs the retriever at both commits: it takes neither --run nor "
                "--baseline"
            )
        return _check_against(config, against, repeats=times, progress=progress)
    current = record_current(
        config,
        run_path=run_path,
        cache=cache,
        refresh_cache=refresh_cache,
        prove_cache=not trust_cache,
        progress=progress,
        repeats=times,
    )
    source = Path(baseline_path) if baseline_path else config.resolve(config.baseline)
    return decide(
        read_baseline(source),
        current.record,
        config,
        current.dataset,
        current.warnings,
        failed_queries=current.failed_queries,
        reference=f"baseline {_shown_path(source)}",
    )


def _check_against(
    config: GateConfig, ref: str, *, repeats: int, progress: TextIO | None
) -> GateResult:
    """The retriever at REF (a worktree, a subprocess) then the working tree's, uncached."""
    from retrieval_gate.against import record_at, repository_root, resolve_reference, worktree

    repo = repository_root(config.base_dir)
    reference = resolve_reference(repo, ref)
    with worktree(repo, reference.commit) as tree:
        record, notes = record_at(reference, tree, config, repo, repeats=repeats, progress=progress)
    current = record_current(config, cache=False, progress=progress, repeats=repeats)
    warnings = (*(f"at {reference.label}: {note}" for note in notes), *current.warnings)
    return decide(
        record,
        current.record,
        config,
        current.dataset,
        warnings,
        failed_queries=current.failed_queries,
        reference=f"a run at {reference.label}",
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
    retriever_dir: Path | None = None,
    repeats: int = 1,
) -> CurrentRun:
    """The current retriever's record in baseline form, the labelled set, and warnings.

    With `repeats` above 1 the retriever is run that many times, never from the cache, and the
    record is their mean (`repeats.averaged`). `retriever_dir` is where the retriever's
    relative paths start (a checkout of another commit), when not the config's folder.
    """
    if repeats > 1 and run_path is not None:
        raise GateError(
            f"repeats {repeats} needs a retriever to call again: a saved run (--run) is one "
            "run; drop --repeats (or set gate.repeats: 1) to gate on it"
        )
    if run_path is not None:  # a saved run is the run_file retriever, cached by its hash
        from retrieval_gate.adapters.run_file import RunFileConfig

        saved = RunFileConfig.given(run_path, "--run")  # messages name --run, not a field
        config = config.model_copy(update={"retriever": saved})
    runs: list[CurrentRun] = []
    for _ in range(repeats):
        runs.append(
            _record_once(
                config,
                cache=cache and repeats == 1,
                refresh_cache=refresh_cache,
                prove_cache=prove_cache,
                progress=progress,
                repo_dir=repo_dir,
                retriever_dir=retriever_dir,
                dataset=runs[0].dataset if runs else None,  # read and checked once
            )
        )
    warnings = tuple(dict.fromkeys(w for run in runs for w in run.warnings))
    failed = tuple(sorted({q for run in runs for q in run.failed_queries}))
    record = averaged([run.record for run in runs])
    return CurrentRun(record, runs[0].dataset, warnings, failed)


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
) -> CurrentRun:
    from retrieval_gate.adapters import fingerprint
    from retrieval_gate.pipeline import execute
    from retrieval_gate.top_k import top_k_ids

    execution = execute(
        config,
        cache=cache,
        refresh_cache=refresh_cache,
        prove_cache=prove_cache,
        progress=progress,
        retriever_dir=retriever_dir,
        dataset=dataset,
    )
    scores, dataset, warnings = execution.scores, execution.dataset, execution.warnings
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
        top_k=top_k_ids(execution.run.run, config.k),
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
    reference: str = "",
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
    repeated = baseline.repeats is not None or current.repeats is not None
    comparisons = compare(
        baseline.scores,
        current.scores,
        slices,
        thresholds,
        overrides,
        settings,
        runs=(runs_of(baseline), runs_of(current)) if repeated else None,
    )
    # The most regressed queries of the worst failure's metric, else of the first metric.
    failing = failing_checks(comparisons)
    shown = failing[0].metric if failing else next(iter(thresholds))
    changes = query_changes(baseline, current, dataset, shown)
    before, after = graded_top_ks(baseline.top_k, current.top_k, current.query_ids, dataset.qrels)
    lost, gained = hit_changes(before, after)
    context = GateContext(
        _config_file(config), _config_sha256(config), config.k, settings, reference
    )
    judged_before, unjudged_before = judged_at_k(before, config.k)
    judged_after, unjudged_after = judged_at_k(after, config.k)
    result = GateResult(
        config.name,
        comparisons,
        changes,
        lost,
        gained,
        tuple(warnings),
        tuple(failed_queries),
        unjudged_summary(before, after, judged_before, judged_after),
        (),
        context,
        baseline,
        current,
        noise_of(baseline, current),
        dataset,
    )
    judged = (judged_before, judged_after)
    unjudged = (unjudged_before, unjudged_after)
    # Re-scoring under optimistic labels is the costly part: only for checks it can change.
    suspects = [
        failure for failure, _, _ in judged_drops(result.failures, slices, judged, unjudged)
    ]
    explainable = explainable_failures(suspects, before, after, dataset.qrels, slices)
    gaps = labelling_gaps(suspects, slices, judged, unjudged, explainable)
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
        first = " (its first run's: the other runs keep scores, not rankings)"
        return rescored_baseline(baseline, dataset), (
            f"the judgments changed since the baseline (dataset {before[:12]} -> "
            f"{dataset.fingerprint[:12]}); the baseline's stored top-{baseline.fingerprints.k} "
            f"rankings{first if baseline.repeats else ''} were re-scored with the current "
            "judgments"
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
    from retrieval_gate.top_k import listed_run

    run = listed_run(baseline.top_k, baseline.query_ids)
    metrics = baseline.fingerprints.metrics
    scores = evaluate(run, dataset.qrels, metrics, dataset.subtopics)
    if scores.query_ids != baseline.query_ids:
        raise ValueError("the baseline's query ids are not the labelled set's")
    values = {}
    for metric in metrics:
        column = scores.values[metric].copy()
        column.flags.writeable = False
        values[metric] = column
    fingerprints = dataclasses.replace(baseline.fingerprints, dataset=dataset.fingerprint)
    return dataclasses.replace(baseline, fingerprints=fingerprints, scores=values, repeats=None)


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


def _config_file(config: GateConfig) -> str:
    """The config's path relative to the working directory when inside it (as CI shows it)."""
    return _shown_path(config.path)


def _shown_path(path: Path) -> str:
    """`path` relative to the working directory when inside it, else its name."""
    path = path.resolve()
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


def _comparison(comparison: Comparison) -> dict[str, Any]:
    return asdict(comparison)
