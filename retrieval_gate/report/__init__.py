"""Reports of a gate result: Markdown, JSON, JUnit XML and HTML from one context dict."""

from retrieval_gate.report.document import ResultRecord, read_result, validate_result
from retrieval_gate.report.render import (
    COMMENT_BUDGET,
    FORMATS,
    SUMMARY_BUDGET,
    Format,
    annotations_of,
    render,
    render_markdown,
    summary_of,
)

__all__ = [
    "COMMENT_BUDGET",
    "FORMATS",
    "SUMMARY_BUDGET",
    "Format",
    "ResultRecord",
    "annotations_of",
    "read_result",
    "render",
    "render_markdown",
    "summary_of",
    "validate_result",
]
