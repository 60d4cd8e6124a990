"""Text that addresses an LLM judge: instructions to graders, overrides, requests for a grade."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from retrieval_gate.core.model import Document

# Conservative on purpose: each pattern needs words that only make sense spoken to a model or
# a grader, so a help article about ratings or a court's "dear judge" is not flagged. A
# document that words its plea otherwise is missed; `calibrate --probes` measures whether the
# judge obeys the pleas it is given.
_GRADER = (
    r"(?:grader|assessor|evaluator|rater|annotator|ai|llm|language model|"
    r"(?:ai|llm|relevance) judge|chatbot|assistant)s?"
)
PATTERNS: Mapping[str, re.Pattern[str]] = {
    "overrides the prompt": re.compile(
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding|system|original)\s+"
        r"(?:instructions?|prompts?|rules|directions|guidelines)\b",
        re.IGNORECASE,
    ),
    "speaks to the grader": re.compile(
        rf"\b(?:dear|attention|hey|note\s+(?:to|for)|message\s+(?:to|for)|"
        rf"instructions?\s+(?:to|for))\s+(?:the\s+|any\s+|all\s+)?{_GRADER}\s*[:,!]",
        re.IGNORECASE,
    ),
    "asks for a grade": re.compile(
        r"\b(?:rate|grade|score|mark|judge|label|classify|rank)\s+(?:this|it)(?:\s+(?:passage|"
        r"document|page|text|article|result|snippet))?\s+(?:as\s+)?(?:a\s+)?(?:(?:perfectly|"
        r"highly|very|most|extremely|fully|maximally)\s+)?(?:relevant\b|[0-3]\b|"
        r"(?:the\s+)?(?:highest|top|maximum|perfect)\s+(?:grade|score|rating|relevance)\b)",
        re.IGNORECASE,
    ),
}
"""Each way a document can address a judge, by what the finding calls it."""


def plea_in(text: str) -> str | None:
    """The first pattern (PATTERNS' name) `text` matches, or None."""
    for name, pattern in PATTERNS.items():
        if pattern.search(text):
            return name
    return None


def pleading_documents(corpus: Mapping[str, Document]) -> tuple[tuple[str, str], ...]:
    """(doc id, pattern name) of each corpus document whose title or text addresses a judge,
    sorted by doc id."""
    return tuple(sorted(_found(corpus.items())))


def _found(documents: Iterable[tuple[str, Document]]) -> Iterable[tuple[str, str]]:
    for doc, document in documents:
        name = plea_in(f"{document.title}\n{document.text}")
        if name is not None:
            yield doc, name
