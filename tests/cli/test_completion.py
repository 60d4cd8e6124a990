"""`retrieval-gate completion bash|zsh|fish`: scripts generated from the parser, run in the shells.

bash runs always (it is everywhere the tests run); zsh and fish are skipped when missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.cli.completion import SHELLS, script, tree
from retrieval_gate.cli.main import build_parser
from tests.helpers.cli import run_cli
from tests.helpers.waiting import GUARD

COMMANDS = sorted(tree(build_parser()).commands)


def _script(shell: str) -> str:
    code, out, err = run_cli("completion", shell)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("completion")
    paths = {}
    for shell in SHELLS:
        paths[shell] = folder / f"retrieval-gate.{shell}"
        paths[shell].write_text(_script(shell))
    return paths


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """A folder with a config, another YAML file, a text file and a subfolder."""
    for name in ("gate.yaml", "other.yml", "notes.txt", "with space.yaml"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    return tmp_path


def _bash(script_path: Path, cwd: Path, *words: str) -> list[str]:
    """The completions bash offers for `words` (the last is the word under the cursor)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    quoted = " ".join("'" + word.replace("'", "'\\''") + "'" for word in words)
    program = (
        f"source '{script_path}' || exit 9\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=()\n"
        '_retrieval_gate || exit 8\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", program],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_every_command_and_shell_is_in_the_tree() -> None:
    assert "completion" in COMMANDS
    assert {"check", "lint", "config", "evaluate", "baseline"} <= set(COMMANDS)


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_names_every_command(shell: str) -> None:
    text = _script(shell)
    for command in COMMANDS:
        assert command in text, command
    assert "validate" in text  # a subcommand's subcommand


def test_an_unknown_shell_is_a_usage_error() -> None:
    code, _, err = run_cli("completion", "tcsh")
    assert code == 2
    assert "invalid choice" in err
    with pytest.raises(ValueError, match="unknown shell"):
        script("tcsh", build_parser())


def test_the_command_is_quick_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "retrieval_gate", "completion", "bash"],
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 0, done.stderr
    assert "complete -F _retrieval_gate retrieval-gate" in done.stdout
    heavy = ("numpy", "scipy", "pydantic", "httpx", "jinja2", "bm25s")
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert not imported & set(heavy), imported & set(heavy)


def test_bash_completes_commands(scripts: dict[str, Path], cwd: Path) -> None:
    assert _bash(scripts["bash"], cwd, "retrieval-gate", "ch") == ["check"]
    assert set(_bash(scripts["bash"], cwd, "retrieval-gate", "")) == set(COMMANDS)
    assert _bash(scripts["bash"], cwd, "retrieval-gate", "config", "va") == ["validate"]


def test_bash_completes_options_after_other_options(scripts: dict[str, Path], cwd: Path) -> None:
    offered = _bash(scripts["bash"], cwd, "retrieval-gate", "check", "--re")
    assert sorted(offered) == ["--refresh-cache", "--repeats"]
    offered = _bash(scripts["bash"], cwd, "retrieval-gate", "check", "-c", "gate.yaml", "--re")
    assert sorted(offered) == ["--refresh-cache", "--repeats"]
    assert "--config" in _bash(scripts["bash"], cwd, "retrieval-gate", "config", "validate", "-")


def test_bash_completes_yaml_files_for_the_config(scripts: dict[str, Path], cwd: Path) -> None:
    offered = _bash(scripts["bash"], cwd, "retrieval-gate", "check", "-c", "")
    assert sorted(offered) == ["gate.yaml", "other.yml", "sub", "with space.yaml"]
    offered = _bash(scripts["bash"], cwd, "retrieval-gate", "lint", "--config", "=", "g")
    assert offered == ["gate.yaml"]


def test_bash_completes_choices_files_and_positionals(scripts: dict[str, Path], cwd: Path) -> None:
    assert _bash(scripts["bash"], cwd, "retrieval-gate", "lint", "-f", "") == ["text", "json"]
    assert sorted(_bash(scripts["bash"], cwd, "retrieval-gate", "check", "--run", "n")) == [
        "notes.txt"
    ]
    assert _bash(scripts["bash"], cwd, "retrieval-gate", "datasets", "fetch", "--dir", "") == [
        "sub"
    ]
    assert _bash(scripts["bash"], cwd, "retrieval-gate", "completion", "") == list(SHELLS)
    # evaluate QRELS RUN: files, also after an option that takes a value.
    offered = _bash(scripts["bash"], cwd, "retrieval-gate", "evaluate", "-f", "json", "no")
    assert offered == ["notes.txt"]
    # A command without positionals offers its options.
    assert "--quiet" in _bash(scripts["bash"], cwd, "retrieval-gate", "check", "")


def test_zsh_script_is_valid(scripts: dict[str, Path]) -> None:
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    done = subprocess.run([zsh, "-n", str(scripts["zsh"])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # Loading it after compinit defines the completion of the command.
    program = (
        "autoload -U compinit && compinit -u -D\n"
        f"source '{scripts['zsh']}'\n"
        'print -r -- "$_comps[retrieval-gate]"\n'
    )
    done = subprocess.run([zsh, "-f", "-c", program], capture_output=True, text=True, timeout=GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "_retrieval_gate"


def _fish(script_path: Path, cwd: Path, line: str) -> list[str]:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    program = f"source '{script_path}'; or exit 9; complete --do-complete='{line}'"
    done = subprocess.run(
        [fish, "--no-config", "-c", program], cwd=cwd, capture_output=True, text=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr
    return [entry.split("\t")[0] for entry in done.stdout.splitlines()]


def test_fish_script_is_valid_and_completes(scripts: dict[str, Path], cwd: Path) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    done = subprocess.run([fish, "-n", str(scripts["fish"])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _fish(scripts["fish"], cwd, "retrieval-gate ch") == ["check"]
    offered = _fish(scripts["fish"], cwd, "retrieval-gate check --re")
    assert sorted(offered) == ["--refresh-cache", "--repeats"]
    offered = _fish(scripts["fish"], cwd, "retrieval-gate check -c ")
    assert sorted(offered) == ["gate.yaml", "other.yml", "sub/", "with space.yaml"]
    assert sorted(_fish(scripts["fish"], cwd, "retrieval-gate config ")) == [
        "reference",
        "schema",
        "validate",
    ]
    assert sorted(_fish(scripts["fish"], cwd, "retrieval-gate lint -f ")) == ["json", "text"]
