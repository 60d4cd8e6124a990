"""Running git in a test's repository, as a committer named gate."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.email=gate@example.org", "-c", "user.name=gate"]


def git(root: Path, *args: str) -> str:
    """`git -C root ARGS` with an identity; its output."""
    done = subprocess.run(
        ["git", "-C", str(root), *IDENTITY, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout
