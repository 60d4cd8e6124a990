"""The judge's layer in a chunked corpus: rows anchored to the text read, the rows of a
chunking, and hostile anchors refused with the line named."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from retrieval_gate.datasets.anchors import Anchor, span_hash
from retrieval_gate.datasets.layer_anchors import anchor_of, of_chunking, stamped
from retrieval_gate.datasets.llm_layer import LlmJudgment, read_layer, write_layer
from retrieval_gate.errors import InputError

HASH = span_hash("Alpha beta.")
OLD = Anchor("d1", 0, 11, HASH)
MOVED = Anchor("d1", 20, 31, HASH)
OTHER = Anchor("d1", 0, 11, span_hash("Gamma delt."))


def _row(doc: str = "c1", grade: int = 2, anchor: Anchor | None = None) -> LlmJudgment:
    return LlmJudgment(
        "q1", doc, grade, "m", "ab" * 32, "::error::x", "2026-12-06T00:00:00Z", anchor=anchor
    )


def test_a_row_is_stamped_with_the_text_its_chunk_held_and_keeps_its_own() -> None:
    rows = stamped([_row("c1"), _row("c2", anchor=OTHER), _row("plain")], {"c1": OLD, "c2": OLD})
    assert [row.anchor for row in rows] == [OLD, OTHER, None]
    assert [row.grade for row in rows] == [2, 2, 2]


def test_the_rows_of_a_chunking_are_those_grading_the_text_each_chunk_holds_now() -> None:
    rows = [_row("c1", 1, OLD), _row("c1", 3, OTHER), _row("c2", 2), _row("c3", 0, OLD)]
    # c1 holds "Alpha beta." now, at another offset: its row of that text, not of the other;
    # c2 holds it too: the grade of that text follows it there, before c2's unanchored row.
    kept = of_chunking(rows, {"c1": MOVED, "c2": OLD})
    assert [(row.doc, row.grade) for row in kept] == [("c1", 1), ("c2", 1)]
    assert kept[1] == dataclasses.replace(rows[0], doc="c2")  # the judge's row, moved
    assert of_chunking(rows, {"c3": OTHER}) == [dataclasses.replace(rows[1], doc="c3"), rows[2]]
    assert of_chunking(rows, None) == [rows[0], rows[2], rows[3]]  # unchunked: a pair's first


def test_an_anchored_row_wins_over_one_written_before_anchors_for_its_pair() -> None:
    rows = [_row("c1", 1), _row("c1", 3, OLD)]
    assert [row.grade for row in of_chunking(rows, {"c1": OLD})] == [3]
    assert [row.grade for row in of_chunking(rows[::-1], {"c1": OLD})] == [3]


def test_a_row_without_an_anchor_reads_where_the_baseline_had_its_doc() -> None:
    assert anchor_of(_row("c1"), {"c1": OLD}) == OLD
    assert anchor_of(_row("c1", anchor=OTHER), {"c1": OLD}) == OTHER
    assert anchor_of(_row("c9"), {"c1": OLD}) is None


def test_one_pair_graded_on_two_texts_keeps_both_rows_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "x.llm.jsonl"
    hostile = Anchor("s\x1b::error::", 0, 10**30, "0123456789abcdef")
    assert write_layer(path, [_row("c1", 1, OLD), _row("c1", 3, OTHER), _row("c2", 0, hostile)])
    assert write_layer(path, [_row("c1", 2, OLD)]) == 3  # the same text graded again: replaced
    rows = read_layer(path)
    assert {(row.doc, row.grade, row.anchor) for row in rows} == {
        ("c1", 2, OLD), ("c1", 3, OTHER), ("c2", 0, hostile),
    }  # fmt: skip
    assert "\x1b" not in path.read_text()  # the file stays plain ASCII
    assert '"anchor": ["d1", 0, 11, "' + HASH + '"]' in path.read_text()


def test_a_row_written_before_anchors_is_rewritten_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "x.llm.jsonl"
    write_layer(path, [_row()])
    first = path.read_bytes()
    assert b"anchor" not in first
    write_layer(path, read_layer(path))
    assert path.read_bytes() == first


@pytest.mark.parametrize(
    "anchor",
    [
        [],
        "d1:0:11",
        {"source": "d1"},
        ["d1", 0, 11],
        ["", 0, 11, HASH],
        ["d" * 1001, 0, 11, HASH],
        [7, 0, 11, HASH],
        ["d1", -1, 11, HASH],
        ["d1", 11, 0, HASH],
        ["d1", 0.0, 11, HASH],
        ["d1", True, 11, HASH],
        ["d1", 0, float("nan"), HASH],
        ["d1", 0, float("inf"), HASH],
        ["d1", 0, 11, HASH.upper()],
        ["d1", 0, 11, HASH[:15]],
        ["d1", 0, 11, "::error::\x1b\n12345"],
        ["d1", 0, 11, [HASH]],
    ],
)
def test_a_malformed_anchor_is_an_input_error_naming_the_line(
    tmp_path: Path, anchor: object
) -> None:
    path = tmp_path / "x.llm.jsonl"
    good = json.dumps({"query": "q0", "doc": "c0", "grade": 1, "model": "m",
                       "prompt_sha256": "ab" * 32, "answer": "1", "time": "t"})  # fmt: skip
    bad = json.loads(good) | {"query": "q1", "anchor": anchor}
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"x\.llm\.jsonl:2: anchor .* must be \[source id") as e:
        read_layer(path)
    assert "\x1b" not in str(e.value)
    assert "\n" not in str(e.value).split(": anchor", 1)[1].split(" must be")[0]
