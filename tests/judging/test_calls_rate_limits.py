"""A rate-limited endpoint: a 429 slows the whole pool of grading calls, not one call per
Retry-After (against the local chat-completions stand-in; counts, no wall-clock limit)."""

from __future__ import annotations

from typing import Any

from retrieval_gate.config.judge import JudgeConfig, Prices
from retrieval_gate.execution.runner import RunSettings
from retrieval_gate.judging.client import ChatClient
from retrieval_gate.judging.grading import JudgeRetriever, grade_tasks, tasks_of
from retrieval_gate.judging.pool import Pair
from retrieval_gate.judging.prompt import RUBRIC, Prompt
from retrieval_gate.judging.spend import Budget, Ledger
from tests.helpers.fake_llm import FakeJudge, fake_llm, rate_limited

DOCS = [f"doc{index:02d}" for index in range(60)]
TASKS = tasks_of([(Pair("q1", "query", doc), f"{doc} text") for doc in DOCS])


def _grader(url: str, concurrency: int) -> JudgeRetriever:
    config = JudgeConfig(base_url=url, model="judge-1", concurrency=concurrency)
    ledger = Ledger(Prices(input=1.0, output=2.0), Budget(), config.max_tokens)
    return JudgeRetriever(ChatClient(config, {}), Prompt(RUBRIC), ledger)


def _settings(**fields: Any) -> RunSettings:
    return RunSettings(**{"concurrency": 4, "backoff": 0.01, "error_budget": 0.0, **fields})


def _judge() -> FakeJudge:
    return FakeJudge(lambda query, passage: int(passage[3:5]) % 4)


def test_a_429_holds_its_own_call_back_not_the_others() -> None:
    """One 429 asking for 2 s: the other 59 pairs are sent during those 2 s (the pool is
    halved, not stopped), and the refused one only after them."""
    with fake_llm(judge=_judge(), delay=0.005) as llm:
        llm.script(rate_limited(2))
        grader = _grader(llm.base_url, 4)
        graded = grade_tasks(grader, TASKS, _settings(retries=3))
        grader.close()
    assert len(graded.rows) == 60
    assert llm.statuses.count(429) == 1
    refused_at = llm.arrivals[0][0]
    during = [when for when, _ in llm.arrivals[1:] if when < refused_at + 2.0]
    assert len(during) == 59
    assert llm.requests[-1] == llm.requests[0]  # the refused pair's retry


def test_a_429_in_five_halves_the_pool_which_grows_back() -> None:
    """Every fifth request refused, without Retry-After: every pair is graded, the requests
    in flight at the endpoint drop below the configured 4 after a refusal and come back to 4,
    and never exceed it."""
    with fake_llm(judge=_judge(), delay=0.02, refuse_every=5, refusal=rate_limited(None)) as llm:
        grader = _grader(llm.base_url, 4)
        graded = grade_tasks(grader, TASKS, _settings(retries=10))
        grader.close()
    assert len(graded.rows) == 60
    assert not graded.failures
    assert llm.statuses.count(429) == len(llm.requests) // 5
    assert len(llm.requests) == 60 + llm.statuses.count(429)
    assert llm.peak == 4
    first = llm.statuses.index(429)
    after = [active for _, active in llm.arrivals[first + 1 :]]
    dropped = next(index for index, active in enumerate(after) if active <= 2)
    assert max(after[dropped:]) == 4
