"""Where the runner's calls run: worker threads, or workers on a retriever's own event loop."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from retrieval_gate.adapters.interface import LoopSearch, Retriever
from retrieval_gate.core.model import Query
from retrieval_gate.execution.attempt import Call, attempt, call_of, start_attempt
from retrieval_gate.execution.retry import Failure, describe_failure

if TYPE_CHECKING:
    import asyncio

# Calls abandoned past their timeout still hold a thread (Python cannot kill one). Past this
# many at once the retriever is taken to be stuck and the remaining queries fail, rather than
# growing threads without bound.
_STUCK_MIN = 16
_STUCK_PER_WORKER = 4
_LOOK = 1.0
"""Seconds between two looks at whether the event loop still runs, while nothing ends."""


@dataclass
class Unit:
    """One retriever call's worth of queries (one query, or one batch), its attempts, and the
    throttle's epoch its last attempt was started in (execution/throttle.py)."""

    queries: tuple[Query, ...]
    batched: bool
    attempts: int = 0
    epoch: int = 0


Outcome = tuple[Unit, Call | Failure]
"""A unit's attempt as it ended: what the call returned, or why it failed."""


class Lane(Protocol):
    """Runs the attempts the runner starts, at most `concurrency` at once, each bounded by the
    timeout; the runner's thread alone calls its methods."""

    stuck_limit: int

    def room(self) -> int:
        """How many more units `start` takes now."""
        ...

    def busy(self) -> int:
        """Units started and not yet returned by `finished`."""
        ...

    def stuck(self) -> int:
        """Calls abandoned past their timeout that still run."""
        ...

    def start(self, unit: Unit) -> None: ...

    def finished(self, until: float) -> list[Outcome]:
        """The attempts that ended (timeouts included), waiting for one until the monotonic
        time `until` at most."""
        ...

    def close(self) -> None:
        """Drop what has not been sent; calls in flight are abandoned."""
        ...


def timed_out(timeout: float) -> Failure:
    text = f"timed out after {timeout:g}s"
    return Failure(text, True, text)


def open_lane(retriever: Retriever, k: int, concurrency: int, timeout: float) -> Lane:
    """Workers on the retriever's own event loop when it offers one (`loop_search`), else
    worker threads."""
    offer = getattr(retriever, "loop_search", None)
    found = offer() if callable(offer) else None
    if found is not None and not found[0].is_closed():
        return LoopLane(found, retriever, k, concurrency, timeout)
    return ThreadLane(retriever, k, concurrency, timeout)


class ThreadLane:
    """Each attempt on a worker thread (or started on the retriever's loop, `start_attempt`).
    A call past its timeout is abandoned: its thread cannot be killed and runs on until the
    function returns, so the pool has spare threads for abandoned calls, and `room` counts
    only live calls."""

    def __init__(self, retriever: Retriever, k: int, concurrency: int, timeout: float) -> None:
        self._retriever = retriever
        self._k = k
        self._concurrency = concurrency
        self._timeout = timeout
        self.stuck_limit = max(_STUCK_MIN, _STUCK_PER_WORKER * concurrency)
        self._pool = ThreadPoolExecutor(
            max_workers=concurrency + self.stuck_limit, thread_name_prefix="retrieval-gate"
        )
        self._inflight: dict[Future[Call], tuple[Unit, float]] = {}
        self._stuck: set[Future[Call]] = set()

    def room(self) -> int:
        return self._concurrency - len(self._inflight)

    def busy(self) -> int:
        return len(self._inflight)

    def stuck(self) -> int:
        self._stuck = {future for future in self._stuck if not future.done()}
        return len(self._stuck)

    def start(self, unit: Unit) -> None:
        retriever, queries, batched, k = self._retriever, unit.queries, unit.batched, self._k
        future = start_attempt(retriever, queries, batched, k) or self._pool.submit(
            attempt, retriever, queries, batched, k
        )
        self._inflight[future] = (unit, time.monotonic() + self._timeout)

    def finished(self, until: float) -> list[Outcome]:
        wake = min([until, *(deadline for _, deadline in self._inflight.values())])
        done, _ = wait(
            self._inflight, timeout=max(0.0, wake - time.monotonic()), return_when=FIRST_COMPLETED
        )
        ended: list[Outcome] = []
        for future in done:
            unit, _ = self._inflight.pop(future)
            error = future.exception()
            ended.append((unit, future.result() if error is None else describe_failure(error)))
        now = time.monotonic()
        for future, (unit, deadline) in list(self._inflight.items()):
            if deadline <= now and not future.done():
                del self._inflight[future]
                self._stuck.add(future)
                ended.append((unit, timed_out(self._timeout)))
        return ended

    def close(self) -> None:
        # wait=False: abandoned calls must not hold up the run. They still run to their end,
        # and the interpreter joins pool threads at exit, so a call that never returns keeps
        # the process alive until it does.
        self._pool.shutdown(wait=False, cancel_futures=True)


class LoopLane:
    """`concurrency` workers on the retriever's own event loop, each sending its next request
    from the loop as soon as its last response is read: no thread hop on the critical path.
    The runner's thread hands units over in batches (a lookahead of one more `concurrency`)
    and collects what ended in batches: the workers wake it when they run low on units (half
    the lookahead left) or one failed, not once per response (a wake takes the GIL from the
    loop, mid-burst). Each attempt waits out the retriever's `resume_at` first, then is
    timed, and bounded by the timeout, from when it is sent; one past its timeout is
    cancelled, so none is ever stuck."""

    stuck_limit = 1 << 62

    def __init__(
        self, found: LoopSearch, retriever: Retriever, k: int, concurrency: int, timeout: float
    ) -> None:
        self._loop, self._search = found
        resume_at = getattr(retriever, "resume_at", None)
        self._resume_at: Callable[[], float] | None = resume_at if callable(resume_at) else None
        self._k = k
        self._timeout = timeout
        self._capacity = 2 * concurrency
        self._low = concurrency // 2
        self._units: dict[int, Unit] = {}  # by id(): started, not yet collected
        self._batch: list[Unit] = []
        self._outbox: deque[Outcome] = deque()  # appended on the loop, taken on the runner's
        self._wake = threading.Event()
        import asyncio  # here: a command that calls no service never loads it

        self._queue: asyncio.Queue[Unit] = asyncio.Queue()
        self._workers = asyncio.run_coroutine_threadsafe(self._work_all(concurrency), self._loop)

    def room(self) -> int:
        return self._capacity - len(self._units)

    def busy(self) -> int:
        return len(self._units)

    def stuck(self) -> int:
        return 0

    def start(self, unit: Unit) -> None:
        self._batch.append(unit)
        self._units[id(unit)] = unit

    def finished(self, until: float) -> list[Outcome]:
        if self._batch:
            batch, self._batch = self._batch, []
            # A loop closed with the retriever takes nothing: its units fail just below.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._feed, batch)
        if not self._outbox:
            self._wake.wait(max(0.0, min(until - time.monotonic(), _LOOK)))
        self._wake.clear()
        ended = []
        outbox, units = self._outbox, self._units
        while outbox:
            ended.append(outbox.popleft())
            del units[id(ended[-1][0])]
        if not ended and not self._loop.is_running():  # the retriever was closed mid-run
            text = "the retriever's event loop stopped (was it closed during the run?)"
            ended = [(unit, Failure(text, False, text)) for unit in units.values()]
            units.clear()
        return ended

    def close(self) -> None:
        self._workers.cancel()  # the workers, their calls in flight and the units queued

    def _feed(self, batch: list[Unit]) -> None:
        for unit in batch:
            self._queue.put_nowait(unit)

    async def _work_all(self, concurrency: int) -> None:
        import asyncio

        await asyncio.gather(*(self._work() for _ in range(concurrency)))

    async def _work(self) -> None:
        queue, outbox, wake = self._queue, self._outbox, self._wake
        while True:
            unit = await queue.get()
            outcome = await self._attempt(unit.queries[0])
            outbox.append((unit, outcome))
            if not isinstance(outcome, Call) or queue.qsize() <= self._low:
                wake.set()

    async def _attempt(self, query: Query) -> Call | Failure:
        """One attempt at `query`: its Call, or its failure."""
        import asyncio

        if self._resume_at is not None:
            # A service's `Retry-After` holds each call back, outside its timeout.
            held = self._resume_at() - time.monotonic()
            if held > 0:
                await asyncio.sleep(held)
        started = time.perf_counter()
        try:
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(self._timeout) as scope:
                    hits = await self._search(query, self._k)
            else:  # pragma: no cover - Python 3.10
                hits = await asyncio.wait_for(self._search(query, self._k), self._timeout)
            return call_of([hits], 1, (time.perf_counter() - started) * 1000.0, self._k)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            if sys.version_info >= (3, 11) and isinstance(error, TimeoutError):
                if scope.expired():
                    return timed_out(self._timeout)
            elif isinstance(error, asyncio.TimeoutError):  # pragma: no cover - 3.10
                return timed_out(self._timeout)
            return describe_failure(error)
