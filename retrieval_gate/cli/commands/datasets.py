"""`retrieval-gate datasets fetch`: download public labelled sets."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `datasets` and its `fetch` action."""
    datasets = commands.add_parser("datasets", help="download public labelled sets")
    datasets_commands = datasets.add_subparsers(
        dest="datasets_command", metavar="ACTION", required=True
    )
    fetch = datasets_commands.add_parser(
        "fetch",
        help="download, verify and convert a public collection into a BEIR folder",
        description="Download a public collection (cranfield, or beir/NAME such as "
        "beir/scifact), check its pinned checksums, and write a BEIR folder (corpus.jsonl, "
        "queries.jsonl, qrels/test.tsv) atomically. An unknown NAME lists the known ones. "
        "Set RETRIEVAL_GATE_DATASETS_URL to fetch from a mirror: it replaces each URL's "
        "address before the file name.",
    )
    fetch.add_argument("name", metavar="NAME", help="collection, e.g. cranfield, beir/scifact")
    fetch.add_argument("--dir", help="where to write (default: datasets/NAME)")
    fetch.add_argument("--force", action="store_true", help="fetch again over a complete copy")
    fetch.add_argument("--quiet", action="store_true", help="no progress output")
    fetch.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Fetch the collection and say where it was written."""
    import os

    from retrieval_gate.datasets.download import MIRROR_ENV
    from retrieval_gate.datasets.fetch import fetch

    result = fetch(
        args.name,
        args.dir,
        force=args.force,
        mirror=os.environ.get(MIRROR_ENV) or None,
        progress=None if args.quiet else err,
    )
    state = "already complete, kept (--force fetches again)" if result.kept else "written"
    out.write(f"{result.path}: {result.name} {state}; {result.counts.describe()}\n")
    return EXIT_OK
