"""Jinja2 filters of the report templates: escaping of untrusted text and number formats."""

from __future__ import annotations

import math
import re

from markupsafe import Markup

# Backslash escapes work on every ASCII punctuation character in CommonMark; these are the ones
# that start inline markup in GitHub's Markdown (code, emphasis, links, tables, strike, math).
# Block markers (#, -, +, 1.) cannot take effect: the text never starts a line.
_MARKDOWN_PUNCTUATION = frozenset("\\`*_[]|~$")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
# A zero-width space breaks what GitHub links after rendering: @mentions, #references,
# bare URLs and e-mail addresses. Renovate and Dependabot defuse mentions the same way.
_BREAK = "&#8203;"
# "@" is kept only before a plain number, as in the cutoff of "ndcg@10".
_LINKABLE = re.compile(r"(?i)(?<=@)(?!\d+\b)|(?<=(?<!\w)#)|(?<=www)(?=\.)|(?<=[a-z])(?=://)")
# Escape sequences in a query could move a terminal's cursor or forge a CI log line.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def markdown_text(value: object) -> str:
    """`value` as inert GitHub Markdown inline text: no markup, links, mentions or HTML."""
    text = " ".join(str(value).split())
    out = []
    for char in _LINKABLE.sub("\0", text):
        if char == "\0":
            out.append(_BREAK)
        elif char in _HTML:
            out.append(_HTML[char])
        elif char in _MARKDOWN_PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def plain_text(value: object) -> str:
    """`value` on one line without control characters, safe to print to a terminal or log."""
    return _CONTROL.sub("?", " ".join(str(value).split()))


def xml_text(value: object) -> str:
    """`value` without the characters XML 1.0 cannot carry (autoescaping does the rest)."""
    text = _XML_INVALID.sub("\ufffd", str(value))
    return Markup(text) if isinstance(value, Markup) else text


def points(value: float | None, places: int = 2) -> str:
    """A difference on the [0, 1] scale as signed points: 0.0312 -> +3.12."""
    if value is None:
        return "-"
    rounded = round(value * 100, places)
    return f"{rounded + 0.0:+.{places}f}"  # + 0.0 turns -0.0 into 0.0


def mean(value: float | None) -> str:
    """A metric value: 4 decimals."""
    return "-" if value is None else f"{value:.4f}"


def p_value(value: float | None) -> str:
    """A p-value: 3 significant digits, < 0.001 below that."""
    if value is None or math.isnan(value):
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"
