"""Lint rules on what an LLM judge will read: corpus documents that address it."""

from __future__ import annotations

from collections.abc import Iterator

from retrieval_gate.core.judge_pleas import pleading_documents
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.lint.engine import Draft, LintInput, rule, some


@rule(
    "addresses-the-judge",
    "warning",
    "corpus documents that speak to an LLM judge (ask for a grade, override its prompt)",
)
def _addresses_the_judge(given: LintInput) -> Iterator[Draft]:
    corpus = given.labels.corpus
    if corpus is None or given.config.judge is None:
        return
    found = pleading_documents(corpus)
    if not found:
        return
    shown = [f"{one_line(doc)} ({name})" for doc, name in found]
    yield Draft(
        f"{plural(len(found), 'corpus document')} address a judge: {some(shown)}",
        "read them: a judge that obeys them grades them up whatever they hold; `retrieval-gate "
        "calibrate --probes` measures whether yours does, and people's labels of these "
        "documents keep the gate honest",
        "dataset.corpus",
    )
