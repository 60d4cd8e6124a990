"""`retrieval-gate init`: write a commented config and a pull-request workflow."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `init`: what to write, where, and whether to overwrite."""
    parser = commands.add_parser(
        "init",
        help="write a commented retrieval-gate.yaml and a pull-request workflow",
        description="Write retrieval-gate.yaml and .github/workflows/retrieval-gate.yml into "
        "the repository (the working directory, or --dir), and add the reports `check` "
        "writes and the cache to its .gitignore. The config slices by query length (unless "
        "every query has one length bucket, a slice that would repeat the overall check) and "
        "by the metadata fields the labelled set's queries carry. On a terminal it asks for the "
        "retriever type and the labelled set's folder unless given; otherwise it uses the "
        "defaults. Existing files are only replaced with --force.",
    )
    parser.add_argument(
        "--retriever", metavar="TYPE", help="bm25 (default), http, python or run_file"
    )
    parser.add_argument(
        "--dataset", metavar="PATH", help="the labelled set's folder, relative to --dir (eval)"
    )
    parser.add_argument("--name", help="the gate's name, shown on its PR comment (retrieval-gate)")
    parser.add_argument("--action", metavar="OWNER/REPO@REF", help="the workflow's `uses:`")
    parser.add_argument("--dir", default=".", help="the repository's folder (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the config and the workflow, asking on a terminal."""
    from retrieval_gate.cli import scaffold as init

    chosen = {
        name: value
        for name in ("retriever", "dataset", "name", "action")
        if (value := getattr(args, name)) is not None
    }
    options = init.InitOptions(**chosen)
    if sys.stdin is not None and sys.stdin.isatty():  # ask only a person
        options = init.ask(options, set(chosen), sys.stdin, out)
    written = init.write(Path(args.dir), options, force=args.force)
    out.write(init.next_steps(written, options))
    return EXIT_OK
