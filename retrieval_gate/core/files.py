"""Writing files atomically: readers never see half a file, failures keep the old one."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from retrieval_gate.core.leftovers import process_alive
from retrieval_gate.errors import GateError

_BINARY = getattr(os, "O_BINARY", 0)
STALE_AFTER = 60.0
"""Seconds since a dead writer's temporary file was last written before another write into
its folder removes it: a writer on another machine sharing the folder, whose pid means
nothing here, has long finished by then."""
UNNAMED_STALE_AFTER = 3600.0
"""The same for the temporary files of versions that did not put their pid in the name."""
# `.NAME.PID-HEX.tmp`, as write_text_atomic names its temporary file; the older `.NAME.HEX.tmp`.
_TEMPORARY = re.compile(r"\..+\.(?P<pid>[1-9][0-9]{0,9})-[0-9a-f]{12}\.tmp")
_UNNAMED = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def write_text_atomic(path: Path, text: str | Iterable[str | bytes | memoryview]) -> None:
    """Write `text` (UTF-8; a string, or pieces written as they come, strings or their
    encoded bytes) to a temporary file beside `path`, then rename it over `path`.

    A replaced file keeps its permissions; a new one gets the umask's, as any file the user
    creates (mkstemp would make a committed file private). An OSError is a GateError. The
    temporary files a killed writer left in the folder go first (`remove_stale_temporaries`).
    """
    path = Path(path)
    pieces = (text,) if isinstance(text, str) else text
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
        temporary = path.parent / f".{path.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp"
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, 0o666)
    except OSError as error:
        raise GateError(f"{path}: cannot write: {error}") from None
    try:
        with os.fdopen(handle, "wb") as file:
            for piece in pieces:
                file.write(piece.encode("utf-8") if isinstance(piece, str) else piece)
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


def remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files a killed `write_text_atomic` left in `folder`: regular files
    of this user named exactly as it names them, whose writer no longer runs and which were
    last written STALE_AFTER seconds ago (an older version's, without a pid in the name,
    UNNAMED_STALE_AFTER). Anything else stays, and a file that cannot be removed is left."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        found = _TEMPORARY.fullmatch(name)
        if found is not None:
            if process_alive(int(found["pid"])):
                continue
            wait = STALE_AFTER
        elif _UNNAMED.fullmatch(name):
            wait = UNNAMED_STALE_AFTER
        else:
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
            if stat.S_ISREG(info.st_mode) and mine and now - info.st_mtime >= wait:
                os.unlink(entry.path)
