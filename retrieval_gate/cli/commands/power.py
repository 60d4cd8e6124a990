"""`retrieval-gate power`: what the labelled set can detect."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import EXIT_OK, InputError

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.gate.baseline.record import Baseline
    from retrieval_gate.gate.modes.assisted import JudgeLabels
    from retrieval_gate.gate.power.spread import DeltaSource


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `power`: config, baseline and output format."""
    parser = commands.add_parser(
        "power",
        help="what the labelled set can detect: each check's detectable drop and P(fail)",
        description="From the baseline's per-query scores, print each gated check (metric x "
        "slice) with its size, level, the true drop it catches with 80% power, the chance it "
        "fails at 0 to 2x its max_drop, the drop it catches when 10% of the queries carry it, and "
        "the queries it needs to catch 1.5x max_drop; checks that cannot be gated are listed "
        "with the reason. The sd of the paired differences is measured between --run and the "
        "baseline, else between consecutive records of main's history, else between the "
        "baseline's repeated runs (a lower bound), with how those runs correlate query by query "
        "and over how many pairs; without any, it is the baseline's sd x sqrt(2 (1 - "
        "correlation)) for runs correlating 0.3 to 0.9, and each figure is stated as its range. "
        "Exit 2 when the config is invalid, the baseline is missing or cannot be compared, or "
        "--run pairs another query set.",
    )
    add_config_option(parser)
    parser.add_argument("--baseline", help="baseline file (default: the config's `baseline`)")
    parser.add_argument(
        "--run",
        metavar="FILE",
        help="a saved run of another version (a run file, or a baseline or `check --json` "
        "result): the sd of its per-query differences with the baseline is the one used",
    )
    parser.add_argument(
        "--history",
        metavar="SOURCE",
        help="main's history, whose consecutive records give the differences' sd: a branch of "
        "this repository, or a .jsonl file or folder (default: as `check` finds it)",
    )
    parser.add_argument(
        "--no-history", action="store_true", help="do not read main's history for the sd"
    )
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.add_argument(
        "--claim",
        metavar="CHANGE",
        help="audit a claimed mean change instead (-2pt, +1.5pt or -0.02): the smallest p-value "
        "it could have, its t p-value and the detectable change, given --n and a spread",
    )
    parser.add_argument("--n", metavar="N", help="with --claim: the number of queries")
    parser.add_argument(
        "--sd", metavar="SD", help="with --claim: per-query sd of the changes (default: that "
        "of --run's or main's history's differences of --metric, else the baseline's sd)",
    )  # fmt: skip
    parser.add_argument(
        "--metric", help="with --claim: the baseline metric whose sd is used (default: the first)"
    )
    # argparse reads `-2pt` as an option unless it looks like a negative number: a drop in
    # points is one, so `--claim -2pt` works as `--claim -0.02` does.
    parser._negative_number_matcher = re.compile(r"^-\d*\.?\d+\s*(pt|pts|points?)?$", re.I)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print what each check can detect."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.baseline.file import read_baseline
    from retrieval_gate.gate.power.estimate import power_report
    from retrieval_gate.pipeline.evaluator_scores import with_reference_scores

    if args.no_history and args.history is not None:
        raise InputError("--history and --no-history exclude each other")
    if args.claim is not None:
        return _run_claim(args, out, err)
    for option in ("n", "sd", "metric"):
        if getattr(args, option) is not None:
            raise InputError(f"--{option} goes with --claim CHANGE")
    config = load(args.config)
    dataset = load_dataset(
        config.dataset, config.base_dir, keep_unjudged=config.gate.uses_llm_labels
    )
    path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
    baseline, read = with_reference_scores(
        read_baseline(path, config=args.config), config, dataset.queries
    )
    spread, notes = _measured(args, config, dataset, baseline)
    notes = [*read.warnings, *notes]
    report = power_report(config, dataset, baseline, path, spread, judge=_judge(config, dataset))
    for warning in [*notes, *report.warnings]:
        print(f"retrieval-gate: warning: {warning}", file=err)
    out.write(report.to_json() if args.format == "json" else report.to_text())
    return EXIT_OK


def _judge(config: GateConfig, dataset: Dataset) -> JudgeLabels | InputError | None:
    """The judge's labels under gate.labels human+llm, or the error reading them raised:
    `power` then gives people's labels' figures and says why."""
    from retrieval_gate.pipeline.judge_labels import gate_judge

    try:
        return gate_judge(config, dataset)
    except InputError as error:
        return error


def _measured(
    args: argparse.Namespace, config: GateConfig, dataset: Dataset, baseline: Baseline
) -> tuple[DeltaSource | None, list[str]]:
    """The differences to read the sd from (--run, else main's history unless --no-history),
    and warnings; None when there are none."""
    from retrieval_gate.pipeline.power_data import history_source, run_source

    if args.run is not None:
        return run_source(config, baseline, args.run)
    if args.no_history:
        return None, []
    from retrieval_gate.history.store import iter_history
    from retrieval_gate.pipeline.history import history_source as where

    source, named = where(args.history, config)
    try:
        found, note = history_source(iter_history(source, config.name), dataset, baseline)
    except InputError as error:
        if named:
            raise
        return None, [f"main's history not read for the sd: {error}"]
    notes = [note] if note else []
    if found is None and named:
        notes.append(
            "main's history has no two consecutive records of this labelled set that differ: "
            "the sd is not measured on it"
        )
    return found, notes


def _run_claim(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print what a claimed change over --n queries can show: with the config's settings and
    the spread of measured differences (--run, else main's history, as `power` reads them)
    or else its baseline's when the config exists; otherwise the defaults and --sd alone."""
    from retrieval_gate.config import DEFAULT_CONFIG
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.checks.compare import ComparisonSettings
    from retrieval_gate.gate.checks.policy import gate_settings
    from retrieval_gate.gate.power.claim import audit, check_sd, parse_change

    change = parse_change(args.claim)
    if args.n is None:
        raise InputError("--claim needs --n N, the number of queries the change is a mean over")
    n = _number("--n", args.n, int)
    sd = None if args.sd is None else check_sd(_number("--sd", args.sd, float))
    settings, source = ComparisonSettings(), "--sd" if sd is not None else ""
    measured = ""
    if args.config != DEFAULT_CONFIG or Path(args.config).exists():
        config = load(args.config)
        settings = gate_settings(config)
        path = Path(args.baseline) if args.baseline else config.resolve(config.baseline)
        metric = args.metric or next(iter(config.metrics), None)
        if sd is None and metric is not None and (args.baseline or path.exists()):
            sd, source, measured = _claim_sd(args, config, path, metric, err)
        elif sd is None:
            print(
                f"retrieval-gate: warning: no baseline at {path}: no per-query spread to test "
                "the claim with; give --sd, or make the baseline",
                file=err,
            )
    elif args.metric is not None or args.baseline is not None:
        raise InputError(f"--metric and --baseline need a config; {DEFAULT_CONFIG} does not exist")
    elif args.run is not None or args.history is not None:
        raise InputError(f"--run and --history need a config; {DEFAULT_CONFIG} does not exist")
    claim = audit(change, n, sd, source, settings, sd_from=measured)
    out.write(claim.to_json() if args.format == "json" else claim.to_text())
    return EXIT_OK


def _number(option: str, text: str, kind: type[int] | type[float]) -> Any:
    """`text` read as `kind`; InputError naming `option` when it is not one."""
    try:
        return kind(text)
    except (ValueError, OverflowError):
        shown = one_line(text)[:60]
        wanted = "whole number" if kind is int else "number"
        raise InputError(f"{option}: {shown!r} is not a {wanted}") from None


def _claim_sd(
    args: argparse.Namespace, config: GateConfig, path: Path, metric: str, err: TextIO
) -> tuple[float, str, str]:
    """The claim's per-query sd of the changes of `metric`: of the differences `power` reads
    (--run, else main's history) when they hold it, else the baseline's sd; where it comes
    from, and what measured differences it rests on ("" for the baseline's)."""
    import numpy as np

    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.baseline.file import read_baseline

    baseline = read_baseline(path, config=args.config)  # once: the sd and the pairs' queries
    sd, source = _baseline_sd(baseline, path, metric)
    name = source.partition(":")[2]
    if args.no_history and args.run is None:  # nothing measured to read: no labelled set
        return sd, source, ""
    dataset = load_dataset(
        config.dataset, config.base_dir, keep_unjudged=config.gate.uses_llm_labels
    )
    found, notes = _measured(args, config, dataset, baseline)
    for note in notes:
        print(f"retrieval-gate: warning: {note}", file=err)
    measured = None if found is None else found.sd(name, np.arange(len(found.query_ids)))
    if found is None or measured is None:
        return sd, source, ""
    return measured, f"{found.kind}:{name}", found.label


def _baseline_sd(baseline: Baseline, path: Path, metric: str) -> tuple[float, str]:
    """The sd of `baseline`'s (read from `path`) per-query scores of `metric`, and where it
    comes from."""
    import numpy as np

    from retrieval_gate.metrics import parse_metric

    try:
        name = str(parse_metric(metric))
    except Exception:
        raise InputError(f"--metric: {one_line(metric)[:60]!r} is not a metric name") from None
    if name not in baseline.scores:
        known = ", ".join(sorted(baseline.scores))
        raise InputError(f"--metric: the baseline has no {name} scores; it has {known}")
    scores = baseline.scores[name]
    scores = scores[~np.isnan(scores)]  # a query it is undefined for (auc) has no value
    if len(scores) < 2:
        raise InputError(f"{path}: fewer than 2 queries of {name}: no spread; give --sd")
    return float(scores.std(ddof=1)), f"baseline:{name}"
