"""`check --against` with latency checks: both sides' queries run in interleaved turns."""

from __future__ import annotations

import contextlib
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.core.leftovers import owned_folder
from retrieval_gate.errors import GateError
from retrieval_gate.execution.turns import Turns
from retrieval_gate.pipeline.against import (
    SCRATCH_PREFIX,
    TAIL_LINES,
    Reference,
    answered,
    config_at,
    worker_command,
    worker_request,
)
from retrieval_gate.pipeline.execute import Looks
from retrieval_gate.pipeline.record import CurrentRun, record_current

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.execution.runner import RunResult
    from retrieval_gate.gate.baseline.record import Baseline

_WAIT = 60.0
"""Seconds the reference side's process may take to end once its last turn is done."""


def interleaved_records(
    reference: Reference,
    tree: Path,
    config: GateConfig,
    repo: Path,
    turns: Turns,
    *,
    progress: TextIO | None,
) -> tuple[Baseline, tuple[str, ...], CurrentRun]:
    """Both sides' records, their queries run in `turns`: the reference side (REF, checked
    out at `tree`) in a worker process that runs a turn when told to, the current side here.
    Neither side is cached. Returns the reference's record and warnings, and the current run.
    A side that fails stops both; the error names the side."""
    path = config_at(reference, tree, config, repo)
    with owned_folder(SCRATCH_PREFIX) as scratch:
        request, answer = worker_request(
            scratch, config.path, path, tree, repeats=1, turns=turns.size
        )
        with _Partner(request, reference, progress) as partner:
            number = 0

            def before(turn: int) -> None:
                nonlocal number
                number = turn
                if turns.reference_first(turn):
                    partner.turn(turn)

            def after(dataset: Dataset, result: RunResult) -> bool:
                if not turns.reference_first(number):
                    partner.turn(number)
                return False

            try:
                current = record_current(
                    config,
                    cache=False,
                    progress=progress,
                    looks=Looks(lambda dataset: dataset.queries, turns.size, after, before),
                )
            except _StoppedError:
                current = None  # the worker's answer says why
            partner.finish()
        record, notes = answered(reference, answer, partner.tail)
    if current is None:
        raise GateError(f"the retriever at {reference.label} stopped before its last turn")
    return record, notes, current


class _Partner:
    """The reference side's worker process, run a turn at a time over a pipe."""

    def __init__(self, request: Path, reference: Reference, progress: TextIO | None) -> None:
        self.reference = reference
        self.progress = progress
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.worker = subprocess.Popen(
            worker_command(request),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self.relay = threading.Thread(target=self._relay, daemon=True)
        self.relay.start()

    def _relay(self) -> None:
        """The worker's output (warnings, what its retriever prints), kept and passed on."""
        assert self.worker.stderr is not None
        for line in self.worker.stderr:
            self.tail.append(line.rstrip("\n"))
            if self.progress is not None:
                self.progress.write(line)
                self.progress.flush()

    def turn(self, number: int) -> None:
        """Run the reference side's turn `number` and wait for it to end."""
        assert self.worker.stdin is not None
        assert self.worker.stdout is not None
        try:
            self.worker.stdin.write(f"go {number}\n")
            self.worker.stdin.flush()
            said = self.worker.stdout.readline()
        except (BrokenPipeError, OSError):
            said = ""
        if said != "done\n":
            # The worker ended: its answer says why (read by `interleaved_records`).
            self.finish()
            raise _StoppedError(self.reference)

    def finish(self) -> None:
        """Tell the worker there are no more turns and wait for it to end."""
        if self.worker.stdin is not None and not self.worker.stdin.closed:
            with contextlib.suppress(OSError):  # it already ended
                self.worker.stdin.close()
        try:
            self.worker.wait(timeout=_WAIT)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait()
        self.relay.join(timeout=_WAIT)

    def __enter__(self) -> _Partner:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.worker.poll() is None:
            self.worker.kill()
        self.finish()
        for stream in (self.worker.stdout, self.worker.stderr):
            if stream is not None:
                stream.close()


class _StoppedError(GateError):
    """The reference side ended before a turn it was asked for."""

    def __init__(self, reference: Reference) -> None:
        super().__init__(f"the retriever at {reference.label} stopped before its turn")
