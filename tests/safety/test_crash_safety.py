"""Crash safety: a killed writer, a full disk and two writers at once leave whole files."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from retrieval_gate.gate.baseline.file import read_baseline
from tests.helpers.paths import REPO
from tests.helpers.waiting import GUARD

TRIALS = 8


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A copy of configs/ without caches and reports: the example, its baseline, the tiny set."""
    target = tmp_path / "configs"
    shutil.copytree(
        REPO / "configs",
        target,
        ignore=shutil.ignore_patterns("cache.sqlite*", "result.json", "report.*", "junit.xml"),
    )
    return target


def start(*argv: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.Popen(
        [sys.executable, "-m", "retrieval_gate", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def timed(*argv: str, cwd: Path) -> float:
    """How long the command takes to finish, run once to the end."""
    began = time.monotonic()
    done = start(*argv, cwd=cwd)
    _, err = done.communicate(timeout=GUARD)
    assert done.returncode in (0, 1), err.decode()
    return time.monotonic() - began


def killed_at_random(
    argv: tuple[str, ...], cwd: Path, check: Callable[[int], None], *, seed: int
) -> None:
    """Run `argv` TRIALS times, SIGKILL it at a random moment (weighted to the end of the
    run, where files are written), and `check(trial)` what is on disk after each."""
    duration = timed(*argv, cwd=cwd)
    rng = random.Random(seed)
    for trial in range(TRIALS):
        process = start(*argv, cwd=cwd)
        time.sleep(rng.uniform(0.3, 1.05) * duration)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=GUARD)
        check(trial)


def test_sigkill_while_writing_a_baseline_leaves_the_old_or_a_whole_new_file(
    configs: Path,
) -> None:
    path = configs / ".retrieval-gate" / "example" / "baseline.json"
    old = path.read_bytes()
    # example-regressed.yaml writes the same baseline path with other scores.
    argv = ("baseline", "-c", "example-regressed.yaml", "--force", "--quiet", "--no-cache")
    seen = set()

    def check(trial: int) -> None:
        data = path.read_bytes()
        if data != old:
            record = read_baseline(path)  # whole and valid, or this raises
            assert len(record.query_ids) == 131
            seen.add("new")
        else:
            seen.add("old")
        path.write_bytes(old)

    killed_at_random(argv, configs, check, seed=1)
    # Leftover temporary files never stand in for the baseline, and a later run succeeds.
    done = start("check", "-c", "example.yaml", "--quiet", "--no-cache", cwd=configs)
    _, err = done.communicate(timeout=GUARD)
    assert done.returncode == 0, err.decode()
    assert seen


def test_sigkill_while_writing_reports_leaves_each_report_old_or_whole(configs: Path) -> None:
    folder = configs / ".retrieval-gate" / "example-regressed"
    folder.mkdir(parents=True, exist_ok=True)
    names = ("result.json", "report.md", "junit.xml", "report.html")
    old = {name: f"old {name}\n".encode() for name in names}
    argv = ("check", "-c", "example-regressed.yaml", "--quiet", "--no-cache")

    def check(trial: int) -> None:
        for name in names:
            data = (folder / name).read_bytes()
            if data == old[name]:
                continue
            text = data.decode("utf-8")
            if name == "result.json":
                assert json.loads(text)["status"] == "fail"
            elif name == "junit.xml":
                ET.fromstring(text)
            elif name == "report.html":
                assert text.rstrip().endswith("</html>")
            else:
                assert text.rstrip().endswith("</sub>")
        for name in names:
            (folder / name).write_bytes(old[name])

    for name in names:
        (folder / name).write_bytes(old[name])
    killed_at_random(argv, configs, check, seed=2)


def test_sigkill_while_caching_leaves_a_cache_the_next_run_reads(configs: Path) -> None:
    # The built-in bm25 retriever is cached, keyed by its corpus.
    argv = ("run", "-c", "example.yaml", "--quiet", "-o", "run.trec")
    clean = start(*argv[:-1], "clean.trec", "--no-cache", cwd=configs)
    _, err = clean.communicate(timeout=GUARD)
    assert clean.returncode == 0, err.decode()
    expected = (configs / "clean.trec").read_text()
    caches = list(configs.glob("**/cache.sqlite"))
    assert not caches

    def check(trial: int) -> None:
        again = start(*argv, cwd=configs)
        _, err = again.communicate(timeout=GUARD)
        assert again.returncode == 0, err.decode()
        assert (configs / "run.trec").read_text() == expected
        assert list(configs.glob("**/cache.sqlite"))  # the answers are cached
        if trial % 2:
            for cache in configs.glob("**/cache.sqlite*"):
                cache.unlink()

    killed_at_random(argv, configs, check, seed=3)


def test_two_baseline_writers_at_once_leave_one_whole_file(configs: Path) -> None:
    path = configs / ".retrieval-gate" / "example" / "baseline.json"
    writers = [
        start("baseline", "-c", name, "--force", "--quiet", "--no-cache", cwd=configs)
        for name in ("example.yaml", "example-regressed.yaml", "example.yaml")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=GUARD)
        assert writer.returncode == 0, err.decode()
    record = read_baseline(path)
    assert len(record.query_ids) == 131
    assert not list(path.parent.glob(".baseline.json.*.tmp"))


def test_a_full_disk_is_exit_2_and_keeps_the_old_baseline(configs: Path, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        old = (configs / ".retrieval-gate" / "example" / "baseline.json").read_bytes()
        baseline = disk / "baseline.json"
        baseline.write_bytes(old)  # about 35 kB of the 64 kB
        (disk / "filler").write_bytes(b"x" * (64 * 1024 - len(old) - 8 * 1024))
        done = start(
            "baseline", "-c", "example-regressed.yaml", "--force", "--quiet", "--no-cache",
            "-o", str(baseline), cwd=configs,
        )  # fmt: skip
        _, err = done.communicate(timeout=GUARD)
        assert done.returncode == 2, err.decode()
        message = err.decode()
        assert str(baseline) in message
        assert "No space left on device" in message
        assert baseline.read_bytes() == old
        assert sorted(p.name for p in disk.iterdir()) == ["baseline.json", "filler"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
