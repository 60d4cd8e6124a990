"""Where a baseline was made: the git commit and whether the work tree had changes."""

from __future__ import annotations

from pathlib import Path

from retrieval_gate.core.git import git_output

GIT_TIMEOUT = 10.0
"""Seconds a git call may take; provenance is not worth stalling a CI job for."""


def git_state(repo_dir: Path) -> tuple[str | None, bool | None]:
    """HEAD's commit and whether tracked files have uncommitted changes; (None, None) outside a
    git work tree or without git. A repository with no commit yet gives (None, dirty)."""
    # Untracked files do not count: the cache and reports beside the config are untracked,
    # and would mark every baseline dirty.
    status = _git(repo_dir, "status", "--porcelain", "--untracked-files=no")
    if status is None:
        return None, None
    head = _git(repo_dir, "rev-parse", "--verify", "--quiet", "HEAD")
    return (head.strip() or None) if head else None, bool(status.strip())


def _git(repo_dir: Path, *args: str) -> str | None:
    return git_output(repo_dir, *args, timeout=GIT_TIMEOUT)
