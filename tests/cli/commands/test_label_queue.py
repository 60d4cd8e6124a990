"""`label-queue`: the draws it offers, one at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.judged_example import assisted_config, held_back_example
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


def test_active_without_a_judge_draws_by_the_runs_difference_and_says_so(tmp_path: Path) -> None:
    held_back_example(tmp_path)
    config = assisted_config(tmp_path, "example-regressed.yaml")  # no layer at judge.output
    code, out, err = run_cli("label-queue", "-c", config, "--active", "5", "--quiet")
    assert code == 0, err
    assert "no judgment layer at" in err
    assert "--active draws by how much the two runs' top k differ" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows
    assert {row["draw"] for row in rows} == {"active"}
    assert all(row["p"] == min(1.0, row["rate"] * row["weight"]) for row in rows)
    # Every drawn query lists both runs' unjudged pairs: some only the baseline ranked.
    assert any(row["rank"] is None for row in rows)
