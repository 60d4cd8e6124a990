"""What a step tells the Actions runner: workflow commands (annotations), the stop-commands
fence around free text, the step summary."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from retrieval_gate.core.wording import console_text, visible_controls
from retrieval_gate.errors import InputError

Level = Literal["error", "warning", "notice"]

ANNOTATIONS_SHOWN = 10
"""GitHub shows at most 10 error and 10 warning annotations of a step; the rest vanish."""


def append_step_summary(path: Path, markdown: str) -> None:
    """Appends Markdown to the job's step summary file (shared by every step); returns None."""
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    try:
        with path.open("a", encoding="utf-8", newline="") as summary:
            summary.write(text)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"cannot write the step summary: {reason}", source=str(path)) from None


def workflow_command(level: Level, message: str, title: str | None = None) -> str:
    """Returns a `::level title=...::message` workflow command line, escaped as @actions/core."""
    properties = f" title={_escape_property(title)}" if title else ""
    return f"::{level}{properties}::{_escape_data(message)}"


def fenced(text: str) -> str:
    """Free text as lines the runner reads no workflow command from: console-safe
    (`wording.console_text`) and between `::stop-commands::TOKEN` and `::TOKEN::`, GitHub's
    documented fence, with a token no text printed before could have guessed."""
    token = secrets.token_hex(16)
    body = console_text(text)
    body = body if body.endswith("\n") else body + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def _escape_data(text: str) -> str:
    # Line breaks are encoded; any other control character is shown as `?`: an escape
    # sequence is no more welcome in an annotation than in the log.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return visible_controls(text)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def shown_annotations(
    annotations: Sequence[tuple[Level, str]], *, reserved: Sequence[Level] = ()
) -> list[tuple[Level, str]]:
    """The annotations GitHub will show, most important first as given: at most
    ANNOTATIONS_SHOWN of each level, less one for each of `reserved` (annotations the step
    may still add), the last one saying how many more are in the step summary."""
    shown: list[tuple[Level, str]] = []
    for level in ("error", "warning", "notice"):
        of_level = [message for kind, message in annotations if kind == level]
        room = ANNOTATIONS_SHOWN - list(reserved).count(level)
        if len(of_level) > room:
            hidden = len(of_level) - (room - 1)
            what = "failing checks" if level == "error" else f"{level}s"
            of_level = [
                *of_level[: room - 1],
                f"and {hidden} more {what}: GitHub shows {ANNOTATIONS_SHOWN} annotations of "
                "each kind per step; the step summary and the PR comment list them all",
            ]
        shown += [(level, message) for message in of_level]
    order = {message: i for i, (_, message) in enumerate(annotations)}
    return sorted(shown, key=lambda item: order.get(item[1], len(order)))
