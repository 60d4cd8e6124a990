"""`retrieval-gate qrels merge`: add judgments to a qrels file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `qrels` and its `merge` action."""
    qrels = commands.add_parser("qrels", help="add judgments to a qrels file")
    qrels_commands = qrels.add_subparsers(dest="qrels_command", metavar="ACTION", required=True)
    merge = qrels_commands.add_parser(
        "merge",
        help="append the graded rows of filled label queues to a qrels file",
        description="Append the graded rows of filled label queues (JSON Lines or CSV written "
        "by `label-queue`) to QRELS in its own format, keeping its lines byte for byte; rows "
        "without a grade are skipped. A judgment the file already holds is never changed: a "
        "row that disagrees with it is listed as a conflict. Merging again adds nothing.",
    )
    merge.add_argument("qrels", metavar="QRELS", help="qrels file: TREC, BEIR .tsv or JSONL")
    merge.add_argument("queues", metavar="QUEUE", nargs="+", help="filled label queue(s)")
    merge.add_argument("-o", "--output", metavar="OUT", help="write here (default: QRELS)")
    merge.add_argument(
        "--format", choices=("trec", "beir", "jsonl"), help="QRELS's format (default: detected)"
    )
    merge.add_argument(
        "--revise",
        action="store_true",
        help="let a second look (a `label-queue --by judge-disagrees` row whose people_grade "
        "the file still holds) replace that grade on its line",
    )
    merge.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Merge the filled queues into the qrels file and describe the merge."""
    from retrieval_gate.labels.merge import describe_merge, merge_judgments
    from retrieval_gate.labels.queue import read_judged_queue

    queues = [read_judged_queue(Path(path)) for path in args.queues]
    outcome = merge_judgments(
        Path(args.qrels),
        [judgment for queue in queues for judgment in queue.judgments],
        out=Path(args.output) if args.output else None,
        format=args.format,
        revise=args.revise,
    )
    skipped = sum(queue.skipped for queue in queues)
    for line in describe_merge(outcome, queues=len(queues), skipped=skipped):
        print(line, file=out)
    return EXIT_OK
