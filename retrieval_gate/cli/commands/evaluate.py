"""`retrieval-gate evaluate`: score a run against qrels, trec_eval-exact."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import raw
from retrieval_gate.errors import EXIT_OK, InputError

if TYPE_CHECKING:
    from retrieval_gate.core.qrels import Qrels
    from retrieval_gate.metrics import Scores

DEFAULT_METRICS = ("ndcg@10", "recall@100", "ap@100", "rr@10", "precision@10")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `evaluate`: a qrels file, a run file, metrics and an output format."""
    parser = commands.add_parser(
        "evaluate",
        help="score a run against qrels (trec_eval-exact)",
        description="Score a run against qrels. Every labelled query is scored; a query "
        "missing from the run scores 0 (trec_eval -c). Values equal trec_eval's (the diversity "
        "metrics over --subtopics: ndeval's). auc and gauc are undefined for a query with one "
        "class (shown as -): it is left out of the mean, and stderr says so.",
    )
    parser.add_argument(
        "qrels", nargs="?", help="qrels file: TREC, BEIR .tsv, JSONL or JSON (.gz too)"
    )
    parser.add_argument(
        "run",
        nargs="*",
        metavar="RUN",
        help="run file: TREC, JSONL or BEIR results JSON (.gz too); with --scheduler, the "
        "run's shards split by query (files, folders or quoted globs; Parquet too)",
    )
    parser.add_argument(
        "--impressions",
        metavar="FILE",
        help="an impression log (JSON Lines: query or user, item, score or rank, clicked) as "
        "both the qrels (clicked = 1) and the run, instead of QRELS and RUN; e.g. -m gauc -m auc",
    )
    parser.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        action="extend",
        nargs="+",
        metavar="METRIC",
        help="metric such as ndcg@10, ndcg(gain=linear)@10, ap(rel=2)@100, rbp(p=0.8); "
        f"repeatable (default: {' '.join(DEFAULT_METRICS)}; list: retrieval-gate metrics)",
    )
    parser.add_argument(
        "-q",
        "--per-query",
        action="store_true",
        help="also print each query's values (json always has them)",
    )
    parser.add_argument(
        "-f",
        "--format",
        choices=("table", "json", "trec"),
        default="table",
        help="table (default), json, or trec_eval's measure/qid/value lines",
    )
    parser.add_argument(
        "--subtopics",
        metavar="FILE",
        help="subtopic (intent) qrels, 'topic subtopic docno judgment' lines as the TREC Web "
        "track's diversity qrels (.gz too): needed by alpha_ndcg@k, err_ia@k and the other "
        "diversity metrics",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="score each RUN shard on a Dask cluster: a scheduler's address "
        "(tcp://host:8786) or local:N (N worker processes here); needs "
        "pip install 'retrieval-gate[distributed]'",
    )
    parser.add_argument("--qrels-format", help="qrels format when detection is not wanted")
    parser.add_argument("--run-format", help="run format when detection is not wanted")
    # QRELS and RUN are optional to argparse (--impressions replaces them): `run` checks them
    # and shows this usage, as argparse would.
    parser.set_defaults(handler=run, evaluate_usage=parser.format_usage().strip())


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score the run against the qrels and print the metrics."""
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.metrics.diversity import DIVERSITY
    from retrieval_gate.readers import read_qrels, read_run
    from retrieval_gate.readers.subtopics import read_subtopics

    if args.scheduler is not None or len(args.run) > 1:
        return _run_shards(args, out, err)
    if args.impressions is not None:
        if args.qrels is not None or args.run:
            raise InputError(
                f"evaluate: give --impressions FILE or QRELS RUN, not both\n{args.evaluate_usage}"
            )
        from retrieval_gate.readers.impressions import read_impressions

        log = read_impressions(args.impressions)
        qrels, run = log.judgments.qrels(), log.run
    elif args.qrels is None or not args.run:
        raise InputError(
            f"evaluate: give QRELS and RUN (files), or --impressions FILE\n{args.evaluate_usage}"
        )
    else:
        qrels = read_qrels(args.qrels, args.qrels_format)
        run = None
    subtopics = read_subtopics(args.subtopics) if args.subtopics else None
    metrics = args.metrics or DEFAULT_METRICS
    scores = None
    if run is None and subtopics is None:
        scores = _scored_in_batches(args.run[0], args.run_format, qrels, metrics)
    if scores is None:
        if run is None:
            run = read_run(args.run[0], args.run_format)
        scores = evaluate(run, qrels, metrics, subtopics)
    _print_scores(args, scores, out, err)
    if subtopics is not None and any(spec.name in DIVERSITY for spec in scores.metrics):
        from retrieval_gate.core.wording import one_line, plural

        judged = set(subtopics.query_ids.tolist())
        unjudged = [q for q in scores.query_ids if q not in judged]
        if unjudged:
            shown = ", ".join(one_line(q) for q in unjudged[:5])
            more = f" and {len(unjudged) - 5} more" if len(unjudged) > 5 else ""
            count = plural(len(unjudged), "labelled query", "labelled queries")
            verb = "scores" if len(unjudged) == 1 else "score"
            print(
                f"retrieval-gate: {count} without subtopic judgments {verb} 0 on the diversity "
                f"metrics: {shown}{more}",
                file=err,
            )
    return EXIT_OK


def _run_shards(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score the run's shards on the Dask cluster of `--scheduler`, gathering the values here."""
    if args.scheduler is None:
        raise InputError(
            "evaluate: several RUN files are the shards of one run: give --scheduler local:N "
            f"or a Dask scheduler's address to score them\n{args.evaluate_usage}"
        )
    for option, given in (("--impressions", args.impressions), ("--subtopics", args.subtopics)):
        if given is not None:
            raise InputError(f"evaluate: {option} does not go with --scheduler")
    if args.qrels is None or not args.run:
        raise InputError(
            f"evaluate: give QRELS and the RUN shards with --scheduler\n{args.evaluate_usage}"
        )
    from retrieval_gate.distributed.gather import evaluate_shards
    from retrieval_gate.distributed.shards import expand_shards
    from retrieval_gate.readers import read_qrels

    shards = expand_shards(args.run)
    qrels = read_qrels(args.qrels, args.qrels_format)
    metrics = args.metrics or DEFAULT_METRICS
    scores = evaluate_shards(qrels, shards, metrics, args.scheduler, args.run_format)
    _print_scores(args, scores, out, err)
    return EXIT_OK


def _print_scores(args: argparse.Namespace, scores: Scores, out: TextIO, err: TextIO) -> None:
    """The scores in `--format` on `out`, the coverage notes on `err`."""
    from retrieval_gate.metrics.score_formats import FORMATS, coverage_notes

    # json and trec are data for other tools: written as they are, beneath the InertStream.
    (out if args.format == "table" else raw(out)).write(
        FORMATS[args.format](scores, args.per_query)
    )
    out.flush()
    for note in coverage_notes(scores):
        print(f"retrieval-gate: {note}", file=err)


def _scored_in_batches(
    path: str, run_format: str | None, qrels: Qrels, metrics: Sequence[str]
) -> Scores | None:
    """A TREC run scored a batch of queries at a time (memory set by the batch, not the
    run), or None when it must be read whole."""
    from retrieval_gate.metrics.batches import evaluate_run_file
    from retrieval_gate.readers import detect_run_format

    if (run_format or detect_run_format(Path(path))) != "trec":
        return None
    return evaluate_run_file(path, qrels, metrics)
