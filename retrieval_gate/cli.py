"""Command line: `main(argv) -> int` parses, dispatches and maps errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import TextIO

from retrieval_gate import __version__
from retrieval_gate.errors import GateError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEFAULT_METRICS = ("ndcg@10", "recall@100", "ap@100", "rr@10", "precision@10")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="retrieval-gate",
        description="A CI regression gate for retrieval and RAG systems.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    evaluate = commands.add_parser(
        "evaluate",
        help="score a run against qrels (trec_eval-exact)",
        description="Score a run against qrels. Every labelled query is scored; a query "
        "missing from the run scores 0 (trec_eval -c). Values equal trec_eval's.",
    )
    evaluate.add_argument("qrels", help="qrels file: TREC, BEIR .tsv, JSONL or JSON (.gz too)")
    evaluate.add_argument("run", help="run file: TREC, JSONL or BEIR results JSON (.gz too)")
    evaluate.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        action="extend",
        nargs="+",
        metavar="METRIC",
        help="metric such as ndcg@10, ndcg(gain=linear)@10, ap(rel=2)@100, rbp(p=0.8); "
        f"repeatable (default: {' '.join(DEFAULT_METRICS)}; list: retrieval-gate metrics)",
    )
    evaluate.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help="also print each query's values (json always has them)",
    )
    evaluate.add_argument(
        "-f",
        "--format",
        choices=("table", "json", "trec"),
        default="table",
        help="table (default), json, or trec_eval's measure/qid/value lines",
    )
    evaluate.add_argument("--qrels-format", help="qrels format when detection is not wanted")
    evaluate.add_argument("--run-format", help="run format when detection is not wanted")
    evaluate.set_defaults(handler=_evaluate)

    metrics = commands.add_parser("metrics", help="list the metrics and their parameters")
    metrics.set_defaults(handler=_metrics)

    config = commands.add_parser("config", help="the config file: JSON Schema, validation")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    schema = config_commands.add_parser("schema", help="print the JSON Schema (for editors)")
    schema.set_defaults(handler=_config_schema)
    validate = config_commands.add_parser(
        "validate", help="check a config and the labelled set it points to"
    )
    _add_config_option(validate)
    validate.set_defaults(handler=_config_validate)

    run = commands.add_parser(
        "run",
        help="call the retriever on the labelled set and print its metrics",
        description="Call the retriever on every labelled query, score the results and print "
        "the metric table. Exit 2 when more queries failed than the error budget allows.",
    )
    _add_config_option(run)
    run.add_argument("-o", "--output", help="also save the run as a TREC run file")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    run.add_argument(
        "--refresh-cache", action="store_true", help="call the retriever again, then cache"
    )
    run.add_argument("--quiet", action="store_true", help="no progress output")
    run.set_defaults(handler=_run)
    return parser


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c", "--config", default="retrieval-gate.yaml", help="config file (default: %(default)s)"
    )


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the command line and return its exit code; the only place that prints."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code) if isinstance(stop.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args, out, err)
    except GateError as error:
        print(f"retrieval-gate: error: {error}", file=err)
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


def main_entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


def _evaluate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import read_qrels, read_run
    from retrieval_gate.score_formats import FORMATS, coverage_notes

    qrels = read_qrels(args.qrels, args.qrels_format)
    run = read_run(args.run, args.run_format)
    scores = evaluate(run, qrels, args.metrics or DEFAULT_METRICS)
    out.write(FORMATS[args.format](scores, args.per_query))
    out.flush()
    for note in coverage_notes(scores):
        print(f"retrieval-gate: {note}", file=err)
    return EXIT_OK


def _metrics(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.score_formats import format_metric_list

    out.write(format_metric_list())
    return EXIT_OK


def _config_schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json

    from retrieval_gate.config import json_schema

    out.write(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n")
    return EXIT_OK


def _config_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.config import load
    from retrieval_gate.datasets import load as load_dataset

    config = load(args.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    for warning in dataset.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    corpus = f", {len(dataset.corpus)} documents" if dataset.corpus is not None else ""
    out.write(
        f"{args.config}: valid; {len(dataset.queries)} labelled queries, "
        f"{len(dataset.qrels)} judgments{corpus}; retriever {config.retriever.type}, "
        f"k = {config.k}, {len(config.metrics)} metrics; dataset {dataset.fingerprint[:12]}\n"
    )
    return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pathlib import Path

    from retrieval_gate.pipeline import execute
    from retrieval_gate.score_formats import format_table

    result = execute(
        args.config,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
    )
    for warning in result.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    if args.output:
        from retrieval_gate.runner import save_trec

        save_trec(result.run, Path(args.output), tag=result.config.name)
    out.write(format_table(result.scores, per_query=False))
    return EXIT_OK
