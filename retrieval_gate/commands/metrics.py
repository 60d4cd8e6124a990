"""`retrieval-gate metrics`: list the metrics and their parameters."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.cli import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `metrics`, which takes no options."""
    parser = commands.add_parser("metrics", help="list the metrics and their parameters")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the metric list."""
    from retrieval_gate.score_formats import format_metric_list

    out.write(format_metric_list())
    return EXIT_OK
