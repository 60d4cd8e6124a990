"""Command line: `main(argv) -> int` parses, dispatches and maps errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

from retrieval_gate import DEFAULT_CONFIG, __version__
from retrieval_gate.errors import GateError

if TYPE_CHECKING:
    from retrieval_gate.config import GateConfig
    from retrieval_gate.report import Format, ResultRecord

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

    config = commands.add_parser("config", help="the config file: schema, validation, reference")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    schema = config_commands.add_parser("schema", help="print the JSON Schema (for editors)")
    schema.set_defaults(handler=_config_schema)
    validate = config_commands.add_parser(
        "validate", help="check a config and the labelled set it points to"
    )
    _add_config_option(validate)
    validate.set_defaults(handler=_config_validate)
    reference = config_commands.add_parser(
        "reference", help="print the Markdown reference of every config key"
    )
    reference.set_defaults(handler=_config_reference)

    lint = commands.add_parser(
        "lint",
        help="check the labelled set and the config; exit 2 on an error",
        description="Check the labelled set (duplicate judgments, ids that match nothing, "
        "queries with no relevant document, grades, annotator agreement, small slices) and the "
        "config (binary cuts of graded labels, nDCG's gain, cutoffs and k, a recall companion, "
        "slicing, thresholds the set can detect). Findings are grouped by severity, each with "
        "its fix. Exit 2 when an error is found, 0 otherwise; `check` refuses to gate on the "
        "errors too.",
    )
    _add_config_option(lint)
    lint.add_argument(
        "--baseline", help="baseline for detectability (default: the config's, when it exists)"
    )
    lint.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    lint.set_defaults(handler=_lint)

    _add_power_parser(commands)

    init = commands.add_parser(
        "init",
        help="write a commented retrieval-gate.yaml and a pull-request workflow",
        description="Write retrieval-gate.yaml and .github/workflows/retrieval-gate.yml into "
        "the repository (the working directory, or --dir). On a terminal it asks for the "
        "retriever type and the labelled set's folder unless given; otherwise it uses the "
        "defaults. Existing files are only replaced with --force.",
    )
    init.add_argument(
        "--retriever", metavar="TYPE", help="bm25 (default), http, python or run_file"
    )
    init.add_argument(
        "--dataset", metavar="PATH", help="the labelled set's folder, relative to --dir (eval)"
    )
    init.add_argument("--name", help="the gate's name, shown on its PR comment (retrieval-gate)")
    init.add_argument("--action", metavar="OWNER/REPO@REF", help="the workflow's `uses:`")
    init.add_argument("--dir", default=".", help="the repository's folder (default: %(default)s)")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.set_defaults(handler=_init)

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
    check.add_argument(
        "--against",
        metavar="REF",
        help="compare with the retriever at the merge-base of HEAD and REF (a branch, tag or "
        "commit), run now in a git worktree, instead of the committed baseline: the "
        "labelled set, metrics and thresholds are the working tree's, the retriever section "
        "and its code each side's own",
    )
    check.add_argument(
        "--cache",
        action="store_true",
        dest="trust_cache",
        help="use cached answers even when nothing proves them current (an http retriever "
        "without retriever.version); the reports count them",
    )
    _add_repeats_option(check)
    _add_report_options(check)
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
    _add_repeats_option(baseline)
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
    _add_report_options(compare)
    compare.set_defaults(handler=_compare)

    comment = commands.add_parser(
        "comment",
        help="publish a result on GitHub: step summary, annotations, one sticky PR comment",
        description="Render a JSON result of `check` to Markdown, append it to "
        "$GITHUB_STEP_SUMMARY, print ::error/::warning workflow commands, and create or update "
        "this gate's one comment on the pull request (found by a hidden marker naming the "
        "gate). The repository, pull request and API come from GITHUB_REPOSITORY, "
        "GITHUB_EVENT_PATH and GITHUB_API_URL; the token from GITHUB_TOKEN. A read-only "
        "token (a pull request from a fork) or a rate limit is a warning: the exit code is 0 "
        "unless RESULT cannot be read.",
    )
    comment.add_argument("result", metavar="RESULT", help="a JSON result of `check`")
    comment.add_argument("--pr", type=_pr_number, help="pull request number (default: the event's)")
    comment.add_argument("--repo", help="OWNER/NAME (default: $GITHUB_REPOSITORY)")
    comment.add_argument("--no-summary", action="store_true", help="skip the step summary")
    comment.add_argument("--no-annotations", action="store_true", help="print no ::error lines")
    comment.add_argument("--no-pr-comment", action="store_true", help="skip the PR comment")
    comment.set_defaults(handler=_comment)

    label_queue = commands.add_parser(
        "label-queue",
        help="export the unjudged documents of the current top k for annotators",
        description="List the (query, doc) pairs of the current top k that no judgment covers "
        "(absent from the qrels, or graded below 0), most impactful first: by rank, then the "
        "queries whose primary metric fell most since the baseline. Each row has the query and "
        "document text, `new` (not in the baseline's top k) and an empty grade and annotator "
        "to fill in; merge the filled queue with `retrieval-gate qrels merge`.",
    )
    _add_config_option(label_queue)
    label_queue.add_argument(
        "--run",
        metavar="RESULT",
        help="read the top k from this JSON result of `check`, a baseline file, or a run file "
        "(as `check --run`) instead of calling the retriever",
    )
    label_queue.add_argument("-o", "--output", metavar="PATH", help="write here (default: stdout)")
    label_queue.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        help="jsonl or csv (default: from the suffix of -o, else jsonl)",
    )
    label_queue.add_argument(
        "--limit", type=_row_limit, metavar="N", help="keep the first N rows only"
    )
    label_queue.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache"
    )
    label_queue.add_argument("--quiet", action="store_true", help="no progress output")
    label_queue.set_defaults(handler=_label_queue)

    qrels = commands.add_parser("qrels", help="add judgments to a qrels file")
    qrels_commands = qrels.add_subparsers(dest="qrels_command", metavar="ACTION", required=True)
    merge = qrels_commands.add_parser(
        "merge",
        help="append the graded rows of filled label queues to a qrels file",
        description="Append the graded rows of filled label queues (JSON Lines or CSV written "
        "by `label-queue`) to QRELS in its own format, keeping its lines byte for byte; rows "
        "without a grade are skipped. A judgment the file already holds is never changed: a "
        "row that disagrees with it is listed as a conflict. Merging again adds nothing.",
    )
    merge.add_argument("qrels", metavar="QRELS", help="qrels file: TREC, BEIR .tsv or JSONL")
    merge.add_argument("queues", metavar="QUEUE", nargs="+", help="filled label queue(s)")
    merge.add_argument("-o", "--output", metavar="OUT", help="write here (default: QRELS)")
    merge.add_argument(
        "--format", choices=("trec", "beir", "jsonl"), help="QRELS's format (default: detected)"
    )
    merge.set_defaults(handler=_qrels_merge)

    datasets = commands.add_parser("datasets", help="download public labelled sets")
    datasets_commands = datasets.add_subparsers(
        dest="datasets_command", metavar="ACTION", required=True
    )
    fetch = datasets_commands.add_parser(
        "fetch",
        help="download, verify and convert a public collection into a BEIR folder",
        description="Download a public collection (cranfield, or beir/NAME such as "
        "beir/scifact), check its pinned checksums, and write a BEIR folder (corpus.jsonl, "
        "queries.jsonl, qrels/test.tsv) atomically. An unknown NAME lists the known ones. "
        "Set RETRIEVAL_GATE_DATASETS_URL to fetch from a mirror: it replaces each URL's "
        "address before the file name.",
    )
    fetch.add_argument("name", metavar="NAME", help="collection, e.g. cranfield, beir/scifact")
    fetch.add_argument("--dir", help="where to write (default: datasets/NAME)")
    fetch.add_argument("--force", action="store_true", help="fetch again over a complete copy")
    fetch.add_argument("--quiet", action="store_true", help="no progress output")
    fetch.set_defaults(handler=_datasets_fetch)
    return parser


def _pr_number(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a pull request number, got {text!r}")
    return int(text)


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reports (default: the config's `report` paths)")
    group.add_argument("--json", metavar="PATH", help="write the JSON result")
    group.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    group.add_argument("--junit", metavar="PATH", help="write JUnit XML (one testcase per check)")
    group.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", help="score this run file instead of calling the retriever")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--refresh-cache", action="store_true", help="call the retriever again, then cache"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def _add_repeats_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeats",
        type=_repeats,
        metavar="N",
        help="run the retriever N times (default: gate.repeats) to measure its run-to-run "
        "noise, which the test then allows for; never from the cache",
    )


def _repeats(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of runs, got {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected 1 to 100 runs, got {value}")
    return value


def _add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c", "--config", default=DEFAULT_CONFIG, help="config file (default: %(default)s)"
    )


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the command line and return its exit code; the only place that prints."""
    from retrieval_gate.wording import InertStream

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
    try:
        code: int = args.handler(args, out, err)
    except GateError as error:
        _say(err, f"retrieval-gate: error: {error}", fenced=args.command == "comment")
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


def _say(err: TextIO, message: str, *, fenced: bool = False) -> None:
    """Print a message on `err`; `fenced` (the `comment` command, in GitHub mode) puts it
    between stop-commands markers, written beneath the InertStream."""
    if not fenced:
        print(message, file=err)
        return
    from retrieval_gate.github import fenced as fence
    from retrieval_gate.wording import raw_stream

    stream = raw_stream(err)
    stream.write(fence(message))
    stream.flush()


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
    # json and trec are data for other tools: written as they are, beneath the InertStream.
    (out if args.format == "table" else _raw(out)).write(
        FORMATS[args.format](scores, args.per_query)
    )
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


def _config_reference(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.config_reference import config_reference

    out.write(config_reference())
    return EXIT_OK


def _lint(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.baseline import read_baseline
    from retrieval_gate.config import load
    from retrieval_gate.datasets import load_labels
    from retrieval_gate.lint import lint

    config = load(args.config)
    labels = load_labels(config.dataset, config.base_dir)
    path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
    baseline = None
    if args.baseline or path.exists():
        baseline = read_baseline(path, config=args.config)
    report = lint(config, labels, baseline)
    if args.format == "json":
        _raw(out).write(report.to_json())
    else:
        out.write(report.to_text())
    return report.exit_code


def _add_power_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    power = commands.add_parser(
        "power",
        help="what the labelled set can detect: each check's detectable drop and P(fail)",
        description="From the baseline's per-query scores, print each gated check (metric x "
        "slice) with its size, level, the true drop it catches with 80% power, the chance it "
        "fails at 1x, 1.5x and 2x its max_drop, and the queries it needs to catch 1.5x max_drop; "
        "checks that cannot be gated are listed with the reason. The paired differences' sd is "
        "taken as the sd of the baseline's scores (exact when the runs correlate at 0.5). Exit 2 "
        "when the config is invalid or the baseline is missing or cannot be compared.",
    )
    _add_config_option(power)
    power.add_argument("--baseline", help="baseline file (default: the config's `baseline`)")
    power.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    power.set_defaults(handler=_power)


def _power(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.baseline import read_baseline
    from retrieval_gate.config import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.power import power_report

    config = load(args.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
    report = power_report(config, dataset, read_baseline(path, config=args.config), path)
    for warning in report.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(report.to_json() if args.format == "json" else report.to_text())
    return EXIT_OK


def _init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate import init

    chosen = {
        name: value
        for name in ("retriever", "dataset", "name", "action")
        if (value := getattr(args, name)) is not None
    }
    options = init.InitOptions(**chosen)
    if sys.stdin is not None and sys.stdin.isatty():  # ask only a person
        options = init.ask(options, set(chosen), sys.stdin, out)
    written = init.write(Path(args.dir), options, force=args.force)
    out.write(init.next_steps(written, options))
    return EXIT_OK


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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
    from retrieval_gate.gate import check, error_document
    from retrieval_gate.report import summary_of, validate_result

    config = load(args.config)
    targets = _report_targets(args, config)
    try:
        result = check(
            config,
            run_path=args.run,
            baseline_path=args.baseline,
            cache=not args.no_cache,
            refresh_cache=args.refresh_cache,
            trust_cache=args.trust_cache,
            progress=None if args.quiet else err,
            repeats=args.repeats,
            against=args.against,
        )
    except GateError as error:  # the reports say why the gate could not decide
        _write_reports(validate_result(error_document(config.name, str(error))), targets, err)
        raise
    record = validate_result(result.document())
    _write_reports(record, targets, err)
    for warning in result.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(summary_of(record))
    return result.exit_code


def _baseline(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.baseline import read_baseline, read_record
    from retrieval_gate.config import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate import decide
    from retrieval_gate.report import summary_of, validate_result

    config = load(args.config)
    dataset = load_dataset(config.dataset, config.base_dir)
    result = decide(
        read_baseline(Path(args.baseline_file)),
        read_record(Path(args.result_file)),
        config,
        dataset,
        reference=f"baseline {args.baseline_file}",
    )
    record = validate_result(result.document())
    _write_reports(record, _report_targets(args, config), err)
    out.write(summary_of(record))
    return result.exit_code


def _comment(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    from retrieval_gate import github
    from retrieval_gate.report import annotations_of, read_result, render_markdown

    result = read_result(Path(args.result))
    env = github.read_environment(os.environ, pr_number=args.pr, repository=args.repo)
    title = f"retrieval-gate {result.name}"
    full = render_markdown(result)
    # The annotations are the tool's own workflow commands: written beneath the InertStream,
    # each escaped by `workflow_command`. Free text is fenced by stop-commands markers.
    commands = _raw(out)
    if not args.no_summary and env.step_summary is not None:
        github.append_step_summary(env.step_summary, full)
        _say(err, "retrieval-gate: wrote the step summary", fenced=True)
    if not args.no_annotations:
        for level, message in annotations_of(result):
            print(github.workflow_command(level, message, title=title), file=commands)
    if not args.no_pr_comment:
        room = github.comment_room(result.name)
        body = full if len(full) <= room else render_markdown(result, limit=room)
        outcome = github.upsert_comment(env, body, result.name)
        if outcome.warning:
            print(github.workflow_command("warning", outcome.warning, title=title), file=commands)
        else:
            _say(err, f"retrieval-gate: {outcome.action} the PR comment {outcome.url}", fenced=True)
    commands.flush()
    return EXIT_OK


def _row_limit(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of rows (1 or more), got {text!r}")
    return int(text)


def _label_queue(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.config import load
    from retrieval_gate.files import write_text_atomic
    from retrieval_gate.label_queue import make_queue, queue_format, render_queue
    from retrieval_gate.wording import plural

    config = load(args.config)
    fmt = queue_format(args.output, args.format)
    queue = make_queue(
        config,
        result_path=args.run,
        cache=not args.no_cache,
        progress=None if args.quiet else err,
    )
    for warning in queue.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    items = queue.items[: args.limit] if args.limit else queue.items
    text = render_queue(items, fmt)
    if args.output:
        write_text_atomic(Path(args.output), text)
    else:
        _raw(out).write(text)  # JSON Lines or CSV: data, written as it is
        out.flush()
    total = plural(len(queue.items), "unjudged document")
    shown = f"the first {len(items)} of {total}" if len(items) < len(queue.items) else total
    since = (
        f"{queue.new} new since the baseline"
        if queue.baseline is not None
        else f"no baseline at {config.resolve(config.baseline)}: `new` and `delta` are empty"
    )
    where = f"wrote {args.output}: " if args.output else ""
    if not queue.items:
        print(f"retrieval-gate: {where}no unjudged documents in the top {queue.k}", file=err)
        return EXIT_OK
    print(
        f"retrieval-gate: {where}{shown} in the top {queue.k} of "
        f"{plural(queue.queries, 'query')} ({since})",
        file=err,
    )
    return EXIT_OK


def _qrels_merge(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from retrieval_gate.label_queue import read_judged_queue
    from retrieval_gate.qrels_merge import describe_merge, merge_judgments

    queues = [read_judged_queue(Path(path)) for path in args.queues]
    outcome = merge_judgments(
        Path(args.qrels),
        [judgment for queue in queues for judgment in queue.judgments],
        out=Path(args.output) if args.output else None,
        format=args.format,
    )
    skipped = sum(queue.skipped for queue in queues)
    for line in describe_merge(outcome, queues=len(queues), skipped=skipped):
        print(line, file=out)
    return EXIT_OK


def _datasets_fetch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import os

    from retrieval_gate.datasets.fetch import MIRROR_ENV, fetch

    result = fetch(
        args.name,
        args.dir,
        force=args.force,
        mirror=os.environ.get(MIRROR_ENV) or None,
        progress=None if args.quiet else err,
    )
    state = "already complete, kept (--force fetches again)" if result.kept else "written"
    out.write(f"{result.path}: {result.name} {state}; {result.counts.describe()}\n")
    return EXIT_OK


def _raw(stream: TextIO) -> TextIO:
    """The stream beneath the CLI's InertStream: for data formats and workflow commands."""
    from retrieval_gate.wording import raw_stream

    return raw_stream(stream)


def _report_targets(args: argparse.Namespace, config: GateConfig) -> dict[Format, Path]:
    """Report format -> path: options relative to the working directory, config paths to it."""
    configured = config.report
    choices: tuple[tuple[Format, str | None, str | None], ...] = (
        ("json", args.json, configured.json_path),
        ("markdown", args.markdown, configured.markdown),
        ("junit", args.junit, configured.junit),
        ("html", args.html, configured.html),
    )
    targets: dict[Format, Path] = {}
    for fmt, option, setting in choices:
        if option:
            targets[fmt] = Path(option)
        elif setting:
            targets[fmt] = config.resolve(setting)
    return targets


def _write_reports(record: ResultRecord, targets: Mapping[Format, Path], err: TextIO) -> None:
    """Render and write each report atomically."""
    if not targets:
        return
    from retrieval_gate.files import write_text_atomic
    from retrieval_gate.report import render

    for fmt, path in targets.items():
        write_text_atomic(path, render(record, fmt))
        print(f"retrieval-gate: wrote {path}", file=err)
