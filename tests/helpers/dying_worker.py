"""A Dask worker plugin that kills its worker process when it starts scoring a shard."""

from __future__ import annotations

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
        path = Path(self.deaths)
        died = len(path.read_text().splitlines()) if path.exists() else 0
        if died < self.times:
            with path.open("a") as file:
                file.write(f"{key}\n")
            os._exit(1)
