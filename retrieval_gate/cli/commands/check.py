"""`retrieval-gate check`: run, score and compare with the baseline; exit 1 on a regression."""

from __future__ import annotations

import argparse
from typing import TextIO

from retrieval_gate.cli.commands.common import (
    add_config_option,
    add_repeats_option,
    add_report_options,
    add_source_options,
    positive_amount,
    positive_int,
    report_targets,
    write_reports,
)
from retrieval_gate.errors import GateError


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `check`: config, source, baseline, --against, cache, repeats and reports."""
    parser = commands.add_parser(
        "check",
        help="run, score and compare with the baseline; exit 1 on a regression",
        description="Score the retriever (or --run FILE), compare every metric and slice "
        "with the baseline query by query, print the summary and write the reports: the "
        "paths of the config's `report:` block or, without one, result.json (the JSON "
        "result), report.md and report.html in .retrieval-gate/NAME/ beside the config, "
        "NAME being the config's `name` (JUnit XML only with --junit or report.junit). "
        "--json/--markdown/--junit/--html PATH replace one; --no-reports writes only those. "
        "Exit 0 pass, 1 regression or floor breached, 2 bad input or a baseline that "
        "cannot be compared.",
    )
    add_config_option(parser)
    add_source_options(parser)
    parser.add_argument("--baseline", help="baseline file (default: the config's `baseline`)")
    parser.add_argument(
        "--against",
        metavar="REF",
        help="compare with the retriever at the merge-base of HEAD and REF (a branch, tag or "
        "commit), run now in a git worktree, instead of the committed baseline: the "
        "labelled set, metrics and thresholds are the working tree's, the retriever section "
        "and its code each side's own",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        dest="trust_cache",
        help="use cached answers even when nothing proves them current (an http retriever "
        "without retriever.version); the reports count them",
    )
    parser.add_argument(
        "--history",
        metavar="SOURCE",
        help="the main branch's history, for its trend and drift in the reports: a branch of "
        "this repository, or a .jsonl file or folder (default: $RETRIEVAL_GATE_HISTORY_BRANCH, "
        "else retrieval-gate-history when the repository has it)",
    )
    parser.add_argument(
        "--sequential",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run the queries in a seeded random order, in batches, and stop with FAIL as "
        "soon as a gated check's drop is shown past its max_drop (never passes early): for a "
        "retriever that costs money per call; --no-sequential runs every query whatever "
        "gate.sequential says (default: gate.sequential)",
    )
    parser.add_argument(
        "--no-noise-probe",
        action="store_false",
        dest="noise_probe",
        help="with one run a side, do not re-run a sample of the queries to find the "
        "retriever's own noise (gate.noise_probe: false)",
    )
    judging = parser.add_argument_group(
        "the judge (gate.labels: human+llm)",
        "Before deciding, check grades the pairs of both sides' top judge.depth that the "
        "judge's layer lacks, as `judge` does; pairs it cannot grade (no key, the endpoint "
        "down, the budget spent) are bounded, never silently left out.",
    )
    judging.add_argument(
        "--no-judge",
        action="store_false",
        dest="judge",
        help="grade nothing: the pairs the layer lacks are bounded as unjudged",
    )
    judging.add_argument(
        "--max-judge-calls",
        type=positive_int,
        metavar="N",
        help="grade with at most this many calls (overrides judge.budget.calls)",
    )
    judging.add_argument(
        "--max-judge-cost",
        type=positive_amount,
        metavar="AMOUNT",
        help="grade for at most this cost (overrides judge.budget.cost)",
    )
    add_repeats_option(parser)
    add_report_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Gate the retriever against the baseline and write the reports."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.result import error_document
    from retrieval_gate.pipeline.check import check
    from retrieval_gate.report import summary_of, validate_result

    config = load(args.config)
    targets = report_targets(args, config)
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
            sequential=args.sequential,
            judge=args.judge,
            max_judge_calls=args.max_judge_calls,
            max_judge_cost=args.max_judge_cost,
            noise_probe=args.noise_probe,
        )
    except GateError as error:  # the reports say why the gate could not decide
        document = validate_result(error_document(config.name, str(error)))
        write_reports(document, targets, err, quiet=args.quiet)
        raise
    from retrieval_gate.pipeline.history import history_source, with_history

    source, named = history_source(args.history, config)
    # Compact: its top k is written by our encoder alone, to the side file.
    decided, notes = with_history(
        result.document(compact=True), config, source, named=named, dataset=result.dataset
    )
    if notes:
        decided["warnings"] = [*decided["warnings"], *notes]
    record = validate_result(decided)
    write_reports(record, targets, err, quiet=args.quiet)
    if args.against is not None:  # the baseline file is the default: say what stood in
        print(f"retrieval-gate: compared with {result.context.reference}", file=err)
    for warning in [*result.warnings, *notes]:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(summary_of(record))
    return result.exit_code
