"""The drift budget: the newest main-branch result against a reference, with the merges named."""
# Every merge after the reference is one more look at the same question. The looks share one
# e-detector (`stats.edetector`), whose bar targets P(a false trip within gate.drift.horizon
# merges) <= gate.alpha (the looks share records, so bench_drift measures it), and the
# evidence of a drop since any record, not only the reference, lets a drop that arrives late
# in a wandering history stand out of the wander.

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_gate.config.columns import RELEVANCE
from retrieval_gate.config.schema import DriftConfig, GateConfig, MetricGate
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import CannotFailError, InputError
from retrieval_gate.gate.baseline.comparable import rescored_baseline
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.record import Baseline, comparability_problems
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.checks.policy import column_of
from retrieval_gate.gate.checks.slicing import ALL, slice_queries
from retrieval_gate.gate.checks.undefined import defined_mean
from retrieval_gate.gate.checks.verdicts import EPS
from retrieval_gate.gate.decide import decide
from retrieval_gate.gate.result import GateResult
from retrieval_gate.history.record import AcceptEntry, Entry, ResultEntry
from retrieval_gate.metrics.parse import reads_scores
from retrieval_gate.stats.edetector import log_bar, log_e_values, reaches

if TYPE_CHECKING:
    from retrieval_gate.gate.modes.assisted import JudgeLabels

SHOWN_STEPS = 12
"""Merges named per drifting check; the rest are counted."""
_HEX = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass(frozen=True, eq=False, kw_only=True)
class Point:
    """One record of the chain the drift is measured along (re-scored when it had to be)."""

    label: str
    """`#41 (abc1234)`, or `the baseline (abc1234)` for the committed baseline."""
    short: str
    """`#41`, or the short sha when no pull request is known: how a merge is named in a list."""
    pr: int | None
    commit: str
    record: Baseline


@dataclass(frozen=True, kw_only=True)
class Attribution:
    """How one drifting check's drop splits between the merges since the reference."""

    metric: str
    slice: str
    total: float
    """Current mean minus the reference's (negative: a drop), in points of the 0-1 scale."""
    steps: tuple[tuple[str, float], ...]
    """(merge, its change of the mean), oldest first: the changes sum to `total`."""


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """One gated check's e-detector at the newest record."""

    check: Comparison
    """The check as a pull request's rule compares it with the reference (means, delta)."""
    log_e: float
    """log of the largest e-value of a drop from the reference or a later record to the newest
    (`stats.edetector.log_e_value`): 0 when the newest record is the reference."""
    since: str
    """The record that largest e-value counts from: the reference as the report names it,
    else `Point.short`."""
    log_bar: float
    """log of the bar: gate.drift.horizon / the check's share of gate.alpha."""
    needed: bool = True
    """False under gate.require_significance: false or gate.on_inconclusive: fail, where a
    pull request's drop past its max_drop fails without evidence, and so does the drift."""
    p_value: float | None = None
    """Under gate.labels human+llm: the pull request's test of the newest record against the
    reference (the judge fills what the records' scores lack), `log_e` its -log; else None."""

    @property
    def past_budget(self) -> bool:
        """Whether the mean drop since the reference is past the budget."""
        return self.check.max_drop is not None and -self.check.delta > self.check.max_drop + EPS

    @property
    def drifted(self) -> bool:
        """Past the budget, with the evidence of a drop at the bar."""
        return self.past_budget and (self.log_e >= self.log_bar or not self.needed)

    @property
    def verdict(self) -> str:
        """`drifted`; `inconclusive` past the budget below the bar; else `pass`."""
        if self.drifted:
            return "drifted"
        return "inconclusive" if self.past_budget else "pass"


@dataclass(frozen=True, eq=False, kw_only=True)
class DriftReport:
    """What `history drift` decided: each gated check's evidence, and which merges the drift
    came from."""

    config: str
    reference: str
    """How the reference is named to the user (the tag, commit, baseline, an acceptance)."""
    budget: str
    merges: int
    """Records after the reference, up to and including the newest."""
    horizon: int
    alpha: float
    """gate.alpha: P(a false trip within the horizon) is at most this, all checks together."""
    result: GateResult
    """The newest record compared with the reference by a pull request's rule (the means)."""
    evidence: tuple[Evidence, ...]
    attributions: tuple[Attribution, ...]
    notes: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        """1 when a gated check drifted past the budget (with evidence), else 0."""
        return 1 if any(item.drifted for item in self.evidence) else 0


def check_drift(
    entries: Sequence[Entry],
    config: GateConfig,
    dataset: Dataset,
    *,
    resolve: Callable[[str], str | None] = lambda ref: None,
    judge: JudgeLabels | None = None,
) -> DriftReport:
    """Compare the newest result of `config` in `entries` with the drift reference.

    A gated check drifts when its mean drop since the reference is past gate.drift.max_drop
    (compared as a pull request's change is, `gate.decide`) and the e-detector's evidence of
    a drop (`drop_evidence`) reaches its bar, gate.drift.horizon / its share of gate.alpha.
    Records made under other judgments but the same queries are re-scored
    from their stored top k; a record made with other queries, k, metrics or slices ends the
    chain, and the drift counts from the first record after it. `resolve` turns a tag or
    commit (gate.drift.reference) into a full sha, None when git does not know it. Raises
    InputError when there is nothing to compare or the reference is not in the history.
    `judge`: the judge's labels of `dataset`'s queries, which gate.labels human+llm needs.
    """
    budget = config.gate.drift
    if budget is None:
        raise InputError(
            f"{config.path}: gate.drift is not set; add e.g. `drift: {{max_drop: 3pt}}` to the "
            "gate section to check the drift"
        )
    mine = [e for e in entries if e.config == config.name]
    results = [e for e in mine if isinstance(e, ResultEntry)]
    if not results:
        raise InputError(
            f"the history holds no result of {config.name!r} yet; the Action appends one on "
            "each push to the default branch (history: true)"
        )
    chain, notes = _chain(results, dataset)
    start, label, extra = _reference(budget, chain, results, config, dataset, resolve)
    notes += extra
    start, accepted = _accepted(mine, chain, start)
    if accepted:
        label = chain[start].label
        notes.insert(0, f"the reference was moved to {label} by an acceptance: {accepted}")
    reference = chain[start]
    newest = chain[-1]
    segment = chain[start:]
    try:
        result = decide(
            reference.record,
            newest.record,
            _drift_config(config, budget),
            dataset,
            reference=f"the drift reference {label}",
            judge=judge,
        )
    except CannotFailError as error:
        raise InputError(f"the drift is compared as a pull request is: {error}") from error
    slices = slice_queries(
        dataset.queries, config.slices.by, config.slices.combine, config.slices.query_length.bins
    )
    needed = config.gate.require_significance and config.gate.on_inconclusive == "pass"
    evidence = []
    for check in result.comparisons:
        level = check.level
        if not check.gated or level is None:
            continue
        if config.gate.uses_llm_labels:
            evidence.append(_tested(check, level, budget.horizon, label, needed=needed))
        elif check.slice in slices:
            found = _evidence(
                check, level, segment, slices[check.slice], budget.horizon, label, needed=needed
            )
            if found is not None:
                evidence.append(found)
            else:
                notes.append(
                    f"{check.metric} on {check.slice}: its {plural(check.n, 'query')} cannot "
                    f"reach the drift's bar (e >= {_bar(budget.horizon, level)}): "
                    "reported, never drifting"
                )
    attributions = tuple(
        _attribution(item.check, segment, slices[item.check.slice])
        for item in evidence
        if item.drifted
    )
    return DriftReport(
        config=config.name,
        reference=label,
        budget=budget.max_drop.text,
        merges=len(segment) - 1,
        horizon=budget.horizon,
        alpha=config.gate.alpha,
        result=result,
        evidence=tuple(evidence),
        attributions=attributions,
        notes=tuple(notes),
    )


def _evidence(
    check: Comparison,
    level: float,
    segment: Sequence[Point],
    rows: np.ndarray,
    horizon: int,
    reference: str,
    *,
    needed: bool,
) -> Evidence | None:
    """The check's largest e-value of a drop to the newest record, from the reference or any
    record after it; None for a slice whose queries cannot reach the bar when the evidence is
    `needed`. Raises InputError when an overall check cannot: the drift could never trip.
    `level` is the check's share of alpha."""
    bar = log_bar(horizon, level)
    newest = segment[-1].record.scores[check.metric][rows]
    if not reaches(int(np.isfinite(newest).sum()), bar) and needed:
        if check.slice != ALL:
            return None
        raise InputError(
            f"the drift of {check.metric} can never trip: its bar is e >= "
            f"{_bar(horizon, level)} (gate.drift.horizon {horizon} / its share {level:.2g} of "
            f"gate.alpha), more than {plural(check.n, 'query')} can give; gate fewer metrics or "
            "slices, shorten gate.drift.horizon or raise gate.alpha"
        )
    scores = np.stack([point.record.scores[check.metric][rows] for point in segment])
    found = drop_evidence(scores, bar)
    best = int(np.argmax(found)) if found.size else 0
    if not found.size or found[best] <= 0.0:
        return Evidence(check=check, log_e=0.0, since=segment[-1].short, log_bar=bar, needed=needed)
    since = reference if best == 0 else segment[best].short
    return Evidence(check=check, log_e=float(found[best]), since=since, log_bar=bar, needed=needed)


def _tested(
    check: Comparison, level: float, horizon: int, reference: str, *, needed: bool
) -> Evidence:
    """Under gate.labels human+llm the records' per-query scores are not what the gate
    compares (the judge's labels fill them in): the evidence is the pull request's test
    against the reference, its p-value held to 1 / bar, the chance of a false trip an
    e-value at the bar has."""
    p = check.p_value if check.p_value is not None else 1.0
    return Evidence(
        check=check,
        log_e=-math.log(max(p, 1e-300)),
        since=reference,
        log_bar=log_bar(horizon, level),
        needed=needed,
        p_value=p,
    )


def drop_evidence(scores: np.ndarray, bar: float) -> np.ndarray:
    """log e-values of a drop after each record but the newest, bet to reach the log bar
    `bar`, from `scores` (one row per record, the reference first, the newest last; one
    column per query). For record j, the larger of two comparisons' (`log_e_values`): record
    j against the newest, which a drop stands out of when each merge moves the scores further
    (their noise grows with the merges between), and the mean of records 0..j against the
    mean of the records after it, which gathers the evidence of every record since when runs
    scatter around fixed scores. A query undefined in a record is left out of what that
    record enters."""
    newest = scores[-1]
    t = scores.shape[0] - 1
    if t < 1:
        return np.zeros(0, dtype=np.float64)
    sums = np.cumsum(scores, axis=0)
    upto = np.arange(1, t + 1, dtype=np.float64)[:, None]
    before = sums[:t] / upto
    after = (sums[t] - sums[:t]) / (t + 1 - upto)
    return np.maximum(log_e_values(scores[:t] - newest, bar), log_e_values(before - after, bar))


def _bar(horizon: int, level: float) -> str:
    return f"{horizon / level:.3g}"


def _chain(results: Sequence[ResultEntry], dataset: Dataset) -> tuple[list[Point], list[str]]:
    """The newest records that can be compared under the current labelled set, oldest first."""
    newest = results[-1].record
    points: list[Point] = []
    rescored = 0
    notes = []
    for entry in reversed(results):
        record, changed = _usable(entry.record, newest, dataset)
        if record is None:
            if not points:
                raise InputError(
                    f"the newest result in the history ({entry.label}) was not made with the "
                    f"labelled set of {dataset.source}: record a result of this commit first"
                )
            notes.append(
                f"the drift restarts at {points[0].label}: the record before it "
                f"({entry.label}) was made with other queries, k, metrics or slices"
            )
            break
        rescored += changed
        short = f"#{entry.pr}" if entry.pr is not None else entry.commit[:7]
        points.append(
            Point(label=entry.label, short=short, pr=entry.pr, commit=entry.commit, record=record)
        )
    if rescored:
        notes.append(
            f"{plural(rescored, 'record')} made under other judgments re-scored from their "
            "stored top k under the current ones"
        )
    return points[::-1], notes


def _usable(record: Baseline, newest: Baseline, dataset: Dataset) -> tuple[Baseline | None, bool]:
    """`record` as it scores under `dataset`'s judgments (re-scored when they changed), and
    whether it was re-scored; None when it cannot be compared with the newest record."""
    old, new = record.fingerprints, newest.fingerprints
    if comparability_problems(dataclasses.replace(old, dataset=new.dataset), new):
        return None, False
    if record.query_ids != tuple(q.id for q in dataset.queries):
        return None, False
    if old.dataset == dataset.fingerprint:
        return record, False
    # A stored top k has no scores: a metric that reads them (auc) cannot be re-scored.
    exact = not any(reads_scores(metric) for metric in old.metrics)
    if exact and old.queries is not None and old.queries == dataset.queries_fingerprint:
        return rescored_baseline(record, dataset), True
    return None, False


def _reference(
    budget: DriftConfig,
    chain: list[Point],
    results: Sequence[ResultEntry],
    config: GateConfig,
    dataset: Dataset,
    resolve: Callable[[str], str | None],
) -> tuple[int, str, list[str]]:
    """The chain index of the reference, how to name it, and notes. The committed baseline,
    when its commit has no record, is put before the chain."""
    wanted = budget.reference
    if wanted is None:
        return 0, chain[0].label, []
    if wanted == "baseline":
        path = config.resolve(config.baseline)
        baseline = read_baseline(path)
        commit = baseline.git_commit
        found = _find(chain, commit) if commit else None
        if found is not None:
            return found, f"the baseline ({chain[found].label})", []
        record, _ = _usable(baseline, chain[-1].record, dataset)
        if record is None:
            raise InputError(
                f"gate.drift.reference baseline: {path} was not made with the current "
                "labelled set, k, metrics and slices; recreate it or name a tag or commit"
            )
        label = f"the baseline ({commit[:7] if commit else 'no commit'})"
        chain.insert(
            0, Point(label=label, short=label, pr=None, commit=commit or "", record=record)
        )
        return 0, label, []
    commit = resolve(wanted)
    if commit is None and _HEX.match(wanted):
        prefixed = [e.commit for e in results if e.commit.startswith(wanted)]
        commit = prefixed[-1] if prefixed else None
    found = _find(chain, commit) if commit else None
    if found is not None:
        return found, wanted, []
    if commit and any(e.commit == commit for e in results):
        return (
            0,
            chain[0].label,
            [
                f"the reference {wanted} was recorded before the drift restarted; counting from "
                f"{chain[0].label}"
            ],
        )
    raise InputError(
        f"gate.drift.reference {wanted!r}: "
        + ("git does not know it" if commit is None else f"commit {commit[:12]} has no record")
        + " in the history; name a tag or commit of the main branch that has one, or "
        "`baseline`, or leave it unset to count from the first record"
    )


def _accepted(entries: Sequence[Entry], chain: Sequence[Point], start: int) -> tuple[int, str]:
    """The reference after acceptances (the latest accepted record at or after `start`) and
    the reason given for it; "" when none moved it."""
    label = ""
    for entry in entries:
        if isinstance(entry, AcceptEntry):
            found = _find(chain, entry.commit)
            if found is not None and found >= start:
                start = found
                label = entry.reason
    return start, label


def _find(chain: Sequence[Point], commit: str) -> int | None:
    found = [i for i, point in enumerate(chain) if point.commit == commit]
    return found[-1] if found else None


def _drift_config(config: GateConfig, budget: DriftConfig) -> GateConfig:
    """`config` with the drift budget as every gated metric's tolerance: no floor (a floor is
    each pull request's), no per-slice override; the gated checks share gate.alpha as a pull
    request's do. The budget is in points of the [0, 1] scale: checks in other units or where
    lower is better (latency, cost) are only reported."""
    metrics = {
        key: MetricGate(max_drop=budget.max_drop)
        if (gate.max_drop is not None or gate.min is not None)
        and column_of(key, config.evaluators) == RELEVANCE
        else MetricGate()
        for key, gate in config.metrics.items()
    }
    slices = config.slices.model_copy(update={"overrides": {}})
    return config.model_copy(update={"metrics": metrics, "slices": slices})


def _attribution(check: Comparison, segment: Sequence[Point], rows: np.ndarray) -> Attribution:
    means = [defined_mean(point.record.scores[check.metric][rows]) for point in segment]
    steps = tuple(
        (point.short, after - before)
        for point, before, after in zip(segment[1:], means, means[1:], strict=False)
    )
    return Attribution(
        metric=check.metric, slice=check.slice, total=means[-1] - means[0], steps=steps
    )


# ------------------------------------------------------------------------------------------
# Wording


def describe(report: DriftReport) -> list[str]:
    """The console lines of a drift report: a verdict line, the bar, one line per overall
    gated check, the merges each drift came from, and the notes."""
    verdict = "FAIL" if report.exit_code else "PASS"
    lines = [
        f"{verdict} drift of {report.config} since {report.reference} "
        f"({plural(report.merges, 'merge')}; budget {report.budget})",
        bar_line(report),
    ]
    for item in report.evidence:
        check = item.check
        if check.slice != ALL:
            continue
        lines.append(
            f"  {check.metric}: {check.baseline_mean:.4f} -> {check.current_mean:.4f} "
            f"({_points(check.delta)}) {item.verdict}, "
            + (
                f"e-value {_e_text(item.log_e)}"
                + (f" since {item.since}" if item.log_e > 0 else "")
                if item.p_value is None
                else f"p {item.p_value:.2g} against {item.since}"
            )
            + f" (bar {_e_text(item.log_bar)})"
        )
    for attribution in report.attributions:
        where = "" if attribution.slice == ALL else f" on {attribution.slice}"
        shown = [f"{label} {delta * 100:+.1f}" for label, delta in attribution.steps[:SHOWN_STEPS]]
        if len(attribution.steps) > SHOWN_STEPS:
            shown.append(f"and {len(attribution.steps) - SHOWN_STEPS} more")
        lines.append(
            f"{attribution.metric}{where} is {-attribution.total * 100:.1f} pt below "
            f"{report.reference} over {plural(len(attribution.steps), 'merge')}: "
            f"{', '.join(shown) or 'none'}"
        )
    if report.exit_code:
        lines.append(
            "to accept the drop as a trade-off: retrieval-gate history accept --reason TEXT "
            "--push (the reference moves to the newest record)"
        )
    lines += [f"note: {note}" for note in report.notes]
    return lines


def bar_line(report: DriftReport) -> str:
    """What makes a check drift, how often a history without a change trips, and past the
    horizon, what to do."""
    line = (
        f"bar: e-value >= gate.drift.horizon {report.horizon} / the check's share of gate.alpha "
        f"{report.alpha:g} (without a change, at most {report.alpha:g} of histories trip within "
        f"{plural(report.horizon, 'merge')})"
    )
    if report.merges > report.horizon:
        # Measured: the comparisons grow with the merges, and so do the false trips.
        line += (
            f"; {plural(report.merges, 'merge')} since the reference, past the horizon, where "
            "false trips add up: move the reference forward (history accept, or a newer tag in "
            "gate.drift.reference)"
        )
    return line


def drift_document(report: DriftReport) -> dict[str, Any]:
    """The drift report as JSON: the bar, every gated check's evidence, the merges."""
    checks = [
        {
            "metric": item.check.metric,
            "slice": item.check.slice,
            "n": item.check.n,
            "reference_mean": item.check.baseline_mean,
            "current_mean": item.check.current_mean,
            "delta": item.check.delta,
            "max_drop": item.check.max_drop,
            "level": item.check.level,
            "log_e_value": item.log_e if item.p_value is None else None,
            "p_value": item.p_value,
            "since": item.since,
            "log_bar": item.log_bar,
            "verdict": item.verdict,
            "failed": item.drifted,
        }
        for item in report.evidence
    ]
    return {
        "config": report.config,
        "verdict": "fail" if report.exit_code else "pass",
        "reference": report.reference,
        "budget": report.budget,
        "look": {"number": report.merges, "horizon": report.horizon, "alpha": report.alpha},
        "checks": checks,
        "attributions": [
            {
                "metric": item.metric,
                "slice": item.slice,
                "total": item.total,
                "steps": [{"merge": label, "delta": delta} for label, delta in item.steps],
            }
            for item in report.attributions
        ],
        "notes": list(report.notes),
    }


def _e_text(log_e: float) -> str:
    """An e-value for people: 3.2e+05; past what a float holds, as a power of 10."""
    if log_e < 700:
        return f"{math.exp(log_e):.2g}"
    return f"1e+{log_e / math.log(10):.0f}"


def _points(delta: float) -> str:
    return f"{delta * 100:+.1f} pt"


def resolver(repo: Path) -> Callable[[str], str | None]:
    """A function from a tag or commit to its full sha in `repo` (None when git has none)."""
    from retrieval_gate.core.git import run_git

    def resolve(ref: str) -> str | None:
        if ref.startswith("-"):
            return None
        done = run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", timeout=30)
        return (done.stdout.strip() or None) if done.returncode == 0 else None

    return resolve
