"""A check's verdict from its estimate and evidence, under each of the gate's decision rules."""

from __future__ import annotations

from typing import Literal

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
