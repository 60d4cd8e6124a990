"""A check decided on labels the gate cannot vouch for: inconclusive, and failing."""

from __future__ import annotations

import dataclasses

from retrieval_gate.gate.checks.compare import Comparison


def unvouched(check: Comparison) -> Comparison:
    """`check` inconclusive and failed whatever gate.on_inconclusive says: labels the gate
    cannot vouch for (pairs no judge graded, a mix of judges) never let a change pass."""
    return dataclasses.replace(check, verdict="inconclusive", failed=True)
