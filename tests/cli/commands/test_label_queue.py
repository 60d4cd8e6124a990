"""`label-queue`: the draws it offers, one at a time."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


def test_sample_and_active_are_one_draw_or_the_other() -> None:
    code, _, err = run_cli(
        "label-queue", "-c", CONFIGS / "example.yaml", "--sample", "2", "--active", "2"
    )
    assert code == 2
    assert "argument --active: not allowed with argument --sample" in err


@pytest.mark.parametrize("value", ["0", "-3", "nan", "1e9999", "::error::x"])
def test_active_takes_a_count_of_queries(value: str) -> None:
    code, _, err = run_cli("label-queue", "-c", CONFIGS / "example.yaml", "--active", value)
    assert code == 2
    assert f"argument --active: expected a number of rows (1 or more), got {value!r}" in err
