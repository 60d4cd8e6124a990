"""The pre-commit hooks' entry: `python -m retrieval_gate.cli.precommit validate|lint FILE...`.

pre-commit runs a hook with the changed files as arguments, while `retrieval-gate config
validate` and `retrieval-gate lint` take one config through `-c`. This module sits between
them (`.pre-commit-hooks.yaml` at the repository root declares the two hooks):

- `validate FILE...` (hook `retrieval-gate-validate`, YAML files only): runs `retrieval-gate
  config validate -c FILE` on each file that is a gate config, a YAML mapping with the
  top-level keys `version` and `dataset`; other YAML files are skipped. A file that does not
  parse as YAML but has both keys at the start of a line is taken as a config, so that
  validate reports its syntax error instead of the hook passing it by.
- `lint FILE...` (hook `retrieval-gate-lint`): a labelled-set file (queries, qrels, corpus)
  does not name the config that uses it, and pre-commit's `files:` pattern cannot know which
  folders configs point to. So the hook takes every changed file (`require_serial: true`, so
  that pre-commit does not split the list over parallel processes, which would lint a config
  twice), finds the gate configs the repository tracks (`git ls-files '*.yaml' '*.yml'`) and
  lints those the change concerns: the config itself, its baseline file, a file of its
  labelled set (`dataset.queries`, `qrels`, `corpus`) or any file under its `dataset.path`
  folder. A commit that touches none of them lints nothing, so a config whose data is
  fetched rather than committed (e.g. `configs/cranfield.yaml`) is not linted on every commit.
  `pre-commit run --all-files` lints every config.

The exit code is the highest of the commands'; each runs through `retrieval_gate.cli.main.main`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

USAGE = "usage: python -m retrieval_gate.cli.precommit validate|lint [FILE ...]"
_TOP_KEY = re.compile(r"^(version|dataset)\s*:", re.MULTILINE)
_YAML = (".yaml", ".yml")


def read_config(path: Path) -> dict[str, Any] | None:
    """The file's top-level mapping when it is a gate config, None when it is not one.

    An unparsable file with `version:` and `dataset:` at the start of lines counts as a
    config (an empty mapping), so that validate reports the error."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError):  # ValueError: an int of more than 4,300 digits
        return (
            {} if {m.group(1) for m in _TOP_KEY.finditer(text)} == {"version", "dataset"} else None
        )
    if isinstance(document, dict) and "version" in document and "dataset" in document:
        return document
    return None


def is_gate_config(path: Path) -> bool:
    """A YAML file with the top-level keys `version` and `dataset`."""
    return path.suffix in _YAML and read_config(path) is not None


def concerned_paths(config_path: Path, document: dict[str, Any]) -> tuple[set[Path], set[Path]]:
    """The files and the folders whose change concerns a config, relative to the cwd."""
    base = config_path.parent
    files = {_normal(config_path)}
    folders: set[Path] = set()
    baseline = document.get("baseline", ".retrieval-gate/baseline.json")
    if isinstance(baseline, str):
        files.add(_normal(base / baseline))
    dataset = document.get("dataset")
    if isinstance(dataset, dict):
        if isinstance(dataset.get("path"), str):
            folders.add(_normal(base / dataset["path"]))
        for key in ("queries", "qrels", "corpus"):
            if isinstance(dataset.get(key), str):
                files.add(_normal(base / dataset[key]))
    return files, folders


def concerns(config_path: Path, document: dict[str, Any], changed: Iterable[Path]) -> bool:
    """Whether a change of any of `changed` concerns the config."""
    files, folders = concerned_paths(config_path, document)
    for path in map(_normal, changed):
        if path in files or any(folder == path or folder in path.parents for folder in folders):
            return True
    return False


def tracked_configs() -> list[Path]:
    """The gate configs git tracks under the cwd (pre-commit runs hooks at the root)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.yaml", "*.yml"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [
        Path(name) for name in sorted(listing.split("\0")) if name and is_gate_config(Path(name))
    ]


def validate(filenames: Sequence[str]) -> int:
    """`config validate` on each file that is a gate config."""
    from retrieval_gate.cli.main import main

    code = 0
    for name in filenames:
        if is_gate_config(Path(name)):
            code = max(code, main(["config", "validate", "-c", name]))
    return code


def lint(filenames: Sequence[str]) -> int:
    """`lint` on each tracked gate config the changed files concern."""
    from retrieval_gate.cli.main import main

    try:
        configs = tracked_configs()
    except (OSError, subprocess.CalledProcessError) as error:
        stderr = getattr(error, "stderr", "") or ""
        print(f"retrieval-gate: error: cannot list the tracked configs: {error} {stderr}".strip())
        return 2
    changed = [Path(name) for name in filenames]
    code = 0
    for config in configs:
        document = read_config(config)
        if document is not None and concerns(config, document, changed):
            code = max(code, main(["lint", "-c", str(config)]))
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to `validate` or `lint`; exit 2 on a usage error."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("validate", "lint"):
        print(USAGE, file=sys.stderr)
        return 2
    return validate(args[1:]) if args[0] == "validate" else lint(args[1:])


def _normal(path: Path) -> Path:
    """The path without `.` and `..` parts, not resolving symlinks."""
    return Path(os.path.normpath(path))


if __name__ == "__main__":
    sys.exit(main())
