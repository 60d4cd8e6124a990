"""Byte-compile retrieval_gate before whole processes are timed, as an installed copy is."""

from __future__ import annotations

import compileall
from pathlib import Path

import retrieval_gate


def byte_compile() -> None:
    """Write the package's .pyc files (pip does so when it installs a wheel). An editable
    checkout run under PYTHONDONTWRITEBYTECODE never writes them and would compile every
    module of every timed process from source: about 0.1 s of CPU per process here."""
    compileall.compile_dir(Path(retrieval_gate.__file__).parent, quiet=1)
