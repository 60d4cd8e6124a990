"""Running git: output of a real repository, and failures that never raise."""

from __future__ import annotations

import subprocess
from pathlib import Path

from retrieval_gate.core.git import git_output, run_git


def test_git_output_reads_a_real_repository(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    top = git_output(tmp_path, "rev-parse", "--show-toplevel", timeout=10)
    assert top is not None
    assert Path(top.strip()).resolve() == tmp_path.resolve()


def test_a_failing_git_is_none_or_code_1_never_an_exception(tmp_path: Path) -> None:
    assert git_output(tmp_path / "missing", "status", timeout=10) is None
    done = run_git(tmp_path, "no-such-command", timeout=10)
    assert done.returncode != 0
    assert done.stderr
