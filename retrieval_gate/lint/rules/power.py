"""Lint rules on what the gate can catch: checks that cannot fail or see their max_drop."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from retrieval_gate.core.wording import plural
from retrieval_gate.errors import GateError
from retrieval_gate.gate.baseline.retrieved_ids import unknown_retrieval
from retrieval_gate.gate.checks.compare import compare
from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
from retrieval_gate.gate.checks.slicing import ALL
from retrieval_gate.gate.power.estimate import CheckPower, baseline_view, enforceable_drop
from retrieval_gate.lint.engine import Draft, LintInput, rule, some
from retrieval_gate.stats.detectability import (
    OPERATING,
    POWER,
    TARGET,
    fails_closed,
    short_of_target,
    stated_chance,
    stated_points,
)


@rule("gate-cannot-fail", "warning",
      "an overall check that cannot fail on a drop worth catching: check refuses it")  # fmt: skip
def _cannot_fail(given: LintInput) -> Iterator[Draft]:
    slices = given.slices
    if slices is None or given.dataset is None:
        return
    thresholds, overrides = gate_thresholds(given.config)
    # Which checks can fail depends on the slice sizes and on what the baseline has to lose:
    # compare of the baseline with itself finds them (of zeros, the sizes alone).
    scores = {metric: np.zeros(len(given.dataset.queries)) for metric in thresholds}
    if given.baseline is not None:
        found, view = baseline_view(given.baseline, given.dataset.queries, slices)
        if all(metric in found for metric in thresholds):
            scores, slices = {metric: found[metric] for metric in thresholds}, view
    try:
        checks = compare(
            scores,
            scores,
            slices,
            thresholds,
            overrides,
            gate_settings(given.config, given.dataset),
            strict=False,
        )
    except GateError:  # what compare cannot take, other rules report
        return
    keys = {str(spec): key for key, spec in given.specs.items()}
    for check in checks:
        if check.slice == ALL and check.n and check.max_drop is not None and not check.gated:
            yield Draft(
                f"{check.metric}: the gate could never fail on it: {check.reason}",
                "label more queries, raise gate.alpha or gate.overall_share, give fewer metrics "
                "a max_drop, or set gate.require_significance: false (check refuses this config)",
                given.at("metrics", keys.get(check.metric, check.metric)),
            )


@rule("retrieved-ids-unknown", "error",
      "the baseline retrieved no id of the corpus or the judgments: every check is 0 and "
      "can never fail")  # fmt: skip
def _unknown_ids(given: LintInput) -> Iterator[Draft]:
    baseline, dataset = given.baseline, given.dataset
    if baseline is None or dataset is None:
        return
    unknown = unknown_retrieval(baseline.top_k, dataset.qrels.docs, dataset.corpus)
    if unknown:
        yield Draft(
            f"the baseline's {unknown}",
            "then recreate the baseline: retrieval-gate baseline --force (check and baseline "
            "refuse such a run)",
            given.at("retriever"),
        )


@rule("threshold-below-mde", "warning",
      "the overall check cannot catch 1.5x its max_drop with 80% power")  # fmt: skip
def _below_mde(given: LintInput) -> Iterator[Draft]:
    alpha = given.config.gate.alpha
    for key, check in _short(given, overall=True):
        threshold = check.threshold  # the metric's, or an override of slice "all"
        if not check.gated:
            continue  # gate-cannot-fail's error
        level = f"level {check.level:.2g}, " if check.level is not None else ""
        widest = _enforceable(given, check)
        yield Draft(
            f"{check.metric}: max_drop {threshold}, but {plural(check.n, 'query', 'queries')} "
            f"detect {_detects(check)} ({level}alpha {alpha:g}): a true drop of 1.5x max_drop "
            f"({TARGET * check.max_drop * 100:.4g}pt) fails the gate {_chance(check)} of the "
            "time",
            _more_queries(check)
            + (f", or raise max_drop to {_points(widest)} or more" if widest is not None else ""),
            given.at("metrics", key),
        )


@rule("slice-below-mde", "info",
      "gated slices that cannot catch 1.5x their max_drop with 80% power")  # fmt: skip
def _slices_below_mde(given: LintInput) -> Iterator[Draft]:
    short: dict[str, list[CheckPower]] = {}
    ungated: dict[str, list[CheckPower]] = {}
    for key, check in _short(given, overall=False):
        if check.gated:
            short.setdefault(key, []).append(check)
        elif check.n >= given.config.slices.min_size:  # the smaller ones are small-slice's
            ungated.setdefault(key, []).append(check)
    for key in given.config.metrics:
        parts, fixes = [], []
        if short.get(key):
            checks = short[key]
            detects = [
                f"{c.slice} ({plural(c.n, 'query', 'queries')} detect "
                + (
                    "no drop)"
                    if c.detectable_drop is None
                    else f"about {stated_points(c.detectable_drop, c.max_drop)}pt)"
                )
                for c in checks
            ]
            parts.append(
                f"{plural(len(checks), 'gated slice')} cannot catch 1.5x max_drop with "
                f"{POWER:.0%} power: {some(detects)}"
            )
            needs = [f"{c.queries_needed} in {c.slice}" for c in checks if c.queries_needed]
            if needs:
                needs[0] = needs[0].replace(" in ", " queries in ", 1)
                fixes.append(f"label about {some(needs)} to detect 1.5x max_drop")
        if ungated.get(key):
            checks = ungated[key]
            parts.append(
                f"{plural(len(checks), 'slice')} of min_size or more cannot be gated: "
                + some([f"{c.slice} ({c.reason})" for c in checks])
            )
        if parts:
            fix = "; ".join(fixes) if fixes else "label more queries there"
            yield Draft(
                f"{given.name(key)}: " + "; ".join(parts),
                f"{fix}, or set a wider max_drop for them in slices.overrides",
                given.at("metrics", key),
            )


@rule("no-baseline", "info", "no baseline yet, so detectability is unknown")
def _no_baseline(given: LintInput) -> Iterator[Draft]:
    if given.baseline is None:
        yield Draft(
            "no baseline to estimate per-query spread from, so whether each max_drop can be "
            "detected is unknown",
            f"create one on the main branch: `retrieval-gate baseline -c {given.config.path}`",
            given.at("baseline"),
        )


def _short(given: LintInput, *, overall: bool) -> Iterator[tuple[str, CheckPower]]:
    """(metric key, check) of the overall checks (or the slice checks) that are not gated or
    cannot catch 1.5x their max_drop with 80% power, in the config's order."""
    keys = {str(spec): key for key, spec in given.specs.items()}
    for check in given.detectability:
        if (check.slice == ALL) != overall or check.metric not in keys:
            continue
        if check.unknown:  # no spread in the baseline's scores: nothing to estimate from
            continue
        if not check.gated or short_of_target(check.detectable_drop, check.max_drop):
            yield keys[check.metric], check


def _detects(check: CheckPower) -> str:
    if check.detectable_drop is None:
        return "no drop at all"
    return f"about {stated_points(check.detectable_drop, check.max_drop)}pt with {POWER:.0%} power"


def _chance(check: CheckPower) -> str:
    if check.fail_probability is None:
        return "an unknown share"
    chance = check.fail_probability[OPERATING.index(TARGET)]
    return f"{stated_chance(chance):.0%}" if chance >= 0.005 else "under 1%"


def _more_queries(check: CheckPower) -> str:
    if check.queries_needed is None:
        return "label more queries"
    return f"label about {check.queries_needed} queries to detect 1.5x max_drop"


def _enforceable(given: LintInput, check: CheckPower) -> float | None:
    widest = enforceable_drop(check, gate_settings(given.config, given.dataset))
    # Rounded up to the 0.1pt it is shown with, so the suggestion itself passes the rule.
    return None if widest is None else math.ceil(widest * 1000 - 1e-9) / 1000


def _points(value: float) -> str:
    return f"{value * 100:.1f}pt"


UNCHANGED_FAILS = 0.2
"""Above this chance of failing an unchanged retriever, a strict gate is flagged."""


@rule("strict-gate-fails-unchanged", "warning",
      "non-inferiority failing closed would fail an unchanged retriever too often")  # fmt: skip
def _strict_fails_unchanged(given: LintInput) -> Iterator[Draft]:
    gate = given.config.gate
    if not fails_closed(gate.rule, gate.on_inconclusive):
        return
    keys = {str(spec): key for key, spec in given.specs.items()}
    for check in given.detectability:
        if check.metric not in keys or not check.gated or check.fail_probability is None:
            continue
        chance = check.fail_probability[OPERATING.index(0.0)]
        if chance > UNCHANGED_FAILS:
            where = "" if check.slice == ALL else f" on {check.slice}"
            yield Draft(
                f"{check.metric}{where}: with {plural(check.n, 'query', 'queries')} the "
                f"non-inferiority test shows the drop is within max_drop {check.threshold} too "
                "rarely: an unchanged retriever fails this check at least "
                f"{stated_chance(chance):.0%} of the time",
                (
                    f"label about {check.queries_needed} queries to pass it {POWER:.0%} of the time"
                    if check.queries_needed
                    else "label more queries"
                )
                + ", widen max_drop, or set gate.on_inconclusive: pass (then only evidence of a "
                "drop past max_drop fails)",
                given.at("metrics", keys[check.metric]),
            )
