"""`retrieval-gate ARGV` run in this process, its exit code and output captured."""

from __future__ import annotations

import io
import os
from typing import NamedTuple

from retrieval_gate.cli.main import main


class CliResult(NamedTuple):
    """What one run of the command line did, as pytest's RunResult names it; it unpacks as
    `code, out, err`."""

    ret: int
    out: str
    err: str


def run_cli(*argv: str | os.PathLike[str]) -> CliResult:
    """Exit code, stdout and stderr of `retrieval-gate ARGV`."""
    out, err = io.StringIO(), io.StringIO()
    code = main([str(arg) for arg in argv], stdout=out, stderr=err)
    return CliResult(code, out.getvalue(), err.getvalue())


class Terminal(io.StringIO):
    """A stream that says it is a terminal: typed answers to read, or a screen to draw on."""

    def isatty(self) -> bool:
        return True
