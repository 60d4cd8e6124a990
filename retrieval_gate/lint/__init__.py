"""`retrieval-gate lint`: the engine and its rules, one module per rule family."""

from retrieval_gate.lint import rules  # noqa: F401  (registers every rule, in order)
from retrieval_gate.lint.engine import RULES, Finding, LintReport, lint, refuse_broken

__all__ = ["RULES", "Finding", "LintReport", "lint", "refuse_broken"]
