"""Inputs read from regular files only: a device, a pipe or a socket named as one is refused."""

from __future__ import annotations

import stat
from pathlib import Path

from retrieval_gate.errors import InputError

__all__ = ["regular_file"]


def regular_file(path: str | Path) -> Path:
    """`path` as a Path, when it names a regular file (or a folder, or nothing: the reader's
    own error then says so); an InputError for a device, a pipe or a socket, which would
    read forever (/dev/zero), or block until a writer comes (a FIFO)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):  # not found, no permission, a NUL in the name
        return path
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    raise InputError(
        "is not a regular file (a device, a pipe or a socket); the gate reads its inputs from "
        "files: give the path of one",
        source=str(path),
    )


def user_text(path: Path) -> str:
    """The UTF-8 text of the regular file at `path`; an InputError naming it when it is not
    UTF-8 or cannot be read."""
    source = str(path)
    try:
        return regular_file(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", source=source) from None
    except OSError as error:
        raise InputError(
            f"cannot read the file: {error.strerror or error}", source=source
        ) from None
