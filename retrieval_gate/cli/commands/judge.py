"""`retrieval-gate judge`: grade the pooled top k with an LLM into the judgment layer."""

from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.cli.commands.common import add_config_option, positive_amount, positive_int
from retrieval_gate.errors import EXIT_OK, GateError

if TYPE_CHECKING:
    from retrieval_gate.judging.pool import Pair
    from retrieval_gate.pipeline.judge import Agreement, Judged, JudgePlan

FAILURES_SHOWN = 5


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare `judge`: config, runs to pool, dry run, budget overrides, cache, progress."""
    parser = commands.add_parser(
        "judge",
        help="grade the unjudged pairs of the top k with an LLM (the judge: block)",
        description="Grade (query, document) pairs with the LLM of the config's `judge:` "
        "block: every query's pooled top k of the current run and the reference (the "
        "baseline's top k) that people did not judge, plus every pooled pair of a calibration "
        "sample of human-judged queries. The grades go to a separate judgment layer (JSONL), "
        "never into the qrels; a re-run grades only what is missing.",
    )
    add_config_option(parser)
    parser.add_argument(
        "--run", metavar="FILE", help="pool this saved run (TREC, JSONL) instead of calling "
        "the retriever"
    )  # fmt: skip
    parser.add_argument(
        "--reference-run",
        metavar="FILE",
        help="pool this run as the reference instead of the baseline's top k",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls, tokens and cost grading would spend, and call nothing",
    )
    parser.add_argument(
        "--max-calls",
        type=positive_int,
        metavar="N",
        help="stop before more calls than this (overrides judge.budget.calls)",
    )
    parser.add_argument(
        "--max-cost",
        type=positive_amount,
        metavar="AMOUNT",
        help="stop before spending more (overrides judge.budget.cost)",
    )
    parser.add_argument(
        "--against",
        metavar="QRELS",
        help="also print the judge's agreement with these labels (e.g. ones held back)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Plan, then estimate (--dry-run) or grade; say what was done."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.judging.spend import Budget
    from retrieval_gate.pipeline.judge import estimate, plan_judging, run_judge
    from retrieval_gate.readers import read_qrels

    config = load(args.config)
    progress = None if args.quiet else err
    plan = plan_judging(
        config,
        run_path=args.run,
        reference_path=args.reference_run,
        cache=not args.no_cache,
        progress=progress,
    )
    for warning in plan.warnings:
        print(f"retrieval-gate: warning: {warning}", file=err)
    _describe_plan(plan, out)
    cache_path = config.resolve(config.cache)
    if args.dry_run:
        store = ResultCache(cache_path) if not args.no_cache and cache_path.exists() else None
        try:
            guess = estimate(plan, store)
        finally:
            if store is not None:
                store.close()
        prices = plan.judge.prices
        print(
            f"dry run, nothing called: {guess.calls} calls to make ({guess.cached} answered "
            f"from the cache)\nestimated tokens: {guess.prompt_tokens} prompt (characters / 4, "
            f"an estimate) + {guess.completion_tokens} completion (judge.max_tokens each, at "
            f"most)\nestimated cost: {guess.cost:.4f} (judge.prices per million tokens: input "
            f"{prices.input:g}, output {prices.output:g})",
            file=out,
        )
        if plan.judge.api_key_env:  # what the real run checks first: a dry run says it too
            from retrieval_gate.core.redaction import secret_from_env

            secret_from_env("judge.api_key_env", plan.judge.api_key_env, os.environ)
        return EXIT_OK
    against = read_qrels(args.against).to_dict() if args.against else None
    store = None if args.no_cache else ResultCache(cache_path)
    try:
        judged = run_judge(
            plan,
            budget=Budget.of(plan.judge, args.max_calls, args.max_cost),
            store=store,
            progress=progress,
            against=against,
        )
    finally:
        if store is not None:
            store.close()
    _describe_result(judged, args.against, out, err)
    _refuse_incomplete(judged)
    return EXIT_OK


def _describe_plan(plan: JudgePlan, out: TextIO) -> None:
    sha = plan.prompt.sha256
    print(
        f"judge: {plan.judge.model}, prompt sha256 {sha[:12]} ({plan.prompt.source})\n"
        f"pool: {plan.pool.pooled} pairs from {' and '.join(plan.sources)}; calibration: "
        f"{len(plan.pool.calibration)} human-judged queries\n"
        f"to grade: {len(plan.tasks)} pairs ({plan.in_layer} already in the layer, "
        f"{plan.no_text} with no text)",
        file=out,
    )


def _describe_result(judged: Judged, against: str | None, out: TextIO, err: TextIO) -> None:
    from retrieval_gate.core.wording import one_line

    graded, ledger, trust = judged.graded, judged.ledger, judged.plan.judge.trust
    fresh = len(graded.rows) - graded.cached
    print(
        f"graded: {fresh} pairs, {graded.cached} from the cache, {len(graded.failures)} failed"
        + (f", {graded.left} not graded" if graded.left else "")
        + f"\nspent: {ledger.calls} calls, {ledger.prompt_tokens} prompt + "
        f"{ledger.completion_tokens} completion tokens, cost {ledger.cost:.4f}\n"
        f"layer: {judged.plan.layer} ({judged.rows} rows)",
        file=out,
    )
    if judged.regraded is not None:
        again = judged.regraded
        print(
            f"graded again: {len(again.rows)} pairs, the endpoint answering as another judge "
            "than the one whose rows the layer held for them"
            + (f" ({len(again.failures)} failed)" if again.failures else ""),
            file=out,
        )
    for identity, pairs in judged.judges:
        print(f"answered by: {identity.describe()}: {pairs} pairs of the pool", file=out)
    for pair, error in (*graded.failures, *_regrade_failures(judged))[:FAILURES_SHOWN]:
        print(
            f"retrieval-gate: failed: query {one_line(pair.query_id)}, doc "
            f"{one_line(pair.doc)}: {one_line(error)}",
            file=err,
        )
    print(f"people and the judge: {_agreement(judged.agreement)}", file=out)
    agreement = judged.agreement
    if agreement.pairs < trust.min_pairs or not agreement.kappa >= trust.min_kappa:
        print(
            f"retrieval-gate: warning: the judge is not trusted yet (judge.trust wants "
            f"{trust.min_pairs} pairs and kappa >= {trust.min_kappa:g}): its labels stay "
            "provisional",
            file=err,
        )
    if judged.against is not None:
        print(f"against {against}: {_agreement(judged.against)}", file=out)


def _regrade_failures(judged: Judged) -> tuple[tuple[Pair, str], ...]:
    return () if judged.regraded is None else judged.regraded.failures


def _agreement(agreement: Agreement) -> str:
    if not agreement.pairs:
        return "no pair graded by both"
    kappa = "undefined" if math.isnan(agreement.kappa) else f"{agreement.kappa:.3f}"
    return f"{agreement.pairs} pairs graded by both, quadratic-weighted kappa {kappa}"


def _refuse_incomplete(judged: Judged) -> None:
    """Exit 2 when the budget, an early stop or failures beyond judge.error_budget left
    pairs ungraded; the layer already keeps what was graded."""
    from retrieval_gate.core.wording import one_line

    graded, plan = judged.graded, judged.plan
    resume = "run `retrieval-gate judge` again: it resumes from the layer and the cache"
    mixed = ""
    if len(judged.judges) > 1:
        named = "; ".join(f"{who.describe()} on {pairs}" for who, pairs in judged.judges)
        mixed = (
            f"; the pool's pairs in {plan.layer} are graded by {len(judged.judges)} judges "
            f"({named}): a check that needs both is inconclusive until they are graded "
            "again under one"
        )
    if judged.ledger.stopped:
        raise GateError(
            f"the judging budget ({judged.ledger.budget.describe()}) is spent: "
            f"{len(graded.rows)} of {len(plan.tasks)} pairs graded and kept in {plan.layer}, "
            f"{graded.left} left{mixed}; raise judge.budget (or --max-calls / --max-cost) "
            f"and {resume}"
        )
    if graded.stopped:
        raise GateError(f"{one_line(graded.stopped)}{mixed}; {resume}")
    if mixed:
        raise GateError(
            f"the endpoint answered as another judge{mixed}, and grading them again did not "
            f"finish (the endpoint switching models, or failing); {resume}"
        )
    allowed = math.floor(plan.judge.error_budget * len(plan.tasks) + 1e-9)
    if len(graded.failures) > allowed:
        raise GateError(
            f"{len(graded.failures)} of {len(plan.tasks)} pairs failed, more than "
            f"judge.error_budget allows ({allowed}); the {len(graded.rows)} graded are kept "
            f"in {plan.layer}; fix the cause shown above and {resume}"
        )
