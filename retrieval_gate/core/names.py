"""Gate names: the short slug that names folders, files and the PR comment marker."""

from __future__ import annotations

import re

NAME_PATTERN = r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}"
NAME_RULE = "1-64 letters, digits, '-', '_' or '.', not starting with '.'"
_NAME = re.compile(NAME_PATTERN)


def valid_name(name: str) -> bool:
    """Whether `name` is a gate name (NAME_RULE)."""
    return _NAME.fullmatch(name) is not None
