"""`check`'s judge step: the pool pairs new to the layer graded before a human+llm check."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TextIO

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.redaction import redacted
from retrieval_gate.core.wording import one_line, plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import GateError
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.modes.assisted import JudgeCalls
from retrieval_gate.judging.spend import Budget

NOT_ASKED = "--no-judge"


def judge_new_pairs(
    config: GateConfig,
    records: tuple[tuple[Baseline, str], tuple[Baseline, str]],
    dataset: Dataset,
    *,
    asked: bool = True,
    budget: Budget,
    cache: bool = True,
    progress: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeCalls:
    """Grade the pairs of both records' pooled top judge.depth that the layer lacks for the
    configured judge, as `judge` does (its cache, budget and progress), into the layer.
    Nothing it cannot do is an error: without the key (a pull request from a fork gets no
    secrets), with the endpoint failing or the budget spent, the pairs left are said in
    `skipped`, and the gate bounds the checks that depend on them. `asked` False (--no-judge)
    counts the pairs and grades none."""
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.pipeline.judge import plan_for_records, run_judge

    judge = config.judge
    assert judge is not None  # the schema requires a judge with human+llm
    environ = os.environ if environ is None else environ
    plan = plan_for_records(
        config, [(record.top_k, label) for record, label in records], dataset=dataset
    )
    needed = len(plan.tasks)
    missing = JudgeCalls(
        needed=needed, graded=0, calls=0, cached=0, prompt_tokens=0, completion_tokens=0,
        cost=0.0, skipped="",
    )  # fmt: skip
    if not needed:
        return missing
    if not asked:
        return _skipped(missing, NOT_ASKED)
    if judge.api_key_env and not environ.get(judge.api_key_env):
        return _skipped(
            missing,
            f"judge.api_key_env names {judge.api_key_env}, which is not set (a pull request "
            "from a fork gets no secrets)",
        )
    store = ResultCache(config.resolve(config.cache)) if cache else None
    try:
        judged = run_judge(plan, budget=budget, store=store, progress=progress, environ=environ)
    except GateError as error:  # the endpoint refused every call, or could not be reached
        return _skipped(missing, f"the judge failed: {one_line(redacted(str(error)))}")
    finally:
        if store is not None:
            store.close()
    graded, ledger = judged.graded, judged.ledger
    reasons = []
    if ledger.stopped:
        reasons.append(f"the judging budget ({ledger.budget.describe()}) is spent")
    if graded.failures:
        first = one_line(redacted(graded.failures[0][1]))
        reasons.append(f"{plural(len(graded.failures), 'call')} failed (first: {first})")
    if graded.stopped:
        reasons.append(one_line(redacted(graded.stopped)))
    return JudgeCalls(
        needed=needed,
        graded=len(graded.rows),
        calls=ledger.calls,
        cached=graded.cached,
        prompt_tokens=ledger.prompt_tokens,
        completion_tokens=ledger.completion_tokens,
        cost=ledger.cost,
        skipped="; ".join(reasons) if len(graded.rows) < needed else "",
    )


def _skipped(calls: JudgeCalls, reason: str) -> JudgeCalls:
    return dataclasses.replace(calls, skipped=reason)
