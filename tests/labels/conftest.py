"""The labelling tests' fixture: the example, copied where a test may write."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.builders import copy_example


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """The example's configs, labelled set and committed baseline in tmp_path/configs."""
    return copy_example(tmp_path / "configs")
