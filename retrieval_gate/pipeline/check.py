"""`check`: the current record against the reference (the baseline, or a run at another ref)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.repeats import Probe, averaged
from retrieval_gate.gate.checks.operational import LatencyRun
from retrieval_gate.gate.decide import decide, shown_path
from retrieval_gate.gate.result import GateResult
from retrieval_gate.pipeline.check_plan import CheckPlan, plan_check, validate
from retrieval_gate.pipeline.evaluator_scores import unscored_unchanged, with_reference_scores
from retrieval_gate.pipeline.judge_labels import gate_judge
from retrieval_gate.pipeline.record import record_current

if TYPE_CHECKING:
    from retrieval_gate.core.model import Document
    from retrieval_gate.gate.baseline.record import Baseline
    from retrieval_gate.gate.modes.label_free import Lists
    from retrieval_gate.pipeline.against import Reference
    from retrieval_gate.pipeline.record import CurrentRun


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
    sequential: bool | None = None,
    judge: bool = True,
    max_judge_calls: int | None = None,
    max_judge_cost: float | None = None,
    noise_probe: bool = True,
) -> GateResult:
    """Run (or read `run_path`), score, and compare with the reference. No printing.

    The reference is the committed baseline, or with `against` a run of the retriever at the
    merge-base of HEAD and that git ref (`against.py`), made now in the same environment.
    Cached answers are read only when the retriever's description proves them current,
    unless `trust_cache` (then the result's warnings count them). `repeats` (default
    gate.repeats) runs the retriever that many times a side. Raises NotComparableError when
    the baseline cannot be compared (exit 2). `sequential` (or gate.sequential) runs the
    queries in batches and may stop early with FAIL (`sequential.py`); False runs every query
    whatever gate.sequential says. Options that do not go together (`check_plan.RULES`) are
    a GateError (exit 2) before anything runs. Under gate.labels human+llm, the pool pairs
    the judge's layer lacks are graded first (`check_judge`), within judge.budget or
    `max_judge_calls` / `max_judge_cost`; `judge` False grades none. With one run a side the
    noise probe (gate.noise_probe; `noise_probe` False: off) runs a sample of the queries
    again, and when a top k differs runs the current side (with `against`, both sides)
    gate.noise_probe.repeats times (`_probed`).
    """
    plan = plan_check(
        config if isinstance(config, GateConfig) else load(config),
        run_path=run_path,
        baseline_path=baseline_path,
        cache=cache,
        refresh_cache=refresh_cache,
        trust_cache=trust_cache,
        repeats=repeats,
        against=against,
        sequential=sequential,
        judge=judge,
        max_judge_calls=max_judge_calls,
        max_judge_cost=max_judge_cost,
        noise_probe=noise_probe,
    )
    validate(plan)
    if plan.stops_early:
        from retrieval_gate.pipeline.sequential import check_sequential

        return check_sequential(plan, progress=progress)
    # Where the reference comes from is what varies: the committed baseline, or a run at REF.
    reference = _committed if plan.against is None else _at_ref
    return _decided(plan, reference(plan, progress), progress)


@dataclass(frozen=True, kw_only=True, eq=False)
class _Sides:
    """The two records a check decides between, as the reference's strategy made them."""

    reference: Baseline
    reference_unscored: Mapping[str, tuple[str, ...]]
    """Evaluator column -> the reference's queries its export holds no score of."""
    current: CurrentRun
    warnings: tuple[str, ...]
    label: str
    """How the reports name the reference."""
    latency: LatencyRun | None
    kept: tuple[list[Lists], str] | None
    """The reference's top k of the unlabelled sample and how the reports name it."""
    probe: Probe | None = None
    """What the noise probe found, when it ran."""


def _committed(plan: CheckPlan, progress: TextIO | None) -> _Sides:
    """The committed baseline (or --baseline) as the reference; the current side run (or
    --run read) here, from the cache when it is proven current."""
    config, source = plan.config, plan.baseline
    # Before any run: a missing file is quick.
    kept = _kept_reference(config, source, plan.run_path)
    current = record_current(
        config,
        run_path=plan.run_path,
        cache=plan.cache,
        refresh_cache=plan.refresh_cache,
        prove_cache=not plan.trust_cache,
        progress=progress,
        repeats=plan.repeats,
    )
    current, probe = _probed(plan, current, progress)
    whole: tuple[str, ...] = ()
    if plan.sequential is not None:  # a saved run is free to read: nothing to save by stopping
        whole = ("gate.sequential: a saved run is read whole; every query decided",)
    stored, read = with_reference_scores(read_baseline(source), config, current.dataset.queries)
    return _Sides(
        reference=stored,
        reference_unscored=read.unscored,
        current=current,
        warnings=(*current.warnings, *read.warnings, *whole),
        label=f"baseline {shown_path(source)}{_read_from(config)}",
        latency=None,
        kept=kept,
        probe=probe,
    )


def _at_ref(plan: CheckPlan, progress: TextIO | None) -> _Sides:
    """The retriever at REF (a worktree, a subprocess) as the reference, then the working
    tree's, uncached."""
    from retrieval_gate.pipeline.against import (
        record_at,
        repository_root,
        resolve_reference,
        worktree,
    )

    config, repeats = plan.config, plan.repeats
    assert plan.against is not None  # the strategy of a plan with --against
    repo = repository_root(config.base_dir)
    reference = resolve_reference(repo, plan.against)
    latency = None
    timed = any(key.startswith("latency_") for key in config.metrics)
    if timed and repeats == 1:  # both sides in interleaved turns: latency is comparable
        from retrieval_gate.execution.turns import Turns
        from retrieval_gate.pipeline.interleave import interleaved_records

        settings = config.gate.latency
        turns = Turns(settings.batch, settings.warmup, config.gate.seed)
        with worktree(repo, reference.commit) as tree:
            record, notes, current = interleaved_records(
                reference, tree, config, repo, turns, progress=progress
            )
            current, probe = _probed(plan, current, progress)
            runs = _runs(probe)
            record, notes = _more_at(reference, tree, config, repo, record, notes, runs, progress)
            kept = _kept_at(reference, tree, config, repo, runs, current, progress)
        order = [query.id for query in current.dataset.queries]
        # The runs the probe added are not timed in turns: latency as with repeats, then.
        latency = LatencyRun(turns.of(order), turns.warm(order)) if runs == 1 else LatencyRun(None)
    else:
        with worktree(repo, reference.commit) as tree:
            record, notes = record_at(
                reference, tree, config, repo, repeats=repeats, progress=progress
            )
            current = record_current(config, cache=False, progress=progress, repeats=repeats)
            current, probe = _probed(plan, current, progress)
            runs = repeats * _runs(probe)  # the probe runs only when repeats is 1
            record, notes = _more_at(reference, tree, config, repo, record, notes, runs, progress)
            kept = _kept_at(reference, tree, config, repo, runs, current, progress)
        latency = LatencyRun(None) if timed else None
    return _Sides(
        reference=record,
        reference_unscored={},
        current=current,
        warnings=(*(f"at {reference.label}: {note}" for note in notes), *current.warnings),
        label=f"a run at {reference.label}",
        latency=latency,
        kept=kept,
        probe=probe,
    )


def _probed(
    plan: CheckPlan, current: CurrentRun, progress: TextIO | None
) -> tuple[CurrentRun, Probe | None]:
    """`current` (one run), or more runs of it when the plan's noise probe finds noise
    (`noise_probe.probed_run`), and the probe's finding; None when it did not run."""
    if plan.noise_probe is None:
        return current, None
    from retrieval_gate.pipeline.noise_probe import probed_run

    return probed_run(plan.config, current, plan.noise_probe, progress=progress)


def _runs(probe: Probe | None) -> int:
    """Runs a side the probe's finding asks for: 1 unless it found noise."""
    return 1 if probe is None else probe.runs


def _more_at(
    reference: Reference,
    tree: Path,
    config: GateConfig,
    repo: Path,
    first: Baseline,
    notes: tuple[str, ...],
    runs: int,
    progress: TextIO | None,
) -> tuple[Baseline, tuple[str, ...]]:
    """The reference's record `first` and, when the probe found noise on the current side,
    more runs at REF up to `runs` in all, averaged; their notes after `first`'s."""
    if runs == 1 or first.repeats is not None:  # repeats: as many runs as asked already
        return first, notes
    from retrieval_gate.pipeline.against import record_at

    records, said = [first], list(notes)
    for _ in range(runs - 1):
        record, more = record_at(reference, tree, config, repo, repeats=1, progress=progress)
        records.append(record)
        said.extend(note for note in more if note not in said)
    return averaged(records), tuple(said)


def _decided(plan: CheckPlan, sides: _Sides, progress: TextIO | None) -> GateResult:
    """The current side decided against the reference, the label-free checks beside."""
    config, current = plan.config, sides.current
    record, now = unscored_unchanged(
        sides.reference, current.record, (sides.reference_unscored, current.unscored)
    )
    calls = None
    if config.gate.uses_llm_labels:
        from retrieval_gate.pipeline.check_judge import judge_new_pairs

        assert plan.judge_budget is not None  # the schema requires a judge with human+llm
        calls = judge_new_pairs(
            config,
            ((record, sides.label), (now, "the current run")),
            current.dataset,
            asked=plan.judge,
            budget=plan.judge_budget,
            cache=plan.cache,
            progress=progress,
        )
    result = decide(
        record,
        now,
        config,
        current.dataset,
        sides.warnings,
        failed_queries=current.failed_queries,
        reference=sides.label,
        latency=sides.latency,
        judge=gate_judge(config, current.dataset),
    )
    noise = dataclasses.replace(result.noise, probe=sides.probe, unprobed=plan.unprobed)
    result = dataclasses.replace(result, noise=noise)
    if calls is not None and result.assisted is not None:
        result = dataclasses.replace(
            result, assisted=dataclasses.replace(result.assisted, calls=calls)
        )
    if config.unlabelled is None:
        return result
    if plan.run_path is not None:
        note = "unlabelled: a saved run (--run) answers the labelled queries only: not checked"
        return dataclasses.replace(result, warnings=(*result.warnings, note))
    runs = plan.repeats * _runs(sides.probe)
    return _with_label_free(result, config, runs, sides.kept, current.dataset.corpus, progress)


def _kept_at(
    reference: Reference,
    tree: Path,
    config: GateConfig,
    repo: Path,
    repeats: int,
    current: CurrentRun,
    progress: TextIO | None,
) -> tuple[list[Lists], str] | None:
    """The retriever at REF on the unlabelled sample, `repeats` times, and how the reports
    name it; None when no label-free check compares with the reference."""
    from retrieval_gate.pipeline.against import config_at
    from retrieval_gate.pipeline.unlabelled import overlap_checked
    from retrieval_gate.pipeline.unlabelled_at import lists_at

    if not overlap_checked(config):
        return None
    at_ref = config_at(reference, tree, config, repo)
    runs = lists_at(
        reference.label, at_ref, config, repeats, corpus=current.dataset.corpus, progress=progress
    )
    return runs, f"a run at {reference.label}"


def _kept_reference(
    config: GateConfig, baseline: Path, run_path: str | Path | None
) -> tuple[list[Lists], str] | None:
    """The reference's top k of the unlabelled sample kept beside `baseline`, and how the
    reports name it; None when no label-free check compares with it."""
    from retrieval_gate.pipeline.unlabelled import overlap_checked, read_reference, reference_path

    if run_path is not None or not overlap_checked(config):
        return None
    path = reference_path(baseline)
    return read_reference(path, config), f"the baseline's top k ({shown_path(path)})"


def _with_label_free(
    result: GateResult,
    config: GateConfig,
    runs: int,
    kept: tuple[list[Lists], str] | None,
    corpus: Mapping[str, Document] | None,
    progress: TextIO | None,
) -> GateResult:
    """`result` with the label-free checks beside its own, in their own family (they read
    other queries), and their warnings."""
    from retrieval_gate.pipeline.unlabelled import label_free_checks

    found = label_free_checks(
        config,
        runs=runs,
        reference=kept[0] if kept else None,
        reference_label=kept[1] if kept else "",
        corpus=corpus,
        progress=progress,
    )
    return dataclasses.replace(
        result,
        comparisons=(*result.comparisons, *found.comparisons),
        warnings=(*result.warnings, *found.warnings),
        label_free=found.run,
    )


def _read_from(config: GateConfig) -> str:
    """` (ragas scores: ragas-baseline.csv)` for the evaluators whose reference side is read
    from a file, not the baseline; empty when none is."""
    given = [
        f"{name} scores: {settings.reference}"
        for name, settings in config.evaluators.items()
        if settings.reference is not None
    ]
    return f" ({'; '.join(given)})" if given else ""
