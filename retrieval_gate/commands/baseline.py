"""`retrieval-gate baseline`: run the retriever and write the baseline file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli import EXIT_OK
from retrieval_gate.commands.common import (
    add_config_option,
    add_repeats_option,
    add_source_options,
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `baseline`: config, source, output, --force and repeats."""
    parser = commands.add_parser(
        "baseline",
        help="run the retriever and write the baseline file",
        description="Run the retriever (or read --run FILE) and write the baseline. An "
        "existing baseline made with another labelled set, k, metric set or slice definition "
        "is only replaced with --force.",
    )
    add_config_option(parser)
    add_source_options(parser)
    parser.add_argument("-o", "--output", help="where to write (default: the config's)")
    parser.add_argument("--force", action="store_true", help="replace an unlike baseline")
    add_repeats_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the retriever and write the baseline, keeping an unlike one."""
    from retrieval_gate.baseline import read_baseline, write_baseline
    from retrieval_gate.config import load
    from retrieval_gate.errors import GateError
    from retrieval_gate.gate import comparable_baseline, record_current

    config = load(args.config)
    path = Path(args.output) if args.output else config.resolve(config.baseline)
    current = record_current(
        config,
        run_path=args.run,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
        repeats=args.repeats or config.gate.repeats,
    )
    record = current.record
    if path.exists() and not args.force:
        # A baseline the gate can still compare with (at most its judgments differ) is
        # replaced; any other is kept unless --force says so.
        try:
            comparable_baseline(read_baseline(path), record, current.dataset)
        except GateError as error:
            raise GateError(f"{path} is kept: {error}") from None
    write_baseline(record, path)
    for warning in current.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(
        f"wrote {path}: {len(record.query_ids)} queries, metrics "
        f"{', '.join(record.fingerprints.metrics)}, k = {record.fingerprints.k}"
        + (f", mean of {len(record.repeats.runs)} runs" if record.repeats else "")
        + (f", commit {record.git_commit[:12]}" if record.git_commit else "")
        + (" (uncommitted changes)" if record.git_dirty else "")
        + "\n"
    )
    return EXIT_OK
