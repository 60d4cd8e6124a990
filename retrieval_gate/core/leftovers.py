"""What a killed run of this tool leaves behind: whose it is, and whether its owner is gone.

A temporary file or folder of ours carries the id of the process that made it (in its name,
or in a marker file inside). A later run removes it only when that process no longer runs
on this machine; anything it cannot tell for sure is kept.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MARKER = "retrieval-gate-owner"
"""The file inside a temporary folder of ours that names the process owning it."""
TOOL = "retrieval-gate"


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs on this machine; True when that cannot be told (another
    user's process, or a system without POSIX signals), so that nothing live is removed."""
    if os.name != "posix" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True
    return True


@dataclass(frozen=True)
class Owner:
    """The process a temporary folder of ours belongs to, as its marker names it."""

    pid: int
    host: str
    started: float

    @property
    def gone(self) -> bool:
        """Whether the owner has ended: a process of this machine that no longer runs (a
        marker written on another machine, sharing the folder, is never judged here)."""
        return self.host == socket.gethostname() and not process_alive(self.pid)

    def describe(self) -> str:
        """The marker's text: one line, so that git can hold it as a lock reason too."""
        return f"{TOOL} pid {self.pid} on {self.host} since {self.started:.0f}"

    @classmethod
    def mine(cls) -> Owner:
        """This process."""
        return cls(os.getpid(), socket.gethostname(), time.time())

    @classmethod
    def read(cls, text: str) -> Owner | None:
        """The owner `describe` wrote; None for any other text."""
        parts = text.strip().split(" ")
        if len(parts) != 7 or [parts[i] for i in (0, 1, 3, 5)] != [TOOL, "pid", "on", "since"]:
            return None
        if not (parts[2].isdigit() and parts[6].isdigit()):
            return None
        return cls(int(parts[2]), parts[4], float(parts[6]))


@contextmanager
def owned_folder(prefix: str) -> Iterator[Path]:
    """A new temporary folder named PREFIX..., marked as this process's, removed afterwards
    (after a kill, a later run finds it with `stale_folders(prefix)`)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        (folder / MARKER).write_text(Owner.mine().describe() + "\n", encoding="utf-8")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def folder_owner(folder: Path) -> Owner | None:
    """The owner the marker in `folder` names; None without a marker of ours."""
    try:
        with (folder / MARKER).open(encoding="utf-8") as file:
            return Owner.read(file.read(200))
    except (OSError, UnicodeDecodeError):
        return None


def stale_folders(prefix: str) -> list[Path]:
    """The temporary folders named PREFIX... of this user whose marker names a process that
    has ended."""
    found = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(f"{prefix}*")):
        try:
            if folder.is_symlink() or not folder.is_dir() or not _own(folder):
                continue
        except OSError:
            continue
        owner = folder_owner(folder)
        if owner is not None and owner.gone:
            found.append(folder)
    return found


def _own(path: Path) -> bool:
    getuid = getattr(os, "getuid", None)
    return getuid is None or path.stat().st_uid == getuid()
