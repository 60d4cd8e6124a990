"""The `command` retriever: a long-lived subprocess answering JSON lines on stdin/stdout."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from retrieval_gate.adapters.hits import to_hits
from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.model import MAX_CANDIDATES, Document, Hit, Query, StagedHits
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError, RetrieverError

STDERR_LINES = 20  # how much of the process's stderr an error shows
GRACE = 2.0  # seconds a process gets to exit on its own once its stdin is closed


class CommandConfig(AdapterSettings):
    """Runs a program that answers one JSON line per query."""

    type: Literal["command"] = Field(
        default="command", description="A program speaking JSON lines."
    )
    argv: list[str] | str = Field(
        description=(
            "The program and its arguments; a string is split like a shell would "
            "(or run by the shell with shell: true). Runs in the config's folder."
        )
    )
    shell: bool = Field(default=False, description="Run argv through the shell.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables. Their values never enter descriptions.",
    )


class CommandRetriever(Adapter[CommandConfig]):
    """One process, started at build and kept alive, serves every call in turn (a lock:
    several processes could each load a large model). Per query it reads a line
    `{"id", "text", "k", "metadata"}` on stdin and writes one line on stdout:
    `{"id": ..., "results": [doc id | {"id", "score"}, ...]}` ("hits" also works; a
    "candidates" list beside it gives a first stage's candidates), or
    `{"id": ..., "error": "message"}` to fail that query. Logs belong on stderr. A batch
    (`batch_size > 1`) writes all its lines first, so the program may answer them together.

    A process that exits or does not answer within `timeout` (a retryable error), or that
    prints something other than such a line (not retryable), is stopped; the error shows its
    stderr tail, and the next call starts a new one. Python programs run unbuffered."""

    config_class = CommandConfig

    def __init__(
        self,
        config: CommandConfig,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        if config.shell:
            self.argv: str | list[str] = (
                config.argv if isinstance(config.argv, str) else shlex.join(config.argv)
            )
        else:
            self.argv = shlex.split(config.argv) if isinstance(config.argv, str) else config.argv
        if not self.argv:
            raise GateError("retriever.argv is empty; name the program to run")
        self.name = self.argv if isinstance(self.argv, str) else shlex.join(self.argv)
        self._lock = threading.Lock()
        try:
            self._process: _Process | None = self._start()
        except OSError as error:
            raise GateError(f"could not start retriever.argv {self.name!r}: {error}") from error

    def describe(self) -> Mapping[str, Any]:
        return {
            "type": "command",
            "argv": self.argv,
            "shell": self.config.shell,
            "env": sorted(self.config.env),  # names only: values may hold credentials
        }

    def batch_size(self) -> int:
        return self.config.batch_size

    def search(self, query: Query, k: int) -> list[Hit]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        requests = [
            json.dumps(
                {"id": q.id, "text": q.text, "k": k, "metadata": dict(q.metadata)}, default=str
            )
            for q in queries
        ]
        with self._lock:
            process = self._running()
            try:
                lines = process.exchange(requests, self.config.timeout)
                return [
                    self._answer(line, query, k) for line, query in zip(lines, queries, strict=True)
                ]
            except _ProcessError as error:
                self._stop()
                raise RetrieverError(
                    f"command {self.name!r} {error}{process.stderr_tail()}",
                    retryable=error.retryable,
                ) from None

    def close(self) -> None:
        with self._lock:
            self._stop(graceful=True)

    def _start(self) -> _Process:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.config.env}
        return _Process(self.argv, self.config.shell, env, self.base_dir)

    def _running(self) -> _Process:
        if self._process is None:
            try:
                self._process = self._start()
            except OSError as error:
                raise RetrieverError(f"could not restart command {self.name!r}: {error}") from None
        return self._process

    def _stop(self, *, graceful: bool = False) -> None:
        if self._process is not None:
            self._process.stop(graceful=graceful)
            self._process = None

    def _answer(self, line: str, query: Query, k: int) -> list[Hit]:
        try:
            data = parsed_json(line)
        except ValueError:
            raise _ProcessError(f"printed a line that is not JSON: {excerpt(line)!r}") from None
        except RecursionError:
            raise _ProcessError(f"printed a line nested too deeply: {excerpt(line)!r}") from None
        if not isinstance(data, dict):
            raise _ProcessError(f'printed {excerpt(line)!r}, not an object {{"id", "results"}}')
        if "id" in data and str(data["id"]) != query.id:
            raise _ProcessError(
                f"answered query {data['id']!r} when asked for {query.id!r}; answer each "
                "line in order, one line per query"
            )
        if "error" in data:
            raise RetrieverError(
                f"command {self.name!r} failed on query {query.id!r}: {data['error']}",
                retryable=data.get("retryable") is True,
            )
        results = data.get("results", data.get("hits"))
        if results is None:
            raise RetrieverError(
                f'command {self.name!r}: the answer to query {query.id!r} has no "results": '
                f"{excerpt(line)!r}"
            )
        hits = to_hits(results, k, f"command {self.name!r}")
        if "candidates" not in data:
            return hits
        where = f"command {self.name!r} (its candidates)"
        return StagedHits(hits, to_hits(data["candidates"], MAX_CANDIDATES, where))


class _ProcessError(Exception):
    """The process cannot be trusted for the next query: it exited, hung or printed junk."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class _Process:
    """A child process with threads draining its stdout (into a queue, so reads can time
    out) and stderr (into a short tail, so it can never fill the pipe and block the child)."""

    def __init__(self, argv: str | list[str], shell: bool, env: dict[str, str], cwd: Path | None):
        self.popen = subprocess.Popen(
            argv,
            shell=shell,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=os.name == "posix",  # so a kill reaches a shell's children too
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.threads = [
            threading.Thread(target=self._drain_stdout, daemon=True),
            threading.Thread(target=self._drain_stderr, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def exchange(self, requests: list[str], timeout: float) -> list[str]:
        """One answer line per request, all within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        try:
            stdin = self.popen.stdin
            if stdin is None:
                raise BrokenPipeError("no stdin")
            stdin.write("".join(f"{request}\n" for request in requests))
            stdin.flush()
        except (OSError, ValueError):
            raise self._gone() from None
        answers: list[str] = []
        while len(answers) < len(requests):
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise _ProcessError(f"did not answer within {timeout:g}s", retryable=True) from None
            if line is None:
                raise self._gone()
            if line.strip():
                answers.append(line)
        return answers

    def stderr_tail(self) -> str:
        return "; stderr: " + " | ".join(self.stderr) if self.stderr else "; stderr was empty"

    def stop(self, *, graceful: bool) -> None:
        """End the process: EOF on stdin first when `graceful`, then a kill."""
        try:
            if self.popen.stdin is not None:
                self.popen.stdin.close()
        except OSError:
            pass  # it already exited, with input unread
        try:
            self.popen.wait(timeout=GRACE if graceful else 0.0)
        except subprocess.TimeoutExpired:
            self._kill()
            self.popen.wait()
        for thread in self.threads:
            thread.join(timeout=1.0)
        # A stream is only closed once its reader finished: closing it under a blocked read
        # (a grandchild still holding the pipe) would block here.
        for thread, stream in zip(
            self.threads, (self.popen.stdout, self.popen.stderr), strict=True
        ):
            if stream is not None and not thread.is_alive():
                stream.close()

    def _gone(self) -> _ProcessError:
        try:
            code = self.popen.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return _ProcessError("closed its stdout", retryable=True)
        self.threads[1].join(timeout=1.0)  # let the stderr tail catch the last words
        return _ProcessError(f"exited with code {code}", retryable=True)

    def _kill(self) -> None:
        if os.name == "posix":
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
                return
            except OSError:
                pass  # the group is gone already
        self.popen.kill()

    def _drain_stdout(self) -> None:
        if self.popen.stdout is not None:
            for line in self.popen.stdout:
                self.lines.put(line)
        self.lines.put(None)

    def _drain_stderr(self) -> None:
        if self.popen.stderr is not None:
            for line in self.popen.stderr:
                self.stderr.append(line.rstrip())
