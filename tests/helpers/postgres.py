"""A real PostgreSQL server with the vector extension, started in a temporary folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def postgres_server() -> Iterator[str]:
    """The DSN of a fresh PostgreSQL (pgserver's bundled build, pgvector included), on a
    Unix socket in a temporary folder, trust auth; stopped and removed afterwards."""
    # platformdirs (under pgserver) warns without a private runtime folder: give it one.
    with tempfile.TemporaryDirectory(prefix="rg-pg-") as folder:
        runtime = Path(folder) / "run"
        runtime.mkdir(mode=0o700)
        previous = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            import pgserver

            server = pgserver.get_server(Path(folder) / "data", cleanup_mode="stop")
            try:
                # Thrown away afterwards: no fsync, so the shutdown checkpoint takes no time.
                server.psql("ALTER SYSTEM SET fsync = off; SELECT pg_reload_conf();")
                server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
                yield server.get_uri()
            finally:
                server.cleanup()
        finally:
            if previous is None:
                os.environ.pop("XDG_RUNTIME_DIR", None)
            else:
                os.environ["XDG_RUNTIME_DIR"] = previous
