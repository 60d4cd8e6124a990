"""The README's two fresh-machine commands: CI runs the test one verbatim, the example works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli.main import main

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
    from retrieval_gate.config.loader import load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"would write it:\n\n```yaml\n(.+?)\n```", text, flags=re.S)[0]
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(example, encoding="utf-8")
    config = load(path, environ={"SEARCH_URL": "http://127.0.0.1:9", "SEARCH_TOKEN": "t"})
    assert config.retriever.type == "http"
    assert [str(m) for m in config.metrics] == ["ndcg@10", "recall@10", "mrr@10"]


ECHO_EXIT = '; echo "exit $?"'
ELAPSED = re.compile(r"in \d+\.\d+s\b")


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
                    argv, status = command, 0
                    if argv.endswith(ECHO_EXIT):  # the last line shown is "exit N"
                        argv, status = argv.removesuffix(ECHO_EXIT), int(expected.pop()[5:])
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
    same = bool(actual) and _timeless(actual[0]) == _timeless(head)
    return same and _matches(rest, actual[1:])


def _timeless(line: str) -> str:
    """`line` with elapsed times ("in 0.4s") blanked: they differ from run to run."""
    return ELAPSED.sub("in Ns", line.rstrip())


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
