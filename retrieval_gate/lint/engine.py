"""The lint engine: findings, the rule registry, what the rules read, and `lint` itself.

The rules live in `lint.rules`, one module per family; importing `retrieval_gate.lint`
registers them all, in the order `lint.rules.ORDER` gives.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import yaml

from retrieval_gate.config.check_keys import ranked_keys
from retrieval_gate.config.loader import line_of
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.config.stages import check_metric
from retrieval_gate.core.wording import json_text, one_line, plural
from retrieval_gate.datasets import Dataset, Labels, assemble
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
from retrieval_gate.gate.checks.slicing import slice_queries
from retrieval_gate.gate.power.estimate import CheckPower, baseline_view, estimate
from retrieval_gate.metrics import MetricSpec
from retrieval_gate.metrics.spec import format_value
from retrieval_gate.stats.agreement import Agreement, annotator_agreement

if TYPE_CHECKING:
    from retrieval_gate.gate.baseline.record import Baseline

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
EXAMPLES = 5
"""Items quoted in a finding before it says `and N more`."""


@dataclass(frozen=True)
class Finding:
    """One problem (or fact) lint found: what, where, and what to do about it."""

    code: str
    severity: Severity
    message: str
    fix: str
    where: str = ""


@dataclass(frozen=True)
class Draft:
    """A finding before its rule fills in the code (and the severity, unless given)."""

    message: str
    fix: str
    where: str = ""
    severity: Severity | None = None


@dataclass(frozen=True)
class Rule:
    """A registered check: its code, usual severity, what it looks for, and the check."""

    code: str
    severity: Severity
    summary: str
    check: Callable[[LintInput], Iterator[Draft]]
    blocking: bool
    """Run by `check` before gating: it can find an error."""


RULES: dict[str, Rule] = {}
"""Every rule by code, in the order they run (`lint.rules` registers and orders them)."""


def rule(
    code: str, severity: Severity, summary: str, *, blocking: bool = False
) -> Callable[[Callable[[LintInput], Iterator[Draft]]], Callable[[LintInput], Iterator[Draft]]]:
    """Register a check under `code`; error rules are blocking, and `blocking` marks a rule of
    another severity that can still find an error (low-agreement, when enforced)."""

    def register(
        check: Callable[[LintInput], Iterator[Draft]],
    ) -> Callable[[LintInput], Iterator[Draft]]:
        RULES[code] = Rule(code, severity, summary, check, blocking or severity == "error")
        return check

    return register


@dataclass(frozen=True)
class LintReport:
    """Every finding, errors first, and the facts they were drawn from."""

    config_file: str
    findings: tuple[Finding, ...]
    stats: Mapping[str, Any]

    def count(self, severity: Severity) -> int:
        """Findings of `severity`."""
        return sum(f.severity == severity for f in self.findings)

    @property
    def exit_code(self) -> int:
        """2 when an error was found, else 0."""
        return 2 if self.count("error") else 0

    def document(self) -> dict[str, Any]:
        """The JSON report: counts, findings in order, and the statistics."""
        return {
            "config": self.config_file,
            "summary": {severity: self.count(severity) for severity in SEVERITIES},
            "findings": [asdict(finding) for finding in self.findings],
            "stats": dict(self.stats),
        }

    def to_json(self) -> str:
        """`document()` as indented JSON with one trailing newline."""
        return json_text(self.document()) + "\n"

    def to_text(self) -> str:
        """Findings grouped by severity, each with its fix, then a one-line summary."""
        lines = [f"{self.config_file}: {self.stats['described']}"]
        for severity in SEVERITIES:
            group = [f for f in self.findings if f.severity == severity]
            if not group:
                continue
            lines.append("")
            lines.append(f"{severity} ({len(group)})")
            for finding in group:
                where = f" [{finding.where}]" if finding.where else ""
                lines.append(f"  {finding.code}: {finding.message}{where}")
                lines.append(f"    fix: {finding.fix}")
        counts = ", ".join(
            plural(self.count(s), s, "info" if s == "info" else None) for s in SEVERITIES
        )
        lines.append("")
        lines.append(f"lint: {counts}")
        return "\n".join(lines) + "\n"


class LintInput:
    """What the checks read: the config, the labelled set as read, and the baseline if any."""

    def __init__(self, config: GateConfig, labels: Labels, baseline: Baseline | None) -> None:
        self.config = config
        self.labels = labels
        self.baseline = baseline

    @cached_property
    def dataset(self) -> Dataset | None:
        """The assembled set, or None when it cannot be assembled (an error says why)."""
        try:
            return assemble(
                self.labels,
                combine=self.config.dataset.annotators.combine,
                keep_unjudged=self.config.gate.uses_llm_labels,  # as the gate runs it
            )
        except GateError:
            return None

    @cached_property
    def judged(self) -> np.ndarray:
        """Grades of the judgment rows that are judgments (grade >= 0, not pooled-only)."""
        grades = self.labels.judgments.grade
        return grades[grades >= 0]

    @cached_property
    def top_grade(self) -> float:
        """The highest grade given (0 when nothing was judged)."""
        return float(self.judged.max()) if self.judged.size else 0.0

    @property
    def graded(self) -> bool:
        """More than relevant / not relevant: some grade above 1."""
        return self.top_grade >= 2

    @cached_property
    def specs(self) -> dict[str, MetricSpec]:
        """Config key as written -> its metric (evaluator scores, latency and cost are none)."""
        return {key: check_metric(key)[0] for key in ranked_keys(self.config.metrics)}

    def name(self, key: str) -> str:
        """The metric of config key `key` as the reports name it (`mrr(rel=1)@10` is rr@10)."""
        return str(self.specs[key]) if key in self.specs else key

    @cached_property
    def slices(self) -> dict[str, Any] | None:
        """Slice -> query indices of the assembled set, None when it cannot be sliced."""
        if self.dataset is None:
            return None
        slicing = self.config.slices
        try:
            return slice_queries(
                self.dataset.queries, slicing.by, slicing.combine, slicing.query_length.bins
            )
        except GateError:
            return None

    @cached_property
    def detectability(self) -> tuple[CheckPower, ...]:
        """What each check with a max_drop can see, exactly as `check` reports it: the family is
        the config's gated checks (metrics with a max_drop x "all" and the labelled set's slices
        with n >= min_size), each check's level its share of alpha under the config's gate
        settings (`compare.family_levels`), and its detectable drop, P(fail) and queries needed
        from `detectability` (`power.estimate`). Empty without a baseline or a sliced set.

        Before a change there are no paired differences, so their spread is taken as the spread
        of the baseline's per-query scores: exact when the two runs correlate at 0.5, which
        related runs usually exceed, so the estimate errs on the cautious side.
        """
        baseline, dataset, slices = self.baseline, self.dataset, self.slices
        if baseline is None or dataset is None or slices is None:
            return ()
        scores, view = baseline_view(baseline, dataset.queries, slices)
        thresholds, overrides = gate_thresholds(self.config)
        # A metric the baseline was not made with has no spread to estimate from (and `check`
        # would refuse the baseline); the others are estimated as if it were not configured.
        thresholds = {metric: t for metric, t in thresholds.items() if metric in scores}
        overrides = {
            name: {metric: t for metric, t in gates.items() if metric in thresholds}
            for name, gates in overrides.items()
        }
        if not thresholds:
            return ()
        try:
            return estimate(
                scores, view, thresholds, overrides, gate_settings(self.config, self.dataset)
            )
        except GateError:  # what `check` would refuse, other rules and `check` itself report
            return ()

    @cached_property
    def agreement(self) -> Agreement | None:
        """Agreement of the named annotators, None with fewer than two."""
        judgments = self.labels.judgments
        if judgments.annotator is None or len(judgments.annotators) < 2:
            return None
        return annotator_agreement(
            judgments.query,
            judgments.docs,
            judgments.grade,
            judgments.annotator,
            graded=self.graded,
        )

    @cached_property
    def config_root(self) -> Any:
        """The config's YAML node tree, for line numbers."""
        try:
            return yaml.compose(self.config.path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None

    def at(self, *loc: str) -> str:
        """`config:line` of a key, or the config file when the key is not written."""
        line = line_of(self.config_root, loc) if loc else None
        path = str(self.config.path)
        return f"{path}:{line}" if line else path


def lint(
    config: GateConfig,
    labels: Labels,
    baseline: Baseline | None = None,
    *,
    blocking_only: bool = False,
) -> LintReport:
    """Every finding of every rule (only the errors of blocking rules with `blocking_only`)."""
    ignored = _ignored(config)
    given = LintInput(config, labels, baseline)
    findings: list[Finding] = []
    for code, registered in RULES.items():
        if blocking_only and not registered.blocking:
            continue
        for draft in registered.check(given):
            severity = draft.severity or registered.severity
            if code in ignored and severity != "error":
                continue
            # A finding is one line wherever it is shown: names from the data (a slice's value,
            # a query id) may carry newlines or controls, which no rule has to think of.
            findings.append(
                Finding(code, severity, one_line(draft.message), one_line(draft.fix), draft.where)
            )
    if blocking_only:
        findings = [f for f in findings if f.severity == "error"]
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: order[f.severity])
    # `check` only needs to know whether there are errors, not the statistics.
    stats = {} if blocking_only else _stats(given)
    return LintReport(str(config.path), tuple(findings), stats)


def refuse_broken(config: GateConfig, labels: Labels) -> None:
    """Nothing, or an InputError listing every error lint finds in the labelled set."""
    report = lint(config, labels, blocking_only=True)
    if report.findings:
        listed = "\n".join(
            f"  - {f.code}: {f.message}{f' [{f.where}]' if f.where else ''}\n    fix: {f.fix}"
            for f in report.findings
        )
        raise InputError(
            f"the labelled set is broken; not gating:\n{listed}\n"
            f"(`retrieval-gate lint -c {config.path}` shows every finding)"
        )


def _ignored(config: GateConfig) -> set[str]:
    unknown = [code for code in config.lint.ignore if code not in RULES]
    if unknown:
        hints = []
        for code in unknown:
            close = difflib.get_close_matches(code, RULES, n=1)
            hints.append(f"{code!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise InputError(
            f"lint.ignore: unknown {plural(len(unknown), 'code')} {', '.join(hints)}; "
            f"codes: {', '.join(sorted(RULES))}",
            source=str(config.path),
        )
    return set(config.lint.ignore)


def some(items: Sequence[str], shown: int = EXAMPLES, *, total: int | None = None) -> str:
    """The first `shown` items, then `and N more` of `total` (default: all the items)."""
    count = len(items) if total is None else total
    more = f" and {count - shown} more" if count > shown else ""
    return ", ".join(items[:shown]) + more


def _stats(given: LintInput) -> dict[str, Any]:
    judgments = given.labels.judgments
    counts = Counter(given.judged.tolist())
    agreement = given.agreement
    texts = {query.id for query in given.labels.queries}
    queries = len(texts & set(judgments.query_ids.tolist()))
    # Under human+llm every query with text runs, labelled by people or not: say both.
    assisted = given.config.gate.uses_llm_labels and len(texts) > queries
    counted = (
        f"{plural(len(texts), 'query', 'queries')} ({queries} labelled)"
        if assisted
        else plural(queries, "labelled query", "labelled queries")
    )
    described = (
        f"{counted}, "
        f"{plural(len(judgments), 'judgment')}"
        + (
            f" by {plural(len(judgments.annotators), 'annotator')}"
            if judgments.annotator is not None
            else ""
        )
        + (f", {plural(len(given.labels.corpus), 'document')}" if given.labels.corpus else "")
    )
    return {
        "described": described,
        "queries": queries,
        "judgments": len(judgments),
        "grades": {format_value(g): counts[g] for g in sorted(counts)},
        "annotators": list(judgments.annotators),
        "agreement": None
        if agreement is None
        else {
            "alpha": None if agreement.alpha != agreement.alpha else agreement.alpha,
            "level": agreement.level,
            "items": agreement.items,
            "weights": agreement.weights,
            "pairs": [
                {
                    "first": p.first,
                    "second": p.second,
                    "shared": p.shared,
                    "kappa": None if p.kappa != p.kappa else p.kappa,
                }
                for p in agreement.pairs
            ],
        },
    }
