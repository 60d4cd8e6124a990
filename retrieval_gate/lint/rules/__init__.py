"""Every lint rule, one module per family, and the order they run in."""

from retrieval_gate.lint.engine import RULES
from retrieval_gate.lint.rules import (  # noqa: F401  (their rules register on import)
    agreement,
    chunks,
    judge,
    labels,
    metrics,
    power,
    slices,
)

ORDER = (
    "duplicate-judgment",
    "no-labelled-query",
    "corpus-mismatch",
    "judged-query-without-text",
    "query-without-judgments",
    "no-relevant-document",
    "judged-doc-not-in-corpus",
    "unanchored-chunk",
    "label-drift",
    "addresses-the-judge",
    "non-integer-grade",
    "top-grade-heavy",
    "positives-only",
    "grade-distribution",
    "small-slice",
    "bad-slice",
    "repeats-overall",
    "low-agreement",
    "agreement",
    "implicit-binary-cut",
    "ndcg-gain",
    "cutoff-deeper-than-k",
    "no-cutoff",
    "k-not-set",
    "no-recall-metric",
    "unsliced",
    "gate-cannot-fail",
    "retrieved-ids-unknown",
    "threshold-below-mde",
    "slice-below-mde",
    "strict-gate-fails-unchanged",
    "no-baseline",
)
"""Every rule's code in the order the rules run, which is the order their findings print in
within a severity: reports (and the golden files) depend on it, so it is written out rather
than left to the order the families happen to be imported in. A new rule's code goes here."""


def _in_order() -> None:
    """Put RULES in ORDER; refuse a rule ORDER leaves out or a code no rule has."""
    if sorted(ORDER) != sorted(RULES):
        differ = sorted(set(ORDER) ^ set(RULES))
        raise RuntimeError(f"lint.rules.ORDER and the registered rules differ on {differ}")
    ordered = {code: RULES[code] for code in ORDER}
    RULES.clear()
    RULES.update(ordered)


_in_order()
