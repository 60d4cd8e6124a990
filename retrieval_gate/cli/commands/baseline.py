"""`retrieval-gate baseline`: run the retriever and write the baseline file."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import (
    add_config_option,
    add_repeats_option,
    add_source_options,
)
from retrieval_gate.errors import EXIT_OK

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.core.model import Document
    from retrieval_gate.gate.checks.compare import Comparison
    from retrieval_gate.gate.result import GateResult

SHOWN = 5
"""Checks named in a one-line reason; the rest are counted."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `baseline`: config, source, output, --force or --if-improved, and repeats."""
    parser = commands.add_parser(
        "baseline",
        help="run the retriever and write the baseline file",
        description="Run the retriever (or read --run FILE) and write the baseline. An "
        "existing baseline made with another labelled set, k, metric set or slice definition "
        "is only replaced with --force. With --if-improved (a ratchet) an existing baseline is "
        "replaced only when the run is significantly better on at least one gated check and "
        "no gated check fails or is inconclusive; otherwise the file is kept, the reason is "
        "printed, and the exit code is 0.",
    )
    add_config_option(parser)
    add_source_options(parser)
    parser.add_argument("-o", "--output", help="where to write (default: the config's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="replace an unlike baseline")
    mode.add_argument(
        "--if-improved",
        action="store_true",
        help="replace the baseline only when the gate's own test shows an improvement past a "
        "threshold on a gated check and no gated check fails or is inconclusive",
    )
    parser.add_argument(
        "--no-noise-probe",
        action="store_false",
        dest="noise_probe",
        help="with one run, do not re-run a sample of the queries to find the retriever's own "
        "noise (gate.noise_probe: false); with noise found, the baseline is the mean of "
        "gate.noise_probe.repeats runs",
    )
    add_repeats_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the retriever and write the baseline, keeping an unlike one (and, with
    --if-improved, one the run does not improve on)."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.errors import GateError
    from retrieval_gate.gate.baseline.comparable import comparable_baseline
    from retrieval_gate.gate.baseline.file import read_baseline, write_baseline
    from retrieval_gate.gate.decide import decide
    from retrieval_gate.pipeline.judge_labels import gate_judge
    from retrieval_gate.pipeline.record import record_current

    config = load(args.config)
    path = Path(args.output) if args.output else config.resolve(config.baseline)
    current = record_current(
        config,
        run_path=args.run,
        cache=not args.no_cache,
        refresh_cache=args.refresh_cache,
        progress=None if args.quiet else err,
        repeats=args.repeats or config.gate.repeats,
        known_ids=True,
    )
    probe = None
    probing = config.gate.noise_probe if args.noise_probe else None
    saved = args.run is not None or config.retriever.type == "run_file"  # cannot run again
    if probing and not current.record.repeats and not saved:
        from retrieval_gate.pipeline.noise_probe import probed_run

        progress = None if args.quiet else err
        current, probe = probed_run(config, current, probing, progress=progress)
    record = current.record
    improved: Sequence[Comparison] = ()
    if path.exists() and not args.force:
        # A baseline the gate can still compare with (at most its judgments differ) is
        # replaced; any other is kept unless --force says so.
        try:
            existing = read_baseline(path)
            comparable_baseline(existing, record, current.dataset)
        except GateError as error:
            raise GateError(f"{path} is kept: {error}") from None
        if args.if_improved:
            result = decide(
                existing,
                record,
                config,
                current.dataset,
                current.warnings,
                failed_queries=current.failed_queries,
                reference=f"baseline {path}",
                judge=gate_judge(config, current.dataset),
            )
            improved, reason = ratchet(result)
            if reason:
                _warn(current.warnings, err)
                out.write(f"kept {path}: {reason}\n")
                return EXIT_OK
    write_baseline(record, path)
    _warn(current.warnings, err)
    kept = _keep_unlabelled(config, path, args, current.dataset.corpus, err)
    out.write(
        f"wrote {path}: {len(record.query_ids)} queries, metrics "
        f"{', '.join(record.fingerprints.metrics)}, k = {record.fingerprints.k}"
        + (f", mean of {len(record.repeats.runs)} runs" if record.repeats else "")
        + (
            f" (the noise probe: {len(probe.changed)} of {probe.queries} queries run again "
            "changed their top k)"
            if probe is not None and probe.changed
            else ""
        )
        + (f", commit {record.git_commit[:12]}" if record.git_commit else "")
        + (" (uncommitted changes)" if record.git_dirty else "")
        + "\n"
    )
    if kept:
        out.write(kept)
    if args.if_improved and not improved:
        out.write("no baseline to improve on: written as is\n")
    if improved:
        out.write(f"improved ({len(improved)}): {_checks(improved, _rise)}\n")
    return EXIT_OK


def _keep_unlabelled(
    config: GateConfig,
    path: Path,
    args: argparse.Namespace,
    corpus: Mapping[str, Document] | None,
    err: TextIO,
) -> str:
    """Run the retriever on the unlabelled sample and keep its top k beside the baseline,
    when the config has label-free checks against the reference; what was written, or ""."""
    from retrieval_gate.pipeline.unlabelled import (
        overlap_checked,
        read_unlabelled,
        reference_path,
        run_lists,
        write_reference,
    )

    if not overlap_checked(config):
        return ""
    if args.run is not None:
        err.write(
            "warning: unlabelled: a saved run (--run) answers the labelled queries only; "
            "the label-free reference was not written\n"
        )
        return ""
    assert config.unlabelled is not None  # overlap_checked says so
    queries, _ = read_unlabelled(config, config.unlabelled)
    repeats = args.repeats or config.gate.repeats
    progress = None if args.quiet else err
    runs = [run_lists(config, queries, corpus=corpus, progress=progress)[0] for _ in range(repeats)]
    kept = reference_path(path)
    write_reference(kept, config, runs)
    return (
        f"wrote {kept}: the top {config.k} of {len(queries)} unlabelled queries, "
        f"{repeats} run{'s' if repeats > 1 else ''}\n"
    )


def ratchet(result: GateResult) -> tuple[list[Comparison], str]:
    """The gated checks `result` shows improved (past their threshold, with the gate's
    evidence, the test mirrored), and why the baseline must be kept ("" when it may be
    replaced): no improvement, or a check that fails or is inconclusive. An inconclusive
    check keeps it even when the gate passes it: a ratchet must not adopt a drop past a
    threshold just because too few queries could prove it."""
    improved = [c for c in result.comparisons if c.gated and c.verdict == "improved"]
    worse = [c for c in result.comparisons if c.failed]
    doubtful = [c for c in result.comparisons if c.gated and c.verdict == "inconclusive"]
    doubtful = [c for c in doubtful if not c.failed]
    if worse:
        reason = f"{len(worse)} gated check{'s' if len(worse) > 1 else ''} fail: " + _checks(
            worse, _fall
        )
    elif doubtful:
        reason = (
            f"{len(doubtful)} gated check{'s' if len(doubtful) > 1 else ''} dropped past "
            "the threshold without enough evidence (inconclusive): " + _checks(doubtful, _fall)
        )
    elif not improved:
        best = max(
            (c for c in result.comparisons if c.gated and c.max_drop is not None),
            key=lambda c: (c.delta - (c.max_drop or 0.0), c.slice == "all"),
            default=None,
        )
        reason = "no gated check improved past its threshold with evidence"
        if best is not None:
            reason += f" (closest: {_rise(best)})"
        return [], reason
    else:
        return improved, ""
    if improved:
        reason += f"; improved: {_checks(improved, _rise)}"
    return improved, reason


def _checks(checks: Sequence[Comparison], say: Callable[[Comparison], str]) -> str:
    """Up to SHOWN checks worded by `say`, then how many more."""
    shown = "; ".join(say(c) for c in checks[:SHOWN])
    return shown + (f"; and {len(checks) - SHOWN} more" if len(checks) > SHOWN else "")


def _name(c: Comparison) -> str:
    return c.metric if c.slice == "all" else f"{c.metric} on {c.slice}"


def _interval(c: Comparison) -> str:
    from retrieval_gate.report.filters import points

    if c.ci_low is None or c.ci_high is None:
        return ""
    return f" [{points(c.ci_low, 1)}, {points(c.ci_high, 1)}]"


def _rise(c: Comparison) -> str:
    """`ndcg@10 +4.2 pt [+2.0, +6.4] (threshold 2 pt)`."""
    from retrieval_gate.report.filters import points

    limit = f" (threshold {(c.max_drop or 0.0) * 100:g} pt)" if c.max_drop is not None else ""
    return f"{_name(c)} {points(c.delta, 1)} pt{_interval(c)}{limit}"


def _fall(c: Comparison) -> str:
    """`ndcg@10 on intent=billing -8.1 pt [-11.0, -5.2], regressed`."""
    from retrieval_gate.report.filters import points

    verdict = str(c.verdict).replace("_", " ")
    if c.verdict == "below_floor" and c.floor is not None:
        return f"{_name(c)} {c.current_mean:.4f}, below its floor {c.floor:g}"
    return f"{_name(c)} {points(c.delta, 1)} pt{_interval(c)}, {verdict}"


def _warn(warnings: Sequence[str], err: TextIO) -> None:
    for warning in warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
