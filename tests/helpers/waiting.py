"""Waiting on an event or a condition, with a guard against a hang, never a time limit."""

from __future__ import annotations

import time
from collections.abc import Callable

GUARD = 600.0
"""Seconds a test waits at most for what it waits on: far more than a loaded machine takes,
so only a hang reaches it, never a bound the behaviour under test is held to. (At 120 s, a
2-core machine under a load of 35 took longer for `judge` to start and send 20 requests.)"""


def wait_for(condition: Callable[[], bool], guard: float = GUARD) -> bool:
    """Whether `condition()` came true, polled every 50 ms for at most `guard` seconds."""
    deadline = time.monotonic() + guard
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
