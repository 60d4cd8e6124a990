"""A write killed half-way: its temporary file goes with the next write there, nothing else."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.helpers.waiting import GUARD

# `retrieval-gate ARGV` whose first fsync (the atomic writer's, once the temporary file holds
# every byte) says so and hangs: a kill then lands while the file is written.
STALLED = """\
import os, runpy, sys, time

def stalled(fd):
    open(os.environ["STALLED"], "w").close()
    time.sleep(300)

os.fsync = stalled
sys.argv[0] = "retrieval-gate"
runpy.run_module("retrieval_gate", run_name="__main__")
"""
MINUTES_AGO = 10 * 60


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A copy of configs/ without caches and reports."""
    target = tmp_path / "configs"
    shutil.copytree(
        REPO / "configs",
        target,
        ignore=shutil.ignore_patterns("cache.sqlite*", "result.json", "report.*", "junit.xml"),
    )
    return target


def check(configs: Path, *, stalled: Path | None = None) -> subprocess.Popen[bytes]:
    """`check` of the example (it writes four reports into one folder)."""
    argv = ["check", "-c", "example.yaml", "--quiet", "--no-cache"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if stalled is None:
        command = [sys.executable, "-m", "retrieval_gate", *argv]
    else:
        command = [sys.executable, "-c", STALLED, *argv]
        env["STALLED"] = str(stalled)
    return subprocess.Popen(
        command, cwd=configs, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def finish(process: subprocess.Popen[bytes]) -> None:
    out, err = process.communicate(timeout=GUARD)
    assert process.returncode == 0, (out + err).decode()


def temporaries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def age(path: Path, seconds: float) -> None:
    """Make `path` look last written `seconds` ago."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_report_write_killed_half_way_leaves_a_file_the_next_write_removes(
    configs: Path, tmp_path: Path
) -> None:
    folder = configs / ".retrieval-gate" / "example"
    stalled = tmp_path / "stalled"
    process = check(configs, stalled=stalled)
    deadline = time.monotonic() + 300
    while not stalled.exists():
        assert process.poll() is None, process.communicate()[1].decode()
        assert time.monotonic() < deadline, "no report was written"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=GUARD)
    left = temporaries(folder)
    assert len(left) == 1, left  # the write the kill interrupted
    assert left[0].startswith(".result.json.")
    assert json.loads((folder / left[0]).read_text())["status"] == "pass"  # a whole report
    # Right after the kill the file stays (its writer might be on another machine sharing
    # the folder); a while later, the next write into the folder removes it.
    finish(check(configs))
    assert temporaries(folder) == left
    age(folder / left[0], MINUTES_AGO)
    finish(check(configs))
    assert temporaries(folder) == []
    assert json.loads((folder / "result.json").read_text())["status"] == "pass"


@pytest.mark.skipif(os.name != "posix", reason="whether a pid runs needs POSIX signals")
def test_only_this_writer_s_temporary_files_of_an_ended_process_are_removed(
    configs: Path,
) -> None:
    folder = configs / ".retrieval-gate" / "example"
    folder.mkdir(parents=True, exist_ok=True)
    dead, hexa = dead_pid(), "0123456789ab"
    removed = [
        f".result.json.{dead}-{hexa}.tmp",  # its writer ended
        f".old-report.md.{dead}-{hexa}.tmp",  # any target of the folder
        f".report.html.{hexa}.tmp",  # an earlier version's name, an hour old
    ]
    kept = [
        f".result.json.{os.getpid()}-{hexa}.tmp",  # its writer still runs
        f".report.md.{dead}-{hexa}.tmp",  # written a moment ago (see below)
        f".junit.xml.{hexa}.tmp",  # an earlier version's name, a minute old
        f".result.json.{dead}-{hexa[:11]}.tmp",  # one hex digit short
        f".result.json.{dead}-{hexa.upper()}.tmp",  # not the writer's hex
        f"result.json.{dead}-{hexa}.tmp",  # no leading dot
        f".result.json.{dead}-{hexa}.tmp.bak",
        f".result.json.{dead}-{hexa}.temp",
        ".result.json.tmp",
        f".notes.{dead}-{hexa}.tmp.d",
    ]
    for name in [*removed, *kept]:
        (folder / name).write_text("leftover\n")
        age(folder / name, 2 * 3600)
    age(folder / f".report.md.{dead}-{hexa}.tmp", 5)
    age(folder / f".junit.xml.{hexa}.tmp", 60)
    directory = folder / f".notes.{dead}-{hexa}.tmp"  # a folder named like one
    directory.mkdir()
    age(directory, 2 * 3600)
    link = folder / f".link.{dead}-{hexa}.tmp"  # a link named like one, to a file of the user's
    (configs / "precious.txt").write_text("keep\n")
    link.symlink_to(configs / "precious.txt")
    os.utime(link, (time.time() - 7200,) * 2, follow_symlinks=False)
    finish(check(configs))
    after = set(temporaries(folder)) | {p.name for p in folder.iterdir()}
    assert not set(removed) & after
    assert set(kept) | {directory.name, link.name} <= after
    assert (configs / "precious.txt").read_text() == "keep\n"
