"""`retrieval-gate label-drift`: where each label's judged text is in the current chunking."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `label-drift`: config, baseline, --fix and --queue outputs."""
    parser = commands.add_parser(
        "label-drift",
        help="classify every label against the current chunking of a chunked corpus",
        description="Each label (query, chunk, grade) is anchored where the baseline's "
        "chunking had its chunk: its source document, span and hash. Against the current "
        "corpus it is valid (the chunk is unchanged), re-anchorable (its text is another "
        "chunk's whole text), merged (inside a larger chunk), split (across chunks) or "
        "orphaned (its text is in no chunk). Prints the counts by slice. --fix writes the "
        "valid and re-anchorable labels on the chunks that hold their text (the judge's into "
        "its layer, still the judge's); --queue writes the chunks holding merged or split "
        "labels' text for people (or `judge`) to grade: no grade is carried over to them.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        help="the baseline whose chunk anchors the labels were given on (default: the config's)",
    )
    parser.add_argument(
        "--fix",
        metavar="QRELS",
        help="write the re-anchored labels here as BEIR qrels (query-id, corpus-id, score)",
    )
    parser.add_argument(
        "--queue",
        metavar="PATH",
        help="write the chunks to grade here, as a label queue (.csv or .jsonl); merge it "
        "once filled with `retrieval-gate qrels merge`",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the counts by slice; write the re-anchored labels and the queue when asked."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.wording import plural
    from retrieval_gate.labels.queue import queue_format, render_queue
    from retrieval_gate.pipeline.label_drift import (
        drift_report,
        drift_table,
        write_judge_reanchored,
    )

    config = load(args.config)
    report = drift_report(config, args.baseline)
    print(
        f"label drift of {plural(len(report.drift), 'label')} against the current chunking, "
        f"anchored where {report.baseline.name}'s chunking had them:",
        file=out,
    )
    out.write(drift_table(report))
    if args.fix:
        fixed = report.reanchored()
        write_text_atomic(Path(args.fix), fixed)
        kept = fixed.count("\n") - 1
        print(
            f"wrote {args.fix}: {plural(kept, 'label')} on the chunks holding their text", file=out
        )
        if report.layer is not None:
            moved = write_judge_reanchored(report)
            print(
                f"re-anchored {plural(moved, 'label')} of the judge's in {report.layer.name}, "
                "each still the judge's grade",
                file=out,
            )
    if args.queue:
        write_text_atomic(Path(args.queue), render_queue(report.queue, queue_format(args.queue)))
        print(
            f"wrote {args.queue}: {plural(len(report.queue), '(query, chunk) pair')} to grade",
            file=out,
        )
    return EXIT_OK
