"""`retrieval-gate power`: what the labelled set can see, before a regression happens.

For every check the gate would run (metric x slice): the true drop it catches with the gate's
power, spread evenly and carried by 10% of the queries, P(it fails) at 0 to 2x its threshold,
its level and the queries it needs, all under the rule `check` applies (`compare.compare`,
`detectability`). Nothing here prints.

The sd of the paired differences comes from data when there is any (`spread.DeltaSource`: a
saved run, main's history, the baseline's repeats), with how the data's runs correlate; else
from the baseline's own scores at every correlation of `spread.RANGE`, each figure then its
range over them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.family import widest_level
from retrieval_gate.gate.checks.run_noise import RunNoise, run_spread
from retrieval_gate.gate.power.figures import CheckPower, Correlated, PowerReport
from retrieval_gate.gate.power.spread import (
    RANGE,
    DeltaSource,
    Kind,
    concentrated_drop,
    correlated_sd,
    correlations_for,
)
from retrieval_gate.stats.detectability import (
    OPERATING,
    TARGET,
    detectable_drop,
    fails_closed,
    operating_characteristic,
    queries_needed,
)

__all__ = [
    "CheckPower",
    "PowerReport",
    "baseline_view",
    "enforceable_drop",
    "estimate",
    "power_report",
    "repeats_source",
]

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.core.model import Query
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.errors import InputError
    from retrieval_gate.gate.baseline.record import Baseline
    from retrieval_gate.gate.modes.assisted import JudgeLabels


def baseline_view(
    baseline: Baseline, queries: Sequence[Query], slices: Mapping[str, IntArray]
) -> tuple[dict[str, FloatArray], dict[str, IntArray]]:
    """The baseline's scores of the labelled queries it has, in the labelled set's order, and
    the slices renumbered to them (queries the baseline lacks leave every slice). With a
    comparable baseline nothing is left out."""
    position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
    rows = np.array([position.get(query.id, -1) for query in queries], dtype=np.int64)
    kept = np.flatnonzero(rows >= 0)
    renumber = np.full(len(queries), -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size, dtype=np.int64)
    scores = {metric: np.asarray(values)[rows[kept]] for metric, values in baseline.scores.items()}
    view = {}
    for name, members in slices.items():
        moved = renumber[np.asarray(members, dtype=np.int64)]
        view[name] = moved[moved >= 0]
    return scores, view


def estimate(
    scores: Mapping[str, FloatArray],
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, Threshold],
    overrides: Mapping[str, Mapping[str, Threshold]],
    settings: ComparisonSettings,
    *,
    runs: Sequence[Mapping[str, FloatArray]] = (),
    current_runs: int = 1,
    sd_factors: Mapping[tuple[str, str], float] | None = None,
    checks: Sequence[Comparison] | None = None,
    spread: DeltaSource | None = None,
) -> tuple[CheckPower, ...]:
    """What each check with a max_drop can see, in `compare`'s order.

    `runs` are the baseline's repeated runs (aligned with `scores`), when it has them: each
    check then carries the run-to-run noise `check` will allow for, with `current_runs` runs
    of the change (gate.repeats) beside them.

    `scores` are the baseline's per-query values (one array per metric of `thresholds`) and
    `slices` index them. The checks, their sizes, which are gated and at what level come from
    `compare` itself, run on the baseline against itself (the null case): a check's family,
    level and reason depend only on the slice sizes, so they are exactly what `check` will use.
    `sd_factors` scale each (metric, slice)'s sd and `checks`, when given, replace `compare`'s
    (prediction-powered checks: `assisted_view.power_view`). `spread`, aligned with `scores`, gives
    each check's sd of the differences when it has a spread there, and how its pairs' sides
    correlate; else the baseline's own sd, scaled to each correlation of RANGE, stands for it
    (the assumption): the figures at CORRELATIONS and P(fail)'s range over RANGE go with it.
    """
    comparisons = (
        checks
        if checks is not None
        else compare(scores, scores, slices, thresholds, overrides, settings, strict=False)
    )
    t_test = settings.test == "t"
    levels = tuple(c.level for c in comparisons if c.gated and c.level is not None)
    found = []
    for c in comparisons:
        threshold = overrides.get(c.slice, {}).get(c.metric, thresholds[c.metric])
        if threshold.max_drop is None or c.max_drop is None:
            continue  # report-only or a floor alone: never tested for a drop
        values = np.asarray(scores[c.metric])[slices[c.slice]]
        values = values[~np.isnan(values)]  # undefined for a query (auc): not compared
        assumed = float(values.std(ddof=1)) if values.size >= 2 else None
        if assumed is not None and sd_factors:
            assumed *= sd_factors.get((c.metric, c.slice), 1.0)
        measured = spread.sd(c.metric, slices[c.slice]) if spread is not None else None
        source: Kind = spread.kind if spread is not None and measured else "assumption"
        sd = measured if source != "assumption" else assumed
        detectable = needed = concentrated = fail_range = None
        others: tuple[Correlated, ...] = ()
        chances: tuple[float, ...] | None = (0.0,) * len(OPERATING)
        if c.gated and not (sd is not None and sd > 0):
            chances = None
        elif c.gated and sd is not None:
            noise = _expected_noise(runs, c.metric, slices[c.slice], current_runs)
            common: dict[str, Any] = {
                "sd": sd,
                "level": c.level if settings.require_significance else None,
                "max_drop": c.max_drop,
                "resamples": settings.resamples,
                "t_test": t_test,
                "run_variance": noise.variance if noise else 0.0,
                "run_df": noise.df if noise else None,
            }
            widest = None if c.level is None else widest_level(c.level, levels, settings)
            figures = _Figures(settings, c.n, widest, noisy=noise is not None)
            detectable, chances, needed, concentrated = figures.of(common)
            if correlations_for(source) and assumed:
                others = tuple(
                    Correlated(correlation, correlated_sd(assumed, correlation), *found)
                    for correlation in correlations_for(source)
                    for found in [figures.of(common | {"sd": correlated_sd(assumed, correlation)})]
                )
            if source == "assumption" and assumed:
                fail_range = figures.fail_range(common)
        text = f"{threshold.max_drop * 100:g}" + ("%" if threshold.relative else "pt")
        found.append(
            CheckPower(
                metric=c.metric,
                slice=c.slice,
                n=c.n,
                threshold=text,
                max_drop=c.max_drop,
                sd=sd,
                level=c.level,
                detectable_drop=detectable,
                fail_probability=chances,
                queries_needed=needed,
                gated=c.gated,
                reason=c.reason,
                source=source,
                concentrated_drop=concentrated,
                by_correlation=others,
                correlation=spread.correlation(c.metric, slices[c.slice])
                if spread is not None and source != "assumption"
                else None,
                fail_range=fail_range,
            )
        )
    return tuple(found)


@dataclasses.dataclass(frozen=True)
class _Figures:
    """A gated check's figures at any sd of the differences: its size, the level a check
    failing closed is stated at (`operating_characteristic`), and whether run-wide noise
    leaves it without a count of queries."""

    settings: ComparisonSettings
    n: int
    widest: float | None
    noisy: bool

    def of(
        self, common: Mapping[str, Any]
    ) -> tuple[float | None, tuple[float, ...] | None, int | None, float | None]:
        """The detectable drop, P(fail) at OPERATING, the queries for TARGET and the drop
        caught when SHARE of the queries carry it, with `common` (`fail_probability`'s
        keywords but the rule's)."""
        settings, power = self.settings, self.settings.power
        ruled = dict(common, rule=settings.rule, on_inconclusive=settings.on_inconclusive)
        detectable, chances = operating_characteristic(ruled, self.n, power, self.widest)
        # Run-wide noise does not shrink with more queries: no honest count to give.
        needed = None if self.noisy else queries_needed(power=power, **ruled)
        # The mixture's figure is derived for the default rule's test against no change.
        concentrated = (
            concentrated_drop(common, self.n, power)
            if settings.rule == "significant-drop"
            else None
        )
        return detectable, chances, needed, concentrated

    def fail_range(self, common: Mapping[str, Any]) -> tuple[tuple[float, float], ...] | None:
        """P(fail) at each of OPERATING x max_drop, lowest and highest over RANGE (`common`'s
        sd the baseline's): on a grid of steps of 0.05, as P(fail) below the threshold first
        grows then falls with the sd."""
        ruled = dict(common, rule=self.settings.rule, on_inconclusive=self.settings.on_inconclusive)
        low, high = RANGE
        grid = [low + i * 0.05 for i in range(round((high - low) / 0.05) + 1)]
        rows = []
        for correlation in grid:
            given = dict(ruled, sd=correlated_sd(common["sd"], correlation))
            _, chances = operating_characteristic(given, self.n, self.settings.power, self.widest)
            if chances is None:
                return None
            rows.append(chances)
        return tuple((min(column), max(column)) for column in zip(*rows, strict=True))


def _expected_noise(
    runs: Sequence[Mapping[str, FloatArray]], metric: str, rows: IntArray, current_runs: int
) -> RunNoise | None:
    """The noise `check` will find with `current_runs` runs of the change beside the
    baseline's `runs`: the baseline's run-to-run spread, the variance it adds to the mean
    delta, and the degrees of freedom both sides' runs will give."""
    found = run_spread((runs,), metric, rows)
    if found is None:
        return None
    spread, df = found
    return RunNoise.of(
        spread, df + max(0, current_runs - 1), reference_runs=len(runs), current_runs=current_runs
    )


def power_report(
    config: GateConfig,
    dataset: Dataset,
    baseline: Baseline,
    baseline_path: str | Path,
    spread: DeltaSource | None = None,
    *,
    judge: JudgeLabels | InputError | None = None,
) -> PowerReport:
    """What `config`'s gate can see on `dataset`, estimated from `baseline`, with the sd of
    the differences read from `spread` (a saved run or main's history), else from the
    baseline's repeats (the noise floor), else assumed from its scores. `judge`: under
    gate.labels human+llm, the judge's labels of `dataset`'s queries, or the error reading
    them raised (then the figures are people's labels' alone).

    Raises NotComparableError (exit 2) naming `baseline_path` when `check` could not compare
    with it; when only the judgments changed, it is re-scored as `check` would and a warning
    says so.
    """
    from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
    from retrieval_gate.gate.checks.slicing import same_as_all, same_as_all_warning, slice_queries

    baseline, warnings = _comparable(config, dataset, baseline, baseline_path)
    slicing = config.slices
    slices = slice_queries(dataset.queries, slicing.by, slicing.combine, slicing.query_length.bins)
    thresholds, overrides = gate_thresholds(config)
    unknown = sorted(set(overrides) - set(slices))
    if unknown:
        warnings.append(f"slices.overrides names slices that do not exist: {', '.join(unknown)}")
    again = same_as_all(slices)
    if again:
        warnings.append(same_as_all_warning(again, len(dataset.queries)))
    scores, view = baseline_view(baseline, dataset.queries, slices)
    runs = []
    if baseline.repeats is not None:
        for run in baseline.repeats.runs:
            aligned, _ = baseline_view(
                dataclasses.replace(baseline, scores=run), dataset.queries, {}
            )
            runs.append(aligned)
        warnings.append(
            f"the figures include the retriever's run-to-run noise, measured on the baseline's "
            f"{len(runs)} runs, with gate.repeats = {config.gate.repeats} run"
            f"{'s' if config.gate.repeats != 1 else ''} of the change"
        )
    if spread is None and len(runs) >= 2:
        spread = repeats_source(runs, _view_ids(baseline, dataset), config.gate.repeats)
    settings = gate_settings(config, dataset)
    assisted = None
    if config.gate.uses_llm_labels:
        from retrieval_gate.gate.power.assisted_view import power_view

        assisted = power_view(
            config, dataset, baseline, scores, view, (thresholds, overrides, settings), judge=judge
        )
        scores, view = assisted.scores, assisted.slices
        warnings.append(assisted.note)
        runs = []  # the assisted checks leave run-to-run noise out
        if spread is not None and spread.kind != "repeats":
            warnings.append(
                f"the sd of the differences is the assisted estimate's, not {spread.label}'s: "
                "the judge's labels change what the differences are"
            )
        spread = None
        if assisted.checks is not None:
            settings = dataclasses.replace(settings, test="t")
    checks = estimate(
        scores,
        view,
        thresholds,
        overrides,
        settings,
        runs=runs,
        current_runs=config.gate.repeats,
        sd_factors=assisted.factors if assisted else None,
        checks=assisted.checks if assisted else None,
        spread=spread.aligned(_view_ids(baseline, dataset)) if spread else None,
    )
    tested = {c.metric for c in checks}
    return PowerReport(
        config=str(config.path),
        baseline=str(baseline_path),
        settings=settings,
        checks=checks,
        untested=tuple(m for m in thresholds if m not in tested),
        warnings=tuple(warnings),
        source=spread.kind if spread else "assumption",
        source_label=spread.label if spread else "",
    )


def _view_ids(baseline: Baseline, dataset: Dataset) -> tuple[str, ...]:
    """The ids of `baseline_view`'s rows: the labelled queries the baseline has, in order."""
    have = set(baseline.query_ids)
    return tuple(query.id for query in dataset.queries if query.id in have)


def repeats_source(
    runs: Sequence[Mapping[str, FloatArray]], ids: Sequence[str], current_runs: int
) -> DeltaSource:
    """The differences between consecutive runs of the baseline (aligned with `ids`): the
    noise floor. A pair's differences have twice a run's per-query noise variance; the
    check's mean of `current_runs` runs against the mean of the baseline's has 1/R + 1/C
    times it, so their sd is scaled by sqrt((1/R + 1/C) / 2)."""
    sides = tuple(itertools.pairwise(runs))
    pairs = tuple(
        {metric: np.asarray(after[metric]) - np.asarray(before[metric]) for metric in before}
        for before, after in sides
    )
    scale = ((1.0 / len(runs) + 1.0 / max(current_runs, 1)) / 2.0) ** 0.5
    return DeltaSource(
        kind="repeats",
        label=f"the baseline's {len(runs)} runs",
        query_ids=tuple(ids),
        pairs=pairs,
        scale=scale,
        sides=sides,
    )


def _comparable(
    config: GateConfig, dataset: Dataset, baseline: Baseline, path: str | Path
) -> tuple[Baseline, list[str]]:
    """`baseline` as `check` would compare with it: `gate.comparable_baseline` against what a
    run of `config` on `dataset` would record (its fingerprints; no retriever is called)."""
    from retrieval_gate.config.check_keys import canonical_name
    from retrieval_gate.core.version import __version__
    from retrieval_gate.errors import NotComparableError
    from retrieval_gate.gate.baseline.comparable import comparable_baseline
    from retrieval_gate.gate.baseline.record import Fingerprints, fingerprint_slices, make_baseline
    from retrieval_gate.gate.checks.slicing import slice_definition

    slicing = config.slices
    definition = slice_definition(
        slicing.by, slicing.combine, slicing.query_length.bins, slicing.min_size
    )
    metrics = tuple(canonical_name(key) for key in config.metrics)
    ids = [query.id for query in dataset.queries]
    expected = make_baseline(
        fingerprints=Fingerprints(
            dataset=dataset.fingerprint,
            k=config.k,
            metrics=metrics,
            slices=fingerprint_slices(definition),
            retriever="",
            queries=dataset.queries_fingerprint,
        ),
        retriever={},
        slice_definition=definition,
        query_ids=ids,
        scores={metric: np.zeros(len(ids)) for metric in metrics},
        top_k={},
        tool_version=__version__,
        repo_dir=None,
    )
    try:
        usable, note = comparable_baseline(baseline, expected, dataset)
    except NotComparableError as error:
        raise NotComparableError(f"{path}: {error}") from None
    return usable, [note] if note else []


def enforceable_drop(check: CheckPower, settings: ComparisonSettings) -> float | None:
    """The smallest max_drop (points) with which `check`, its size and level unchanged, catches
    TARGET x max_drop with the settings' power; None when it can catch no drop.

    Its detectable drop is max(max_drop + z se, D), D the drop the test alone catches, so the
    answer is max(z se / (TARGET - 1), D / TARGET); at max_drop 0 `detectable_drop` gives z se
    without the test and max(z se, D) with it.
    """
    if check.sd is None or check.unknown or not check.gated:
        return None
    if fails_closed(settings.rule, settings.on_inconclusive):
        return None  # failing closed, its figure does not shrink with max_drop: no suggestion
    common: dict[str, Any] = {
        "sd": check.sd,
        "n": check.n,
        "max_drop": 0.0,
        "resamples": settings.resamples,
        "t_test": settings.test == "t",
        "power": settings.power,
    }
    level = check.level if settings.require_significance else None
    if settings.rule != "significant-drop":
        # The test against max_drop catches max_drop + D: 1.5 x max_drop from max_drop >= 2 D.
        reach = detectable_drop(level=level, rule="evidence-of-excess", **common)
        return None if reach is None else reach / (TARGET - 1.0)
    spread = detectable_drop(level=None, **common)
    tested = detectable_drop(level=level, **common)
    if spread is None or tested is None:
        return None
    return max(spread / (TARGET - 1.0), tested / TARGET)
