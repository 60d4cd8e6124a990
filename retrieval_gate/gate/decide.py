"""The decision: two records compared under the config's thresholds, with what explains it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.config.check_keys import ranked_keys
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.datasets import Dataset
from retrieval_gate.gate.baseline.comparable import comparable_baseline
from retrieval_gate.gate.baseline.compared_sides import OtherLevel, compared_sides
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.baseline.repeats import noise_of, runs_of
from retrieval_gate.gate.baseline.retrieved_ids import unknown_sides
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.operational import LatencyRun, filled_runs, operational_columns
from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
from retrieval_gate.gate.checks.slicing import same_as_all, same_as_all_warning, slice_queries
from retrieval_gate.gate.checks.undefined import excluded_warnings
from retrieval_gate.gate.explain.diagnostics import query_changes
from retrieval_gate.gate.explain.label_holes import hole_plan, label_holes
from retrieval_gate.gate.explain.stage_losses import stage_losses
from retrieval_gate.gate.explain.top_k_facts import top_k_facts
from retrieval_gate.gate.result import GateContext, GateResult, OtherLevelChecks, failing_checks

if TYPE_CHECKING:
    from retrieval_gate.gate.modes.assisted import JudgeLabels


def decide(
    baseline: Baseline,
    current: Baseline,
    config: GateConfig,
    dataset: Dataset,
    warnings: Sequence[str] = (),
    *,
    failed_queries: Sequence[str] = (),
    reference: str = "",
    strict: bool = True,
    latency: LatencyRun | None = None,
    judge: JudgeLabels | None = None,
) -> GateResult:
    """Compare two records under `config`'s thresholds; NotComparableError if unlike.

    With `strict` off, an overall check too small to fail is reported as not gated instead of
    refusing the config (a sequential run's stopped part, whose verdict its looks gave).

    When only the judgments changed since the baseline, it is re-scored under the current ones
    and a warning says so (`comparable_baseline`). The queries that judged a document removed
    from the corpus or rewritten since are left out of every check (`corpus_checked`), unless
    the corpus was re-chunked: then each side is scored against the labels anchored to its
    own chunking (`compared_sides`); the result keeps both whole records. `latency`: how this
    job measured both sides' latencies; without it latency checks are report-only
    (`operational_columns`). `judge`: the judge's
    labels of `dataset`'s queries, which gate.labels human+llm needs (`pipeline.judge_labels`).
    """
    warnings = (*warnings, *unknown_sides(baseline.top_k, current.top_k, dataset, config))
    baseline, note = comparable_baseline(baseline, current, dataset)
    if note:
        warnings = (*warnings, note)
    whole_baseline, labelled = baseline, dataset
    sides = compared_sides(baseline, current, dataset, config)
    whole_current, warnings = sides.whole_current, (*warnings, *sides.notes)
    baseline, current, dataset, corpus = sides.baseline, sides.current, sides.dataset, sides.corpus
    if judge is not None and sides.rechunk is not None:
        from retrieval_gate.gate.modes.assisted_rechunk import rechunked_judge

        judge, across = rechunked_judge(judge, sides.rechunk)
        warnings = (*warnings, across)
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
    again = same_as_all(slices)
    if again:
        warnings = (*warnings, same_as_all_warning(again, len(dataset.queries)))
    settings = configured = gate_settings(config)
    if sides.other is not None and sides.other.gated:
        # Both levels gate: each family at half of alpha keeps the union's false alarms
        # within alpha (Bonferroni across the two; Holm or BH within each).
        settings = dataclasses.replace(settings, alpha=settings.alpha / 2)
    repeated = baseline.repeats is not None or current.repeats is not None
    runs = (runs_of(baseline), runs_of(current)) if repeated else None

    ready, columns, measured = operational_columns(
        baseline.fingerprints.metrics,
        current.query_ids,
        (baseline.scores, current.scores),
        latency,
    )
    warnings = (*warnings, *measured)
    if runs is not None and columns:
        runs = (
            filled_runs(runs[0], columns, baseline.scores),
            filled_runs(runs[1], columns, current.scores),
        )

    def decided(
        before: Mapping[str, FloatArray], after: Mapping[str, FloatArray]
    ) -> tuple[Comparison, ...]:
        if columns:  # unmeasured latency and cost set aside: `Measured` leaves them out
            before, after = {**before, **ready[0]}, {**after, **ready[1]}
        return compare(
            before,
            after,
            slices,
            thresholds,
            overrides,
            settings,
            strict=strict,
            runs=runs,
            columns=columns,
        )

    assisted = None
    if config.gate.uses_llm_labels:
        from retrieval_gate.gate.modes.assisted import assisted_checks

        assisted, notes = assisted_checks(
            (baseline, current),
            config,
            dataset,
            slices,
            thresholds,
            overrides,
            settings,
            judge=judge,
        )
        warnings = (*warnings, *notes)
        comparisons = assisted.assisted if assisted.trusted else assisted.human
    else:
        comparisons = decided(baseline.scores, current.scores)
    warnings = (*warnings, *excluded_warnings(comparisons))
    other = None
    if sides.other is not None:
        other = other_level_checks(
            sides.other, config, thresholds, overrides, settings, strict=strict
        )
    # The most regressed queries of the worst failure's metric, else of the first metric.
    failing = failing_checks(comparisons)
    shown = failing[0].metric if failing else next(iter(thresholds))
    changes = query_changes(baseline, current, dataset, shown)
    context = GateContext(
        config_file=_config_file(config),
        config_sha256=_config_sha256(config),
        k=config.k,
        settings=configured,  # as configured: the reports say how both levels split alpha
        reference=reference,
    )
    # The bounds re-decide with people's labels alone: with human+llm the judge's labels
    # fill the holes, and those it left are bounded by the mode's own rule (assisted_holes).
    plan = hole_plan(comparisons, dataset.qrels, k=config.k) if assisted is None else None
    facts = top_k_facts(
        baseline.top_k, current.top_k, current.query_ids, dataset.qrels, k=config.k, plan=plan
    )
    lost, gained, unjudged, found = facts.lost, facts.gained, facts.unjudged, facts.holes
    holes = label_holes(
        comparisons,
        found,
        slices,
        (baseline.scores, current.scores),
        decided,
        proven=settings.test == "randomization",
    )
    if assisted is not None and assisted.trusted:
        holes = assisted.holes  # the pairs the judge did not grade, bounded as they decided
    losses = None
    if current.candidates is not None:
        losses = stage_losses(
            baseline.top_k,
            current.top_k,
            current.candidates,
            dataset.qrels,
            current.query_ids,
            [(c.metric, c.slice) for c in comparisons],
            slices,
            config.k,
        )
    return GateResult(
        name=config.name,
        comparisons=comparisons,
        query_changes=changes,
        hits_lost=lost,
        hits_gained=gained,
        warnings=tuple(warnings),
        failed_queries=tuple(failed_queries),
        unjudged=unjudged,
        label_holes=holes,
        context=context,
        baseline=whole_baseline,
        current=whole_current,
        noise=noise_of(baseline, current),
        dataset=labelled,
        assisted=assisted,
        corpus=corpus,
        stage_losses=losses,
        other_level=other,
    )


def other_level_checks(
    other: OtherLevel,
    config: GateConfig,
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    *,
    strict: bool = True,
) -> OtherLevelChecks:
    """The ranking checks at a chunked corpus's other level, on its own slices, tested as a
    family of their own, with the label-hole bounds of those that would fail; failing only
    when dataset.other_level gates. Latency, cost and evaluator scores are the same at both
    levels: the gating level's checks have them."""
    ranked = set(ranked_keys(thresholds))
    slices = slice_queries(
        other.dataset.queries,
        config.slices.by,
        config.slices.combine,
        config.slices.query_length.bins,
    )
    before, after = other.baseline, other.current
    repeated = before.repeats is not None or after.repeats is not None
    runs = (runs_of(before), runs_of(after)) if repeated else None

    def decided(
        base: Mapping[str, FloatArray], cur: Mapping[str, FloatArray]
    ) -> tuple[Comparison, ...]:
        return compare(
            base,
            cur,
            slices,
            {metric: t for metric, t in thresholds.items() if metric in ranked},
            {
                name: {metric: t for metric, t in by.items() if metric in ranked}
                for name, by in overrides.items()
            },
            settings,
            strict=strict and other.gated,
            runs=runs,
        )

    # Decided as if it gated, so the bounds look at what would fail.
    made = decided(before.scores, after.scores)
    plan = hole_plan(made, other.dataset.qrels, k=config.k)
    found = top_k_facts(
        before.top_k, after.top_k, after.query_ids, other.dataset.qrels, k=config.k, plan=plan
    ).holes
    return OtherLevelChecks(
        level=other.level,
        gated=other.gated,
        comparisons=tuple(
            dataclasses.replace(c, view=other.level, failed=c.failed and other.gated) for c in made
        ),
        label_holes=label_holes(
            made,
            found,
            slices,
            (before.scores, after.scores),
            decided,
            proven=settings.test == "randomization",
        ),
    )


def _config_file(config: GateConfig) -> str:
    """The config's path relative to the working directory when inside it (as CI shows it)."""
    return shown_path(config.path)


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when inside it, else its name."""
    path = path.resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name


def _config_sha256(config: GateConfig) -> str:
    dumped = config.model_dump(mode="json")
    # At its default, dataset.other_level changes nothing an unchunked corpus's gate decides:
    # left out, every config written before it keeps its sha.
    if dumped["dataset"]["other_level"] == "report":
        del dumped["dataset"]["other_level"]
    text = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
