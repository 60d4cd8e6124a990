"""The action's fixtures: the Python setup-python would set up and the action's checkout, one
of each per test process (a venv and the action's install take seconds to make)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.helpers.paths import REPO


@pytest.fixture(scope="session")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python that setup-python would have set up: a venv that sees this interpreter's
    packages, so installing the action builds retrieval-gate only (dependencies are there)."""
    venv = tmp_path_factory.mktemp("python") / "venv"
    # --without-pip: the venv's own old pip/setuptools would shadow this interpreter's.
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    purelib = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # When this interpreter is itself a venv, "system" site-packages are its base's, not its
    # own: a .pth line adds its own (pip, dependencies); its .pth files are not run, so the
    # editable install of retrieval_gate here stays invisible.
    parents = [path for path in site.getsitepackages() if path != purelib]
    parents.append(sysconfig.get_path("purelib"))
    (Path(purelib) / "_test_parent.pth").write_text("\n".join(dict.fromkeys(parents)) + "\n")
    return bin_dir


@pytest.fixture(scope="session")
def action_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's checkout: the repository's package files, copied so that pip's in-tree
    build (build/, *.egg-info) never touches the working tree."""
    root = tmp_path_factory.mktemp("action")
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, root / name)
    shutil.copytree(
        REPO / "retrieval_gate",
        root / "retrieval_gate",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return root
