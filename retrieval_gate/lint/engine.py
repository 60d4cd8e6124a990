"""`retrieval-gate lint`: checks of the labelled set and the config, each finding with its fix."""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from retrieval_gate.core.wording import json_text, plural
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.metrics import MetricSpec, parse_metric
from retrieval_gate.metrics.spec import format_value
from retrieval_gate.stats.detectability import POWER, TARGET

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.datasets import Dataset, Labels
    from retrieval_gate.gate.baseline import Baseline
    from retrieval_gate.gate.power import CheckPower
    from retrieval_gate.stats.agreement import Agreement

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
EXAMPLES = 5
"""Items quoted in a finding before it says `and N more`."""
TOP_GRADE_SHARE = 0.9
"""Above this share of judged documents at the top grade, the grades barely rank anything."""
MAX_SLICE_VALUES = 20
"""A metadata field with more distinct values than this is an id or free text, not a slice."""
RANKING = ("ndcg", "dcg", "ap", "rr", "precision", "err", "rbp", "bpref", "hit_rate")
RECALL = ("recall", "r_precision")
BINARY_CUT = ("ap", "rr")
"""Metrics whose graded use is a classic mistake: MAP and MRR on graded labels."""


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
        from retrieval_gate.datasets import assemble

        try:
            return assemble(self.labels, combine=self.config.dataset.annotators.combine)
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
        """Config key as written -> its metric."""
        return {key: parse_metric(key) for key in self.config.metrics}

    def name(self, key: str) -> str:
        """The metric of config key `key` as the reports name it (`mrr(rel=1)@10` is rr@10)."""
        return str(self.specs[key])

    @cached_property
    def slices(self) -> dict[str, Any] | None:
        """Slice -> query indices of the assembled set, None when it cannot be sliced."""
        from retrieval_gate.gate.slicing import slice_queries

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
        """What each check with a max_drop can see (`_detectability`)."""
        return _detectability(self)

    @cached_property
    def agreement(self) -> Agreement | None:
        """Agreement of the named annotators, None with fewer than two."""
        judgments = self.labels.judgments
        if judgments.annotator is None or len(judgments.annotators) < 2:
            return None
        from retrieval_gate.stats.agreement import annotator_agreement

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
        import yaml

        try:
            return yaml.compose(self.config.path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None

    def at(self, *loc: str) -> str:
        """`config:line` of a key, or the config file when the key is not written."""
        from retrieval_gate.config.schema import line_of

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
            findings.append(Finding(code, severity, draft.message, draft.fix, draft.where))
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
        listed = "\n".join(f"  - {f.code}: {f.message}\n    fix: {f.fix}" for f in report.findings)
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


def _some(items: Sequence[str], shown: int = EXAMPLES, *, total: int | None = None) -> str:
    """The first `shown` items, then `and N more` of `total` (default: all the items)."""
    count = len(items) if total is None else total
    more = f" and {count - shown} more" if count > shown else ""
    return ", ".join(items[:shown]) + more


def _points(value: float) -> str:
    return f"{value * 100:.1f}pt"


# Data ----------------------------------------------------------------------------------------


@rule("duplicate-judgment", "error", "a (query, doc) judged twice by one annotator")
def _duplicates(given: LintInput) -> Iterator[Draft]:
    judgments = given.labels.judgments
    groups = judgments.duplicate_groups()
    if not groups:
        return
    examples = []
    for rows in groups:
        first = rows[0]
        pair = f"{judgments.query_ids[judgments.query[first]]}/{judgments.docs[first]}"
        examples.append(f"{pair} ({', '.join(judgments.where(r) for r in rows)})")
    who = " by the same annotator" if judgments.annotator is not None else ""
    yield Draft(
        f"{plural(len(groups), '(query, doc) pair')} judged more than once{who}: {_some(examples)}",
        "keep one line per (query, doc); if several people judged, name each in an annotator "
        "column (TREC's second column) and pick dataset.annotators.combine",
        judgments.source,
    )


@rule("no-labelled-query", "error", "no query has both text and judgments")
def _no_labelled(given: LintInput) -> Iterator[Draft]:
    texts = {q.id for q in given.labels.queries}
    judged = set(given.labels.judgments.query_ids.tolist())
    if texts & judged:
        return
    yield Draft(
        f"none of the {plural(len(judged), 'judged query', 'judged queries')} has query text "
        f"(qrels ids {_some(sorted(judged), 3)}; query ids {_some(sorted(texts), 3)})",
        "make the qrels' query ids match the queries file's ids",
        given.labels.source,
    )


@rule("corpus-mismatch", "error", "no judged document is in the corpus")
def _corpus_mismatch(given: LintInput) -> Iterator[Draft]:
    corpus = given.labels.corpus
    if corpus is None or not len(given.labels.judgments):
        return
    docs = given.labels.judgments.docs.tolist()
    if any(doc in corpus for doc in docs):
        return
    yield Draft(
        f"none of the {plural(len(set(docs)), 'judged document')} is in the corpus of "
        f"{plural(len(corpus), 'document')} (judged {_some(sorted(set(docs)), 3)}; corpus "
        f"{_some(sorted(corpus)[:3], 3)})",
        "point dataset.corpus at the corpus the qrels were made for, or fix the doc ids",
        given.labels.source,
    )


_DATA_WARNINGS = {
    "qrels_without_query": (
        "judged-query-without-text",
        "judged queries the queries file does not have (left out)",
        "add the query's text to the queries file, or remove its judgments",
    ),
    "query_without_qrels": (
        "query-without-judgments",
        "queries with no judgments (not run)",
        "judge it (`retrieval-gate label-queue` lists candidates) or remove it",
    ),
    "no_relevant": (
        "no-relevant-document",
        "queries with no relevant document: they can only score 0",
        "judge more candidates (`retrieval-gate label-queue`) or remove the query: it can "
        "only score 0 and dilutes every mean",
    ),
    "judged_doc_not_in_corpus": (
        "judged-doc-not-in-corpus",
        "judged documents missing from the corpus",
        "add the documents to the corpus or drop their judgments: no retriever can find them, "
        "so recall is capped",
    ),
}


def _data_warning(kind: str) -> Callable[[LintInput], Iterator[Draft]]:
    def check(given: LintInput) -> Iterator[Draft]:
        if given.dataset is None:
            return
        for warning in given.dataset.warnings:
            if warning.kind == kind:
                yield Draft(str(warning), _DATA_WARNINGS[kind][2], given.dataset.source)

    return check


for _kind, (_code, _summary, _) in _DATA_WARNINGS.items():
    rule(_code, "warning", _summary)(_data_warning(_kind))


@rule("non-integer-grade", "warning", "grades that are not integers")
def _non_integer(given: LintInput) -> Iterator[Draft]:
    judgments = given.labels.judgments
    rows = np.flatnonzero(judgments.grade != np.round(judgments.grade))
    if not rows.size:
        return
    shown = [f"{format_value(judgments.grade[r])} ({judgments.where(r)})" for r in rows[:EXAMPLES]]
    yield Draft(
        f"{plural(int(rows.size), 'grade')} {'is' if rows.size == 1 else 'are'} not an integer: "
        f"{_some(shown, total=int(rows.size))}",
        "use integer grades (0, 1, 2, 3): rel= thresholds and exponential gain assume them",
        judgments.source,
    )


@rule("top-grade-heavy", "warning", "almost every judged document has the top grade")
def _top_heavy(given: LintInput) -> Iterator[Draft]:
    if not given.graded:
        return
    share = float(np.mean(given.judged == given.top_grade))
    if share < TOP_GRADE_SHARE:
        return
    yield Draft(
        f"{share:.0%} of judged documents have the top grade {format_value(given.top_grade)}: the "
        "grades hardly rank anything, so nDCG behaves like a binary metric",
        "review the grading guide: keep the top grade for the best answers, and judge the "
        "partial and off-topic documents the retriever returns too",
        given.labels.judgments.source,
    )


@rule("positives-only", "info", "only relevant documents are judged")
def _positives_only(given: LintInput) -> Iterator[Draft]:
    if not given.judged.size or given.judged.min() < 1:
        return
    yield Draft(
        "only relevant documents are judged (no grade 0): every document outside the qrels "
        "counts as non-relevant, so a retriever that finds unjudged relevant documents looks "
        "worse than it is",
        "watch judged@k in the report and label the gaps it points at "
        "(`retrieval-gate label-queue`)",
        given.labels.judgments.source,
    )


@rule("grade-distribution", "info", "how the grades are spread, overall and per query")
def _distribution(given: LintInput) -> Iterator[Draft]:
    if given.dataset is None or not given.dataset.queries or not given.judged.size:
        return
    counts = Counter(given.judged.tolist())
    overall = ", ".join(f"{format_value(g)}: {counts[g]}" for g in sorted(counts))
    pooled = int((given.labels.judgments.grade < 0).sum())
    qrels = given.dataset.qrels
    per_query = [sum(1 for grade in judged.values() if grade >= 1) for judged in qrels.by_query]
    single = sum(1 for n in per_query if n == 1)
    flat = sum(
        1
        for judged in qrels.by_query
        if len({grade for grade in judged.values() if grade >= 0}) == 1 and len(judged) > 1
    )
    text = (
        f"grades {overall}"
        + (f", {pooled} pooled but unjudged (grade < 0)" if pooled else "")
        + f"; relevant per query: median {float(np.median(per_query)):g}, "
        f"min {min(per_query)}, max {max(per_query)}; "
        f"{plural(single, 'query', 'queries')} with one relevant document"
    )
    if given.graded and flat:
        text += f"; {plural(flat, 'query', 'queries')} whose judgments all share one grade"
    yield Draft(text, "nothing to do; read it as a picture of the labels", qrels.source)


@rule("small-slice", "info", "slices below slices.min_size are reported, not gated")
def _small_slices(given: LintInput) -> Iterator[Draft]:
    from retrieval_gate.gate.slicing import small_slices

    slices = given.slices
    if slices is None:
        return
    small = small_slices(slices, given.config.slices.min_size)
    if not small:
        return
    shown = [f"{name} ({len(slices[name])})" for name in small]
    yield Draft(
        f"{plural(len(small), 'slice')} below min_size {given.config.slices.min_size} "
        f"{'is' if len(small) == 1 else 'are'} reported but not gated: {_some(shown)}",
        "label more queries of those slices, or lower slices.min_size if a smaller slice is "
        "still worth gating",
        given.at("slices", "min_size"),
    )


@rule("bad-slice", "error", "a slice field the queries cannot be sliced by")
def _bad_slice(given: LintInput) -> Iterator[Draft]:
    from retrieval_gate.gate.slicing import check_slicing

    slicing = given.config.slices
    try:
        check_slicing(given.labels.queries, slicing.by, slicing.combine, slicing.query_length.bins)
    except GateError as error:
        yield Draft(str(error), "fix slices.by / slices.combine", given.at("slices"))


# Agreement -----------------------------------------------------------------------------------


@rule("low-agreement", "warning", "annotators agree less than dataset.annotators.min_agreement",
      blocking=True)  # fmt: skip
def _low_agreement(given: LintInput) -> Iterator[Draft]:
    agreement = given.agreement
    if agreement is None:
        return
    settings = given.config.dataset.annotators
    floor = settings.min_agreement
    low_pairs = [
        f"{p.first}-{p.second} {p.kappa:.3f} ({p.shared} shared)"
        for p in agreement.pairs
        if p.shared and p.kappa == p.kappa and p.kappa < floor
    ]
    alpha_low = agreement.alpha == agreement.alpha and agreement.alpha < floor
    if not alpha_low and not low_pairs:
        return
    parts = []
    if alpha_low:
        parts.append(
            f"Krippendorff's alpha ({agreement.level}) is {agreement.alpha:.3f} over "
            f"{plural(agreement.items, 'shared item')}, below {floor:g}"
        )
    if low_pairs:
        parts.append(
            f"Cohen's kappa ({agreement.weights} weights) below {floor:g}: {_some(low_pairs)}"
        )
    enforced = settings.enforce and alpha_low
    yield Draft(
        "; ".join(parts)
        + (" (dataset.annotators.enforce: check refuses to gate)" if enforced else ""),
        "reconcile the grading guide with the annotators and re-judge the disagreements; a gate "
        "on labels people do not agree on measures the labels, not the retriever",
        given.labels.judgments.source,
        "error" if enforced else None,
    )


@rule("agreement", "info", "inter-annotator agreement, when the qrels name annotators")
def _agreement(given: LintInput) -> Iterator[Draft]:
    agreement = given.agreement
    if agreement is None:
        return
    pairs = ", ".join(
        f"{p.first}-{p.second} {_kappa(p.kappa)} ({p.shared} shared)" for p in agreement.pairs
    )
    yield Draft(
        f"{plural(len(agreement.annotators), 'annotator')}; Krippendorff's alpha "
        f"({agreement.level}) {_kappa(agreement.alpha)} over "
        f"{plural(agreement.items, 'item')} judged twice or more; Cohen's kappa "
        f"({agreement.weights} weights) per pair: {pairs}",
        "nothing to do; several annotators' grades combine by dataset.annotators.combine "
        f"({given.config.dataset.annotators.combine})",
        given.labels.judgments.source,
    )


def _kappa(value: float) -> str:
    return "undefined" if value != value else f"{value:.3f}"


# Config --------------------------------------------------------------------------------------


@rule("implicit-binary-cut", "warning", "AP or RR on graded labels without rel=")
def _binary_cut(given: LintInput) -> Iterator[Draft]:
    if not given.graded:
        return
    for key, spec in given.specs.items():
        if spec.name not in BINARY_CUT or "rel=" in key.replace(" ", "").lower():
            continue
        rel = int(spec.param("rel"))
        stricter = MetricSpec(spec.name, (("rel", rel + 1),), spec.k)
        yield Draft(
            f"{spec} counts every grade >= {rel} as relevant on grades 0-"
            f"{format_value(given.top_grade)}: a grade-{rel} document counts as much as a grade-"
            f"{format_value(given.top_grade)} one",
            f"say which grades count: write {_with_rel(key, rel)} to keep this cut, or "
            f"{stricter} for the stricter one",
            given.at("metrics", key),
        )


def _with_rel(key: str, rel: int) -> str:
    spec = parse_metric(key)
    cutoff = f"@{spec.k}" if spec.k is not None else ""
    return f"{spec.name}(rel={rel}){cutoff}"


@rule("ndcg-gain", "info", "which gain nDCG uses on these labels")
def _gain(given: LintInput) -> Iterator[Draft]:
    for key, spec in given.specs.items():
        if spec.name not in ("ndcg", "dcg"):
            continue
        explicit = "gain=" in key.replace(" ", "").lower()
        gain = str(spec.param("gain"))
        if not given.graded:
            if explicit:
                yield Draft(
                    f"{spec}: the gain makes no difference on binary labels (2^1 - 1 = 1)",
                    "nothing to do; it matters once grades above 1 are used",
                    given.at("metrics", key),
                )
            continue
        top = given.top_grade
        worth = 2**top - 1 if gain == "exp" else top
        described = "exponential gain 2^g - 1" if gain == "exp" else "linear gain g"
        other = "linear" if gain == "exp" else "exp"
        yield Draft(
            f"{spec} uses {described}{'' if explicit else ' (the default)'}: a grade-"
            f"{format_value(top)} document is worth {worth:g} grade-1 documents"
            + (" (trec_eval's ndcg_cut uses linear gain)" if gain == "exp" else ""),
            (
                "nothing to do if that is the intent"
                if explicit
                else f"pin it: write {spec.name}(gain={gain})@{spec.k}"
                if spec.k is not None
                else f"pin it: write {spec.name}(gain={gain})"
            )
            + f"; {spec.name}(gain={other}) weighs grades "
            + ("exponentially" if other == "exp" else "linearly"),
            given.at("metrics", key),
        )


@rule("cutoff-deeper-than-k", "warning", "a metric cutoff deeper than k")
def _deep_cutoff(given: LintInput) -> Iterator[Draft]:
    k = given.config.k
    for key, spec in given.specs.items():
        if spec.k is not None and spec.k > k:
            yield Draft(
                f"{spec} looks {spec.k} deep but the retriever is asked for k = {k}: ranks "
                f"{k + 1}-{spec.k} are never seen",
                f"raise k to {spec.k}, or use {MetricSpec(spec.name, spec.params, k)}",
                given.at("metrics", key),
            )


@rule("no-cutoff", "warning", "a metric without a cutoff: its depth is whatever k is")
def _no_cutoff(given: LintInput) -> Iterator[Draft]:
    k = given.config.k
    for key, spec in given.specs.items():
        if spec.k is None and spec.measure.cutoff == "optional":
            yield Draft(
                f"{spec} has no cutoff: it reads all k = {k} results, so its meaning changes "
                "whenever k does",
                f"pin the depth: write {MetricSpec(spec.name, spec.params, k)}",
                given.at("metrics", key),
            )


@rule("k-not-set", "info", "k is not written in the config")
def _k_unset(given: LintInput) -> Iterator[Draft]:
    if "k" not in given.config.model_fields_set:
        yield Draft(
            f"k is not set; the default {given.config.k} applies",
            f"write `k: {given.config.k}` so the depth is part of the reviewed config",
            given.at(),
        )


@rule("no-recall-metric", "warning", "ranking metrics with no recall-type companion")
def _no_recall(given: LintInput) -> Iterator[Draft]:
    names = {spec.name for spec in given.specs.values()}
    if names & set(RECALL) or not names & set(RANKING):
        return
    yield Draft(
        f"only ranking metrics ({', '.join(map(str, given.specs.values()))}): a change that drops "
        "relevant documents out of the top k while keeping the first hit passes unseen",
        f"add recall@{given.config.k} with a max_drop such as 5pt",
        given.at("metrics"),
    )


@rule("unsliced", "warning", "only the overall mean is gated though queries carry metadata")
def _unsliced(given: LintInput) -> Iterator[Draft]:
    slicing = given.config.slices
    if slicing.by or slicing.combine or given.dataset is None:
        return
    queries = given.dataset.queries
    fields: dict[str, set[str]] = {}
    present: Counter[str] = Counter()
    for query in queries:
        for field, value in query.metadata.items():
            if isinstance(value, str | int | bool) and not isinstance(value, float):
                fields.setdefault(field, set()).add(str(value))
                present[field] += 1
    candidates = [
        f"{field} ({len(values)} values)"
        for field, values in sorted(fields.items())
        if 2 <= len(values) <= MAX_SLICE_VALUES and present[field] * 2 >= len(queries)
    ]
    if not candidates:
        return
    names = [c.split(" ", 1)[0] for c in candidates]
    yield Draft(
        f"the queries carry {', '.join(candidates)}, but only the overall mean is gated: a "
        "drop on one of them can hide in the average",
        f"slice by them: `slices: {{by: [{', '.join(names)}]}}`",
        given.at("slices") if "slices" in given.config.model_fields_set else given.at(),
    )


@rule("gate-cannot-fail", "warning", "too few queries for an overall check ever to fail")
def _cannot_fail(given: LintInput) -> Iterator[Draft]:
    from retrieval_gate.gate.compare import compare
    from retrieval_gate.gate.policy import gate_settings, gate_thresholds
    from retrieval_gate.gate.slicing import ALL

    slices = given.slices
    if slices is None or given.dataset is None:
        return
    thresholds, overrides = gate_thresholds(given.config)
    # Which checks can fail depends on the slice sizes alone: compare on zeros finds them.
    zeros = {metric: np.zeros(len(given.dataset.queries)) for metric in thresholds}
    try:
        checks = compare(
            zeros, zeros, slices, thresholds, overrides, gate_settings(given.config), strict=False
        )
    except GateError:  # what compare cannot take, other rules report
        return
    keys = {str(spec): key for key, spec in given.specs.items()}
    for check in checks:
        if check.slice == ALL and check.n and check.max_drop is not None and not check.gated:
            yield Draft(
                f"{check.metric}: the gate could never fail on it: {check.reason}",
                "label more queries, raise gate.alpha, give fewer metrics a max_drop, or set "
                "gate.require_significance: false",
                given.at("metrics", keys.get(check.metric, check.metric)),
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
            f"({_points(TARGET * check.max_drop)}) fails the gate {_chance(check)} of the time",
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
                    else f"about {_points(c.detectable_drop)})"
                )
                for c in checks
            ]
            parts.append(
                f"{plural(len(checks), 'gated slice')} cannot catch 1.5x max_drop with "
                f"{POWER:.0%} power: {_some(detects)}"
            )
            needs = [f"{c.queries_needed} in {c.slice}" for c in checks if c.queries_needed]
            if needs:
                needs[0] = needs[0].replace(" in ", " queries in ", 1)
                fixes.append(f"label about {_some(needs)} to detect 1.5x max_drop")
        if ungated.get(key):
            checks = ungated[key]
            parts.append(
                f"{plural(len(checks), 'slice')} of min_size or more cannot be gated: "
                + _some([f"{c.slice} ({c.reason})" for c in checks])
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
    from retrieval_gate.gate.slicing import ALL

    keys = {str(spec): key for key, spec in given.specs.items()}
    for check in given.detectability:
        if (check.slice == ALL) != overall or check.metric not in keys:
            continue
        if check.unknown:  # no spread in the baseline's scores: nothing to estimate from
            continue
        found = check.detectable_drop
        if not check.gated or found is None or found > TARGET * check.max_drop * (1 + 1e-9):
            yield keys[check.metric], check


def _detects(check: CheckPower) -> str:
    if check.detectable_drop is None:
        return "no drop at all"
    return f"about {_points(check.detectable_drop)} with {POWER:.0%} power"


def _chance(check: CheckPower) -> str:
    from retrieval_gate.gate.power import MULTIPLES

    if check.fail_probability is None:
        return "an unknown share"
    chance = check.fail_probability[MULTIPLES.index(TARGET)]
    return f"{chance:.0%}" if chance >= 0.005 else "under 1%"


def _more_queries(check: CheckPower) -> str:
    if check.queries_needed is None:
        return "label more queries"
    return f"label about {check.queries_needed} queries to detect 1.5x max_drop"


def _enforceable(given: LintInput, check: CheckPower) -> float | None:
    from retrieval_gate.gate.policy import gate_settings
    from retrieval_gate.gate.power import enforceable_drop

    widest = enforceable_drop(check, gate_settings(given.config))
    # Rounded up to the 0.1pt it is shown with, so the suggestion itself passes the rule.
    return None if widest is None else math.ceil(widest * 1000 - 1e-9) / 1000


def _detectability(given: LintInput) -> tuple[CheckPower, ...]:
    """What each check with a max_drop can see, exactly as `check` reports it: the family is
    the config's gated checks (metrics with a max_drop x "all" and the labelled set's slices
    with n >= min_size), each check's level its share of alpha under the config's gate
    settings (`compare.family_levels`), and its detectable drop, P(fail) and queries needed
    from `detectability` (`power.estimate`). Empty without a baseline or a sliced set.

    Before a change there are no paired differences, so their spread is taken as the spread
    of the baseline's per-query scores: exact when the two runs correlate at 0.5, which
    related runs usually exceed, so the estimate errs on the cautious side.
    """
    from retrieval_gate.gate.policy import gate_settings, gate_thresholds
    from retrieval_gate.gate.power import baseline_view, estimate

    baseline, dataset, slices = given.baseline, given.dataset, given.slices
    if baseline is None or dataset is None or slices is None:
        return ()
    scores, view = baseline_view(baseline, dataset.queries, slices)
    thresholds, overrides = gate_thresholds(given.config)
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
        return estimate(scores, view, thresholds, overrides, gate_settings(given.config))
    except GateError:  # what `check` would refuse, other rules and `check` itself report
        return ()


def _stats(given: LintInput) -> dict[str, Any]:
    judgments = given.labels.judgments
    counts = Counter(given.judged.tolist())
    agreement = given.agreement
    texts = {query.id for query in given.labels.queries}
    queries = len(texts & set(judgments.query_ids.tolist()))
    described = (
        f"{plural(queries, 'labelled query', 'labelled queries')}, "
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
