"""What an http retriever's service is: its `retriever.version`, read when the gate starts."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError


class VersionSource(Protocol):
    """Where a version is read (http.VersionSource): exactly one of the two is set."""

    @property
    def command(self) -> list[str] | None: ...
    @property
    def url(self) -> str | None: ...


VERSION_LIMIT = 200
"""Characters of a version answer kept: a build id or a model name, not a page."""


def read_version(
    version: str | VersionSource | None, timeout: float, base_dir: Path | None
) -> str | None:
    """The declared version, or the answer of its command or URL (stripped, at most
    VERSION_LIMIT characters); a source that fails is a GateError naming retriever.version."""
    if version is None or isinstance(version, str):
        return version
    if version.command is not None:
        import subprocess

        try:
            done = subprocess.run(
                version.command,
                cwd=base_dir,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise GateError(f"retriever.version.command: {error}") from None
        if done.returncode != 0:
            raise GateError(
                f"retriever.version.command exited {done.returncode}: {excerpt(done.stderr)}"
            )
        answer = done.stdout
    else:
        import httpx

        try:
            response = httpx.get(version.url or "", timeout=timeout, follow_redirects=False)
        except httpx.HTTPError as error:
            raise GateError(f"retriever.version.url: {type(error).__name__}: {error}") from None
        if response.status_code != 200:
            raise GateError(f"retriever.version.url: HTTP {response.status_code}")
        answer = response.text
    answer = answer.strip()[:VERSION_LIMIT]
    if not answer:
        raise GateError("retriever.version: the command or URL answered nothing")
    return answer
