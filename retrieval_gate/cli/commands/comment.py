"""`retrieval-gate comment`: publish a result on GitHub."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import raw, say
from retrieval_gate.errors import EXIT_OK

if TYPE_CHECKING:
    from retrieval_gate.integrations.github.workflow import Level


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `comment`: a result file, the pull request, and what to publish."""
    parser = commands.add_parser(
        "comment",
        help="publish a result on GitHub: step summary, annotations, one sticky PR comment",
        description="Render a JSON result of `check` to Markdown, append it to "
        "$GITHUB_STEP_SUMMARY, print ::error/::warning workflow commands, and create or update "
        "this gate's one comment on the pull request (found by a hidden marker naming the "
        "gate). The repository, pull request and API come from GITHUB_REPOSITORY, "
        "GITHUB_EVENT_PATH and GITHUB_API_URL; the token from GITHUB_TOKEN. A read-only "
        "token (a pull request from a fork) or a rate limit is a warning: the exit code is 0 "
        "unless RESULT cannot be read.",
    )
    parser.add_argument("result", metavar="RESULT", help="a JSON result of `check`")
    parser.add_argument("--pr", type=_pr_number, help="pull request number (default: the event's)")
    parser.add_argument("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)")
    parser.add_argument("--no-summary", action="store_true", help="skip the step summary")
    parser.add_argument("--no-annotations", action="store_true", help="print no ::error lines")
    parser.add_argument("--no-pr-comment", action="store_true", help="skip the PR comment")
    parser.set_defaults(handler=run)


def _pr_number(text: str) -> int:
    """The --pr value: a pull request number, 1 or more."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a pull request number, got {text!r}")
    return int(text)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Publish the result: step summary, annotations, the PR comment."""
    import os

    from retrieval_gate.integrations.github.comments import comment_room, upsert_comment
    from retrieval_gate.integrations.github.environment import read_environment
    from retrieval_gate.integrations.github.workflow import (
        append_step_summary,
        shown_annotations,
        workflow_command,
    )
    from retrieval_gate.report import annotations_of, read_result, render_markdown

    result = read_result(Path(args.result))
    env = read_environment(os.environ, pr_number=args.pr, repository=args.repo)
    title = f"retrieval-gate {result.name}"
    full = render_markdown(result)
    # The annotations are the tool's own workflow commands: written beneath the InertStream,
    # each escaped by `workflow_command`. Free text is fenced by stop-commands markers.
    commands = raw(out)
    if not args.no_summary and env.step_summary is not None:
        append_step_summary(env.step_summary, full)
        say(err, "retrieval-gate: wrote the step summary", fenced=True)
    if not args.no_annotations:
        # The PR comment's own warning, if it fails, must still show: a warning is reserved.
        reserved: tuple[Level, ...] = () if args.no_pr_comment else ("warning",)
        for level, message in shown_annotations(annotations_of(result), reserved=reserved):
            print(workflow_command(level, message, title=title), file=commands)
    if not args.no_pr_comment:
        room = comment_room(result.name)
        body = full if len(full) <= room else render_markdown(result, limit=room)
        outcome = upsert_comment(env, body, result.name)
        if outcome.warning:
            print(workflow_command("warning", outcome.warning, title=title), file=commands)
        else:
            say(err, f"retrieval-gate: {outcome.action} the PR comment {outcome.url}", fenced=True)
    commands.flush()
    return EXIT_OK
