"""Errors a user can act on; each maps to an exit code in the CLI."""

from __future__ import annotations


class GateError(Exception):
    """Base class: a problem the user can fix. The CLI prints it and exits with `exit_code`."""

    exit_code = 2


class InputError(GateError):
    """A file or value given to the tool is unreadable or malformed."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = source if source is not None else ""
        if source is not None and line is not None:
            where = f"{source}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


class MetricError(GateError):
    """A metric name, parameter or cutoff that does not exist or is out of range."""
