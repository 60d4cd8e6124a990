"""Runs a query set through a retriever: bounded concurrency, timeouts, retries (the policy of
execution/retry.py), a cache and an error budget."""

from __future__ import annotations

import heapq
import math
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.adapters.interface import Retriever, fingerprint
from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.model import Hit, Query, StagedHits, candidates_of
from retrieval_gate.core.run import Run
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import GateError
from retrieval_gate.execution.attempt import Answer, Call
from retrieval_gate.execution.lanes import Lane, Unit, open_lane
from retrieval_gate.execution.retry import Failure, RetryPolicy
from retrieval_gate.execution.throttle import Throttle
from retrieval_gate.execution.timing import Timing

if TYPE_CHECKING:
    from retrieval_gate.execution.cache import CacheEntry, ResultCache
    from retrieval_gate.execution.progress import Progress

"""A query's hits and, from a two-stage retriever, its first stage's candidates."""

_CACHE_FLUSH_EVERY = 256
_LISTED_FAILURES = 5
STOP_AFTER = 10
"""Queries that must all fail the same way, as the first to settle, before a run stops early
(more when the error budget allows more failures: a stop never changes the verdict)."""


@dataclass(frozen=True)
class RunSettings:
    """How the runner calls a retriever."""

    concurrency: int = 8
    timeout: float = 30.0
    """Seconds one attempt (a `search` or `search_batch` call) may take."""
    retries: int = 3
    """Extra attempts after a retryable error or a timeout."""
    backoff: float = 0.5
    """Base of the exponential backoff, in seconds."""
    max_backoff: float = 8.0
    error_budget: float = 0.01
    """Fraction of the queries allowed to fail before the run is an error."""
    seed: int = 0
    """Seed of the backoff jitter."""

    def __post_init__(self) -> None:
        problems = []
        if self.concurrency < 1:
            problems.append(f"concurrency must be at least 1, got {self.concurrency}")
        if not self.timeout > 0:
            problems.append(f"timeout must be more than 0 seconds, got {self.timeout}")
        if self.retries < 0:
            problems.append(f"retries must be 0 or more, got {self.retries}")
        if not (self.backoff >= 0 and self.max_backoff >= 0):
            problems.append(
                f"backoff and max_backoff must be 0 or more, got {self.backoff}, {self.max_backoff}"
            )
        if not 0 <= self.error_budget <= 1:
            problems.append(f"error_budget must be within [0, 1], got {self.error_budget}")
        if problems:
            raise GateError("run settings: " + "; ".join(problems))

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of these settings (the runner draws its waits with jitter from a
        generator seeded with `seed`)."""
        return RetryPolicy(self.retries, self.backoff, self.max_backoff)


@dataclass(frozen=True)
class QueryFailure:
    """A query the retriever never answered: the last error and how many calls were made."""

    query_id: str
    error: str
    attempts: int
    mapping: bool = False
    """The response did not match the config's mapping (`RetrieverError.mapping`)."""


@dataclass(frozen=True, eq=False)
class RunResult:
    """What a run produced; failed queries are absent from `run` and listed in `failures`."""

    run: Run
    """Every answered query; one answered with no hits is an empty query of the run."""
    failures: tuple[QueryFailure, ...]
    """Sorted by query id."""
    hits: Mapping[str, Answer]
    """Answered query id -> hits as returned (first of duplicate doc ids kept), at most k."""
    elapsed: float
    cached: int
    """Queries answered from the cache."""
    calls: int
    """Retriever calls made, retries included (a `search_batch` call counts once)."""
    fingerprint: str = ""
    """Fingerprint of the retriever's description."""
    stopped: str = ""
    """Why the run stopped early (the first queries all failed the same way), or "". The
    queries it never ran are neither in `run` nor in `failures`; `check_budget` raises it."""
    candidates: Mapping[str, Answer] = field(default_factory=dict)
    """Answered query id -> the first stage's candidates (at most MAX_CANDIDATES), for the
    queries a two-stage retriever answered (`StagedHits`); empty for any other retriever."""
    timings: Mapping[str, Timing] = field(default_factory=dict)
    """Query id -> how long its call took: the queries answered by a call in this run (not
    those read from the cache or a saved run, which no clock measured)."""

    def within_budget(self, total: int, budget: float) -> bool:
        """Whether at most `budget` (a fraction) of `total` queries failed."""
        return len(self.failures) <= allowed_failures(total, budget)


def run_queries(
    retriever: Retriever,
    queries: Sequence[Query],
    k: int,
    settings: RunSettings,
    *,
    cache: ResultCache | None = None,
    refresh_cache: bool = False,
    progress: Progress | None = None,
) -> RunResult:
    """Ask `retriever` for the top `k` hits of every query.

    A query that fails after its retries is recorded in `failures` and left out of the run;
    no exception from the retriever escapes. Answers are read from `cache` (unless
    `refresh_cache`) and written back to it. The retriever is not closed: the caller owns it.

    When the first queries to settle (STOP_AFTER of them, or one more than the error budget
    of `settings` allows, whichever is more) all failed with the same error, the rest are
    not run: `stopped` says why, and `check_budget` raises it. One success or one other error
    among them, and every query runs.
    """
    if k < 1:
        raise GateError(f"k must be at least 1, got {k}")
    seen: set[str] = set()
    for query in queries:
        if query.id in seen:
            raise GateError(f"query id {query.id!r} appears twice; query ids must be unique")
        seen.add(query.id)
    started = time.perf_counter()
    fp = fingerprint(retriever.describe())
    sink = _Sink(fp, k, cache, progress)
    if progress is not None:
        progress.start(len(queries))
    try:
        todo = (
            sink.read_cache(cache, queries) if cache is not None and not refresh_cache else queries
        )
        size = max(1, int(retriever.batch_size()))
        if size > 1:
            units = [Unit(tuple(todo[i : i + size]), True) for i in range(0, len(todo), size)]
        else:
            units = [Unit((query,), False) for query in todo]
        limit = max(STOP_AFTER, allowed_failures(len(queries), settings.error_budget) + 1)
        sink.stop_after = limit if len(todo) > limit else None  # else nothing left to spare
        calls = _execute(retriever, units, k, settings, sink)
    finally:
        sink.flush()
        if progress is not None:
            progress.close()
    return RunResult(
        run=_build_run(sink.answers, fp),
        failures=tuple(sorted(sink.failures, key=lambda failure: failure.query_id)),
        hits=dict(sorted(sink.answers.items())),
        elapsed=time.perf_counter() - started,
        cached=sink.cached,
        calls=calls,
        fingerprint=fp,
        stopped=sink.stopped,
        candidates=dict(sorted(sink.candidates.items())),
        timings=dict(sorted(sink.timings.items())),
    )


def read_saved(run: Run, queries: Sequence[Query], k: int, fp: str) -> RunResult:
    """A saved run's answers to `queries`: each one's top `k` rows, ranked, cut from the run's
    arrays (no call, no cache, no object per row); a query the run lacks retrieved nothing."""
    from retrieval_gate.metrics.top_k import RankedHits, top_k_run

    started = time.perf_counter()
    cut = top_k_run(run, [query.id for query in queries], k)
    return RunResult(
        run=cut,
        failures=(),
        hits=RankedHits(cut),
        elapsed=time.perf_counter() - started,
        cached=0,
        calls=0,
        fingerprint=fp,
    )


def merged(results: Sequence[RunResult]) -> RunResult:
    """Runs of disjoint queries by one retriever (a sequential check's batches) as one run."""
    answers = {query: hits for result in results for query, hits in result.hits.items()}
    failures = sorted((f for r in results for f in r.failures), key=lambda f: f.query_id)
    fp = results[0].fingerprint if results else ""
    return RunResult(
        run=_build_run(answers, fp),
        failures=tuple(failures),
        hits=dict(sorted(answers.items())),
        elapsed=sum(result.elapsed for result in results),
        cached=sum(result.cached for result in results),
        calls=sum(result.calls for result in results),
        fingerprint=fp,
        stopped=next((result.stopped for result in results if result.stopped), ""),
        candidates=dict(
            sorted((query, c) for result in results for query, c in result.candidates.items())
        ),
        timings=dict(sorted((q, t) for result in results for q, t in result.timings.items())),
    )


def candidates_run(result: RunResult) -> Run:
    """The first stage's candidates of a run as a run, each query ranked as listed."""
    return _build_run(dict(result.candidates), result.fingerprint)


def check_budget(result: RunResult, total: int, budget: float) -> None:
    """Raise a GateError listing the first failures when more than `budget` of `total` failed,
    or saying why the run stopped early (`RunResult.stopped`)."""
    if result.stopped:
        raise GateError(result.stopped)
    if result.within_budget(total, budget):
        return
    failed = len(result.failures)
    share = 100.0 * failed / total if total else 100.0
    # One line per failure, whatever the retriever's error text holds: it cannot add lines
    # (or escape sequences) to the message, which the CLI prints and the reports show.
    listed = "\n".join(
        f"  {one_line(failure.query_id)}: {one_line(failure.error)}"
        for failure in result.failures[:_LISTED_FAILURES]
    )
    more = failed - _LISTED_FAILURES
    if more > 0:
        listed += f"\n  ... and {more} more"
    raise GateError(
        f"{failed} of {total} queries failed ({share:.1f}%), more than the error budget of "
        f"{100.0 * budget:g}% (at most {allowed_failures(total, budget)}):\n{listed}\n"
        + (
            "the responses do not match retriever.results, id or score: fix that mapping "
            "(a raised error budget would only hide it)"
            if any(failure.mapping for failure in result.failures)
            else "fix the retriever, or raise the error budget if these failures are expected"
        )
    )


def save_trec(result: RunResult, path: Path, tag: str) -> None:
    """Write the run as a TREC run file (`qid Q0 docno rank score tag`), atomically.

    Queries are sorted; ranks follow the retriever's order; unscored hits get the synthetic
    descending scores the run uses. Queries answered with no hits have no lines (TREC cannot
    express them).
    """
    path = Path(path)
    _check_token(tag, "run tag", path)
    lines = []
    for query_id, hits in sorted(result.hits.items()):
        _check_token(query_id, "query id", path)
        for rank, (hit, score) in enumerate(zip(hits, ranked_scores(hits), strict=True), 1):
            _check_token(hit.doc_id, f"doc id (query {query_id!r})", path)
            lines.append(f"{query_id} Q0 {hit.doc_id} {rank} {score!r} {tag}\n")
    write_text_atomic(path, "".join(lines))


def ranked_scores(hits: Sequence[Hit]) -> list[float]:
    """The scores the run gives `hits`: their own when every hit has a real one, else -1, -2,
    ... so that the metric engine (score descending, doc id descending on ties) keeps the
    retriever's order instead of reordering equal scores by doc id."""
    scores = [hit.score for hit in hits]
    if all(score is not None and not math.isnan(score) for score in scores):
        return [float(score) for score in scores if score is not None]
    return [-float(rank) for rank in range(1, len(hits) + 1)]


# --------------------------------------------------------------------------------------------
# Scheduling
# --------------------------------------------------------------------------------------------


@dataclass
class _Sink:
    """Collects answers and failures as they arrive (on the scheduling thread only)."""

    fingerprint: str
    k: int
    cache: ResultCache | None
    progress: Progress | None
    answers: dict[str, Answer] = field(default_factory=dict)
    candidates: dict[str, Answer] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=dict)
    failures: list[QueryFailure] = field(default_factory=list)
    cached: int = 0
    pending: list[CacheEntry] = field(default_factory=list)
    stop_after: int | None = None
    """Stop once this many queries failed the same way before any other outcome."""
    same_kind: str | None = None
    """The kind of error every query settled so far failed with; None once one did not."""
    same_error: str | None = None
    """The first of those errors, as the run's stop shows it."""
    settled: int = 0
    stopped: str = ""

    def read_cache(self, cache: ResultCache, queries: Sequence[Query]) -> list[Query]:
        """Take cached answers; return the queries still to run."""
        todo = []
        for query in queries:
            hits = cache.get(self.fingerprint, query.text, self.k)
            if hits is None:
                todo.append(query)
            else:
                self.answers[query.id] = tuple(hits)
                staged = candidates_of(hits)
                if staged is not None:
                    self.candidates[query.id] = staged
        self.cached = len(queries) - len(todo)
        if self.progress is not None and self.cached:
            self.progress.advance(self.cached, cached=True)
        return todo

    def answered(self, unit: Unit, call: Call) -> None:
        self._settle(None, len(unit.queries))
        for query, (hits, candidates), timing in zip(
            unit.queries, call.replies, call.timings, strict=True
        ):
            self.answers[query.id] = hits
            self.timings[query.id] = timing
            if candidates is not None:
                self.candidates[query.id] = candidates
            if self.cache is not None:
                kept = hits if candidates is None else StagedHits(hits, candidates)
                self.pending.append((self.fingerprint, query.text, self.k, kept))
        if len(self.pending) >= _CACHE_FLUSH_EVERY:
            self.flush()
        if self.progress is not None:
            self.progress.advance(len(unit.queries))

    def failed(self, unit: Unit, failure: Failure) -> None:
        error = failure.text
        if unit.batched:
            error = f"{error} (in a batch of {len(unit.queries)} queries)"
        self._settle(failure.kind, len(unit.queries), error)
        for query in unit.queries:
            self.failures.append(QueryFailure(query.id, error, unit.attempts, failure.mapping))
        if self.progress is not None:
            self.progress.advance(len(unit.queries), failed=True)

    def _settle(self, kind: str | None, count: int, error: str = "") -> None:
        """Note `count` queries settled (answered when `kind` is None); stop when the first
        `stop_after` all failed with one kind of error (`error`: the first's text)."""
        if self.settled and self.same_kind != kind:
            self.same_kind = self.same_error = None
        elif not self.settled:
            self.same_kind, self.same_error = kind, (error if kind is not None else None)
        self.settled += count
        if (
            self.stop_after is not None
            and self.same_kind is not None
            and self.settled >= self.stop_after
            and not self.stopped
        ):
            self.stopped = (
                f"the first {self.settled} queries all failed the same way: "
                f"{one_line(self.same_error)}; stopped (nothing was judged)"
            )

    def probing(self, started: int) -> bool:
        """Whether to hold back new queries: `started` have been, every one settled so far
        failed the same way, and they are enough to stop the run if the rest fail so too."""
        if self.stop_after is None or started < self.stop_after:
            return False
        return self.settled == 0 or self.same_kind is not None

    def flush(self) -> None:
        # Written as the run goes, so an interrupted run resumes from what it already has.
        if self.cache is not None and self.pending:
            entries, self.pending = self.pending, []
            self.cache.put_many(entries)


def _execute(
    retriever: Retriever, units: Sequence[Unit], k: int, settings: RunSettings, sink: _Sink
) -> int:
    """Run every unit with at most `concurrency` calls in flight; return the calls made.

    This thread schedules: it starts attempts on a lane (lanes.py: worker threads, or
    workers on the retriever's own event loop), collects those that ended or passed their
    timeout, and parks retries in a heap until their backoff ends (a waiting retry holds no
    worker). A refusal for load (429, 503) lowers the calls in flight for every unit, and
    at one call holds them all back (throttle.py).
    """
    policy = settings.retry
    rng = random.Random(settings.seed)
    throttle = Throttle(settings.concurrency, policy, rng)
    ready = deque(units)
    delayed: list[tuple[float, int, Unit]] = []
    calls = 0
    started = 0  # queries given a first attempt
    order = 0  # tie-breaker so the heap never compares units

    def settle(unit: Unit, failure: Failure) -> None:
        nonlocal order
        held = 0.0
        if failure.throttled:
            held = throttle.refused(unit.epoch, failure.retry_after, time.monotonic())
        if failure.retryable and unit.attempts < policy.attempts:
            order += 1
            # The refused call waits what the service asked, and never less than the pool.
            delay = max(policy.delay(unit.attempts - 1, rng), failure.retry_after or 0.0, held)
            heapq.heappush(delayed, (time.monotonic() + delay, order, unit))
        else:
            sink.failed(unit, failure)

    lane = open_lane(retriever, k, settings.concurrency, settings.timeout)
    try:
        while ready or delayed or lane.busy():
            if sink.stopped:  # calls in flight are abandoned (lane.close), like timed-out ones
                break
            now = time.monotonic()
            while delayed and delayed[0][0] <= now:
                ready.append(heapq.heappop(delayed)[2])
            stuck = lane.stuck()
            if stuck >= lane.stuck_limit:
                error = (
                    f"stopped: {stuck} calls are still running past the "
                    f"{settings.timeout:g}s timeout; the retriever looks stuck"
                )
                for unit in [*ready, *(entry[2] for entry in delayed)]:
                    sink.failed(unit, Failure(error, False, error))
                ready.clear()
                delayed.clear()
            # A service's `Retry-After` holds every new call back, outside its timeout: the
            # timeout bounds one request, not the wait the service asked for between them.
            held = max(_resume_at(retriever), throttle.hold_until) - time.monotonic()
            while held <= 0 and ready and _room(lane, throttle) > 0:
                if sink.probing(started):
                    # The first queries have yet to show the retriever works: only retries.
                    retry = next((unit for unit in ready if unit.attempts), None)
                    if retry is None:
                        break
                    ready.remove(retry)
                    ready.appendleft(retry)
                unit = ready.popleft()
                started += 0 if unit.attempts else len(unit.queries)
                unit.attempts += 1
                unit.epoch = throttle.epoch
                calls += 1
                lane.start(unit)
            if not lane.busy():
                if delayed or (held > 0 and ready):  # retries in backoff, calls held back
                    wakes = [delayed[0][0]] if delayed else []
                    wakes += [time.monotonic() + held] if held > 0 and ready else []
                    time.sleep(max(0.0, min(wakes) - time.monotonic()))
                continue
            wake = delayed[0][0] if delayed else math.inf
            if held > 0 and ready:
                wake = min(wake, time.monotonic() + held)
            for unit, outcome in lane.finished(wake):
                if isinstance(outcome, Call):
                    throttle.answered()
                    sink.answered(unit, outcome)
                else:
                    settle(unit, outcome)
    finally:
        lane.close()
    return calls


def _room(lane: Lane, throttle: Throttle) -> int:
    """How many more calls may start: the lane's room (its lookahead included) while the
    throttle is open, at most the throttle's limit in flight once a refusal lowered it."""
    room = lane.room()
    if throttle.limit < throttle.ceiling:
        room = min(room, throttle.room(lane.busy()))
    return room


def _resume_at(retriever: Retriever) -> float:
    """The monotonic time before which the retriever asks for no new call (0: none); a
    retriever of the user's own that does not say is never held back."""
    resume_at = getattr(retriever, "resume_at", None)
    return float(resume_at()) if callable(resume_at) else 0.0


def allowed_failures(total: int, budget: float) -> int:
    """The most of `total` queries that may fail within an error `budget` (a fraction)."""
    # The epsilon absorbs float error: 0.29 * 100 is 28.999999999999996, and 29 are allowed.
    return max(0, math.floor(budget * total + 1e-9))


def _build_run(answers: dict[str, Answer], fp: str) -> Run:
    queries: list[str] = []
    docs: list[str] = []
    scores: list[float] = []
    empty = []
    for query_id, hits in answers.items():
        if not hits:
            empty.append(query_id)
            continue
        queries.extend([query_id] * len(hits))
        docs.extend(hit.doc_id for hit in hits)
        scores.extend(ranked_scores(hits))
    return Run.from_rows(queries, docs, scores, source=f"retriever {fp}", empty_queries=empty)


def _check_token(value: str, what: str, path: Path) -> None:
    if not value or any(char.isspace() for char in value):
        raise GateError(
            f"{path}: cannot write {what} {value!r} to a TREC run file, whose fields are "
            "separated by whitespace; use ids without spaces"
        )
