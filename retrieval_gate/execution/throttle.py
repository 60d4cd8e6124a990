"""Adaptive concurrency: a service that refuses calls for load (429, 503) slows the whole pool."""

from __future__ import annotations

import random

from retrieval_gate.execution.retry import RetryPolicy


class Throttle:
    """How many calls the runner keeps in flight, and until when it starts none (AIMD).

    A refusal for load (`Failure.throttled`: HTTP 429 or 503) halves `limit`; each answered
    call adds one back, up to `ceiling` (the configured concurrency). Calls in flight when a
    refusal came were sent at the old rate, so their refusals do not halve it again: one
    halving per `epoch`. Once one call at a time is refused too, the pool waits: no call
    starts before `hold_until`, the service's `Retry-After` or else the backoff, which grows
    with each refusal in a row. The refused call itself waits its own `Retry-After` (the
    runner's retry delay); the other calls go on at the halved rate, so a service that
    refuses one call in five costs a fraction more time, not one `Retry-After` per refusal.
    """

    def __init__(self, ceiling: int, policy: RetryPolicy, rng: random.Random) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = self.ceiling
        self.epoch = 0
        """Counts the halvings and holds: a refusal of a call sent before the last one is
        the same congestion, already answered."""
        self.hold_until = 0.0
        """Monotonic time before which no call starts (0: none)."""
        self.lowest = self.ceiling
        """The lowest `limit` of the run."""
        self._policy = policy
        self._rng = rng
        self._strikes = 0  # refusals at one call at a time since the last answer

    def room(self, busy: int) -> int:
        """How many more calls may start, `busy` being in flight."""
        return self.limit - busy

    def answered(self) -> None:
        """A call was answered: one more call may be in flight."""
        self._strikes = 0
        if self.limit < self.ceiling:
            self.limit += 1

    def refused(self, epoch: int, retry_after: float | None, now: float) -> float:
        """A call sent in `epoch` was refused for load at `now`: halve the limit or, at one
        call, hold the pool. Returns how long the pool is held from `now` (0: not held)."""
        if epoch != self.epoch:
            return max(0.0, self.hold_until - now)
        self.epoch += 1
        if self.limit > 1:
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            return max(0.0, self.hold_until - now)
        wait = retry_after
        if wait is None:
            wait = self._policy.delay(self._strikes, self._rng)
        self._strikes += 1
        self.hold_until = max(self.hold_until, now + wait)
        return self.hold_until - now
