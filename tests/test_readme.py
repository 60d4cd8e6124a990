"""The README's two fresh-machine commands: CI runs the test one verbatim, the example works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
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
    from retrieval_gate.config import load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"### The config\n\n```yaml\n(.+?)\n```", text, flags=re.S)[0]
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(example, encoding="utf-8")
    config = load(path, environ={"SEARCH_URL": "http://127.0.0.1:9", "SEARCH_TOKEN": "t"})
    assert config.retriever.type == "http"
    assert [str(m) for m in config.metrics] == ["ndcg@10", "recall@10", "mrr@10"]


def console_blocks() -> list[tuple[str, str, list[str], int]]:
    """(block id, command, expected output lines, expected exit code) of every ```console
    block of README.md; `...` on its own line stands for any number of lines."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for number, block in enumerate(re.findall(r"```console\n(.*?)```", text, flags=re.S), 1):
        command, expected = "", []
        for line in [*block.splitlines(), "$ "]:
            if line.startswith("$ "):
                if command:
                    code = re.search(r"#\s*exit (\d+)\s*$", command)
                    argv = command.split("#")[0].strip()
                    status = int(code[1]) if code else 0
                    found.append((f"block{number}:{argv}", argv, expected, status))
                command, expected = line[2:], []
            else:
                expected.append(line)
    return found


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` lines match `expected`, where a `...` line matches any run of lines."""
    if not expected:
        return not actual
    head, *rest = expected
    if head.strip() == "...":
        return any(_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0].rstrip() == head.rstrip() and _matches(rest, actual[1:])


@pytest.mark.parametrize(("argv", "expected", "code"), [b[1:] for b in console_blocks()],
                         ids=[b[0] for b in console_blocks()])  # fmt: skip
def test_every_readme_console_command_prints_what_the_readme_shows(
    argv: str, expected: list[str], code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import shutil

    shutil.copytree(
        ROOT / "configs", tmp_path / "configs", ignore=shutil.ignore_patterns("cache.sqlite*")
    )
    monkeypatch.chdir(tmp_path)
    words = shlex.split(argv)
    assert words[0] == "retrieval-gate", f"a console block runs something else: {argv}"
    output = io.StringIO()
    assert main(words[1:], stdout=output, stderr=output) == code, output.getvalue()
    actual = output.getvalue().splitlines()
    assert _matches(expected, actual), "\n".join(
        ["README shows:", *expected, "", "the command printed:", *actual]
    )
