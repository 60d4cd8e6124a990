"""The query runner, against small in-process retrievers that misbehave on purpose."""

from __future__ import annotations

import itertools
import random
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters.interface import Retriever
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.errors import GateError, RetrieverError
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.progress import PlainProgress, TqdmProgress, make_progress
from retrieval_gate.execution.runner import (
    QueryFailure,
    RunResult,
    RunSettings,
    check_budget,
    run_queries,
    save_trec,
)
from retrieval_gate.metrics import evaluate
from retrieval_gate.readers import read_run
from tests.helpers.cli import Terminal
from tests.helpers.waiting import GUARD, wait_for

FAST = RunSettings(concurrency=4, timeout=5.0, retries=3, backoff=0.001, max_backoff=0.005)


def queries(n: int, prefix: str = "q") -> list[Query]:
    return [Query(f"{prefix}{i:03d}", f"text of {prefix}{i:03d}") for i in range(n)]


class Echo:
    """Answers `k` hits `<query id>-d<i>` with descending scores, optionally slowly; counts
    calls and the most calls in flight at once."""

    def __init__(self, *, delay: float = 0.0, batch: int = 1, name: str = "echo") -> None:
        self.delay = delay
        self.batch = batch
        self.name = name
        self.calls = 0
        self.batch_calls = 0
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def describe(self) -> Mapping[str, Any]:
        return {"type": "test", "name": self.name}

    def answer(self, query: Query, k: int) -> list[Hit]:
        return [Hit(f"{query.id}-d{i}", float(k - i)) for i in range(k)]

    def search(self, query: Query, k: int) -> list[Hit]:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            return self.answer(query, k)
        finally:
            with self.lock:
                self.active -= 1

    def batch_size(self) -> int:
        return self.batch

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        with self.lock:
            self.batch_calls += 1
        return [self.answer(query, k) for query in queries]

    def close(self) -> None:
        pass


class Flaky(Echo):
    """Fails each query `failures` times with a retryable error, then answers."""

    def __init__(self, failures: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failures = failures
        self.attempts: dict[str, list[float]] = {}

    def answer(self, query: Query, k: int) -> list[Hit]:
        with self.lock:
            times = self.attempts.setdefault(query.id, [])
            times.append(time.monotonic())
            count = len(times)
        if count <= self.failures:
            raise RetrieverError(f"HTTP 503 (attempt {count})", retryable=True)
        return super().answer(query, k)


class Picky(Echo):
    """Raises `errors[query id]` for those queries, answers the rest."""

    def __init__(self, errors: Mapping[str, BaseException], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.errors = errors

    def answer(self, query: Query, k: int) -> list[Hit]:
        if query.id in self.errors:
            raise self.errors[query.id]
        return super().answer(query, k)


class Canned(Echo):
    """Returns fixed answers, whatever k is."""

    def __init__(self, answers: Mapping[str, list[Any]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answers = answers

    def answer(self, query: Query, k: int) -> list[Hit]:
        return list(self.answers[query.id])


class Hanging(Echo):
    """Blocks on `release` for the queries in `hang` (all of them when None)."""

    def __init__(self, hang: set[str] | None, release: threading.Event, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hang = hang
        self.release = release

    def answer(self, query: Query, k: int) -> list[Hit]:
        if self.hang is None or query.id in self.hang:
            self.release.wait(GUARD)  # the fixture releases it
        return super().answer(query, k)


class Gathering(Echo):
    """Holds its first calls until `width` of them are in flight at once (however slowly
    the machine starts them), then answers each after `delay` as Echo does."""

    def __init__(self, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.width = width
        self.gathered = threading.Event()

    def answer(self, query: Query, k: int) -> list[Hit]:
        with self.lock:
            if self.active >= self.width:
                self.gathered.set()
        self.gathered.wait(GUARD)  # fewer in flight than `width` fails below
        return super().answer(query, k)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets abandoned calls finish once the test is over, so no thread outlives it for long."""
    event = threading.Event()
    yield event
    event.set()


def test_retrievers_satisfy_the_protocol() -> None:
    assert isinstance(Echo(), Retriever)


def test_every_query_answered_in_a_run() -> None:
    retriever = Echo()
    result = run_queries(retriever, queries(30), 5, FAST)
    assert result.failures == ()
    assert result.calls == 30
    assert retriever.calls == 30
    assert result.cached == 0
    assert list(result.hits) == sorted(f"q{i:03d}" for i in range(30))
    assert result.hits["q007"] == tuple(Hit(f"q007-d{i}", float(5 - i)) for i in range(5))
    assert len(result.run) == 150
    assert result.run.to_dict()["q007"] == {f"q007-d{i}": float(5 - i) for i in range(5)}
    assert result.fingerprint
    assert result.elapsed > 0


def test_concurrency_is_bounded_and_used() -> None:
    retriever = Gathering(4, delay=0.02)
    settings = RunSettings(concurrency=4, timeout=5.0)
    result = run_queries(retriever, queries(40), 3, settings)
    assert result.failures == ()
    assert retriever.max_active == 4  # four calls were in flight at once, never more


def test_concurrency_one_is_serial() -> None:
    retriever = Echo(delay=0.005)
    run_queries(retriever, queries(10), 3, RunSettings(concurrency=1))
    assert retriever.max_active == 1


def test_retryable_errors_are_retried_then_answered() -> None:
    retriever = Flaky(failures=2)
    result = run_queries(retriever, queries(5), 3, FAST)
    assert result.failures == ()
    assert result.calls == 15
    assert all(len(times) == 3 for times in retriever.attempts.values())


def test_retries_exhausted_record_last_error_and_attempts() -> None:
    retriever = Flaky(failures=100)
    settings = RunSettings(concurrency=2, retries=2, backoff=0.001, max_backoff=0.002)
    result = run_queries(retriever, queries(3), 3, settings)
    assert result.calls == 9
    assert result.failures == tuple(
        QueryFailure(f"q{i:03d}", "HTTP 503 (attempt 3)", 3) for i in range(3)
    )
    assert len(result.run.query_ids) == 0


def test_backoff_waits_are_bounded_by_max_backoff() -> None:
    # Uncapped, the waits would be drawn from up to 10, 20, 40 and 80 s: a second of slack
    # for a loaded machine still tells the two apart.
    retriever = Flaky(failures=4)
    settings = RunSettings(concurrency=1, retries=4, backoff=10.0, max_backoff=0.03)
    result = run_queries(retriever, queries(2), 3, settings)
    assert result.failures == ()
    for times in retriever.attempts.values():
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert len(gaps) == 4
        assert max(gaps) < 0.03 + 1.0


def test_backoff_delay_is_full_jitter_capped_and_seeded() -> None:
    settings = RunSettings(backoff=0.5, max_backoff=8.0)
    rng = random.Random(0)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (3, 4.0), (4, 8.0), (10, 8.0), (5000, 8.0)]:
        delays = [settings.retry.delay(attempt, rng) for _ in range(200)]
        assert min(delays) >= 0.0
        assert max(delays) <= ceiling
        assert max(delays) > ceiling / 2  # spread over the whole range, not a fixed wait
    first = [settings.retry.delay(2, random.Random(7)) for _ in range(3)]
    assert first == [settings.retry.delay(2, random.Random(7)) for _ in range(3)]


def test_non_retryable_error_fails_at_once() -> None:
    retriever = Picky({"q001": RetrieverError("HTTP 400: bad request", retryable=False)})
    result = run_queries(retriever, queries(3), 3, FAST)
    assert result.failures == (QueryFailure("q001", "HTTP 400: bad request", 1),)
    assert result.calls == 3
    assert sorted(result.hits) == ["q000", "q002"]
    assert list(result.run.query_ids) == ["q000", "q002"]


def test_unexpected_exceptions_are_failures_and_hide_nothing() -> None:
    errors: dict[str, BaseException] = {
        "q004": ZeroDivisionError("division by zero"),
        "q002": KeyError("missing"),
        "q009": RuntimeError(),
    }
    result = run_queries(Picky(errors), queries(12), 3, FAST)
    assert result.failures == (
        QueryFailure("q002", "KeyError: 'missing'", 1),
        QueryFailure("q004", "ZeroDivisionError: division by zero", 1),
        QueryFailure("q009", "RuntimeError", 1),
    )
    assert len(result.hits) == 9


def test_plain_timeout_error_is_retryable() -> None:
    result = run_queries(Picky({"q000": TimeoutError("read timed out")}), queries(1), 3, FAST)
    assert result.failures == (QueryFailure("q000", "TimeoutError: read timed out", 4),)


def test_failures_are_sorted_by_query_id() -> None:
    ids = ["q017", "q003", "q011", "q000", "q008"]
    errors = {query_id: RetrieverError(f"no {query_id}") for query_id in ids}
    result = run_queries(Picky(errors, delay=0.001), queries(20), 3, FAST)
    assert [failure.query_id for failure in result.failures] == sorted(ids)
    assert [failure.error for failure in result.failures] == [f"no {i}" for i in sorted(ids)]


def test_hanging_call_is_abandoned_as_a_retryable_timeout(release: threading.Event) -> None:
    retriever = Hanging({"q001"}, release)
    settings = RunSettings(concurrency=2, timeout=0.5, retries=2, backoff=0.001)
    result = run_queries(retriever, queries(6), 3, settings)
    # The run ended without waiting for the three hung calls: they all come to hang (a
    # loaded machine may start the last one late), and none has finished.
    assert wait_for(lambda: retriever.active == 3), retriever.active
    assert result.failures == (QueryFailure("q001", "timed out after 0.5s", 3),)
    assert result.calls == 6 + 2
    assert len(result.hits) == 5


def test_stuck_retriever_ends_the_run(release: threading.Event) -> None:
    retriever = Hanging(None, release)
    settings = RunSettings(concurrency=1, timeout=0.02, retries=3, backoff=0.0)
    result = run_queries(retriever, queries(10), 3, settings)
    # 16 abandoned calls at once is the limit for one worker: a first attempt for each of the
    # 10 queries, then a retry for 6 of them (retries join the back of the queue).
    assert result.calls == 16
    assert [failure.attempts for failure in result.failures] == [2] * 6 + [1] * 4
    assert {failure.error for failure in result.failures} == {
        "stopped: 16 calls are still running past the 0.02s timeout; the retriever looks stuck"
    }


def test_unscored_hits_keep_the_retrievers_order() -> None:
    answers = {"q000": [Hit("d3"), Hit("d1"), Hit("d2")]}
    result = run_queries(Canned(answers), queries(1), 10, FAST)
    assert result.run.to_dict() == {"q000": {"d3": -1.0, "d1": -2.0, "d2": -3.0}}
    # With equal scores the engine would rank d3, d2, d1 (doc id descending): rr would be 1/3.
    scores = evaluate(result.run, {"q000": {"d1": 1}}, ["rr@10"])
    assert scores.mean()["rr@10"] == 0.5


def test_partly_scored_answer_is_ranked_as_returned() -> None:
    answers = {"q000": [Hit("a", 1.0), Hit("b"), Hit("c", 5.0)]}
    result = run_queries(Canned(answers), queries(1), 10, FAST)
    assert result.run.to_dict() == {"q000": {"a": -1.0, "b": -2.0, "c": -3.0}}


def test_scores_are_kept_and_converted_to_float() -> None:
    answers = {"q000": [Hit("a", 2), Hit("b", 7.5)]}
    result = run_queries(Canned(answers), queries(1), 10, FAST)
    assert result.hits["q000"] == (Hit("a", 2.0), Hit("b", 7.5))
    assert isinstance(result.hits["q000"][0].score, float)
    assert result.run.to_dict() == {"q000": {"a": 2.0, "b": 7.5}}


def test_duplicates_keep_first_and_answers_are_cut_to_k() -> None:
    answers = {
        "q000": [Hit("d1", 9.0), Hit("d2", 8.0), Hit("d1", 7.0), Hit("d3", 6.0)],
        "q001": [Hit(f"d{i}") for i in range(20)],
    }
    result = run_queries(Canned(answers), queries(2), 3, FAST)
    assert result.hits["q000"] == (Hit("d1", 9.0), Hit("d2", 8.0), Hit("d3", 6.0))
    assert result.hits["q001"] == (Hit("d0"), Hit("d1"), Hit("d2"))
    assert len(result.run) == 6


def test_empty_answer_is_an_empty_query_not_a_failure() -> None:
    result = run_queries(Canned({"q000": [], "q001": [Hit("x")]}), queries(2), 3, FAST)
    assert result.failures == ()
    assert result.hits["q000"] == ()
    assert list(result.run.query_ids) == ["q000", "q001"]
    assert result.run.to_dict()["q000"] == {}


def test_malformed_answers_are_non_retryable_failures() -> None:
    answers: dict[str, list[Any]] = {
        "q000": ["d1", "d2"],
        "q001": [Hit(17)],  # type: ignore[arg-type]
        "q002": [Hit("ok", "high")],  # type: ignore[arg-type]
    }
    result = run_queries(Canned(answers), queries(3), 3, FAST)
    assert result.calls == 3
    errors = {failure.query_id: failure.error for failure in result.failures}
    assert errors == {
        "q000": "hit 1 is 'd1', not a Hit",
        "q001": "hit 1 has doc id 17; it must be a string",
        "q002": "hit 1 ('ok') has score 'high'; it must be a number",
    }


def test_batches_call_search_batch_per_batch() -> None:
    retriever = Echo(batch=4)
    result = run_queries(retriever, queries(10), 2, FAST)
    assert retriever.batch_calls == 3
    assert retriever.calls == 0
    assert result.calls == 3
    assert len(result.hits) == 10
    assert result.hits["q009"] == (Hit("q009-d0", 2.0), Hit("q009-d1", 1.0))


class ShortBatch(Echo):
    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        answers = super().search_batch(queries, k)
        return answers[:-1] if any(query.id == "q005" for query in queries) else answers


def test_batch_with_wrong_answer_count_fails_its_queries() -> None:
    result = run_queries(ShortBatch(batch=3), queries(9), 2, FAST)
    assert [failure.query_id for failure in result.failures] == ["q003", "q004", "q005"]
    assert result.failures[0].error == (
        "search_batch returned 2 answers for 3 queries; it must return one list of hits per "
        "query, in order (in a batch of 3 queries)"
    )
    assert result.failures[0].attempts == 1
    assert len(result.hits) == 6


def test_cache_answers_second_run_and_refresh_calls_again(tmp_path: Path) -> None:
    path = tmp_path / ".retrieval-gate" / "cache.sqlite"
    items = queries(20)
    with ResultCache(path) as cache:
        first = run_queries(Echo(), items, 5, FAST, cache=cache)
        assert (first.calls, first.cached) == (20, 0)

        retriever = Echo()
        second = run_queries(retriever, items, 5, FAST, cache=cache)
        assert (second.calls, second.cached, retriever.calls) == (0, 20, 0)
        assert second.hits == first.hits
        assert second.run.to_dict() == first.run.to_dict()

        refreshed = run_queries(Echo(), items, 5, FAST, cache=cache, refresh_cache=True)
        assert (refreshed.calls, refreshed.cached) == (20, 0)

        other_k = run_queries(Echo(), items, 4, FAST, cache=cache)
        assert (other_k.calls, other_k.cached) == (20, 0)
        other_retriever = run_queries(Echo(name="other"), items, 5, FAST, cache=cache)
        assert (other_retriever.calls, other_retriever.cached) == (20, 0)


def test_failures_are_not_cached(tmp_path: Path) -> None:
    items = queries(5)
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        errors = {"q003": RetrieverError("HTTP 400")}
        first = run_queries(Picky(errors), items, 5, FAST, cache=cache)
        assert [failure.query_id for failure in first.failures] == ["q003"]
        second = run_queries(Picky({}), items, 5, FAST, cache=cache)
        assert (second.calls, second.cached) == (1, 4)
        assert second.failures == ()


def test_error_budget_boundaries() -> None:
    failing = {f"q{i:03d}": RetrieverError("HTTP 400") for i in (10, 20)}
    result = run_queries(Picky(failing), queries(100), 3, FAST)
    assert len(result.failures) == 2
    assert not result.within_budget(100, 0.01)  # 2 of 100 > 1%
    assert result.within_budget(100, 0.02)
    assert result.within_budget(200, 0.01)  # 2 of 200 = 1%
    assert not result.within_budget(199, 0.01)
    assert not result.within_budget(100, 0.0)
    one = run_queries(Picky({"q050": RetrieverError("x")}), queries(100), 3, FAST)
    assert one.within_budget(100, 0.01)  # 1 of 100 passes
    check_budget(one, 100, 0.01)
    with pytest.raises(GateError) as caught:
        check_budget(result, 100, 0.01)
    message = str(caught.value)
    assert message.startswith("2 of 100 queries failed (2.0%), more than the error budget of 1%")
    assert "  q010: HTTP 400\n  q020: HTTP 400" in message
    assert caught.value.exit_code == 2


def test_budget_arithmetic_survives_float_rounding() -> None:
    failing = {f"q{i:03d}": RetrieverError("x") for i in range(29)}
    # A budget of 29%: the first 29 failing the same way are no reason to stop early.
    result = run_queries(Picky(failing), queries(100), 3, replace(FAST, error_budget=0.29))
    assert not result.stopped
    assert result.within_budget(100, 0.29)  # 0.29 * 100 == 28.999999999999996
    assert not result.within_budget(100, 0.28)
    assert result.within_budget(29, 1.0)


def test_the_first_ten_failing_the_same_way_stop_the_run() -> None:
    down = RetrieverError("HTTP 503: connection refused", retryable=True)
    retriever = Picky({query.id: down for query in queries(50)})
    result = run_queries(retriever, queries(50), 3, FAST)
    # The first 10 queries, each tried 1 + 3 times; no other query was started.
    assert retriever.calls == result.calls == 40
    assert len(result.failures) == 10
    assert [f.query_id for f in result.failures] == [f"q{i:03d}" for i in range(10)]
    assert result.stopped == (
        "the first 10 queries all failed the same way: HTTP 503: connection refused; stopped "
        "(nothing was judged)"
    )
    with pytest.raises(GateError) as caught:
        check_budget(result, 50, FAST.error_budget)
    assert str(caught.value) == result.stopped
    assert caught.value.exit_code == 2


def test_a_larger_error_budget_needs_more_failures_to_stop() -> None:
    retriever = Picky({query.id: RetrieverError("down") for query in queries(40)})
    settings = replace(FAST, concurrency=1, error_budget=0.5)  # 20 of 40 may fail
    result = run_queries(retriever, queries(40), 3, settings)
    assert retriever.calls == 21  # one failure past the budget, so the verdict is the same
    assert result.stopped.startswith("the first 21 queries all failed the same way: down;")


def test_batches_stop_after_the_batch_that_reaches_ten() -> None:
    retriever = Picky({query.id: RetrieverError("down") for query in queries(40)}, batch=4)
    result = run_queries(retriever, queries(40), 3, replace(FAST, concurrency=1))
    assert retriever.batch_calls == 3
    assert result.stopped == (
        "the first 12 queries all failed the same way: down (in a batch of 4 queries); stopped "
        "(nothing was judged)"
    )


@pytest.mark.parametrize(
    "errors",
    [
        # One success among the failures: every query runs.
        {f"q{i:03d}": RetrieverError("down") for i in range(30) if i != 4},
        # The first to settle succeed, then everything fails.
        {f"q{i:03d}": RetrieverError("down") for i in range(2, 30)},
        # Failures that differ: every query runs.
        {f"q{i:03d}": RetrieverError(f"down ({i % 2})") for i in range(30)},
    ],
    ids=["one-success", "late-failures", "different-errors"],
)
def test_mixed_or_different_failures_never_stop_early(errors: dict[str, BaseException]) -> None:
    retriever = Picky(errors)
    result = run_queries(retriever, queries(30), 3, replace(FAST, concurrency=2))
    assert retriever.calls == 30
    assert not result.stopped
    assert len(result.failures) == len(errors)
    with pytest.raises(GateError, match=rf"^{len(errors)} of 30 queries failed"):
        check_budget(result, 30, FAST.error_budget)


def test_no_early_stop_when_nothing_is_left_to_spare() -> None:
    retriever = Picky({query.id: RetrieverError("down") for query in queries(10)})
    result = run_queries(retriever, queries(10), 3, FAST)
    assert (retriever.calls, len(result.failures), result.stopped) == (10, 10, "")


def test_budget_message_lists_the_first_five() -> None:
    failing = {f"q{i:03d}": RetrieverError("down") for i in range(8)}
    result = run_queries(Picky(failing), queries(10), 3, FAST)
    with pytest.raises(GateError) as caught:
        check_budget(result, 10, 0.05)
    message = str(caught.value)
    assert "8 of 10 queries failed (80.0%)" in message
    assert "budget of 5% (at most 0)" in message
    assert "  q004: down\n  ... and 3 more" in message
    assert "q005" not in message


def test_no_queries_is_an_empty_run() -> None:
    result = run_queries(Echo(), [], 10, FAST)
    assert (len(result.run), result.calls, result.failures) == (0, 0, ())
    assert result.within_budget(0, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"timeout": 0}, "timeout must be more than 0"),
        ({"retries": -1}, "retries must be 0 or more"),
        ({"error_budget": 1.5}, "error_budget must be within"),
    ],
)
def test_settings_are_checked(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(GateError, match=text):
        RunSettings(**kwargs)


def test_duplicate_query_ids_and_bad_k_are_refused() -> None:
    with pytest.raises(GateError, match="query id 'a' appears twice"):
        run_queries(Echo(), [Query("a", "x"), Query("a", "y")], 3, FAST)
    with pytest.raises(GateError, match="k must be at least 1"):
        run_queries(Echo(), queries(1), 0, FAST)


def test_nothing_prints_without_progress(capsys: pytest.CaptureFixture[str]) -> None:
    run_queries(Picky({"q001": RetrieverError("x")}), queries(5), 3, FAST)
    assert capsys.readouterr() == ("", "")


def test_plain_progress_lines(tmp_path: Path) -> None:
    stream = StringIO()
    failing = {f"q{i:03d}": RetrieverError("x") for i in (10, 11)}
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        run_queries(Echo(), queries(5), 3, FAST, cache=cache)
        progress = PlainProgress(stream, every_seconds=0.0)
        run_queries(Picky(failing), queries(20), 3, FAST, cache=cache, progress=progress)
    lines = stream.getvalue().splitlines()
    pattern = r"retrieval-gate: (\d+)/20 queries \((\d+) failed, (\d+) cached\)"
    assert all(re.match(pattern, line) for line in lines)
    assert lines[0] == "retrieval-gate: 5/20 queries (0 failed, 5 cached)"
    assert re.fullmatch(pattern + r" in \d+\.\ds", lines[-1])
    assert lines[-1].startswith("retrieval-gate: 20/20 queries (2 failed, 5 cached) in ")
    done = [int(re.match(pattern, line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert done == sorted(done)
    steps = itertools.pairwise(done[:-1])  # the last line comes at the end, whatever the step
    assert all(later - earlier >= 2 for earlier, later in steps)


def test_plain_progress_waits_for_the_rarer_of_share_and_time() -> None:
    now = [0.0]
    stream = StringIO()
    progress = PlainProgress(stream, clock=lambda: now[0])
    progress.start(100)
    for _ in range(50):  # half the queries in 5 s: 10% steps, but never 10 s apart
        now[0] += 0.1
        progress.advance(1)
    assert stream.getvalue() == ""
    now[0] += 10.0
    progress.advance(1)
    assert stream.getvalue() == "retrieval-gate: 51/100 queries (0 failed, 0 cached)\n"
    now[0] += 20.0
    progress.advance(5, failed=True)  # 10 s passed but only 5%
    assert stream.getvalue().count("\n") == 1
    progress.close()
    assert stream.getvalue().splitlines()[-1] == (
        "retrieval-gate: 56/100 queries (5 failed, 0 cached) in 35.0s"
    )


def test_make_progress_picks_by_terminal() -> None:
    assert make_progress(StringIO(), False) is None
    assert isinstance(make_progress(StringIO(), True), PlainProgress)
    assert isinstance(make_progress(Terminal(), True), TqdmProgress)


def test_tqdm_progress_draws_a_bar() -> None:
    stream = StringIO()
    run_queries(Echo(), queries(10), 3, FAST, progress=TqdmProgress(stream))
    assert "retrieval-gate" in stream.getvalue()
    assert "10/10" in stream.getvalue()


def trec_result() -> RunResult:
    answers = {
        "q002": [Hit("b", 0.5), Hit("a", 0.25)],
        "q000": [Hit("z"), Hit("y")],
        "q001": [],
    }
    return run_queries(Canned(answers), queries(3), 10, FAST)


def test_save_trec_writes_sorted_queries_in_retriever_order(tmp_path: Path) -> None:
    path = tmp_path / "out" / "run.trec"
    save_trec(trec_result(), path, "my-run")
    assert path.read_text(encoding="utf-8") == (
        "q000 Q0 z 1 -1.0 my-run\n"
        "q000 Q0 y 2 -2.0 my-run\n"
        "q002 Q0 b 1 0.5 my-run\n"
        "q002 Q0 a 2 0.25 my-run\n"
    )
    assert read_run(path).to_dict() == {
        "q000": {"z": -1.0, "y": -2.0},
        "q002": {"b": 0.5, "a": 0.25},
    }
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.trec"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_save_trec_replaces_atomically_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("old\n", encoding="utf-8")
    save_trec(trec_result(), path, "v2")
    assert path.read_text(encoding="utf-8").endswith("a 2 0.25 v2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.trec"]

    blocked = tmp_path / "blocked.trec"
    blocked.mkdir()  # os.replace cannot put a file over a directory
    with pytest.raises(GateError, match="cannot write"):
        save_trec(trec_result(), blocked, "v3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked.trec", "run.trec"]


def test_save_trec_refuses_ids_that_break_the_format(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("old\n", encoding="utf-8")
    spaced = run_queries(Canned({"q000": [Hit("doc 1")]}), queries(1), 3, FAST)
    with pytest.raises(GateError, match="doc id \\(query 'q000'\\) 'doc 1'"):
        save_trec(spaced, path, "tag")
    with pytest.raises(GateError, match="run tag 'two words'"):
        save_trec(trec_result(), path, "two words")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.trec"]


def test_progress_names_what_it_counts() -> None:
    stream = StringIO()
    progress = make_progress(stream, True, unit="pair")
    assert progress is not None
    progress.start(3)
    progress.advance(3)
    progress.close()
    assert stream.getvalue().startswith("retrieval-gate: 3/3 pairs (0 failed, 0 cached) in ")
