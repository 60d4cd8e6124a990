"""A check's verdict from its estimate and evidence, under each of the gate's decision rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from retrieval_gate.stats.detectability import LEAN

Verdict = Literal["pass", "regressed", "inconclusive", "improved", "below_floor"]
OnInconclusive = Literal["pass", "fail"]
Rule = Literal["significant-drop", "evidence-of-excess", "non-inferiority"]
RULES: tuple[Rule, ...] = ("significant-drop", "evidence-of-excess", "non-inferiority")
"""significant-drop: fail when the estimate is past max_drop and a test shows a drop (against no
change); evidence-of-excess: fail only with evidence that the drop is past max_drop;
non-inferiority: pass only with evidence that the drop is within max_drop."""

# Verdicts compare means that went through float sums; a drop that equals the threshold in
# exact arithmetic must not fail because of the last bit.
EPS = 1e-12


def verdict_for(
    *,
    delta: float,
    current_mean: float,
    max_drop: float | None,
    floor: float | None,
    drop_evidence: bool,
    rise_evidence: bool = False,
    lean: bool = False,
    within_evidence: bool | None = None,
) -> Verdict | None:
    """The verdict of one check; None for a report-only metric (no max_drop, no floor).
    `verdict_of` reads these from the tests' p-values.

    `drop_evidence`: the rule's test shows the drop that fails (against no change under
    significant-drop, past max_drop under the other two); `lean`: its p-value is within
    `detectability.LEAN` x alpha; `within_evidence` (non-inferiority only, else None): a test
    shows the drop is within max_drop, without which the check is inconclusive;
    `rise_evidence`: a test shows a rise.
    """
    if max_drop is None and floor is None:
        return None
    past_drop = max_drop is not None and -delta > max_drop + EPS
    if past_drop and drop_evidence:
        return "regressed"
    if floor is not None and current_mean < floor - EPS:
        return "below_floor"
    if within_evidence is not None and max_drop is not None:
        if not within_evidence:
            return "inconclusive"
    elif past_drop and lean:
        return "inconclusive"
    if max_drop is not None and delta > max_drop + EPS and rise_evidence:
        return "improved"
    return "pass"


def fails(verdict: Verdict | None, on_inconclusive: OnInconclusive) -> bool:
    """Whether a gated check with `verdict` fails the gate."""
    if verdict == "inconclusive":
        return on_inconclusive == "fail"
    return verdict in ("regressed", "below_floor")


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What one check's tests say, as its verdict reads them: the p-values (adjusted across
    the family for a check in it, raw for one outside, whose verdict is informative)."""

    failing: float | None
    """The p-value of the rule's failing hypothesis; None when there is none."""
    rise: float
    """The one-sided p-value of a rise."""
    rise_level: float
    """What `rise` is held to: the check's level in the family, else alpha."""
    within: float | None = None
    """Under non-inferiority, the p-value of "the drop is max_drop or more"; else None."""


def verdict_of(
    *,
    delta: float,
    current_mean: float,
    max_drop: float | None,
    floor: float | None,
    n: int,
    evidence: Evidence,
    alpha: float,
    require_significance: bool = True,
) -> Verdict | None:
    """The verdict of a check of `n` queries from its tests (`verdict_for` from p-values):
    evidence is a p-value within `alpha`, a lean one within LEAN x alpha; without
    `require_significance` the drop alone decides; with no queries a gated check passes."""
    failing, within = evidence.failing, evidence.within
    drop = failing is not None and failing <= alpha
    lean = failing is not None and failing <= LEAN * alpha
    rise = evidence.rise <= evidence.rise_level
    shown_within = None if within is None else within <= alpha
    if not require_significance:
        drop = rise = lean = True
        shown_within = None if shown_within is None else True
    verdict = verdict_for(
        delta=delta,
        current_mean=current_mean,
        max_drop=max_drop,
        floor=floor,
        drop_evidence=drop and n > 0,
        rise_evidence=rise and n > 0,
        lean=lean and n > 0,
        within_evidence=shown_within,
    )
    if not n and verdict is not None:  # nothing to judge: reported with reason "no queries"
        return "pass"
    return verdict
