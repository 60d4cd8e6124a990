"""`retrieval-gate synthesize`: a day-one labelled set, written by the judge from the corpus."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import add_config_option, add_quiet_option
from retrieval_gate.errors import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.pipeline.synthesize import Tally


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `synthesize`: config, output folder, size, styles, strata, seed, grade."""
    parser = commands.add_parser(
        "synthesize",
        help="write a labelled set of synthetic queries from the corpus with the judge",
        description="Sample documents of the config's corpus (stratified by a metadata field), "
        "have the judge's LLM write a query each document answers, in several styles, and keep "
        "a query when the judge grades its source document relevant and it repeats no kept "
        "query. Writes a BEIR folder (queries.jsonl, qrels/test.tsv: the source document at "
        "grade 3) and a retrieval-gate.yaml that gates the config's retriever on it, sliced "
        "by style. Synthetic queries share words with their source and flatter lexical "
        "retrievers: use them to start, and replace them with real queries as they come.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="the folder to write the labelled set in"
    )
    parser.add_argument(
        "--queries",
        type=_count,
        default=200,
        metavar="N",
        help="queries to keep (default: %(default)s)",
    )
    parser.add_argument(
        "--styles",
        default="keyword,question,long,misspelled",
        help="query styles, comma-separated, from keyword, question, long and misspelled "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--stratify",
        metavar="FIELD",
        help="sample documents in proportion to the values of this corpus metadata field "
        "(default: uniformly)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the sample (default: %(default)s)"
    )
    parser.add_argument(
        "--min-grade",
        type=int,
        choices=(1, 2, 3),
        default=2,
        help="lowest grade of a query against its source document to keep it (default: "
        "%(default)s, the document answers the query)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would be sent, and send nothing"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace a labelled set already in --out"
    )
    parser.add_argument(
        "--pool-judge",
        action="store_true",
        help="then grade the retriever's top k on the new set with the judge (`retrieval-gate "
        "judge` on the written config, with what is left of judge.budget): up to k calls a "
        "query more",
    )
    add_quiet_option(parser)
    parser.set_defaults(handler=run)


def _count(text: str) -> int:
    """The --queries value: 1 to 100,000."""
    if not text.strip().isdigit() or not 1 <= int(text) <= 100_000:
        raise argparse.ArgumentTypeError(f"expected 1 to 100000 queries, got {text!r}")
    return int(text)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Write the set, or with --dry-run say what it would cost; print the counts."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.wording import plural
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.judging.synthesis import parse_styles
    from retrieval_gate.pipeline.synthesize import (
        SET_CONFIG,
        SynthesisOptions,
        estimated_calls,
        relocated_retriever,
        synthesize,
    )

    config = load(args.config)
    options = SynthesisOptions(
        out=Path(args.out),
        queries=args.queries,
        styles=parse_styles(args.styles),
        stratify=args.stratify,
        seed=args.seed,
        min_grade=args.min_grade,
        force=args.force,
    )
    progress = make_progress(err, not args.quiet and not args.dry_run, unit="call")
    result = synthesize(config, options, dry_run=args.dry_run, progress=progress)
    strata = (
        f" in {plural(len(result.strata), 'stratum', 'strata')} of {args.stratify} "
        f"({', '.join(f'{name} {n}' for name, n in result.strata.items())})"
        if args.stratify
        else ""
    )
    if args.dry_run:
        fewest, most = estimated_calls(result.planned, options.queries)
        print(
            f"retrieval-gate: dry run, nothing sent: {options.queries} queries wanted from "
            f"{plural(result.documents, 'document')}{strata}, in {', '.join(options.styles)}; "
            f"at least {fewest} calls (a query and a grade for each one kept, more for each "
            f"one rejected), at most {most}",
            file=err,
        )
        if args.pool_judge and config.judge is not None:
            depth = config.judge.depth or config.k
            print(
                f"retrieval-gate: dry run: --pool-judge then grades up to {depth} pairs of "
                f"each query's top {depth}, {options.queries * depth} calls at most",
                file=err,
            )
        return EXIT_OK
    tally = result.tally
    styles: dict[str, int] = {}
    for query in result.kept:
        styles[query.style] = styles.get(query.style, 0) + 1
    kept_from = len({query.source_doc for query in result.kept})
    print(
        f"retrieval-gate: wrote {options.out}: {plural(len(result.kept), 'query', 'queries')} "
        f"({', '.join(f'{style} {n}' for style, n in styles.items())}) from "
        f"{plural(kept_from, 'document')}{strata}",
        file=err,
    )
    print(
        f"retrieval-gate: {tally.asked} asked for, {tally.written} written; rejected: "
        f"{tally.unusable} unusable answers, {tally.not_relevant} graded below "
        f"{options.min_grade} against their source, {tally.duplicates} near-duplicates; "
        f"{tally.failed} failed requests; {tally.unused} unused (written past the last one "
        f"needed); {plural(tally.calls, 'call')}, cost {result.cost:.4g}",
        file=err,
    )
    for warning in result.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    written = options.out / SET_CONFIG
    if relocated_retriever(config, options.out):
        print(
            f"retrieval-gate: warning: {written} copies the retriever block as written; its "
            f"relative paths now start at {options.out}: check them",
            file=err,
        )
    if result.stopped:
        print(
            f"retrieval-gate: error: stopped: {result.stopped}; the queries kept so far are "
            "written",
            file=err,
        )
        return EXIT_USAGE
    if args.pool_judge:
        return _pool_judge(written, config, result.tally, args.quiet, out, err)
    print(
        "retrieval-gate: next: pool-judge the retriever's top k with "
        f"`retrieval-gate judge -c {written}`, then `retrieval-gate baseline -c {written}`",
        file=err,
    )
    return EXIT_OK


def _pool_judge(
    written: Path, config: GateConfig, tally: Tally, quiet: bool, out: TextIO, err: TextIO
) -> int:
    """`retrieval-gate judge -c WRITTEN`, parsed by judge's own parser, with what is left of
    judge.budget after the queries were written and graded."""
    from retrieval_gate.cli.commands import judge
    from retrieval_gate.pipeline.synthesize import spent

    argv = ["judge", "-c", str(written)] + (["--quiet"] if quiet else [])
    budget = config.judge.budget if config.judge else None
    if budget is not None and budget.calls is not None:
        argv += ["--max-calls", str(max(budget.calls - tally.calls, 1))]
    if budget is not None and budget.cost is not None and config.judge:
        left = budget.cost - spent(config.judge, tally)
        argv += ["--max-cost", repr(max(left, 1e-9))]
    parser = argparse.ArgumentParser(prog="retrieval-gate")
    judge.add_parser(parser.add_subparsers())
    print(f"retrieval-gate: pool-judging: {' '.join(argv)}", file=err)
    code: int = judge.run(parser.parse_args(argv), out, err)
    if code == EXIT_OK:
        print(f"retrieval-gate: next: `retrieval-gate baseline -c {written}`", file=err)
    return code
