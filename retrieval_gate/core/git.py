"""Running git: one subprocess call with a timeout, no prompt, and no optional index lock."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_git(repo: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`git -C repo ARGS`; a git that cannot start or times out is a failed call (code 1)."""
    # GIT_OPTIONAL_LOCKS=0: `git status` must not take the index lock from a concurrent git.
    environment = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            env=environment,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return subprocess.CompletedProcess(["git", *args], 1, "", str(error))


def git_output(repo: Path, *args: str, timeout: float) -> str | None:
    """What `git -C repo ARGS` printed, or None when it failed."""
    done = run_git(repo, *args, timeout=timeout)
    return done.stdout if done.returncode == 0 else None
