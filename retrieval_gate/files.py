"""Writing files atomically: readers never see half a file, failures keep the old one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from retrieval_gate.errors import GateError


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename it over `path`, so that a reader
    never sees half a file and a failed write leaves the old file in place."""
    temporary: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A temporary file is created private (0600); keep the old file's mode, or the usual.
        mode = path.stat().st_mode & 0o777 if path.is_file() else 0o644
        with tempfile.NamedTemporaryFile(
            "w",
            encoding="utf-8",
            dir=path.parent,
            prefix=f".{path.name}.",
            suffix=".tmp",
            delete=False,
        ) as handle:
            temporary = Path(handle.name)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.chmod(mode)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise GateError(f"{path}: cannot write: {exc}") from exc
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
