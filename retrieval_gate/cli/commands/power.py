"""`retrieval-gate power`: what the labelled set can detect."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `power`: config, baseline and output format."""
    parser = commands.add_parser(
        "power",
        help="what the labelled set can detect: each check's detectable drop and P(fail)",
        description="From the baseline's per-query scores, print each gated check (metric x "
        "slice) with its size, level, the true drop it catches with 80% power, the chance it "
        "fails at 1x, 1.5x and 2x its max_drop, and the queries it needs to catch 1.5x max_drop; "
        "checks that cannot be gated are listed with the reason. The paired differences' sd is "
        "taken as the sd of the baseline's scores (exact when the runs correlate at 0.5). Exit 2 "
        "when the config is invalid or the baseline is missing or cannot be compared.",
    )
    add_config_option(parser)
    parser.add_argument("--baseline", help="baseline file (default: the config's `baseline`)")
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print what each check can detect."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.baseline.file import read_baseline
    from retrieval_gate.gate.power import power_report

    config = load(args.config)
    dataset = load_dataset(
        config.dataset, config.base_dir, keep_unjudged=config.gate.labels == "human+llm"
    )
    path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
    report = power_report(config, dataset, read_baseline(path, config=args.config), path)
    for warning in report.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(report.to_json() if args.format == "json" else report.to_text())
    return EXIT_OK
