"""Command line: `main(argv) -> int` parses, dispatches and maps errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from retrieval_gate.cli.commands.common import say
from retrieval_gate.core.version import __version__
from retrieval_gate.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, GateError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    # Imported here, not at the top: `main`'s own imports stay light for `--help`'s sake.
    from retrieval_gate.cli.commands import (
        baseline,
        calibrate,
        check,
        comment,
        compare,
        completion,
        config,
        datasets,
        evaluate,
        history,
        init,
        judge,
        label_drift,
        label_queue,
        lint,
        merge_layer,
        metrics,
        power,
        qrels,
        run,
        synthesize,
    )

    parser = argparse.ArgumentParser(
        prog="retrieval-gate",
        description="A CI regression gate for retrieval and RAG systems.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    evaluate.add_parser(commands)
    metrics.add_parser(commands)
    config.add_parser(commands)
    lint.add_parser(commands)
    power.add_parser(commands)
    init.add_parser(commands)
    run.add_parser(commands)
    check.add_parser(commands)
    baseline.add_parser(commands)
    compare.add_parser(commands)
    comment.add_parser(commands)
    label_queue.add_parser(commands)
    label_drift.add_parser(commands)
    judge.add_parser(commands)
    merge_layer.add_parser(commands)
    calibrate.add_parser(commands)
    qrels.add_parser(commands)
    datasets.add_parser(commands)
    completion.add_parser(commands)
    history.add_parser(commands)
    synthesize.add_parser(commands)
    parser.set_defaults(root_parser=parser)  # what `completion` generates its script from
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the command line and return its exit code; the only place that prints."""
    from retrieval_gate.core.wording import InertStream

    # The one chokepoint: every message, warning, error and progress line goes through an
    # InertStream, which shows control characters as text and defuses any line that a CI
    # runner would read as a workflow command. Data formats and the tool's own workflow
    # commands write beneath it (`raw_stream`).
    out = InertStream(stdout or sys.stdout)
    err = InertStream(stderr or sys.stderr)
    try:
        return _main(argv, cast("TextIO", out), cast("TextIO", err))
    finally:
        out.close()
        err.close()


def _main(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code) if isinstance(stop.code, int) else EXIT_USAGE
    _one_blas_thread(args)
    try:
        # A retriever run in this process prints where it likes: its `print` of a workflow
        # command or of a secret it was given goes through the same filter as ours.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int = args.handler(args, out, err)
    except GateError as error:
        say(err, f"retrieval-gate: error: {error}", fenced=args.command == "comment")
        return error.exit_code
    except KeyboardInterrupt:
        print("retrieval-gate: interrupted", file=err)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # an unexpected failure is a bug: say so, exit 3
        print(
            f"retrieval-gate: internal error: {type(error).__name__}: {error}\n"
            "This is a bug; please report it with the command that caused it.",
            file=err,
        )
        return EXIT_INTERNAL
    return code


RETRIEVER_COMMANDS = frozenset({"check", "baseline", "run", "label-queue", "judge"})
"""Commands that may call a retriever in this process (a Python target) unless given --run."""


def _one_blas_thread(args: argparse.Namespace) -> None:
    """Keep numpy's BLAS on one thread when only our own arithmetic will use it, if numpy is
    not loaded yet and the user set nothing. OpenBLAS's idle workers spin after each product:
    on 2 cores they cost a 20,000-query check 0.7 s of its 3.2 s of CPU and saved no wall
    time (numpy's import alone: 45 ms), and the statistics ran as fast or faster without them
    (benchmarks/timings/README.md). A retriever of the user's running in this process keeps numpy's
    default: its own products may want the threads."""
    if "numpy" in sys.modules:
        return
    if args.command in RETRIEVER_COMMANDS and not getattr(args, "run", None):
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main_entry() -> None:
    """Console-script entry point."""
    import gc

    # A run builds hundreds of thousands of small containers (queries, rankings, documents)
    # that live to the end; collecting each 700 allocations rescans them for nothing (mypy's
    # own setting: a 20,000-query check spends 4-6% less CPU, whole process).
    gc.set_threshold(200_000, 30, 30)
    sys.exit(main())
