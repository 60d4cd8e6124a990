"""A retriever's service started from its checkout for one run: ready-polled, then stopped."""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from retrieval_gate.adapters.settings import is_secret
from retrieval_gate.core import redaction
from retrieval_gate.core.strict import StrictModel
from retrieval_gate.core.wording import console_text, one_line
from retrieval_gate.errors import GateError

LOG_LINES = 20
"""Lines of the service's output an error shows."""
LOG_TAIL_BYTES = 64 * 1024
"""Bytes read from the end of the log to find those lines."""
STOP_GRACE = 5.0
"""Seconds the process group gets after SIGTERM before SIGKILL."""
POLL_INTERVAL = 0.15
"""Seconds between two readiness requests."""
PROBE_TIMEOUT = 1.0
"""Seconds one readiness request may take."""
MAX_TIMEOUT = 600.0

_RUNNING: set[Service] = set()
"""Services started and not stopped yet: stopped at interpreter exit, so none outlives us."""


class ServeConfig(StrictModel):
    """How the service behind `url` is started from the config's checkout: the gate runs
    `command`, waits until `ready` answers, runs the queries and stops the service."""

    command: list[str] = Field(
        min_length=1,
        description=(
            "Set `serve` to have the gate start the service for the run, from the config's "
            "folder (in `check --against`, each side's checkout): the argv of its command (no "
            "shell), run in a process group of its own and stopped with SIGTERM (SIGKILL after "
            "5 s) once the queries ran. Its output goes to a log whose last lines an error "
            "shows. Part of the retriever's description, with the values of credential-looking "
            "options (--api-key X) redacted."
        ),
    )
    ready: str = Field(
        description=(
            "With serve: an http(s) URL polled with GET until it answers 2xx (a /health route, "
            "say); the queries start then. Nothing may answer there before the command starts: "
            "a service left running would be queried instead."
        )
    )
    timeout: float = Field(
        default=30.0,
        gt=0,
        le=MAX_TIMEOUT,
        description=(
            "With serve: seconds to wait for `ready`; then the service is stopped and the run "
            "fails."
        ),
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "With serve: extra environment variables for the command. Their values never enter "
            "descriptions; values of credential-looking names never enter messages."
        ),
    )

    @field_validator("command")
    @classmethod
    def _program_first(cls, command: list[str]) -> list[str]:
        if command and not command[0].strip():
            raise ValueError("the first item must name the program to run")
        return command

    @field_validator("ready")
    @classmethod
    def _http_url(cls, ready: str) -> str:
        parts = urlsplit(ready)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return ready


def public_argv(argv: Sequence[str]) -> list[str]:
    """`argv` with the value of every credential-looking option redacted: `--api-key X` and
    `--token=X` read `--api-key <redacted>` and `--token=<redacted>`."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            shown.append(redaction.REDACTED)
            hide_next = False
            continue
        name, equals, _ = arg.partition("=")
        if arg.startswith("-") and is_secret(name.lstrip("-")):
            shown.append(f"{name}={redaction.REDACTED}" if equals else arg)
            hide_next = not equals
        else:
            shown.append(arg)
    return shown


def shown_command(argv: Sequence[str]) -> str:
    """`argv` as one inert line for a message: credential-looking options and registered
    secrets redacted, control characters shown as `?`."""
    words = [
        word if word.endswith(redaction.REDACTED) else shlex.quote(word)  # no quotes needed
        for word in public_argv(argv)
    ]
    return one_line(redaction.redacted(" ".join(words)))


class Service:
    """One started service: `start()` runs the command and waits until `ready` answers 2xx;
    `stop()` ends its whole process group and is idempotent. A failed `start()` leaves
    nothing running. Use it as a context manager, or call `stop()` in a `finally`.

    `ready_shown` is how messages show the ready URL (the caller's redaction of its
    credentials); by default the URL with its password redacted."""

    def __init__(
        self, config: ServeConfig, *, base_dir: Path | None, ready_shown: str | None = None
    ) -> None:
        self.config = config
        self.base_dir = base_dir
        # URL user info and credential-looking variables are never echoed.
        password = urlsplit(config.ready).password
        if password:
            redaction.register(password)
        for name, value in config.env.items():
            if is_secret(name):
                redaction.register(value)
        self.ready_shown = one_line(redaction.redacted(ready_shown or config.ready))
        self.name = shown_command(config.command)
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    def description(self) -> dict[str, Any]:
        """What of the service is part of the retriever's description: the command (options
        such as --api-key redacted) and the names of its extra environment variables."""
        return {"command": public_argv(self.config.command), "env": sorted(self.config.env)}

    @property
    def pid(self) -> int | None:
        """The process id (and process group id) of the running command, or None."""
        return None if self._popen is None else self._popen.pid

    def start(self) -> None:
        """Run the command and return once `ready` answers 2xx. A GateError, with nothing
        left running, when something answers there already, the command cannot start, it
        exits first, or `timeout` passes."""
        if self._popen is not None:
            return
        self._refuse_taken()
        handle, log = tempfile.mkstemp(prefix="retrieval-gate-serve-", suffix=".log")
        self._log = Path(log)
        try:
            self._popen = subprocess.Popen(
                self.config.command,
                cwd=self.base_dir,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.config.env},
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                # Its own group, so a stop reaches every process it starts.
                start_new_session=os.name == "posix",
                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except (OSError, ValueError) as error:  # ValueError: a NUL in an argument
            self._remove_log()
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            reason = one_line(redaction.redacted(f"{type(error).__name__}: {why}"))
            raise GateError(
                f"retriever.serve.command {self.name} could not start: {reason} (it runs in "
                "the config's folder, without a shell)"
            ) from None
        finally:
            os.close(handle)
        _RUNNING.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """End the process group: SIGTERM, then SIGKILL to what is left after STOP_GRACE
        seconds; remove the log. Does nothing when nothing runs."""
        try:
            self._end_processes()
        finally:
            self._remove_log()

    def __enter__(self) -> Service:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _refuse_taken(self) -> None:
        import httpx

        try:
            response = httpx.get(self.config.ready, timeout=PROBE_TIMEOUT, follow_redirects=False)
        except (httpx.HTTPError, httpx.InvalidURL):
            return  # nothing answers: the port is ours to take
        raise GateError(
            f"retriever.serve.ready: {self.ready_shown} answers (HTTP {response.status_code}) "
            f"before retriever.serve.command started; the gate would query that service "
            "instead. Stop what listens there (a service left running?) or serve on another "
            "port"
        )

    def _wait_ready(self) -> None:
        import httpx

        popen = self._popen
        assert popen is not None
        timeout = self.config.timeout
        deadline = time.monotonic() + timeout
        with httpx.Client(follow_redirects=False) as client:
            while True:
                code = popen.poll()
                if code is not None:
                    raise GateError(self._exited(code))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    response = client.get(self.config.ready, timeout=min(PROBE_TIMEOUT, remaining))
                except httpx.HTTPError:
                    response = None
                if response is not None and response.is_success:
                    code = popen.poll()  # not some other process answering for it
                    if code is not None:
                        raise GateError(self._exited(code))
                    return
                time.sleep(max(min(POLL_INTERVAL, deadline - time.monotonic()), 0.0))
        self._end_processes()  # first, so the log holds all it wrote
        raise GateError(
            f"retriever.serve: {self.name} was not ready at {self.ready_shown} within "
            f"{timeout:g}s (no 2xx answer to GET); check that it serves that URL, or raise "
            f"retriever.serve.timeout if it needs longer to start{self._tail()}"
        )

    def _exited(self, code: int) -> str:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        # A command that starts a daemon and returns leaves nothing the gate could stop.
        hint = " (it must keep running while it serves, not start a daemon)" if code == 0 else ""
        return (
            f"retriever.serve.command {self.name} {how} before {self.ready_shown} "
            f"answered{hint}{self._tail()}"
        )

    def _tail(self) -> str:
        """The last LOG_LINES lines of the log, each made inert, or a note that it is empty."""
        if self._log is None:
            return ""
        try:
            with self._log.open("rb") as file:  # its own offset: the writers' is shared
                file.seek(max(file.seek(0, os.SEEK_END) - LOG_TAIL_BYTES, 0))
                text = file.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line for line in text.splitlines() if line.strip()][-LOG_LINES:]
        if not lines:
            return "; it printed nothing"
        # Redacted before the lines are flattened (a secret may hold spaces), and each line
        # behind a "| ", so no runner reads it as a workflow command.
        shown = [console_text(one_line(redaction.redacted(line))) for line in lines]
        return "; the last lines it printed:\n" + "\n".join(f"  | {line}" for line in shown)

    def _end_processes(self) -> None:
        popen = self._popen
        if popen is None:
            return
        self._popen = None
        _RUNNING.discard(self)
        # The group too when the command itself has exited: its children may not have.
        self._signal(popen, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=STOP_GRACE)
        while _group_alive(popen.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if popen.poll() is None or _group_alive(popen.pid):
            self._signal(popen, getattr(signal, "SIGKILL", signal.SIGTERM))
            popen.wait()
            deadline = time.monotonic() + 1.0  # a killed process is gone in a moment
            while _group_alive(popen.pid) and time.monotonic() < deadline:
                time.sleep(0.02)

    @staticmethod
    def _signal(popen: subprocess.Popen[bytes], number: int) -> None:
        if os.name == "posix":
            with contextlib.suppress(OSError):  # the group is gone already
                os.killpg(popen.pid, number)
            return
        if popen.poll() is None:  # pragma: no cover (Windows: the process alone)
            if number == signal.SIGTERM:
                popen.terminate()
            else:
                popen.kill()

    def _remove_log(self) -> None:
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None


def _group_alive(group: int) -> bool:
    """Whether a live process of the group is left (POSIX; elsewhere only the command counts).
    Zombies do not count: an init that never reaps (a container's) would keep them forever."""
    if os.name != "posix":  # pragma: no cover
        return False
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass  # EPERM: a member exists
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # it just exited
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 1 :].split()
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


@atexit.register
def _stop_all() -> None:
    for service in list(_RUNNING):
        service.stop()
