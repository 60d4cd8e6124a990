"""Lint rules on the labelled set itself: broken or unmatched data, and how it is graded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np

from retrieval_gate.core.wording import plural
from retrieval_gate.lint.engine import EXAMPLES, Draft, LintInput, rule, some
from retrieval_gate.metrics.spec import format_value

TOP_GRADE_SHARE = 0.9
"""Above this share of judged documents at the top grade, the grades barely rank anything."""


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
        f"{plural(len(groups), '(query, doc) pair')} judged more than once{who}: {some(examples)}",
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
    if texts and not judged and given.config.gate.uses_llm_labels:
        return  # zero labels yet: the judge grades, people label what label-queue lists
    if not texts:
        counted = plural(len(judged), "judged query", "judged queries")
        yield Draft(
            f"the queries file holds no query ({counted} in the judgments)",
            "write the queries into it, one per line, with the ids the judgments use",
            given.labels.source,
        )
        return
    yield Draft(
        f"none of the {plural(len(judged), 'judged query', 'judged queries')} has query text "
        f"(qrels ids {some(sorted(judged), 3)}; query ids {some(sorted(texts), 3)})",
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
        f"{plural(len(corpus), 'document')} (judged {some(sorted(set(docs)), 3)}; corpus "
        f"{some(sorted(corpus)[:3], 3)})",
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
        f"{some(shown, total=int(rows.size))}",
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
