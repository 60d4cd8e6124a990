"""Grading through the runner against a local chat-completions server: retries, Retry-After,
timeouts, unreadable answers, the budget and the cache."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.config.judge import JudgeConfig, Prices
from retrieval_gate.core import redaction
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.runner import RunSettings
from retrieval_gate.judging import grading
from retrieval_gate.judging.client import ChatClient
from retrieval_gate.judging.grading import (
    JudgeRetriever,
    grade_tasks,
    judge_fingerprint,
    kept_answer,
    tasks_of,
)
from retrieval_gate.judging.pool import Pair
from retrieval_gate.judging.prompt import MAX_PASSAGE, RUBRIC, Prompt
from retrieval_gate.judging.spend import Budget, Ledger
from tests.helpers.fake_llm import FakeJudge, fake_llm, rate_limited, server_error

TRUTH = {"alpha": 3, "beta": 1, "gamma": 0, "delta": 2}
TASKS = tasks_of([(Pair("q1", "query", doc), f"{doc} text") for doc in TRUTH])
CLOCK = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _judge() -> FakeJudge:
    return FakeJudge(lambda query, passage: TRUTH.get(passage.split()[0]))


_OPEN: list[JudgeRetriever] = []
"""The graders a test made: closed after it (each holds keep-alive connections)."""


@pytest.fixture(autouse=True)
def _close_graders() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _grader(url: str, budget: Budget | None = None, **fields: Any) -> JudgeRetriever:
    config = JudgeConfig(base_url=url, **{"model": "judge-1", **fields})
    ledger = Ledger(Prices(input=1.0, output=2.0), budget or Budget(), config.max_tokens)
    made = JudgeRetriever(ChatClient(config, {}), Prompt(RUBRIC), ledger, clock=lambda: CLOCK)
    _OPEN.append(made)
    return made


def _settings(**fields: Any) -> RunSettings:
    return RunSettings(**{"concurrency": 2, "backoff": 0.0, "error_budget": 0.0, **fields})


def test_pairs_are_graded_with_their_judge_answer_and_confidence() -> None:
    with fake_llm(judge=_judge()) as llm:
        grader = _grader(llm.base_url)
        graded = grade_tasks(grader, TASKS, _settings())
        grader.close()
    grades = {row.doc: row.grade for row in graded.rows}
    assert grades == TRUTH
    row = graded.rows[0]
    assert (row.model, row.prompt_sha256) == ("judge-1", Prompt(RUBRIC).sha256)
    assert row.time == "2026-01-02T03:04:05Z"
    assert row.confidence == pytest.approx(0.95)
    assert row.answer == str(row.grade)
    assert not graded.failures
    assert graded.left == 0
    assert grader.ledger.calls == 4
    assert grader.ledger.prompt_tokens > 400
    assert all(request["top_logprobs"] == 4 for request in llm.requests)


def test_retry_after_holds_calls_back_and_500s_are_retried() -> None:
    with fake_llm(judge=_judge()) as llm:
        llm.script(rate_limited(1), server_error(), server_error())
        grader = _grader(llm.base_url)
        started = time.monotonic()
        graded = grade_tasks(grader, TASKS, _settings(concurrency=1, retries=3))
        grader.close()
    assert time.monotonic() - started >= 0.9  # Retry-After: 1
    assert {row.doc: row.grade for row in graded.rows} == TRUTH
    assert len(llm.requests) == 4 + 3
    assert grader.ledger.calls == 7


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ((200, {"Content-Type": "application/json"}, b"{not json"), "not JSON"),
        ((200, {"Content-Type": "application/json"}, b'{"choices": []}'), "no choices"),
        ((401, {}, b'{"error": {"message": "Incorrect API key"}}'), "HTTP 401"),
        ((404, {}, b'{"error": {"code": "model_not_found"}}'), "HTTP 404"),
    ],
)
def test_a_broken_answer_fails_its_pair_and_keeps_the_others(
    answer: tuple[int, dict[str, str], bytes], shown: str
) -> None:
    with fake_llm(judge=_judge()) as llm:
        llm.script(answer)
        grader = _grader(llm.base_url)
        graded = grade_tasks(grader, TASKS, _settings(concurrency=1, retries=2))
        grader.close()
    assert len(graded.rows) == 3
    [(_pair, error)] = graded.failures
    assert shown in error
    assert len(llm.requests) == 4  # not retried: another attempt cannot help


def test_an_answer_without_a_grade_is_a_failed_pair_its_answer_on_one_line() -> None:
    with fake_llm(judge=_judge()) as llm:
        body = (
            b'{"choices": [{"message": {"content": "::error::I think\\nit is\\u001b[31m'
            b' relevant"}}], "usage": {"prompt_tokens": 100, "completion_tokens": 7}}'
        )
        llm.script((200, {"Content-Type": "application/json"}, body))
        grader = _grader(llm.base_url)
        graded = grade_tasks(grader, TASKS, _settings(concurrency=1))
        grader.close()
    [(_, error)] = graded.failures
    assert "holds no grade" in error
    assert "\n" not in error
    assert "\x1b" not in error
    # The unreadable answer was paid for: its tokens count.
    assert grader.ledger.completion_tokens >= 7


def test_a_hanging_endpoint_times_out_and_the_pair_fails() -> None:
    with fake_llm(judge=_judge(), hold_after=0) as llm:  # no request is answered
        grader = _grader(llm.base_url, timeout=0.3)
        graded = grade_tasks(grader, TASKS[:1], _settings(timeout=0.5, retries=1))
        grader.close()
    [(_, error)] = graded.failures
    assert "0.3s" in error or "timed out" in error
    assert not graded.rows


def test_the_call_budget_stops_before_exceeding_and_keeps_what_was_paid_for() -> None:
    with fake_llm(judge=_judge()) as llm:
        grader = _grader(llm.base_url, Budget(calls=2))
        graded = grade_tasks(grader, TASKS, _settings(concurrency=1))
        grader.close()
    assert len(llm.requests) == 2
    assert len(graded.rows) == 2
    assert graded.left == 2
    assert not graded.failures
    assert grader.ledger.stopped


def test_the_cost_budget_counts_the_endpoints_usage_tokens() -> None:
    with fake_llm(judge=_judge()) as llm:
        # Each call: about 140 prompt tokens at 1 per million, 16 completion at 2 (estimate).
        grader = _grader(llm.base_url, Budget(cost=0.0004))
        graded = grade_tasks(grader, TASKS, _settings(concurrency=1))
        grader.close()
    assert 1 <= len(llm.requests) < 4
    assert grader.ledger.cost <= 0.0004
    assert len(graded.rows) == len(llm.requests)


def test_answers_are_cached_by_model_prompt_query_and_passage(tmp_path: Path) -> None:
    with fake_llm(judge=_judge()) as llm, ResultCache(tmp_path / "cache.sqlite") as cache:
        first = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache)
        again = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache)
        assert len(llm.requests) == 4
        assert again.cached == 4
        assert again.rows == first.rows
        changed = tasks_of([(Pair("q1", "query", "alpha"), "alpha text, edited")])
        grade_tasks(_grader(llm.base_url), changed, _settings(), cache=cache)
        assert len(llm.requests) == 5
        llm.model = "judge-2"  # another model: nothing cached for it
        grade_tasks(_grader(llm.base_url, model="judge-2"), TASKS, _settings(), cache=cache)
        assert len(llm.requests) == 9


def test_a_huge_passage_is_cut_before_it_is_sent_or_keyed() -> None:
    [task] = tasks_of([(Pair("q", "query", "alpha"), "alpha " + "x" * 100_000)])
    assert len(task.passage) == MAX_PASSAGE
    with fake_llm(judge=_judge()) as llm:
        grader = _grader(llm.base_url)
        grade_tasks(grader, [task], _settings())
        grader.close()
    assert len(llm.requests[0]["messages"][1]["content"]) < MAX_PASSAGE + 2000


def test_logprobs_can_be_turned_off_for_an_endpoint_that_refuses_them() -> None:
    with fake_llm(judge=_judge()) as llm:
        config = JudgeConfig(base_url=llm.base_url, model="judge-1", logprobs=False)
        ledger = Ledger(Prices(), Budget(), config.max_tokens)
        grader = JudgeRetriever(ChatClient(config, {}), Prompt(RUBRIC), ledger, logprobs=False)
        graded = grade_tasks(grader, TASKS, _settings())
        grader.close()
    assert all("logprobs" not in request for request in llm.requests)
    assert all(row.confidence is None for row in graded.rows)


def test_with_many_calls_in_flight_the_budget_still_pays_for_exactly_its_calls() -> None:
    tasks = tasks_of([(Pair("q1", "query", f"alpha{i}"), f"alpha text {i}") for i in range(40)])
    with fake_llm(judge=_judge(), delay=0.3) as llm:
        # Refusals settle at once, before the two paid calls return: the run must neither
        # stop early on them nor lose the two grades it paid for.
        grader = _grader(llm.base_url, Budget(calls=2))
        graded = grade_tasks(grader, tasks, _settings(concurrency=12))
        grader.close()
    assert len(llm.requests) == 2
    assert len(graded.rows) == 2
    assert graded.left == 38
    assert not graded.failures


def test_a_row_names_the_model_that_answered_and_the_settings_it_was_asked_with(
    tmp_path: Path,
) -> None:
    with (
        fake_llm(judge=_judge(), answered_as="judge-1-2026", system_fingerprint="fp_1") as llm,
        ResultCache(tmp_path / "cache.sqlite") as cache,
    ):
        graded = grade_tasks(_grader(llm.base_url, max_tokens=4), TASKS, _settings(), cache=cache)
        again = grade_tasks(_grader(llm.base_url, max_tokens=4), TASKS, _settings(), cache=cache)
    assert again.cached == 4
    for rows in (graded.rows, again.rows):  # fresh, and from the cache: the same judge
        assert {
            (r.model, r.answered_by, r.system_fingerprint, r.temperature, r.max_tokens, r.logprobs)
            for r in rows
        } == {("judge-1", "judge-1-2026", "fp_1", 0.0, 4, True)}


def test_a_refreshed_grading_asks_again_and_replaces_the_old_judges_cached_answer(
    tmp_path: Path,
) -> None:
    with (
        fake_llm(judge=_judge(), switch_after=4, switched_bias=1) as llm,
        ResultCache(tmp_path / "cache.sqlite") as cache,
    ):
        first = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache)
        cached = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache)
        assert len(llm.requests) == 4  # the alias now points elsewhere; the cache cannot know
        fresh = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache, refresh=True)
        assert len(llm.requests) == 8
        after = grade_tasks(_grader(llm.base_url), TASKS, _settings(), cache=cache)
        assert len(llm.requests) == 8
    assert {r.answered_by for r in (*first.rows, *cached.rows)} == {"judge-1"}
    assert {r.answered_by for r in (*fresh.rows, *after.rows)} == {"judge-2"}
    assert {r.doc: r.grade for r in after.rows} == {d: min(3, g + 1) for d, g in TRUTH.items()}


def _cached(grade: object, confidence: object = None) -> list[Hit]:
    payload = {"grade": grade, "answer": str(grade), "time": "2026-01-01T00:00:00Z",
               "confidence": confidence}  # fmt: skip
    return [Hit("judgment", None, json.dumps(payload))]


def test_a_cached_judgment_is_read_back_and_a_broken_one_fails_its_pair(tmp_path: Path) -> None:
    # "ok" holds a second hit: the answer's first is the judgment.
    second = Hit("another", None, _cached(0)[0].text)
    entries = {"ok": [*_cached(2), second], "sure": _cached(0, 0.75), "below": _cached(-1),
               "above": _cached(4), "text": _cached("3"), "bool": _cached(True)}  # fmt: skip
    tasks = tasks_of([(Pair("q1", "query", doc), f"{doc} text") for doc in entries])
    # Nothing listens on port 9: a pair the cache misses fails.
    grader = _grader("http://127.0.0.1:9/v1")
    fp = judge_fingerprint(grader.client.config, grader.prompt)
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        # As the runner keys an answer: the judge's fingerprint, the task's text, k = 1.
        cache.put_many([(fp, task.cache_text, 1, entries[task.pair.doc]) for task in tasks])
        graded = grade_tasks(grader, tasks, _settings(retries=0), cache=cache)
    grader.close()
    assert [(r.doc, r.grade, r.confidence) for r in graded.rows] == [
        ("ok", 2, None),
        ("sure", 0, 0.75),
    ]
    assert graded.cached == 6
    assert [(pair.doc, why) for pair, why in graded.failures] == [
        (doc, "an unreadable cached judgment (rm the cache)")
        for doc in ("below", "above", "text", "bool")
    ]
    assert (graded.left, graded.stopped) == (0, "")


def test_an_answer_is_kept_to_2000_characters_and_its_secrets_redacted() -> None:
    assert kept_answer("x" * 2000) == "x" * 2000
    assert kept_answer("x" * 2001) == "x" * 2000 + "..."
    redaction.forget()
    redaction.register("sk-0123456789abcdef")
    assert kept_answer("2 sk-0123456789abcdef") == "2 <redacted>"
    redaction.forget()


def test_a_failed_call_is_counted_and_charged_no_tokens() -> None:
    with fake_llm(judge=_judge()) as llm:
        llm.script(server_error())
        grader = _grader(llm.base_url)
        graded = grade_tasks(grader, TASKS[:1], _settings(retries=0))
        grader.close()
    assert (len(graded.failures), graded.left) == (1, 0)
    ledger = grader.ledger
    assert (ledger.calls, ledger.prompt_tokens, ledger.completion_tokens) == (1, 0, 0)


def test_a_judge_is_idle_once_its_calls_have_returned() -> None:
    with fake_llm(judge=_judge()) as llm:
        grader = _grader(llm.base_url)
        grade_tasks(grader, TASKS, _settings())
        started = time.monotonic()
        grader.wait_idle(5.0)
        grader.close()
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize(("timeout", "waited"), [(30.0, 10.0), (2.5, 2.5)])
def test_an_interrupted_grading_keeps_what_was_graded_after_waiting_at_most_10_s(
    monkeypatch: pytest.MonkeyPatch, timeout: float, waited: float
) -> None:
    waits: list[float] = []

    def first_then_interrupted(judge: JudgeRetriever, queries: list[Query], *_: Any,
                               **__: Any) -> None:  # fmt: skip
        judge.search(queries[0], 1)
        raise KeyboardInterrupt

    monkeypatch.setattr(grading, "run_queries", first_then_interrupted)
    with fake_llm(judge=_judge()) as llm:
        grader = _grader(llm.base_url)
        monkeypatch.setattr(grader, "wait_idle", waits.append)
        graded = grade_tasks(grader, TASKS, _settings(timeout=timeout))
        grader.close()
    assert waits == [waited]
    assert [(row.doc, row.grade) for row in graded.rows] == [("alpha", 3)]
    assert (graded.cached, graded.left, graded.interrupted) == (0, 3, True)


def test_a_run_stopped_by_its_first_failures_says_why_and_one_the_budget_stopped_does_not() -> None:
    tasks = tasks_of([(Pair("q1", "query", f"alpha{i}"), f"alpha text {i}") for i in range(12)])
    with fake_llm(judge=_judge(), api_key="wanted") as llm:  # every call refused: HTTP 401
        grader = _grader(llm.base_url)
        refused = grade_tasks(grader, tasks, _settings(concurrency=1))
        grader.close()
    assert "HTTP 401" in refused.stopped
    assert len(llm.requests) == 10  # the runner's STOP_AFTER
    with fake_llm(judge=_judge(), delay=0.3) as llm:
        grader = _grader(llm.base_url, Budget(calls=2))
        spent = grade_tasks(grader, tasks, _settings(concurrency=12))
        grader.close()
    assert (len(spent.rows), spent.left, spent.stopped) == (2, 10, "")
