"""A device or a pipe named as an input: refused at once (exit 2), never read or waited on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.core.input_files import regular_file
from retrieval_gate.errors import InputError
from tests.helpers.paths import CONFIGS

# A refusal is immediate; the limit only turns a hang (the defect) into a failure.
HANG = 60


def _gate(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "retrieval_gate", *map(str, argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=HANG,
        check=False,
    )


def test_regular_files_folders_and_missing_paths_pass(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for name in ("file", ".", "missing"):
        assert regular_file(tmp_path / name) == tmp_path / name


def test_a_device_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match="not a regular file") as caught:
        regular_file("/dev/zero")
    assert "/dev/zero" in str(caught.value)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    shutil.copytree(CONFIGS / "tiny", tmp_path / "tiny")
    for name in ("example.yaml", "example-evaluators.yaml"):
        shutil.copy(CONFIGS / name, tmp_path / name)
    shutil.copytree(CONFIGS / "example", tmp_path / "example")
    baseline = CONFIGS / ".retrieval-gate" / "example" / "baseline.json"
    (tmp_path / ".retrieval-gate" / "example").mkdir(parents=True)
    shutil.copy(baseline, tmp_path / ".retrieval-gate" / "example" / "baseline.json")
    return tmp_path


def _point(config: Path, old: str, new: str) -> None:
    text = config.read_text(encoding="utf-8")
    assert old in text
    config.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_fifo_as_the_queries_file_is_refused_not_waited_on(example: Path) -> None:
    queries = example / "tiny" / "queries.jsonl"
    queries.unlink()
    os.mkfifo(queries)
    done = _gate("check", "-c", "tiny/retrieval-gate.yaml", cwd=example)
    assert done.returncode == 2, done.stderr
    assert "queries.jsonl" in done.stderr
    assert "not a regular file" in done.stderr


def test_a_fifo_as_the_config_is_refused(example: Path) -> None:
    os.mkfifo(example / "fifo.yaml")
    done = _gate("check", "-c", "fifo.yaml", cwd=example)
    assert done.returncode == 2, done.stderr
    assert "fifo.yaml" in done.stderr
    assert "not a regular file" in done.stderr


def test_an_evaluator_export_at_dev_zero_is_exit_2(example: Path) -> None:
    config = example / "example-evaluators.yaml"
    _point(config, "current: example/ragas-current.csv", "current: /dev/zero")
    done = _gate("check", "-c", config, "--no-reports", cwd=example)
    assert done.returncode == 2, done.stderr
    assert "/dev/zero" in done.stderr
    assert "not a regular file" in done.stderr


def test_a_rubric_at_dev_zero_is_exit_2_before_any_call(example: Path) -> None:
    config = example / "example.yaml"
    text = config.read_text(encoding="utf-8")
    judge = "judge:\n  model: any-model\n  base_url: http://127.0.0.1:9/v1\n  rubric: /dev/zero\n"
    config.write_text(text + "\n" + judge, encoding="utf-8")
    done = _gate("judge", "-c", config, "--dry-run", cwd=example)
    assert done.returncode == 2, done.stderr
    assert "/dev/zero" in done.stderr
    assert "not a regular file" in done.stderr
