"""`retrieval-gate compare`: re-decide a saved result against a baseline."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from retrieval_gate.cli.commands.common import (
    add_config_option,
    add_quiet_option,
    add_report_options,
    report_targets,
    write_reports,
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `compare`: a baseline file, a result file, config and reports."""
    parser = commands.add_parser(
        "compare",
        help="re-decide a saved result against a baseline without calling the retriever",
        description="Re-decide a saved result against a baseline under the config's current "
        "thresholds, print the summary and write the reports, as `check` does: the paths of "
        "the config's `report:` block or, without one, result.json, report.md and "
        "report.html in .retrieval-gate/NAME/ beside the config.",
    )
    parser.add_argument("baseline_file", metavar="BASELINE", help="baseline file")
    parser.add_argument(
        "result_file", metavar="RESULT", help="a JSON result of `check` (or a baseline file)"
    )
    add_config_option(parser)
    add_quiet_option(parser)
    add_report_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Decide a saved result against a baseline and write the reports."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.baseline.file import read_baseline, read_record
    from retrieval_gate.gate.decide import decide
    from retrieval_gate.pipeline.evaluator_scores import with_reference_scores
    from retrieval_gate.pipeline.judge_labels import gate_judge
    from retrieval_gate.report import summary_of, validate_result

    config = load(args.config)
    dataset = load_dataset(
        config.dataset, config.base_dir, keep_unjudged=config.gate.uses_llm_labels
    )
    stored, read = with_reference_scores(
        read_baseline(Path(args.baseline_file)), config, dataset.queries
    )
    result = decide(
        stored,
        read_record(Path(args.result_file)),
        config,
        dataset,
        read.warnings,
        reference=f"baseline {args.baseline_file}",
        judge=gate_judge(config, dataset),
    )
    record = validate_result(result.document())
    write_reports(record, report_targets(args, config), err, quiet=args.quiet)
    out.write(summary_of(record))
    return result.exit_code
