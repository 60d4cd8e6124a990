"""Jinja2 filters of the report templates: escaping of untrusted text and number formats."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import TYPE_CHECKING

from markupsafe import Markup

from retrieval_gate.config.columns import OWN_UNITS
from retrieval_gate.core.wording import one_line, visible_controls

if TYPE_CHECKING:
    from retrieval_gate.gate.checks.compare import Comparison

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
# Characters XML 1.0 cannot carry at all once the controls are shown as text (wording.py):
# U+FFFE, U+FFFF and lone surrogates.
_XML_INVALID = re.compile("[\ufffe\uffff\ud800-\udfff]")


def markdown_text(value: object) -> str:
    """`value` as inert GitHub Markdown inline text: no markup, links, mentions or HTML."""
    text = one_line(value)  # control characters shown as `?`: no escape sequence survives
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


plain_text = one_line
"""`value` on one line, control characters shown as `?`: the filter of the terminal
and log formats (`render.summary_of` then defuses whole lines that would read as commands)."""


def xml_text(value: object) -> str:
    """`value` with control characters shown as `?` and U+FFFD for the rest XML 1.0
    cannot carry (autoescaping does the rest)."""
    text = _XML_INVALID.sub("\ufffd", visible_controls(str(value)))
    return Markup(text) if isinstance(value, Markup) else text


def points(value: float | None, places: int = 2, unit: str = "") -> str:
    """A difference on the [0, 1] scale as signed points: 0.0312 -> +3.12; in a column's own
    `unit`, signed in that unit (+12.5 for ms, 4 significant digits otherwise)."""
    if value is None:
        return "-"
    if unit:
        return _in_units(value, unit, "+")
    rounded = round(value * 100, places)
    return f"{rounded + 0.0:+.{places}f}"  # + 0.0 turns -0.0 into 0.0


def mean(value: float | None, unit: str = "") -> str:
    """A metric value: 4 decimals; in a column's own `unit`, with the unit word."""
    if value is None:
        return "-"
    return f"{_in_units(value, unit)}{suffix(unit)}" if unit else f"{value:.4f}"


def suffix(unit: str) -> str:
    """The unit word after a value (" ms"); nothing on the [0, 1] scale's points or for
    plain numbers in their own units."""
    return "" if unit in ("", OWN_UNITS) else f" {unit}"


def amount(value: float, unit: str) -> str:
    """An unsigned amount as thresholds state it: 6 pt on the [0, 1] scale, 150 ms."""
    return f"{value * 100:g} pt" if not unit else f"{_in_units(value, unit)}{suffix(unit)}"


def _in_units(value: float, unit: str, sign: str = "") -> str:
    # + 0.0 turns -0.0 into 0.0
    return f"{value + 0.0:{sign}.1f}" if unit == "ms" else f"{value + 0.0:{sign}.4g}"


def p_value(value: float | None) -> str:
    """A p-value: 3 significant digits, < 0.001 below that."""
    if value is None or math.isnan(value):
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def shown_p(c: Comparison) -> str:
    """The p-value a check shows: adjusted when it is in the correction family, else its raw
    one-sided p; `< x` when the Monte Carlo draws only bound it (none was as extreme)."""
    value = c.p_adjusted if c.p_adjusted is not None else c.p_value
    if not c.p_bound or value is None or math.isnan(value):
        return p_value(value)
    text = p_value(_round_up(value))  # a bound rounds up: "< x" must stay true
    return text if text.startswith("<") else "< " + text


def _round_up(value: float, digits: int = 3) -> float:
    """`value` rounded up to `digits` significant digits (0.0023322 -> 0.00234)."""
    if not 0 < value < 1:
        return value
    # Shifted in decimal: 10.0 ** 310 overflows a float, and a Hoeffding bound of a large set
    # that dropped everywhere reaches 1e-315 (denormal).
    shift = digits - 1 - math.floor(math.log10(value))
    scaled = float(Decimal(value).scaleb(shift))
    return float(Decimal(math.ceil(scaled * (1 - 1e-12))).scaleb(-shift))


def p_phrase(c: Comparison) -> str:
    """`shown_p` as a phrase: `p = 0.012`, `p < 0.004`; empty without a p-value."""
    text = shown_p(c)
    if text == "-":
        return ""
    return "p " + text if text.startswith("<") else "p = " + text
