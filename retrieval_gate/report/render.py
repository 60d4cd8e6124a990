"""Rendering: one context dict, Jinja2 templates per format, the comment-size trimming."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from retrieval_gate.core.wording import aligned, console_text, plural, visible_controls
from retrieval_gate.report.context import (
    FAILURES_SHOWN,
    SECTIONS,
    report_context,
    underpowered,
)
from retrieval_gate.report.document import ResultRecord, validate_result
from retrieval_gate.report.filters import (
    amount,
    markdown_text,
    mean,
    p_phrase,
    p_value,
    plain_text,
    points,
    shown_p,
    suffix,
    xml_text,
)
from retrieval_gate.report.trend import MARKERS_MAX, trend_svg
from retrieval_gate.stats.detectability import stated_points

if TYPE_CHECKING:
    import jinja2

Format = Literal["markdown", "json", "junit", "html"]
Level = Literal["error", "warning"]
FORMATS: tuple[Format, ...] = ("markdown", "json", "junit", "html")
COMMENT_BUDGET = 65_000
"""Characters of Markdown that fit a PR comment of any gate name (GitHub allows 65,536 with
the marker line; `github.comment_room` gives the exact room for one name)."""
SUMMARY_BUDGET = 1_000_000
"""Characters of Markdown for a step summary (GitHub allows 1 MiB per step)."""

_TEMPLATES = {
    "markdown": "report.md.j2",
    "junit": "junit.xml.j2",
    "html": "report.html.j2",
    "summary": "summary.txt.j2",
    "annotations": "annotations.txt.j2",
}


def render(
    result: ResultRecord | Mapping[str, Any], fmt: Format, *, limit: int = SUMMARY_BUDGET
) -> str:
    """A result (validated, or a JSON document to validate) in `fmt`; Markdown is trimmed by
    whole sections to `limit`. Validate once and pass the record to render several formats."""
    if not isinstance(result, ResultRecord):
        result = validate_result(result)
    if fmt == "json":
        from retrieval_gate.gate.result import canonical_json

        return canonical_json(dict(result.document))
    if fmt == "markdown":
        return render_markdown(result, limit=limit)
    return visible_controls(_template(fmt).render(report_context(result)))


def render_markdown(result: ResultRecord, *, limit: int = SUMMARY_BUDGET) -> str:
    """The Markdown report, dropping sections in SECTIONS order until it fits `limit`."""
    context = report_context(result)
    template = _template("markdown")
    # Each filter already shows control characters as text; this pass is the backstop for
    # any field a template prints without one (the step summary and PR comment get this).
    text = visible_controls(template.render(context))
    for section in SECTIONS:
        if len(text) <= limit:
            break
        context["show"][section] = False
        context["cut"].append(section)
        text = visible_controls(template.render(context))
    if len(text) > limit:  # the checks' table alone is too long: cut it at a line, say so
        note = (
            f"\n\n**This report was cut at {limit:,} characters** (it has {len(text):,}): "
            "the whole report is in the job's `report.md` and `result.json`.\n"
        )
        text = text[: text.rfind("\n", 0, max(0, limit - len(note))) + 1].rstrip() + note
    return text


def summary_of(result: ResultRecord) -> str:
    """The plain-text summary a terminal or CI log shows (ASCII, no markup): no escape
    sequence, and no line a CI runner would read as a workflow command."""
    return console_text(_template("summary").render(report_context(result)))


def annotations_of(result: ResultRecord) -> list[tuple[Level, str]]:
    """(level, message) per failing check (error) and per inconclusive check (warning)."""
    text = visible_controls(_template("annotations").render(report_context(result)))
    lines = [line.partition(" ") for line in text.splitlines() if line.strip()]
    return [("error" if level == "error" else "warning", message) for level, _, message in lines]


@functools.cache
def _template(fmt: str) -> jinja2.Template:
    import jinja2

    markup = fmt in ("html", "junit")
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("retrieval_gate.report", "templates"),
        autoescape=markup,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # Compiling the templates cost 0.21 s of CPU on every check (benchmarks/timings/README.md,
        # Reports). Jinja's default cache folder is private to the user (it checks owner and
        # mode); the pattern keeps each format's compiled macros apart, since autoescape is
        # compiled in.
        bytecode_cache=jinja2.FileSystemBytecodeCache(pattern=f"__retrieval_gate_{fmt}_%s.cache"),
    )
    escapes: dict[str, Callable[[object], str]] = {"markdown": markdown_text, "junit": xml_text}
    plain = fmt in ("summary", "annotations")
    environment.filters |= {
        "esc": escapes.get(fmt, plain_text if plain else str),
        "code": _CODE.get(fmt, _backticks),
        "mean": mean,
        "pt": points,
        "amount": amount,
        "suffix": suffix,
        "p": p_value,
        "shown_p": shown_p,
        "p_phrase": p_phrase,
        "plural": plural,
        "aligned": aligned,
        "trend_svg": trend_svg,
        "stated_points": stated_points,
    }
    environment.tests["underpowered"] = underpowered
    # ASCII in the terminal and the log; the markup formats take the typographic signs.
    environment.globals |= {
        "ARROW": "->" if plain else "→",
        "TIMES": "x" if plain else "\u00d7",  # multiplication sign
        "ALPHA": "alpha" if plain else "\u03b1",  # Greek small alpha
        "DASH": "-" if plain else "\u2013",  # en dash, of a range of values
        "MARKERS_MAX": MARKERS_MAX,
        "FAILURES_SHOWN": FAILURES_SHOWN,
    }
    return environment.get_template(_TEMPLATES[fmt])


def _backticks(command: str) -> str:
    """A command as Markdown code, or as the plain text a terminal shows the same way."""
    return f"`{command}`"


def _html_code(command: str) -> str:
    from markupsafe import Markup

    return Markup("<code>{}</code>").format(command)


_CODE: dict[str, Callable[[str], str]] = {"html": _html_code, "junit": str}
"""How each format shows a command (a constant of the templates, never untrusted text)."""
