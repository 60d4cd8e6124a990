"""One retriever call on a worker thread: timed, its answers cut to k and checked."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from retrieval_gate.adapters.interface import Retriever
from retrieval_gate.core.model import MAX_CANDIDATES, Hit, Query, candidates_of
from retrieval_gate.core.reported import shown_value
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.timing import Timing, timing_of

Answer = tuple[Hit, ...]
Reply = tuple[Answer, Answer | None]
"""A query's hits, and the first stage's candidates when the retriever gave them."""


@dataclass(frozen=True)
class Call:
    """What one successful call returned: each query's reply and timing, in the unit's order."""

    replies: list[Reply]
    timings: list[Timing]


def attempt(retriever: Retriever, queries: Sequence[Query], batched: bool, k: int) -> Call:
    """One call (`search`, or `search_batch` when `batched`), on a worker thread, timed; a
    malformed answer is a non-retryable RetrieverError."""
    started = time.perf_counter()
    if not batched:
        answers: object = [retriever.search(queries[0], k)]
    else:
        answers = retriever.search_batch(list(queries), k)
    return call_of(answers, len(queries), (time.perf_counter() - started) * 1000.0, k)


def start_attempt(
    retriever: Retriever, queries: Sequence[Query], batched: bool, k: int
) -> Future[Call] | None:
    """One query's call started without a worker thread, when the retriever can start it
    (`start_search`: its client's own event loop): a future of what `attempt` returns, timed
    from the start to the answer. None when it cannot: run `attempt` on a worker."""
    start = getattr(retriever, "start_search", None)
    if batched or not callable(start):
        return None
    outer: Future[Call] = Future()
    started = time.perf_counter()
    try:
        inner = start(queries[0], k)
    except Exception as error:  # as `attempt` would raise it on a worker
        outer.set_exception(error)
        return outer
    if inner is None:
        return None

    def finish(done: Future[object]) -> None:
        latency = (time.perf_counter() - started) * 1000.0
        try:
            outer.set_result(call_of([done.result()], 1, latency, k))
        except BaseException as error:  # cancelled, failed or malformed: the call's error
            outer.set_exception(error)

    inner.add_done_callback(finish)
    return outer


def call_of(answers: object, count: int, latency: float, k: int) -> Call:
    """The Call of `answers` to `count` queries that took `latency` ms in all."""
    share = latency / count
    if not isinstance(answers, list | tuple) or len(answers) != count:
        got = f"{len(answers)} answers" if isinstance(answers, list | tuple) else _shown(answers)
        raise RetrieverError(
            f"search_batch returned {got} for {count} queries; "
            "it must return one list of hits per query, in order"
        )
    return Call(
        [_reply(answer, k) for answer in answers],
        [timing_of(share, answer) for answer in answers],
    )


def _reply(answer: object, k: int) -> Reply:
    """The answer's top k hits and, when it carries them, its first MAX_CANDIDATES
    candidates, each normalized alike."""
    candidates = candidates_of(answer)
    staged = None if candidates is None else _normalize(candidates, MAX_CANDIDATES)
    return _normalize(answer, k), staged


def _normalize(answer: object, k: int) -> Answer:
    """At most k hits, the first occurrence of each doc id kept (a retriever that returns a
    doc twice ranks it at its first position), scores as floats."""
    if not isinstance(answer, list | tuple):
        raise RetrieverError(f"expected a list of Hit, got {_shown(answer)}")
    seen: set[str] = set()
    out: list[Hit] = []
    for position, hit in enumerate(answer, 1):
        if len(out) == k:
            break
        if not isinstance(hit, Hit):
            raise RetrieverError(f"hit {position} is {_shown(hit)}, not a Hit")
        if not isinstance(hit.doc_id, str) or not hit.doc_id:
            raise RetrieverError(
                f"hit {position} has doc id {_shown(hit.doc_id)}; it must be a string"
            )
        if hit.doc_id in seen:
            continue
        seen.add(hit.doc_id)
        if hit.score is not None and type(hit.score) is not float:
            try:
                hit = Hit(hit.doc_id, float(hit.score), hit.text)
            except (TypeError, ValueError):
                raise RetrieverError(
                    f"hit {position} ({_shown(hit.doc_id)}) has score {_shown(hit.score)}; "
                    "it must be a number"
                ) from None
        out.append(hit)
    return tuple(out)


def _shown(value: object) -> str:
    """A piece of a malformed answer in an error: safe to repr, on one line, short."""
    return shown_value(value, 80)
