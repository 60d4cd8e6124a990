"""Every error a user can act on, and the exit code each maps to.

    GateError (exit 2: a problem the user can fix)
    ├── InputError            a file or value given to the tool is unreadable or malformed
    │   └── CoverageError     a saved run answers too few of the labelled queries
    ├── MetricError           a metric name, parameter or cutoff that does not exist
    ├── CannotFailError       an overall check could not fail on a drop worth catching
    ├── NotComparableError    the baseline was made under another set, k, metrics or slices
    ├── RetrieverError        a retriever call failed (retryable or not)
    └── CacheError            the answer cache cannot be opened, read or written

A regression is not an error: `check` returns exit 1 through its result (EXIT_REGRESSION).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1
"""A gated check regressed or fell below its floor."""
EXIT_USAGE = 2
"""Bad input or usage: every GateError."""
EXIT_INTERNAL = 3
"""An unexpected failure: a bug."""
EXIT_INTERRUPTED = 130


class GateError(Exception):
    """Base class: a problem the user can fix. The CLI prints it and exits with `exit_code`."""

    exit_code = EXIT_USAGE


class InputError(GateError):
    """A file or value given to the tool is unreadable or malformed."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = source if source is not None else ""
        if source is not None and line is not None:
            where = f"{source}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


class CoverageError(InputError):
    """A saved run shares no query id with the labelled set, or answers too few of its
    queries: it was not measured on this set, so the gate does not judge it (exit 2)."""


class MetricError(GateError):
    """A metric name, parameter or cutoff that does not exist or is out of range."""


class CannotFailError(GateError):
    """An overall check is blind at its level (`gate.family`): the gate would pass every
    change, so it refuses to decide."""


class NotComparableError(GateError):
    """The baseline was made with another labelled set, k, metric set or slice definition."""


class RetrieverError(GateError):
    """A retriever call failed; `retryable` says whether trying again may help (timeouts,
    connection errors, HTTP 429 and 5xx) or not (HTTP 4xx, malformed responses).

    `kind` is the message without what varies from query to query (a response's excerpt):
    failures of one kind stop a run early, whatever each response held. `mapping` marks a
    response the config cannot read (`retriever.results`, `id`, `score`): the config is
    wrong, not a query, so no error budget should absorb it. `throttled` marks a service
    that refused for load (HTTP 429 or 503): the runner slows every call, not just this one;
    `retry_after` is the wait in seconds its `Retry-After` asked for, if any."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        kind: str | None = None,
        mapping: bool = False,
        throttled: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind if kind is not None else message
        self.mapping = mapping
        self.throttled = throttled
        self.retry_after = retry_after


class CacheError(GateError):
    """The cache file cannot be opened, read or written."""
