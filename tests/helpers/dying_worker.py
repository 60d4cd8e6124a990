"""A Dask worker plugin that kills its worker process when it starts scoring a shard."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

SHARD_TASK = "retrieval-gate-shard-"


class DieWhenScoring(WorkerPlugin):
    """Exit the worker's process (as the kernel's OOM killer would end it) the first `times`
    times any worker starts a shard; `deaths` is a file with one line per death, shared by the
    workers of this machine, so the count survives the restarts."""

    name = "die-when-scoring"

    def __init__(self, deaths: Path, times: int) -> None:
        self.deaths = str(deaths)
        self.times = times

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith(SHARD_TASK):
            return
        # Counted and claimed under one lock: two workers starting shards at once both read
        # the count before either wrote, and both died (seen once under load).
        with Path(self.deaths).open("a+") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            file.seek(0)
            if len(file.read().splitlines()) < self.times:
                file.write(f"{key}\n")
                file.flush()
                os._exit(1)  # the lock goes with the process
