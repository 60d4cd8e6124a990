"""`retrieval-gate calibrate`: the judge's calibration card against people's labels."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from retrieval_gate.cli.commands.common import add_config_option
from retrieval_gate.errors import EXIT_OK

if TYPE_CHECKING:
    from retrieval_gate.pipeline.calibrate import Calibration
    from retrieval_gate.pipeline.judge_probes import ProbeReport


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `calibrate`: config, people's labels, runs and output format."""
    parser = commands.add_parser(
        "calibrate",
        help="the LLM judge against people: kappa, alpha, confusion, bias, system-level tau",
        description="Print the calibration card of the configured judge's layer (judge: "
        "block) against the dataset's qrels, or against --qrels FILE (held-back labels): the "
        "pairs both graded, quadratic-weighted Cohen's kappa, ordinal Krippendorff's alpha, "
        "the confusion matrix, the judge's bias per human grade, and whether gate.labels: "
        "human+llm would trust it (judge.trust). With --run files (4 or more), Kendall's tau-b "
        "between their rankings under people's and the judge's labels (the config's first "
        "metric, over the human-judged queries). With --probes, the judge also grades known "
        "pairs rewritten to fool it (irrelevant ones stuffed with the query's words and asking "
        "for a high grade, relevant ones cut short); above judge.probes.max_flip_rate its "
        "labels are provisional, and the verdict is kept beside the layer "
        "(<layer>.probes.json) for `check`. Exit 2 on bad input.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--qrels", help="people's labels to calibrate against (default: the dataset's)"
    )
    parser.add_argument(
        "--run", action="append", default=[], metavar="FILE", help="a run file; repeat it"
    )
    parser.add_argument(
        "--probes",
        action="store_true",
        help="also grade robustness probes of people's pairs with the judge (calls it, at most "
        "judge.probes.max_calls times): the share whose grade flips goes on the card",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="with --probes: neither read nor write the cache"
    )
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Print the card."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.pipeline.calibrate import calibrate

    config = load(args.config)
    store = ResultCache(config.resolve(config.cache)) if args.probes and not args.no_cache else None
    try:
        found = calibrate(config, qrels=args.qrels, runs=args.run, probes=args.probes, store=store)
    finally:
        if store is not None:
            store.close()
    if args.format == "json":
        import json

        out.write(json.dumps(calibration_document(found), indent=2) + "\n")
    else:
        out.write(calibration_text(found))
    return EXIT_OK


def calibration_document(found: Calibration) -> dict[str, Any]:
    """The card as JSON."""
    from dataclasses import asdict

    return {
        "judge": {"model": found.model, "prompt_sha256": found.prompt_sha256},
        "labels": found.labels,
        "trusted": not found.why_not,
        "provisional_reason": found.why_not,
        "trust": {"min_pairs": found.min_pairs, "min_kappa": found.min_kappa},
        "calibration": asdict(found.card),
        "metric": found.metric,
        "human_queries": found.human_queries,
        "runs": [asdict(r) for r in found.runs],
        "probes": None if found.probes is None else probes_document(found.probes),
        "documents_addressing_the_judge": (
            None
            if found.pleading is None
            else [{"doc": doc, "pattern": name} for doc, name in found.pleading]
        ),
    }


def probes_document(report: ProbeReport) -> dict[str, Any]:
    """The probes' part of the card as JSON."""
    from retrieval_gate.judging.probes import FLIP_LEVELS

    return {
        "flip_levels": FLIP_LEVELS,
        "max_flip_rate": report.max_flip_rate,
        "kinds": {
            rate.kind: {"graded": rate.graded, "flipped": rate.flipped, "rate": rate.rate}
            for rate in (*report.rates, report.total)
        },
        "reasked": {
            "pairs": report.reasked.pairs,
            "differ": report.reasked.differ,
            "share": report.reasked.share,
            "mean_abs_difference": report.reasked.mean_moved,
        },
        "calls": report.calls,
        "failed": report.failed,
        "answered_by": [judge.describe() for judge in report.judges],
    }


def pleading_text(found: tuple[tuple[str, str], ...]) -> str:
    """The card's line on corpus documents that address a judge."""
    from retrieval_gate.core.wording import one_line, plural
    from retrieval_gate.lint.engine import some

    if not found:
        return "corpus documents that address a judge: none found (lint rule addresses-the-judge)"
    shown = [f"{one_line(doc)} ({name})" for doc, name in found]
    return f"corpus documents that address a judge: {plural(len(found), 'document')}: {some(shown)}"


def probes_text(report: ProbeReport) -> list[str]:
    """The probes' lines of the card."""
    from retrieval_gate.core.wording import one_line
    from retrieval_gate.judging.probes import CUT, FLIP_LEVELS, STUFFED

    said = {
        CUT: "relevant passages cut to their first half",
        STUFFED: "irrelevant passages stuffed with the query's words, asking for grade 3",
    }

    def share(graded: int, flipped: int, rate: float | None) -> str:
        return "none graded" if rate is None else f"{flipped} of {graded} flipped ({rate:.2f})"

    lines = [
        f"robustness probes (a flip: the grade moves {FLIP_LEVELS} levels the wrong way from "
        "the original's):"
    ]
    lines += [f"  {said[r.kind]}: {share(r.graded, r.flipped, r.rate)}" for r in report.rates]
    total = report.total
    lines.append(
        f"  all: {share(total.graded, total.flipped, total.rate)}; judge.probes.max_flip_rate "
        f"{report.max_flip_rate:g}; {report.calls} calls"
        + (f", {report.failed} not graded" if report.failed else "")
    )
    again = report.reasked
    if again.share is not None and again.mean_moved is not None:
        lines.append(
            f"  re-asked, the cache bypassed: {again.differ} of {again.pairs} pairs graded "
            f"differently ({again.share:.2f}), mean |difference| {again.mean_moved:.2f}"
        )
    if len(report.judges) > 1:
        named = "; ".join(one_line(judge.describe()) for judge in report.judges)
        lines.append(f"  warning: answered by more than one judge ({named})")
    return lines


def calibration_text(found: Calibration) -> str:
    """The card for a terminal."""
    from retrieval_gate.core.wording import one_line

    card = found.card

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    lines = [
        f"judge {one_line(found.model)} (prompt {found.prompt_sha256[:12]}) against "
        f"{one_line(found.labels)}",
        f"pairs graded by both: {card.pairs}",
        f"quadratic-weighted kappa {number(card.kappa)}, ordinal alpha {number(card.alpha)}",
        (
            f"trusted by gate.labels: human+llm (judge.trust: min_pairs {found.min_pairs}, "
            f"min_kappa {found.min_kappa:g})"
            if not found.why_not
            else f"provisional: {found.why_not}"
        ),
        "",
        "confusion: rows people's grade, columns the judge's; the judge's mean bias",
        "grade     0     1     2     3   pairs   bias",
    ]
    for grade, (row, bias) in enumerate(zip(card.confusion, card.bias, strict=True)):
        shown = "n/a" if bias.bias is None else f"{bias.bias:+.2f}"
        cells = "".join(f"{count:>6}" for count in row)
        lines.append(f"{grade:>5}{cells}{bias.pairs:>8}{shown:>7}")
    if found.probes is not None:
        lines += ["", *probes_text(found.probes)]
    if found.pleading is not None:
        lines.append(pleading_text(found.pleading))
    systems = card.systems
    if found.runs:
        lines.append("")
        lines.append(
            f"{found.metric} over the {found.human_queries} human-judged queries "
            "(people's labels, the judge's):"
        )
        lines += [f"  {one_line(r.name)}: {r.human:.4f}, {r.judge:.4f}" for r in found.runs]
    if systems is not None:
        lines.append(
            f"system level: {systems.note}"
            if systems.tau is None
            else f"system level: Kendall's tau-b {systems.tau:.2f} over {systems.runs} runs"
        )
    else:
        lines.append("system level: give 4 or more --run files to rank systems")
    return "\n".join(lines) + "\n"
