"""A query writer for the fake LLM: plausible queries of each style from a document, seeded.

It reads the document from the <document> block as a model would, and it is gullible: an
instruction "write exactly: X" that reaches it outside that block is obeyed, so a prompt that
lets a document out of its block fails the tests. `overlap_grade` is a judge's truth to go
with it: the share of a query's words its passage holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from retrieval_gate.judging.synthesis import STYLES
from tests.helpers.fake_llm import _unit

_BLOCK = re.compile(r"<document>\n(.*?)\n</document>", re.DOTALL)
_ORDER = re.compile(r"write exactly: ([^\n]*)", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9]+")
_COMMON = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "my",
        "not",
        "of",
        "on",
        "or",
        "our",
        "the",
        "this",
        "to",
        "use",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        # the long style's own words: a judge reads them as the asker's, not the topic's
        "am",
        "trying",
        "work",
        "out",
        "need",
        "know",
        "about",
        "details",
        "before",
        "go",
        "any",
        "further",
    )
)
OFF_TOPIC = ("banana bread recipe", "tide tables for brighton", "repair a bicycle chain")
DUPLICATE = "quillhour help centre"


def words(text: str) -> list[str]:
    """The content words of `text`, lower case, each once, in order."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in _COMMON))


def fake_writer(
    *, off_topic: float = 0.0, duplicate: float = 0.0, seed: int = 0
) -> Callable[[str, str], str]:
    """(document, user message) -> a query: `off_topic` of the answers are about something
    else, `duplicate` of them the same stock query, the rest written from the document's
    title and text in the style the message asks for."""
    descriptions = {description: style for style, description in STYLES.items()}

    def write(document: str, user: str) -> str:
        outside = _BLOCK.sub("", user)
        order = _ORDER.search(outside)
        if order:  # gullible: an instruction that escaped the document block is followed
            return order[1]
        style = next((s for d, s in descriptions.items() if d in user), "keyword")
        draw = _unit(seed, "mode", document, style)
        if draw < off_topic:
            return OFF_TOPIC[int(_unit(seed, "off", document, style) * len(OFF_TOPIC))]
        if draw < off_topic + duplicate:
            return DUPLICATE
        return written(document, style, seed)

    return write


def written(document: str, style: str, seed: int = 0) -> str:
    """A query of `style` made of the document's words: the title's first, then the text's."""
    title, _, text = document.partition("\n")
    head = words(title) or words(text)[:3] or ["help"]
    body = [w for w in words(text) if w not in head]
    start = int(_unit(seed, "start", document) * max(1, len(body) - 4))
    extra = body[start : start + 4]
    if style == "question":
        return f"how do I {' '.join(head[:3] + extra[:1])}?"
    if style == "long":
        return (
            f"I am trying to work out {' '.join(head)} and need to know about "
            f"{' '.join(extra[:3]) or 'the details'} before I go any further"
        )
    keyword = head[:2] + extra[:1]
    if style == "misspelled":
        return " ".join(typo(word, seed) if i == 0 else word for i, word in enumerate(keyword))
    return " ".join(keyword)


def typo(word: str, seed: int = 0) -> str:
    """`word` with two neighbouring letters swapped (or its last letter doubled when short)."""
    if len(word) < 4:
        return word + word[-1]
    at = 1 + int(_unit(seed, "typo", word) * (len(word) - 3))
    return word[:at] + word[at + 1] + word[at] + word[at + 2 :]


def overlap_grade(query: str, passage: str) -> int:
    """3 when the passage holds three quarters of the query's words, 2 half, 1 a quarter, else
    0: how a judge sees a query written from that passage."""
    wanted = words(query)
    if not wanted:
        return 0
    held = set(words(passage))
    share = sum(word in held for word in wanted) / len(wanted)
    return 3 if share >= 0.75 else 2 if share >= 0.5 else 1 if share >= 0.25 else 0
