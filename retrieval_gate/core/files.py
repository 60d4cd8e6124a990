"""Writing files atomically: readers never see half a file, failures keep the old one."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from retrieval_gate.errors import GateError

_BINARY = getattr(os, "O_BINARY", 0)


def write_text_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (UTF-8; a string, or pieces written as they come) to a temporary file
    beside `path`, then rename it over `path`.

    A replaced file keeps its permissions; a new one gets the umask's, as any file the user
    creates (mkstemp would make a committed file private). An OSError is a GateError.
    """
    path = Path(path)
    pieces = (text,) if isinstance(text, str) else text
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
        temporary = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o666)
    except OSError as error:
        raise GateError(f"{path}: cannot write: {error}") from None
    try:
        with os.fdopen(handle, "wb") as file:
            for piece in pieces:
                file.write(piece.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise GateError(f"{path}: cannot write: {error}") from None
        raise
