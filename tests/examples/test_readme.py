"""The README's two fresh-machine commands: CI runs the test one verbatim, the example works;
and every sample the README shows is what the tool prints (tests/helpers/doc_samples.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.doc_samples import (
    README,
    Block,
    blocks,
    check_console,
    check_report,
    copy_configs,
)
from tests.helpers.paths import REPO


def readme_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, test_command = readme_commands()
    assert "pytest" in test_command
    assert test_command in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_example_command_succeeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example, _ = readme_commands()
    argv = shlex.split(example.split("&&")[-1])
    assert argv[0] == "retrieval-gate"
    # In a copy of configs/: the check writes its reports and cache beside the config.
    monkeypatch.chdir(copy_configs(tmp_path))
    assert run_cli(*argv[1:]).ret == 0


CONSOLE = blocks(README, "console")
REPORTS = blocks(README, "markdown")


@pytest.mark.parametrize("block", CONSOLE, ids=[block.where for block in CONSOLE])
def test_every_readme_console_command_prints_what_the_readme_shows(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_console(block, copy_configs(tmp_path), monkeypatch)


def test_the_readme_shows_a_report_and_the_example_gate() -> None:
    assert REPORTS
    assert any("configs/example-regressed.yaml" in block.body for block in CONSOLE)


@pytest.mark.parametrize("block", REPORTS, ids=[block.where for block in REPORTS])
def test_the_readme_excerpt_of_a_pr_comment_is_the_real_report(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_report(block, copy_configs(tmp_path), monkeypatch)
