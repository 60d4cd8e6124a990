"""A metric's trend read from the history: the newest points, oldest first, by canonical name."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.history.record import ResultEntry, accept_entry, entry_line
from retrieval_gate.history.store import file_name
from retrieval_gate.history.trend import load_trend, trend_points
from tests.helpers.baselines import make


def _entry(n: int, means: dict[str, float]) -> ResultEntry:
    return ResultEntry(
        config="tiny",
        commit=f"{n:040x}",
        time=f"2024-05-0{n}T12:00:00Z",
        ref="refs/heads/main",
        pr=100 + n,
        subject=f"Merge pull request #{100 + n} from a/b",
        status="pass",
        tool_version="0.1.0",
        fingerprints={"labelled_set": None, "queries": None, "config": None},
        means=means,
        slices={},
        record=make(),
    )


ENTRIES = [
    _entry(1, {"ndcg@10": 0.81, "recall@10": 0.9}),
    _entry(2, {"recall@10": 0.91}),  # no ndcg@10: skipped
    accept_entry("tiny", f"{3:040x}", "2024-05-03T12:00:00Z", "a known drop"),
    _entry(4, {"ndcg@10": 0.84}),
    _entry(5, {"ndcg@10": 0.85}),
]


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / file_name("tiny")
    path.write_text("".join(entry_line(entry) + "\n" for entry in ENTRIES), encoding="utf-8")
    return path


def test_the_points_are_the_results_that_hold_the_metric_in_order() -> None:
    points = trend_points(ENTRIES, "NDCG@10")  # any spelling of the metric's name
    assert [(p.commit[-1], p.pr, p.value) for p in points] == [
        ("1", 101, 0.81),
        ("4", 104, 0.84),
        ("5", 105, 0.85),
    ]
    assert points[0].time == "2024-05-01T12:00:00Z"
    assert trend_points(ENTRIES, "mrr@10") == []


@pytest.mark.parametrize(("last_n", "kept"), [(2, "45"), (1, "5"), (3, "145"), (50, "145")])
def test_the_last_n_points_are_the_newest_oldest_first(
    history: Path, last_n: int, kept: str
) -> None:
    points = load_trend(history, "tiny", "ndcg@10", last_n)
    assert "".join(p.commit[-1] for p in points) == kept


@pytest.mark.parametrize("last_n", [0, -1])
def test_no_point_is_asked_for_at_0_or_below(history: Path, last_n: int) -> None:
    assert load_trend(history, "tiny", "ndcg@10", last_n) == []


def test_another_config_s_history_has_no_point(history: Path) -> None:
    assert load_trend(history.parent, "other", "ndcg@10", 5) == []
    assert [p.value for p in load_trend(history.parent, "tiny", "recall@10", 5)] == [0.9, 0.91]
