"""`retrieval-gate lint`: check the labelled set and the config."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option, raw


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `lint`: config, baseline and output format."""
    parser = commands.add_parser(
        "lint",
        help="check the labelled set and the config; exit 2 on an error",
        description="Check the labelled set (duplicate judgments, ids that match nothing, "
        "queries with no relevant document, grades, annotator agreement, small slices) and the "
        "config (binary cuts of graded labels, nDCG's gain, cutoffs and k, a recall companion, "
        "slicing, thresholds the set can detect). Findings are grouped by severity, each with "
        "its fix. Exit 2 when an error is found, 0 otherwise; `check` refuses to gate on the "
        "errors too.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--baseline", help="baseline for detectability (default: the config's, when it exists)"
    )
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the lint report; its exit code says whether an error was found."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load_labels
    from retrieval_gate.gate.baseline.file import read_baseline
    from retrieval_gate.lint import lint

    config = load(args.config)
    assisted = config.gate.uses_llm_labels  # a set may start with no labels there
    labels = load_labels(config.dataset, config.base_dir, judgments_required=not assisted)
    path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
    baseline = None
    if args.baseline or path.exists():
        baseline = read_baseline(path, config=args.config)
    report = lint(config, labels, baseline)
    if args.format == "json":
        raw(out).write(report.to_json())
    else:
        out.write(report.to_text())
    return report.exit_code
