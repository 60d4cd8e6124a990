"""Progress of a run on a stream: a tqdm bar on a terminal, plain lines in CI logs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from retrieval_gate.core.wording import plural_noun, raw_stream


class Progress(Protocol):
    """Progress of a run; the runner calls it from one thread only."""

    def start(self, total: int) -> None: ...

    def advance(self, n: int, *, failed: bool = False, cached: bool = False) -> None: ...

    def close(self) -> None: ...


class PlainProgress:
    """One line per step for CI logs, at most every `every_fraction` of the queries or every
    `every_seconds`, whichever is rarer, and a last line at the end."""

    def __init__(
        self,
        stream: TextIO,
        *,
        every_fraction: float = 0.1,
        every_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        unit: str = "query",
    ) -> None:
        self._stream = stream
        self._units = plural_noun(unit)
        self._every_fraction = every_fraction
        self._every_seconds = every_seconds
        self._clock = clock
        self._total = self._done = self._failed = self._cached = self._shown = 0
        self._started = self._shown_at = 0.0
        self._open = False

    def start(self, total: int) -> None:
        self._total, self._done, self._failed, self._cached, self._shown = total, 0, 0, 0, 0
        self._started = self._shown_at = self._clock()
        self._open = True

    def advance(self, n: int, *, failed: bool = False, cached: bool = False) -> None:
        self._done += n
        self._failed += n if failed else 0
        self._cached += n if cached else 0
        now = self._clock()
        if (
            self._done < self._total
            and self._done - self._shown >= self._every_fraction * self._total
            and now - self._shown_at >= self._every_seconds
        ):
            self._shown, self._shown_at = self._done, now
            self._line("")

    def close(self) -> None:
        if self._open:
            self._open = False
            self._line(f" in {self._clock() - self._started:.1f}s")

    def _line(self, suffix: str) -> None:
        self._stream.write(
            f"retrieval-gate: {self._done}/{self._total} {self._units} "
            f"({self._failed} failed, {self._cached} cached){suffix}\n"
        )
        self._stream.flush()


class TqdmProgress:
    """A tqdm bar, for a terminal."""

    def __init__(self, stream: TextIO, unit: str = "query") -> None:
        self._stream = stream
        self._unit = unit
        self._bar: Any = None
        self._failed = self._cached = 0

    def start(self, total: int) -> None:
        from tqdm import tqdm  # imported here: only terminals pay for it

        self._failed = self._cached = 0
        self._bar = tqdm(
            total=total,
            file=self._stream,
            desc="retrieval-gate",
            unit=self._unit,
            dynamic_ncols=True,
        )

    def advance(self, n: int, *, failed: bool = False, cached: bool = False) -> None:
        if self._bar is None:
            return
        self._failed += n if failed else 0
        self._cached += n if cached else 0
        if failed or cached:
            self._bar.set_postfix(failed=self._failed, cached=self._cached, refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def make_progress(stream: TextIO, enabled: bool, unit: str = "query") -> Progress | None:
    """A tqdm bar on a terminal, plain lines elsewhere (CI logs), None when disabled; `unit`
    names what is counted (a query, an LLM call)."""
    if not enabled:
        return None
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: write plain lines
        terminal = False
    # tqdm redraws with carriage returns: it writes beneath the CLI's InertStream (its text is
    # the tool's own counts); plain lines go through it.
    return TqdmProgress(raw_stream(stream), unit) if terminal else PlainProgress(stream, unit=unit)
