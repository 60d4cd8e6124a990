"""Run shards named by files, folders and globs; Parquet shards read as runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from retrieval_gate.distributed.shards import expand_shards, read_parquet_run, read_shard
from retrieval_gate.errors import InputError
from retrieval_gate.readers import read_run


def test_folders_and_globs_expand_sorted_and_skip_hidden_files_and_markers(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "shards"
    folder.mkdir()
    for name in ("b.trec", "a.trec", ".a.trec.crc", "_SUCCESS"):
        (folder / name).write_text("q1 Q0 d1 1 1.0 r\n")
    other = tmp_path / "c.trec"
    other.write_text("q2 Q0 d1 1 1.0 r\n")
    found = expand_shards([str(folder), str(tmp_path / "*.trec")])
    assert found == [folder / "a.trec", folder / "b.trec", other]


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("missing.trec", "no such run shard"),
        ("empty", "a folder of run shards holds no file"),
        ("nothing-*.trec", "no run shard matches this pattern"),
    ],
)
def test_a_name_that_names_no_shard_is_refused(tmp_path: Path, given: str, problem: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=problem) as raised:
        expand_shards([str(tmp_path / given)])
    assert given in str(raised.value)


def test_a_shard_named_twice_is_refused(tmp_path: Path) -> None:
    shard = tmp_path / "a.trec"
    shard.write_text("q1 Q0 d1 1 1.0 r\n")
    with pytest.raises(InputError, match="named twice"):
        expand_shards([str(shard), str(tmp_path)])


def test_a_hostile_shard_name_is_shown_on_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        expand_shards([str(tmp_path / "x\n::error::owned\x1b[31m.trec")])
    message = str(raised.value)
    assert "\n" not in message
    assert "\x1b" not in message


def _write_parquet(path: Path, columns: dict[str, list[object]]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def test_a_parquet_shard_reads_as_the_same_rows_in_trec(tmp_path: Path) -> None:
    rows = [("q2", "d1", 0.5), ("q1", "d9", 0.25), ("q1", "dé", 0.75), ("q10", "d1", 1.0)]
    trec = tmp_path / "run.trec"
    trec.write_text("".join(f"{q} Q0 {d} 1 {s} r\n" for q, d, s in rows))
    parquet = _write_parquet(
        tmp_path / "run.parquet",
        {
            "qid": [q for q, _, _ in rows],
            "docid": [d for _, d, _ in rows],
            "score": [s for _, _, s in rows],
            "rank": [1, 2, 3, 4],
        },
    )
    assert read_shard(parquet).to_dict() == read_run(trec).to_dict()


def test_integer_ids_in_parquet_read_as_text(tmp_path: Path) -> None:
    parquet = _write_parquet(
        tmp_path / "run.parquet", {"qid": [7, 7], "docid": [1, 2], "score": [0.5, 0.25]}
    )
    assert read_parquet_run(parquet).to_dict() == {"7": {"1": 0.5, "2": 0.25}}


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        ({"qid": ["q1"], "docid": ["d1"]}, "columns qid, docid, score"),
        ({"qid": ["q1", None], "docid": ["d1", "d2"], "score": [1.0, 0.5]}, "qid has empty"),
        ({"qid": ["q1"], "docid": ["d1"], "score": ["high"]}, "score a number"),
        ({"qid": ["q1", "q1"], "docid": ["d1", "d1"], "score": [1.0, 0.5]}, "'d1'"),
    ],
)
def test_a_bad_parquet_shard_is_refused_naming_it(
    tmp_path: Path, columns: dict[str, list[object]], problem: str
) -> None:
    parquet = _write_parquet(tmp_path / "bad.parquet", columns)
    with pytest.raises(InputError, match=problem) as raised:
        read_parquet_run(parquet)
    assert "bad.parquet" in str(raised.value)


def test_a_file_that_is_not_parquet_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "fake.parquet"
    fake.write_text("q1 Q0 d1 1 1.0 r\n")
    with pytest.raises(InputError, match="cannot read it as Parquet"):
        read_parquet_run(fake)


def test_parquet_without_pyarrow_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parquet = _write_parquet(tmp_path / "a.parquet", {"qid": ["q"], "docid": ["d"], "score": [1]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(InputError, match=r"pip install 'retrieval-gate\[distributed\]'"):
        read_parquet_run(parquet)
