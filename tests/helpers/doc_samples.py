"""The samples fenced in README.md and docs/*.md, and the checks that keep them true.

A ```console block is a terminal session: `$ ` lines are commands (`retrieval-gate ...`), the
lines after one are what it prints (stdout and stderr), `...` on a line of its own stands for
any number of lines, and a command ending in `; echo "exit $?"` is followed by the `exit N` it
returns. Elapsed times ("in 0.4s") are not compared, nor the numbers of a line that names a
latency check (`latency_p95`): latency differs from run to run. A ```markdown block preceded by
`<!-- report of CONFIG -->` is an excerpt of the Markdown report `check` writes for CONFIG,
with `...` as in a console block.
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval_gate.cli.main import main
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=fence)$", re.M | re.S)
_MARKER = re.compile(r"<!-- (.+?) -->\s*\Z")
ECHO_EXIT = '; echo "exit $?"'
ELAPSED = re.compile(r"in \d+\.\d+s\b")
LATENCY = re.compile(r"latency(?:\\?_)(?:p\d+|mean)")
# "< 0.001" is how a p-value past the printed digits shows: a number too.
NUMBER = re.compile(r"(?:<\s*|&lt;\s*)?[-+]?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Block:
    """One fenced block of a Markdown file."""

    path: Path
    line: int
    """The line of its opening fence, from 1."""
    lang: str
    body: str
    marker: str | None
    """The HTML comment just above the block (blank lines between allowed), without `<!--`."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One `$ ` line of a console block, what it prints and the exit code it returns."""

    argv: str
    expected: list[str]
    code: int


def blocks(path: Path, lang: str | None = None) -> list[Block]:
    """The fenced blocks of `path` in order, only those in `lang` when given."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = _MARKER.search(text, 0, match.start())
        found.append(
            Block(
                path,
                text.count("\n", 0, match.start()) + 1,
                match["lang"],
                match["body"],
                before[1] if before else None,
            )
        )
    return [block for block in found if lang is None or block.lang == lang]


def commands(block: Block) -> list[Command]:
    """The commands of a console block, in order."""
    found: list[Command] = []
    command, expected = "", []
    for line in [*block.body.splitlines(), "$ "]:
        if line.startswith("$ "):
            if command:
                argv, status = command, 0
                if argv.endswith(ECHO_EXIT):  # the last line shown is "exit N"
                    argv, status = argv.removesuffix(ECHO_EXIT), int(expected.pop()[5:])
                found.append(Command(argv, expected, status))
            command, expected = line[2:], []
        else:
            expected.append(line)
    return found


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` lines match `expected`, where a `...` line matches any run of lines."""
    if not expected:
        return not actual
    head, *rest = expected
    if head.strip() == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    same = bool(actual) and _steady(actual[0]) == _steady(head)
    return same and matches(rest, actual[1:])


def _steady(line: str) -> str:
    """`line` with elapsed times ("in 0.4s") blanked, and every number of a line that names a
    latency check: they differ from run to run."""
    line = ELAPSED.sub("in Ns", line.rstrip())
    return NUMBER.sub("N", line) if LATENCY.search(line) else line


def copy_configs(root: Path) -> Path:
    """The repository's configs/ copied into `root` (without caches); `root`."""
    shutil.copytree(
        REPO / "configs",
        root / "configs",
        ignore=shutil.ignore_patterns("cache.sqlite*", "__pycache__"),
    )
    return root


def run(argv: str) -> tuple[int, list[str]]:
    """Exit code and printed lines of `retrieval-gate ...` run in the working directory."""
    words = shlex.split(argv)
    assert words[0] == "retrieval-gate", f"a console block runs something else: {argv}"
    output = io.StringIO()
    code = main(words[1:], stdout=output, stderr=output)
    return code, output.getvalue().splitlines()


def check_console(block: Block, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command of `block` in `cwd`, in order, and compare with what it shows."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # not a terminal: nothing asks
    found = commands(block)
    assert found, f"{block.where}: a console block without a `$ ` command"
    for command in found:
        code, actual = run(command.argv)
        shown = "\n".join([f"{block.where} shows:", *command.expected, "", "it printed:", *actual])
        assert code == command.code, f"`{command.argv}` exited {code}\n{shown}"
        assert matches(command.expected, actual), f"`{command.argv}`\n{shown}"


REPORT_MARKER = re.compile(r"report of (\S+)")


def check_report(block: Block, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`block` is an excerpt of the Markdown report `check` writes for its marker's config,
    run in `cwd` (a copy of configs/)."""
    marked = REPORT_MARKER.fullmatch(block.marker or "")
    assert marked, f"{block.where}: a report sample needs `<!-- report of CONFIG -->` above it"
    monkeypatch.chdir(cwd)
    report = cwd / (re.sub(r"\W", "_", marked[1]) + ".md")
    if not report.exists():
        argv = ["check", "-c", marked[1], "--markdown", str(report)]
        code = run_cli(*argv).ret
        assert code in (0, 1), f"{block.where}: check -c {marked[1]} exited {code}"
    actual = report.read_text(encoding="utf-8").splitlines()
    expected = block.body.splitlines()
    assert matches(expected, actual), "\n".join(
        [f"{block.where} shows:", *expected, "", f"the report of {marked[1]}:", *actual]
    )
