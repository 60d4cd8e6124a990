"""The extras: names every pip installs, and every install hint names one that exists."""

from __future__ import annotations

import re

import pytest

from tests.helpers.paths import REPO

tomllib = pytest.importorskip("tomllib")  # Python 3.11 on

EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
HINT = re.compile(r"install[^\n`]*retrieval-gate\[([^\]]+)\]")  # pytest ids look alike


def normalised(name: str) -> str:
    """PEP 685's form of an extra's name, which the metadata carries."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_extra_is_named_as_its_metadata_spells_it() -> None:
    # pip before 23.3 (a Python 3.11 venv ships 23.2.1) compares `[ir_datasets]` with the
    # metadata's `ir-datasets` as written: it installed nothing, warned and exited 0.
    assert EXTRAS
    for name in EXTRAS:
        assert name == normalised(name), f"extra {name!r}: write it {normalised(name)!r}"


def test_every_install_hint_names_an_extra_as_written() -> None:
    texts = [*REPO.glob("retrieval_gate/**/*.py"), *REPO.glob("docs/*.md"), REPO / "README.md"]
    hints = {
        (path.relative_to(REPO).as_posix(), extra)
        for path in texts
        for found in HINT.findall(path.read_text(encoding="utf-8"))
        for extra in found.split(",")
    }
    assert ("retrieval_gate/datasets/ir_datasets_source.py", "ir-datasets") in hints
    for where, extra in sorted(hints):
        assert extra.strip() in EXTRAS, f"{where} names the extra [{extra}]"
