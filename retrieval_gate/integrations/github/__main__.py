"""`python -m retrieval_gate.integrations.github ratchet-pr`: the Action's ratchet step."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from retrieval_gate.errors import InputError
from retrieval_gate.integrations.github.environment import read_environment
from retrieval_gate.integrations.github.pulls import PULL_TITLE, ratchet_body, upsert_pull_request
from retrieval_gate.integrations.github.workflow import fenced, workflow_command


def main(argv: Sequence[str] | None = None) -> int:
    """Open or update the ratchet's pull request, print what happened (fenced) or a ::warning,
    and write `ratchet-pr=URL` to $GITHUB_OUTPUT. Exit 0, or 2 when the output file cannot be
    read."""
    parser = argparse.ArgumentParser(prog="python -m retrieval_gate.integrations.github")
    commands = parser.add_subparsers(dest="command", required=True)
    ratchet = commands.add_parser(
        "ratchet-pr",
        help="open or update the pull request from the ratchet's branch",
        description="The repository, API and token come from GITHUB_REPOSITORY, GITHUB_API_URL "
        "and GITHUB_TOKEN. A refusal (no permission, a rate limit) is a ::warning, exit 0.",
    )
    ratchet.add_argument("--head", required=True, help="the ratchet's branch")
    ratchet.add_argument("--base", required=True, help="the default branch")
    ratchet.add_argument("--output", required=True, help="a file: the baseline command's output")
    args = parser.parse_args(argv)
    try:
        env = read_environment(os.environ)
        output = Path(args.output).read_text(encoding="utf-8", errors="replace")
    except (InputError, OSError) as error:
        sys.stdout.write(fenced(f"retrieval-gate: error: {error}"))
        return 2
    body = ratchet_body(output, token=env.token)
    outcome = upsert_pull_request(env, head=args.head, base=args.base, title=PULL_TITLE, body=body)
    if outcome.warning:
        print(workflow_command("warning", outcome.warning, title="retrieval-gate ratchet"))
        return 0
    url = outcome.url or ""
    sys.stdout.write(fenced(f"retrieval-gate: {outcome.action} the ratchet pull request {url}"))
    target = os.environ.get("GITHUB_OUTPUT")
    # The URL is GitHub's answer: one line of printable text, or it could forge other outputs.
    if target and re.fullmatch(r"https?://[!-~]+", url):
        with open(target, "a", encoding="utf-8") as outputs:
            outputs.write(f"ratchet-pr={url}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
