"""A killed `check --against`: the next one removes its worktree and folders, and only those."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.git import git
from tests.helpers.paths import REPO
from tests.helpers.waiting import GUARD

EXAMPLE = REPO / "configs"
# A retriever that, when SLOW_MARK is set, says it started and then takes two minutes.
SLOW = """\
import os
import time


def search(query, k):
    mark = os.environ.get("SLOW_MARK")
    if mark:
        open(mark, "w").close()
        time.sleep(120)
    return ["kb-1101", "kb-1102"]
"""

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL of a process group")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding the bundled example with a python retriever of its own."""
    root = tmp_path / "repo"
    (root / "search").mkdir(parents=True)
    shutil.copytree(EXAMPLE / "example", root / "search" / "example")
    text = (EXAMPLE / "example.yaml").read_text()
    text = text[: text.index("\nreport:")] + "\n"
    text = text.replace("baseline: .retrieval-gate/example/baseline.json", "baseline: b.json")
    text = text.replace("  type: bm25\n", "  type: python\n  target: slow_search:search\n")
    # Two fixed documents for every query leave too little to lose for a test to fail a drop,
    # which check refuses: this gate decides on the drop alone.
    text += "gate: {require_significance: false}\n"
    (root / "search" / "gate.yaml").write_text(text)
    (root / "search" / "slow_search.py").write_text(SLOW)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the example")
    return root


@pytest.fixture
def temporary(tmp_path: Path) -> Path:
    """The temporary folder the checks run with (TMPDIR): where --against makes its own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def start_check(repo: Path, temporary: Path, mark: Path | None) -> subprocess.Popen[bytes]:
    """`check --against HEAD` in a process group of its own; with `mark`, the reference side
    touches it and then hangs."""
    env = {**os.environ, "TMPDIR": str(temporary), "PYTHONPATH": str(REPO)}
    env.pop("SLOW_MARK", None)
    if mark is not None:
        env["SLOW_MARK"] = str(mark)
    config = str(repo / "search" / "gate.yaml")
    argv = ["check", "-c", config, "--against", "HEAD", "--quiet", "--no-reports"]
    return subprocess.Popen(
        [sys.executable, "-m", "retrieval_gate", *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def run_check(repo: Path, temporary: Path) -> None:
    done = start_check(repo, temporary, None)
    out, err = done.communicate(timeout=GUARD)
    assert done.returncode == 0, (out + err).decode()


def killed_while_the_reference_runs(repo: Path, temporary: Path, mark: Path) -> None:
    """Start a check, wait until its reference side runs, SIGKILL it (its whole group, as a
    CI runner cancelling a job does)."""
    process = start_check(repo, temporary, mark)
    deadline = time.monotonic() + 300
    while not mark.exists():
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() < deadline, "the reference side never started"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=GUARD)


def registered(repo: Path) -> list[str]:
    """The worktrees `git worktree list` shows, the main one included."""
    listed = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")]


def ours(temporary: Path) -> list[Path]:
    return sorted(temporary.glob("retrieval-gate-*"))


def dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def marked(folder: Path, pid: int, host: str | None = None) -> Path:
    """`folder`, made, with a marker as --against writes it naming `pid` on `host`."""
    folder.mkdir()
    owner = f"retrieval-gate pid {pid} on {host or socket.gethostname()} since 1700000000\n"
    (folder / "retrieval-gate-owner").write_text(owner, encoding="utf-8")
    return folder


def test_a_killed_check_s_worktree_and_folders_go_when_the_next_check_starts(
    repo: Path, temporary: Path, tmp_path: Path
) -> None:
    killed = tmp_path / "started"
    process = start_check(repo, temporary, killed)
    deadline = time.monotonic() + 300
    while not killed.exists():
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() < deadline, "the reference side never started"
        time.sleep(0.05)
    left = ours(temporary)
    assert [p.name.rsplit("-", 1)[0] for p in left] == [
        "retrieval-gate-against",
        "retrieval-gate-ref",
    ]
    assert len(registered(repo)) == 2
    # Another check while this one runs leaves this one's worktree and folders alone.
    run_check(repo, temporary)
    assert ours(temporary) == left
    assert len(registered(repo)) == 2
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=GUARD)
    assert ours(temporary) == left  # what the kill left behind
    assert str(left[0] / "tree") in registered(repo)

    # What is not ours, or not dead, stays: a worktree of the user's, folders without our
    # marker or our name, a marker of a live process or of another machine.
    mine = tmp_path / "my-worktree"
    git(repo, "worktree", "add", "--detach", "--quiet", str(mine), "HEAD")
    live = marked(temporary / "retrieval-gate-against-live", os.getpid())
    git(repo, "worktree", "add", "--detach", "--quiet", str(live / "tree"), "HEAD")
    keep = [
        live,
        temporary / "retrieval-gate-against-unmarked",
        marked(temporary / "retrieval-gate-ref-elsewhere", dead_pid(), host="another-host"),
        marked(temporary / "other-tool-against-x", dead_pid()),
    ]
    keep[1].mkdir()
    (keep[1] / "tree").mkdir()

    run_check(repo, temporary)
    assert sorted(registered(repo)) == sorted([str(repo), str(mine), str(live / "tree")])
    assert not left[0].exists()
    assert not left[1].exists()
    assert all(folder.is_dir() for folder in keep)
    assert (keep[1] / "tree").is_dir()
    git(repo, "worktree", "remove", "--force", str(live / "tree"))


def test_a_worktree_whose_folder_is_gone_is_unregistered_by_its_lock(
    repo: Path, temporary: Path, tmp_path: Path
) -> None:
    killed_while_the_reference_runs(repo, temporary, tmp_path / "started")
    for folder in ours(temporary):  # a cleaner of /tmp came by
        shutil.rmtree(folder)
    assert len(registered(repo)) == 2
    assert "locked retrieval-gate pid" in git(repo, "worktree", "list", "--porcelain")
    run_check(repo, temporary)
    assert registered(repo) == [str(repo)]
    assert ours(temporary) == []


def test_a_worktree_registered_in_another_repository_is_unregistered_there(
    repo: Path, temporary: Path, tmp_path: Path
) -> None:
    killed_while_the_reference_runs(repo, temporary, tmp_path / "started")
    other = tmp_path / "other"
    shutil.copytree(repo, other, ignore=shutil.ignore_patterns(".git"))
    git(other, "init", "-q", "-b", "main")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "another repository")
    run_check(other, temporary)  # its start removes what the killed check of `repo` left
    assert registered(repo) == [str(repo)]
    assert registered(other) == [str(other)]
    assert ours(temporary) == []
