"""`retrieval-gate run`: call the retriever on the labelled set and print its metrics."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `run`: config, run file to save, cache and progress options."""
    parser = commands.add_parser(
        "run",
        help="call the retriever on the labelled set and print its metrics",
        description="Call the retriever on every labelled query, score the results and print "
        "the metric table. Exit 2 when more queries failed than the error budget allows.",
    )
    add_config_option(parser)
    parser.add_argument("-o", "--output", help="also save the run as a TREC run file")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--refresh-cache", action="store_true", help="call the retriever again, then cache"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Call the retriever, optionally save the run, print the metric table."""
    from retrieval_gate.core.wording import plural
    from retrieval_gate.metrics.score_formats import format_table
    from retrieval_gate.pipeline.execute import execute

    result = execute(
        args.config,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
    )
    for warning in result.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    if args.output:
        from retrieval_gate.execution.runner import save_trec

        save_trec(result.run, Path(args.output), tag=result.config.name)
    scores = result.scores
    if result.config.gate.uses_llm_labels:  # the judge's pool ran every query; people judged some
        from retrieval_gate.gate.modes.assisted import human_judged

        people = human_judged(result.dataset)
        if not people.all():
            scores = scores.of_queries(people)
            left = plural(int((~people).sum()), "query", "queries")
            print(
                f"retrieval-gate: note: {left} no person has judged ran for the judge's pool and "
                "are left out of this table (human labels only; `check` adds the judge's)",
                file=err,
            )
    out.write(format_table(scores, per_query=False))
    if result.stage is not None and result.stage.values:
        from retrieval_gate.core.wording import aligned

        rows = [["first stage", "all"]]
        rows += [[name, f"{values.mean():.4f}"] for name, values in result.stage.values.items()]
        out.write("\n" + "\n".join(aligned(rows, right_from=1)) + "\n")
    return EXIT_OK
