"""Command line: `main(argv) -> int` parses, dispatches and maps errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from retrieval_gate import __version__
from retrieval_gate.errors import GateError

if TYPE_CHECKING:
    from retrieval_gate.config import GateConfig
    from retrieval_gate.gate import GateResult

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

    check = commands.add_parser(
        "check",
        help="run, score and compare with the baseline; exit 1 on a regression",
        description="Score the retriever (or --run FILE), compare every metric and slice "
        "with the baseline query by query, print the summary and write the JSON result. "
        "Exit 0 pass, 1 regression or floor breached, 2 bad input or a baseline that "
        "cannot be compared.",
    )
    _add_config_option(check)
    _add_source_options(check)
    check.add_argument("--baseline", help="baseline file (default: the config's `baseline`)")
    check.add_argument("--json", help="write the JSON result here (default: report.json)")
    check.set_defaults(handler=_check)

    baseline = commands.add_parser(
        "baseline",
        help="run the retriever and write the baseline file",
        description="Run the retriever (or read --run FILE) and write the baseline. An "
        "existing baseline made with another labelled set, k, metric set or slice definition "
        "is only replaced with --force.",
    )
    _add_config_option(baseline)
    _add_source_options(baseline)
    baseline.add_argument("-o", "--output", help="where to write (default: the config's)")
    baseline.add_argument("--force", action="store_true", help="replace an unlike baseline")
    baseline.set_defaults(handler=_baseline)

    compare = commands.add_parser(
        "compare",
        help="re-decide a saved result against a baseline without calling the retriever",
    )
    compare.add_argument("baseline_file", metavar="BASELINE", help="baseline file")
    compare.add_argument(
        "result_file", metavar="RESULT", help="a JSON result of `check` (or a baseline file)"
    )
    _add_config_option(compare)
    compare.add_argument("--json", help="write the re-decided JSON result here")
    compare.set_defaults(handler=_compare)
    return parser


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", help="score this run file instead of calling the retriever")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--refresh-cache", action="store_true", help="call the retriever again, then cache"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


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


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.config import load
    from retrieval_gate.console import format_summary
    from retrieval_gate.gate import check

    config = load(args.config)
    result = check(
        config,
        run_path=args.run,
        baseline_path=args.baseline,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
    )
    _write_result(result, args.json or config.report.json_path, config, err)
    for warning in result.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(format_summary(result))
    return result.exit_code


def _baseline(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pathlib import Path

    from retrieval_gate.baseline import comparability_problems, read_baseline, write_baseline
    from retrieval_gate.config import load
    from retrieval_gate.errors import GateError
    from retrieval_gate.gate import record_current

    config = load(args.config)
    path = Path(args.output) if args.output else config.resolve(config.baseline)
    record, _, warnings = record_current(
        config,
        run_path=args.run,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
    )
    if path.exists() and not args.force:
        try:
            problems = comparability_problems(read_baseline(path).fingerprints, record.fingerprints)
        except GateError as error:
            problems = [f"the existing baseline cannot be read ({error})"]
        if problems:
            raise GateError(
                f"{path} was made with another setup and is kept:\n  - "
                + "\n  - ".join(problems)
                + "\nreplace it with `retrieval-gate baseline --force`"
            )
    write_baseline(record, path)
    for warning in warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(
        f"wrote {path}: {len(record.query_ids)} queries, metrics "
        f"{', '.join(record.fingerprints.metrics)}, k = {record.fingerprints.k}"
        + (f", commit {record.git_commit[:12]}" if record.git_commit else "")
        + (" (uncommitted changes)" if record.git_dirty else "")
        + "\n"
    )
    return EXIT_OK


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pathlib import Path

    from retrieval_gate.baseline import read_baseline, read_record
    from retrieval_gate.config import load
    from retrieval_gate.console import format_summary
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate import decide

    config = load(args.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    result = decide(
        read_baseline(Path(args.baseline_file)),
        read_record(Path(args.result_file)),
        config,
        dataset,
    )
    _write_result(result, args.json, config, err)
    out.write(format_summary(result))
    return result.exit_code


def _write_result(result: GateResult, target: str | None, config: GateConfig, err: TextIO) -> None:
    """Write the JSON result atomically when a path is configured or given."""
    if not target:
        return
    from retrieval_gate.files import write_text_atomic

    path = config.resolve(target)
    write_text_atomic(path, result.to_json())
    print(f"retrieval-gate: wrote {path}", file=err)
