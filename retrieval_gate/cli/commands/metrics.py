"""`retrieval-gate metrics`: list the metrics and their parameters, or a tool's names."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.errors import EXIT_OK

DIALECTS = ("trec_eval", "ir_measures", "ranx")  # retrieval_gate.metrics.dialects.DIALECTS


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `metrics [--dialect NAME]`."""
    parser = commands.add_parser("metrics", help="list the metrics and their parameters")
    parser.add_argument(
        "--dialect",
        choices=DIALECTS,
        help="list how this tool's metric names read here (tool name -> our canonical name)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the metric list, or the mapping of one tool's names."""
    if getattr(args, "dialect", None):
        from retrieval_gate.metrics.explain import mapping

        rows = mapping(args.dialect)
        width = max(len(name) for name, _ in rows)
        out.write(
            f"{args.dialect} name -> our canonical name (metrics_dialect: {args.dialect}, "
            f"or {args.dialect}:NAME in one key)\n"
        )
        for name, ours in rows:
            out.write(f"  {name:<{width}}  -> {ours}\n")
        return EXIT_OK
    from retrieval_gate.metrics.score_formats import format_metric_list

    out.write(format_metric_list())
    return EXIT_OK
