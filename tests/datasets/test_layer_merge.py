"""Three versions of a judgment layer merged: the union, one rule per key, errors by line."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from retrieval_gate.datasets.layer_merge import merge_layers
from retrieval_gate.datasets.llm_layer import LlmJudgment, layer_line, read_layer, write_layer
from retrieval_gate.errors import InputError


def _row(query: str, grade: int = 1, time: str = "2026-11-26T09:00:00Z") -> LlmJudgment:
    return LlmJudgment(query, "d1", grade, "m", "ab" * 32, str(grade), time)


def _layers(tmp_path: Path, *sides: list[LlmJudgment]) -> tuple[Path, Path, Path]:
    paths = tuple(tmp_path / f"{name}.llm.jsonl" for name in ("base", "ours", "theirs"))
    for path, rows in zip(paths, sides, strict=True):
        path.write_text("", encoding="utf-8")
        write_layer(path, rows)
    return paths  # type: ignore[return-value]


def _grades(path: Path) -> dict[str, int]:
    return {f"{row.query}/{row.doc}": row.grade for row in read_layer(path)}


def test_rows_each_side_added_are_joined_in_key_order(tmp_path: Path) -> None:
    base, ours, theirs = _layers(
        tmp_path, [_row("q1"), _row("q4")], [_row("q1"), _row("q2"), _row("q4")],
        [_row("q1"), _row("q3", grade=3), _row("q4"), _row("q5")],
    )  # fmt: skip
    merged = merge_layers(base, ours, theirs)
    assert _grades(ours) == {"q1/d1": 1, "q2/d1": 1, "q3/d1": 3, "q4/d1": 1, "q5/d1": 1}
    assert (merged.rows, merged.from_theirs, merged.both_graded) == (5, 2, 0)
    lines = ours.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines == [layer_line(row) for row in read_layer(ours)]  # as `judge` writes it
    assert [row.key for row in read_layer(ours)] == sorted(row.key for row in read_layer(ours))


def test_a_pair_graded_on_both_sides_keeps_the_later_answer_whichever_side_is_ours(
    tmp_path: Path,
) -> None:
    early, late = "2026-11-26T09:00:00Z", "2026-11-27T10:00:00+00:00"
    sides = (
        [_row("q1")],
        [_row("q1"), _row("q2", grade=0, time=late), _row("q3", grade=2, time=early)],
        [_row("q1"), _row("q2", grade=3, time=early), _row("q3", grade=1, time=late)],
    )
    base, ours, theirs = _layers(tmp_path, *sides)
    merged = merge_layers(base, ours, theirs)
    assert _grades(ours) == {"q1/d1": 1, "q2/d1": 0, "q3/d1": 1}
    assert merged.both_graded == 2
    assert [key[0] for key in merged.regraded] == ["q2", "q3"]
    (tmp_path / "b").mkdir()
    base_b, ours_b, theirs_b = _layers(tmp_path / "b", sides[0], sides[2], sides[1])
    merge_layers(base_b, ours_b, theirs_b)
    assert ours_b.read_bytes() == ours.read_bytes()


def test_a_tie_in_time_is_broken_by_the_row_not_the_side(tmp_path: Path) -> None:
    sides = ([], [_row("q1", grade=1)], [_row("q1", grade=2)])
    first = _layers(tmp_path, *sides)
    merge_layers(*first)
    (tmp_path / "swap").mkdir()
    second = _layers(tmp_path / "swap", sides[0], sides[2], sides[1])
    merge_layers(*second)
    assert first[1].read_bytes() == second[1].read_bytes()


def test_a_row_changed_on_one_side_only_is_the_changed_one(tmp_path: Path) -> None:
    regraded = _row("q1", grade=3, time="2026-12-01T00:00:00Z")
    base, ours, theirs = _layers(tmp_path, [_row("q1")], [_row("q1")], [regraded])
    merge_layers(base, ours, theirs)
    assert read_layer(ours) == (regraded,)


def test_a_row_one_side_removed_is_kept_one_both_removed_is_not(tmp_path: Path) -> None:
    base, ours, theirs = _layers(
        tmp_path, [_row("q1"), _row("q2"), _row("q3")], [_row("q2"), _row("q3")], [_row("q3")]
    )
    merged = merge_layers(base, ours, theirs)
    assert sorted(_grades(ours)) == ["q2/d1", "q3/d1"]  # q1: removed on both sides
    assert merged.kept_removed == 1  # q2: removed by theirs only


def test_an_unsorted_side_is_merged_as_well(tmp_path: Path) -> None:
    base, ours, theirs = _layers(tmp_path, [], [_row("q2")], [_row("q1"), _row("q3")])
    lines = theirs.read_text(encoding="utf-8").splitlines(keepends=True)
    theirs.write_text("".join(reversed(lines)), encoding="utf-8")
    merge_layers(base, ours, theirs)
    assert list(_grades(ours)) == ["q1/d1", "q2/d1", "q3/d1"]


@pytest.mark.parametrize(
    ("bad", "complaint"),
    [
        ("<<<<<<< HEAD\n", "invalid JSON"),
        (json.dumps({"query": "q9", "doc": "d", "grade": 7, "model": "m", "prompt_sha256": "s",
                     "answer": "7", "time": "t"}) + "\n", "grade 7 must be a whole number"),
        (layer_line(_row("q3")), "graded twice by the same judge (first on line 2)"),
    ],
    ids=["conflict marker", "grade", "twice"],
)  # fmt: skip
def test_a_malformed_row_names_the_side_the_file_and_the_line(
    tmp_path: Path, bad: str, complaint: str
) -> None:
    base, ours, theirs = _layers(tmp_path, [], [_row("q2")], [_row("q1"), _row("q3")])
    with theirs.open("a", encoding="utf-8") as handle:
        handle.write(bad)
    before = ours.read_bytes()
    with pytest.raises(InputError) as raised:
        merge_layers(base, ours, theirs, name="qrels/test.llm.jsonl")
    message = str(raised.value)
    assert message.startswith("qrels/test.llm.jsonl [theirs]:3: "), message
    assert complaint in message
    assert "fix that side's file and merge again" in message
    assert ours.read_bytes() == before  # nothing half-written
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_large_sorted_layers_are_streamed(tmp_path: Path) -> None:
    """Three layers of 20,000 rows are merged in far less memory than they hold: a merge that
    read them whole would keep 60,000 rows at once."""
    rng = random.Random(3)
    keys = sorted(
        {(f"q{rng.randrange(10**6):07d}", f"d{rng.randrange(10**6)}") for _ in range(30_000)}
    )
    rows = [LlmJudgment(q, d, 1, "m", "ab" * 32, "1", "2026-11-26T09:00:00Z") for q, d in keys]
    base, ours, theirs = _layers(tmp_path, rows[::3], rows[::2], rows[1::2])
    size = ours.stat().st_size
    tracemalloc.start()
    try:
        merge_layers(base, ours, theirs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(read_layer(ours)) == len(rows)
    assert peak < size / 4, (peak, size)
