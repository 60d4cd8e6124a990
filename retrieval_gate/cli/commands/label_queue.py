"""`retrieval-gate label-queue`: export the unjudged documents of the top k for annotators."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option, raw
from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `label-queue`: config, source result, output, format, limit, cache, progress."""
    parser = commands.add_parser(
        "label-queue",
        help="export the unjudged documents of the current top k for annotators",
        description="List the (query, doc) pairs of the current top k that no judgment covers "
        "(absent from the qrels, or graded below 0), most impactful first: from a `check` "
        "result (--run), the pairs of the checks whose verdict depends on them (its label-hole "
        "bounds; `depends` is true, and the baseline's unjudged documents of those queries are "
        "listed too, rank empty), then by rank, then the queries whose primary metric fell most "
        "since the baseline. Each row has the query and "
        "document text, `new` (not in the baseline's top k) and an empty grade and annotator "
        "to fill in; merge the filled queue with `retrieval-gate qrels merge`.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--run",
        metavar="RESULT",
        help="read the top k from this JSON result of `check`, a baseline file, or a run file "
        "(as `check --run`) instead of calling the retriever",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write here (default: stdout)")
    parser.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        help="jsonl or csv (default: from the suffix of -o, else jsonl)",
    )
    parser.add_argument(
        "--by",
        choices=("impact", "judge-unsure", "judge-disagrees"),
        default="impact",
        help="impact (default): rank, then the queries that fell most; judge-unsure: the pairs "
        "the LLM judge was least sure of first; judge-disagrees: the judged pairs whose LLM "
        "grade differs most from people's, for a second look (from `retrieval-gate judge`'s "
        "layer)",
    )
    drawn = parser.add_mutually_exclusive_group()
    drawn.add_argument(
        "--sample",
        type=_row_limit,
        metavar="N",
        help="whole queries only: N drawn at random (gate.seed) from those people have not "
        "judged, every unjudged pair of each; what gate.labels: human+llm needs, since its "
        "estimates assume the human-judged queries are a random sample",
    )
    drawn.add_argument(
        "--active",
        type=_row_limit,
        metavar="N",
        help="whole queries only, N on average, drawn at random (gate.seed) with probability "
        "rising with the LLM judge's doubt of each query's metric difference (never below a "
        "floor); each row records its probability, by which gate.labels: human+llm weights "
        "it: as valid as --sample, with fewer labels for the same interval",
    )
    parser.add_argument("--limit", type=_row_limit, metavar="N", help="keep the first N rows only")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=run)


def _row_limit(text: str) -> int:
    """The --limit value: a number of rows, 1 or more."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of rows (1 or more), got {text!r}")
    return int(text)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the label queue and say how many rows it has."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.wording import plural
    from retrieval_gate.labels.queue import queue_format, render_queue
    from retrieval_gate.pipeline.label_queue import make_queue

    config = load(args.config)
    fmt = queue_format(args.output, args.format)
    queue = make_queue(
        config,
        result_path=args.run,
        cache=not args.no_cache,
        progress=None if args.quiet else err,
        order=args.by,
        sample=args.sample,
        active=args.active,
    )
    for warning in queue.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    items = queue.items[: args.limit] if args.limit else queue.items
    text = render_queue(items, fmt)
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        raw(out).write(text)  # JSON Lines or CSV: data, written as it is
        out.flush()
    noun = "judged document" if args.by == "judge-disagrees" else "unjudged document"
    total = plural(len(queue.items), noun)
    shown = f"the first {len(items)} of {total}" if len(items) < len(queue.items) else total
    since = (
        f"{queue.new} new since the baseline"
        if queue.baseline is not None
        else f"no baseline at {config.resolve(config.baseline)}: `new` and `delta` are empty"
    )
    where = f"wrote {args.output}: " if args.output else ""
    if not queue.items:
        print(f"retrieval-gate: {where}no {noun}s in the top {queue.k}", file=err)
        return EXIT_OK
    print(
        f"retrieval-gate: {where}{shown} in the top {queue.k} of "
        f"{plural(queue.queries, 'query')} ({since})",
        file=err,
    )
    return EXIT_OK
