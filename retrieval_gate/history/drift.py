"""The drift budget: the newest main-branch result against a reference, with the merges named."""
# Every merge after the reference is one more look at the same question, so each look gets
# its own share of gate.alpha (`look_level`): however many merges, the shares sum to alpha.

from __future__ import annotations

import dataclasses
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
from retrieval_gate.gate.decide import decide
from retrieval_gate.gate.result import GateResult
from retrieval_gate.history.record import AcceptEntry, Entry, ResultEntry
from retrieval_gate.metrics.parse import reads_scores

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


@dataclass(frozen=True, eq=False, kw_only=True)
class DriftReport:
    """What `history drift` decided: the comparison, and which merges the drift came from."""

    config: str
    reference: str
    """How the reference is named to the user (the tag, commit, baseline, an acceptance)."""
    budget: str
    merges: int
    """Records after the reference, up to and including the newest: the look's number."""
    horizon: int
    alpha: float
    """gate.alpha: what every look since the reference spends in all."""
    level: float
    """This look's share of alpha (`look_level`): the alpha the comparison was decided at."""
    result: GateResult
    attributions: tuple[Attribution, ...]
    notes: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        """1 when a gated check drifted past the budget (with evidence), else 0."""
        return self.result.exit_code


def check_drift(
    entries: Sequence[Entry],
    config: GateConfig,
    dataset: Dataset,
    *,
    resolve: Callable[[str], str | None] = lambda ref: None,
    judge: JudgeLabels | None = None,
) -> DriftReport:
    """Compare the newest result of `config` in `entries` with the drift reference.

    The rule is a pull request's (`gate.decide`) with gate.drift.max_drop as every gated
    metric's tolerance. Records made under other judgments but the same queries are re-scored
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
    look = len(segment) - 1
    level = look_level(config.gate.alpha, budget.horizon, look)
    try:
        result = decide(
            reference.record,
            newest.record,
            _drift_config(config, budget, level),
            dataset,
            reference=f"the drift reference {label}",
            judge=judge,
        )
    except CannotFailError as error:  # here the look's level is why
        raise InputError(
            f"the drift's {_look(look, budget.horizon)} is tested at {level:.2g}: {error}; "
            "or move the reference forward (history accept, or a newer tag in "
            "gate.drift.reference) to start a new horizon"
        ) from error
    slices = slice_queries(
        dataset.queries, config.slices.by, config.slices.combine, config.slices.query_length.bins
    )
    attributions = tuple(
        _attribution(check, segment, slices[check.slice])
        for check in result.failures
        if check.slice in slices
    )
    return DriftReport(
        config=config.name,
        reference=label,
        budget=budget.max_drop.text,
        merges=look,
        horizon=budget.horizon,
        alpha=config.gate.alpha,
        level=level,
        result=result,
        attributions=attributions,
        notes=tuple(notes),
    )


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


def look_level(alpha: float, horizon: int, look: int) -> float:
    """The alpha look number `look` (merges since the reference) is tested at.

    Half of `alpha` is spread evenly over the first `horizon` looks, alpha / (2 horizon) each;
    look t past it gets alpha horizon / (2 t (t - 1)), which sums to the other half over every
    later look (the sum telescopes to 1 / horizon). By the union bound, whatever the
    dependence between looks, P(any false trip since the reference) <= alpha. Look 0 (the
    newest record is the reference) is tested as look 1: its drop is nothing.
    """
    look = max(look, 1)
    if look <= horizon:
        return alpha / (2 * horizon)
    return alpha * horizon / (2 * look * (look - 1))


def _look(look: int, horizon: int) -> str:
    if look <= horizon:
        return f"look {look} of the {horizon}-merge horizon"
    return f"look {look}, past the {horizon}-merge horizon"


def _drift_config(config: GateConfig, budget: DriftConfig, level: float) -> GateConfig:
    """`config` with the drift budget as every gated metric's tolerance: no floor (a floor is
    each pull request's), no per-slice override; and the look's level as its alpha, which
    the gated checks share as a pull request's share gate.alpha. The budget is in points of
    the [0, 1] scale: checks in other units or where lower is better (latency, cost) are
    only reported."""
    metrics = {
        key: MetricGate(max_drop=budget.max_drop)
        if (gate.max_drop is not None or gate.min is not None)
        and column_of(key, config.evaluators) == RELEVANCE
        else MetricGate()
        for key, gate in config.metrics.items()
    }
    slices = config.slices.model_copy(update={"overrides": {}})
    gate = config.gate.model_copy(update={"alpha": level})
    return config.model_copy(update={"metrics": metrics, "slices": slices, "gate": gate})


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
    """The console lines of a drift report: a verdict line, one line per gated check, the
    merges each drift came from, and the notes."""
    result = report.result
    gated = [c for c in result.comparisons if c.gated and c.slice == ALL]
    verdict = "FAIL" if report.exit_code else "PASS"
    lines = [
        f"{verdict} drift of {report.config} since {report.reference} "
        f"({plural(report.merges, 'merge')}; budget {report.budget})",
        look_line(report),
    ]
    for check in gated:
        detectable = (
            f", detectable {check.detectable_drop * 100:.1f} pt"
            if check.detectable_drop is not None
            else ""
        )
        lines.append(
            f"  {check.metric}: {check.baseline_mean:.4f} -> {check.current_mean:.4f} "
            f"({_points(check.delta)}) {check.verdict}{detectable}"
        )
    for item in report.attributions:
        where = "" if item.slice == ALL else f" on {item.slice}"
        shown = [f"{label} {delta * 100:+.1f}" for label, delta in item.steps[:SHOWN_STEPS]]
        if len(item.steps) > SHOWN_STEPS:
            shown.append(f"and {len(item.steps) - SHOWN_STEPS} more")
        lines.append(
            f"{item.metric}{where} is {-item.total * 100:.1f} pt below {report.reference} "
            f"over {plural(len(item.steps), 'merge')}: {', '.join(shown) or 'none'}"
        )
    if report.exit_code:
        lines.append(
            "to accept the drop as a trade-off: retrieval-gate history accept --reason TEXT "
            "--push (the reference moves to the newest record)"
        )
    lines += [f"note: {note}" for note in report.notes]
    return lines


def look_line(report: DriftReport) -> str:
    """Which look this is and the alpha it was tested at, and what past the horizon means."""
    line = (
        f"{_look(report.merges, report.horizon)}: tested at {report.level:.2g} "
        f"(gate.alpha {report.alpha:g} spread over every look since the reference)"
    )
    if report.merges > report.horizon:
        line += (
            "; the level shrinks with each merge: move the reference forward (history accept, "
            "or a newer tag in gate.drift.reference) to start a new horizon"
        )
    return line


def drift_document(report: DriftReport) -> dict[str, Any]:
    """The drift report as JSON: the look and its level, every gated check, the merges."""
    checks = [
        {
            "metric": c.metric,
            "slice": c.slice,
            "n": c.n,
            "reference_mean": c.baseline_mean,
            "current_mean": c.current_mean,
            "delta": c.delta,
            "p_value": c.p_value,
            "p_adjusted": c.p_adjusted,
            "level": c.level,
            "max_drop": c.max_drop,
            "detectable_drop": c.detectable_drop,
            "verdict": c.verdict,
            "failed": c.failed,
        }
        for c in report.result.comparisons
        if c.gated
    ]
    return {
        "config": report.config,
        "verdict": "fail" if report.exit_code else "pass",
        "reference": report.reference,
        "budget": report.budget,
        "look": {
            "number": report.merges,
            "horizon": report.horizon,
            "past_horizon": report.merges > report.horizon,
            "alpha": report.alpha,
            "level": report.level,
        },
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
