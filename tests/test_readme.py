"""The README's two fresh-machine commands: CI runs the test one verbatim, the example works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doc_samples import README, ROOT, Block, blocks, check_console, copy_configs

from retrieval_gate.cli.main import main


def readme_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, test_command = readme_commands()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_example_command_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    example, _ = readme_commands()
    argv = shlex.split(example.split("&&")[-1])
    assert argv[0] == "retrieval-gate"
    monkeypatch.chdir(ROOT)
    assert main(argv[1:]) == 0


def test_readme_config_example_is_a_valid_config(tmp_path: Path) -> None:
    from retrieval_gate.config.loader import load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"would write it:\n\n```yaml\n(.+?)\n```", text, flags=re.S)[0]
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(example, encoding="utf-8")
    config = load(path, environ={"SEARCH_URL": "http://127.0.0.1:9", "SEARCH_TOKEN": "t"})
    assert config.retriever.type == "http"
    assert [str(m) for m in config.metrics] == ["ndcg@10", "recall@10", "mrr@10"]


CONSOLE = blocks(README, "console")


@pytest.mark.parametrize("block", CONSOLE, ids=[block.where for block in CONSOLE])
def test_every_readme_console_command_prints_what_the_readme_shows(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_console(block, copy_configs(tmp_path), monkeypatch)


def test_the_readme_excerpt_of_a_pr_comment_is_the_real_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import shutil

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    excerpt = re.findall(r"^> (.*)$", text.split("## ", 1)[0], flags=re.M)
    assert excerpt[0].startswith("**❌ FAIL · retrieval-gate · example-regressed")
    shutil.copytree(
        ROOT / "configs", tmp_path / "configs", ignore=shutil.ignore_patterns("cache.sqlite*")
    )
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.md"
    argv = ["check", "-c", "configs/example-regressed.yaml", "--markdown", str(report)]
    assert main(argv, stdout=io.StringIO(), stderr=io.StringIO()) == 1
    lines = report.read_text(encoding="utf-8").splitlines()
    assert "## " + excerpt[0].strip("*") in lines
    for line in excerpt[1:]:
        assert line in lines, line
