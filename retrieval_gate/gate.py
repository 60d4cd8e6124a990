"""The gate: score the change, compare it query by query with the baseline, decide."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

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
from retrieval_gate.metrics import parse_metric
from retrieval_gate.slicing import slice_definition, slice_queries

RESULT_SCHEMA_VERSION = 1
QUERY_CHANGES = 10
"""Most-regressed queries listed in a result."""

Status = Literal["pass", "fail"]


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


@dataclass(frozen=True, eq=False)
class GateResult:
    """Everything `check` decided; nothing in it prints. `document()` is the canonical JSON."""

    name: str
    comparisons: tuple[Comparison, ...]
    query_changes: tuple[QueryChange, ...]
    hits_lost: tuple[str, ...]
    hits_gained: tuple[str, ...]
    warnings: tuple[str, ...]
    baseline: Baseline
    current: Baseline

    @property
    def failures(self) -> tuple[Comparison, ...]:
        """Every failing (metric, slice), regressions first."""
        failed = [c for c in self.comparisons if c.failed]
        return tuple(sorted(failed, key=lambda c: (c.verdict != "regressed", c.delta)))

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
            "baseline": {
                "created_at": self.baseline.created_at,
                "git_commit": self.baseline.git_commit,
                "git_dirty": self.baseline.git_dirty,
                "tool_version": self.baseline.tool_version,
                "retriever": dict(self.baseline.retriever),
                "fingerprints": asdict(self.baseline.fingerprints),
            },
            "current": baseline_document(self.current, clock=False),
        }

    def to_json(self) -> str:
        """`document()` as indented JSON, one trailing newline."""
        return json.dumps(self.document(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def check(
    config: GateConfig | str | Path,
    *,
    run_path: str | Path | None = None,
    baseline_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    progress: TextIO | None = None,
) -> GateResult:
    """Run (or read `run_path`), score, and compare with the baseline. No printing.

    Raises NotComparableError when the baseline cannot be compared (exit 2).
    """
    config = config if isinstance(config, GateConfig) else load(config)
    record, dataset, warnings = record_current(
        config, run_path=run_path, cache=cache, refresh_cache=refresh_cache, progress=progress
    )
    baseline = read_baseline(
        Path(baseline_path) if baseline_path else config.resolve(config.baseline)
    )
    return decide(baseline, record, config, dataset, warnings)


def record_current(
    config: GateConfig,
    *,
    run_path: str | Path | None = None,
    cache: bool = True,
    refresh_cache: bool = False,
    progress: TextIO | None = None,
    repo_dir: Path | None = None,
) -> tuple[Baseline, Dataset, tuple[str, ...]]:
    """The current retriever's record in baseline form, the labelled set, and warnings."""
    from retrieval_gate.adapters import fingerprint
    from retrieval_gate.pipeline import execute

    if run_path is not None:  # a saved run is the run_file retriever, cached by its hash
        from retrieval_gate.adapters.run_file import RunFileConfig

        saved = RunFileConfig(path=Path(run_path).resolve())
        config = config.model_copy(update={"retriever": saved})
    execution = execute(config, cache=cache, refresh_cache=refresh_cache, progress=progress)
    scores, dataset, warnings = execution.scores, execution.dataset, execution.warnings
    top_k = {q: tuple(hit.doc_id for hit in hits) for q, hits in execution.run.hits.items()}
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
        ),
        retriever=description,
        slice_definition=definition,
        query_ids=scores.query_ids,
        scores=scores.values,
        top_k={q: docs[: config.k] for q, docs in sorted(top_k.items())},
        tool_version=__version__,
        repo_dir=repo_dir if repo_dir is not None else config.base_dir,
    )
    return record, dataset, tuple(warnings)


def decide(
    baseline: Baseline,
    current: Baseline,
    config: GateConfig,
    dataset: Dataset,
    warnings: Sequence[str] = (),
) -> GateResult:
    """Compare two records under `config`'s thresholds; NotComparableError if unlike."""
    problems = comparability_problems(baseline.fingerprints, current.fingerprints)
    if problems:
        raise NotComparableError(
            "the baseline cannot be compared with this run:\n  - "
            + "\n  - ".join(problems)
            + "\nrecreate it on the main branch with `retrieval-gate baseline --force`"
        )
    slices = slice_queries(
        dataset.queries, config.slices.by, config.slices.combine, config.slices.query_length.bins
    )
    thresholds = {_canonical(name): _threshold(gate) for name, gate in config.metrics.items()}
    overrides = {
        slice_name: {_canonical(name): _threshold(gate) for name, gate in gates.items()}
        for slice_name, gates in config.slices.overrides.items()
    }
    unknown = sorted(set(overrides) - set(slices))
    if unknown:
        warnings = (
            *warnings,
            f"slices.overrides names slices that do not exist: {', '.join(unknown)}",
        )
    gate = config.gate
    settings = GateSettings(
        alpha=gate.alpha,
        correction=gate.correction,
        test=gate.test,
        resamples=gate.resamples,
        seed=gate.seed,
        require_significance=gate.require_significance,
        min_size=config.slices.min_size,
    )
    comparisons = compare(baseline.scores, current.scores, slices, thresholds, overrides, settings)
    primary = next(iter(thresholds))
    changes = _query_changes(baseline, current, dataset, primary)
    lost, gained = _hit_changes(baseline, current, dataset)
    return GateResult(
        config.name,
        comparisons,
        changes,
        lost,
        gained,
        tuple(warnings),
        baseline,
        current,
    )


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
    return {**asdict(comparison), "failed": comparison.failed}
