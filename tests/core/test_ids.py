"""Byte ids coded by their hashes: equal codes exactly for equal ids, even when hashes collide."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.core.ids import ByteIds, byte_codes
from tests.helpers.cli import run_cli


def same_partition(codes: np.ndarray, ids: list[str]) -> bool:
    """Whether `codes` groups the positions of `ids` exactly as equality of the ids does."""
    first: dict[str, int] = {}
    seen: dict[int, str] = {}
    for code, name in zip(codes.tolist(), ids, strict=True):
        if first.setdefault(name, code) != code or seen.setdefault(code, name) != name:
            return False
    return True


@pytest.mark.parametrize("seed", range(10))
def test_equal_ids_get_equal_codes_and_others_differ(seed: int) -> None:
    rng = random.Random(seed)
    pool = ["a", "b", "ab", "é", "d10", "d1", "x" * 40, "", "a\x00", "中文"]
    ids = [rng.choice(pool) + str(rng.randint(0, 3)) * rng.randint(0, 1) for _ in range(500)]
    codes = byte_codes(ByteIds.from_strings(ids))
    assert same_partition(codes, ids)
    assert sorted(set(codes.tolist())) == list(range(len(set(ids))))


def test_ids_whose_hashes_collide_are_still_told_apart() -> None:
    ids = ["a", "b", "a", "c", "b\x00", "b"]
    encoded = ByteIds.from_strings(ids)
    encoded._hashes = np.zeros(len(ids), dtype=np.uint64)  # every id shares one hash
    codes = byte_codes(encoded)
    assert same_partition(codes, ids)


def test_no_ids_no_codes() -> None:
    assert byte_codes(ByteIds.from_strings([])).tolist() == []


@pytest.mark.parametrize(
    "ids", [["a\x00", "bc"], ["ab", "cd"], ["é", "ab"], ["x\x00\x00", "abc", "\x00yz"], []]
)
def test_strings_give_back_every_byte_of_the_ids(ids: list[str]) -> None:
    assert ByteIds.from_strings(ids).strings().tolist() == ids


POOL = ["a", "ab", "é", "d10", "x" * 40, "", "a\x00", "\x00b", "中文", "d\u2028"]


@pytest.mark.parametrize("seed", range(8))
def test_taken_rows_are_those_ids_whatever_the_width(seed: int) -> None:
    rng = random.Random(seed)
    # Ids of one width (NULs at either end too) take whole rows of the buffer; others not.
    pool = POOL if seed % 2 else ["abc", "a\x00\x00", "\x00\x00\x00", "é!"]
    ids = [rng.choice(pool) for _ in range(rng.randint(1, 40))]
    encoded = ByteIds.from_strings(ids)
    assert (encoded.width is not None) == (seed % 2 == 0)
    rows = np.asarray([rng.randrange(len(ids)) for _ in range(rng.randint(0, 60))], np.int64)
    taken = encoded.take(rows)
    assert taken.strings().tolist() == [ids[i] for i in rows.tolist()]
    assert taken.hashes().tolist() == encoded.hashes()[rows].tolist()


@pytest.mark.parametrize("seed", range(8))
def test_concatenated_ids_are_the_parts_in_order(seed: int) -> None:
    rng = random.Random(seed)
    parts = [
        [
            rng.choice(POOL if rng.random() < 0.5 else ["d1", "d2", "d3"])
            for _ in range(rng.randint(0, 9))
        ]
        for _ in range(rng.randint(1, 4))
    ]
    joined = ByteIds.concatenate([ByteIds.from_strings(part) for part in parts])
    every = [name for part in parts for name in part]
    assert joined.strings().tolist() == every
    assert joined.hashes().tolist() == ByteIds.from_strings(every).hashes().tolist()
    assert same_partition(byte_codes(joined), every)


@pytest.mark.parametrize(
    ("values", "starts"),
    [([], []), ([4], [0]), ([1, 1, 2, 2, 2, 1], [0, 2, 5]), ([b"a", b"a", b"b"], [0, 2])],
)
def test_runs_of_equal_values_start_where_the_value_changes(
    values: list[object], starts: list[int]
) -> None:
    from retrieval_gate.core.ids import run_starts

    assert run_starts(np.asarray(values)).tolist() == starts


def test_positions_index_ids_among_others_and_mark_the_absent() -> None:
    from retrieval_gate.core.ids import object_array, positions

    among = object_array(["q1", "q2", "é"])
    assert positions(["é", "x", "q1", "q1"], among).tolist() == [2, -1, 0, 0]
    assert positions(object_array(["q2"]), {"q2": 7}).tolist() == [7]
    assert positions([], among).tolist() == []
    assert positions(["q1"], []).tolist() == [-1]


def test_ids_differing_in_a_trailing_nul_are_not_a_duplicate_when_their_keys_collide() -> None:
    from retrieval_gate.core.ids import first_duplicate_bytes, pair_keys, sorted_keys

    def colliding(names: list[str]) -> tuple[np.ndarray, ByteIds, np.ndarray]:
        query = np.zeros(len(names), dtype=np.int64)
        keys = sorted_keys(pair_keys(query, np.zeros(len(names), dtype=np.uint64)))  # one key
        return query, ByteIds.from_strings(names), keys

    assert first_duplicate_bytes(*colliding(["a", "a\x00"])) is None
    assert first_duplicate_bytes(*colliding(["a", "a\x00", "b", "a"])) == (0, 3)


def test_ids_are_equal_byte_for_byte() -> None:
    one = ByteIds.from_strings(["a", "a\x00", "é", "b"])
    other = ByteIds.from_strings(["a\x00", "a", "é"])
    rows = np.asarray([0, 1, 2, 0, 3], dtype=np.int64)
    other_rows = np.asarray([1, 0, 2, 0, 2], dtype=np.int64)
    assert one.equal(rows, other, other_rows).tolist() == [True, True, True, False, False]


@pytest.mark.parametrize("width", [1, 7, 8, 9, 17])
def test_ids_of_one_width_are_equal_byte_for_byte(width: int) -> None:
    rng = random.Random(width)
    # NULs at either end: fixed-width bytes would drop trailing ones, 8-byte words do not.
    letters = "ab\x00"
    ids = ["".join(rng.choice(letters) for _ in range(width)) for _ in range(300)]
    one = ByteIds.from_strings(ids)
    other = ByteIds.from_strings(list(reversed(ids)))
    assert one.width == other.width == width
    rows = np.asarray([rng.randrange(300) for _ in range(2000)], dtype=np.int64)
    other_rows = np.asarray([rng.randrange(300) for _ in range(2000)], dtype=np.int64)
    expected = [
        ids[i] == ids[299 - j] for i, j in zip(rows.tolist(), other_rows.tolist(), strict=True)
    ]
    assert one.equal(rows, other, other_rows).tolist() == expected
    assert one.equal(rows, one, other_rows).tolist() == [
        ids[i] == ids[j] for i, j in zip(rows.tolist(), other_rows.tolist(), strict=True)
    ]


def test_ids_of_one_width_whose_hashes_collide_are_still_told_apart() -> None:
    ids = ["ab", "ba", "ab", "a\x00", "\x00a", "ba"]
    encoded = ByteIds.from_strings(ids)
    assert encoded.width == 2
    encoded._hashes = np.zeros(len(ids), dtype=np.uint64)
    assert same_partition(byte_codes(encoded), ids)


def test_hashes_already_made_go_along_when_ids_are_joined() -> None:
    ids = [random.Random(3).choice(POOL) for _ in range(50)]
    encoded = ByteIds.from_strings(ids)
    encoded.hashes()  # made and kept
    other = ByteIds.from_strings(["x", "é"])
    other.hashes()
    joined = ByteIds.concatenate([encoded, other])
    assert joined._hashes is not None
    assert joined.hashes().tolist() == ByteIds.from_strings([*ids, "x", "é"]).hashes().tolist()
    assert ByteIds.concatenate([encoded, ByteIds.from_strings(["x"])])._hashes is None


def test_ids_of_one_width_given_unpadded_are_padded_for_hashing() -> None:
    ids = ["abcdefg", "bcdefgh", "abcdefg"]
    data = np.frombuffer("".join(ids).encode(), dtype=np.uint8)
    unpadded = ByteIds.of_width(data, 3, 7)
    assert unpadded.hashes().tolist() == ByteIds.from_strings(ids).hashes().tolist()
    assert unpadded.strings().tolist() == ids


def test_one_judgment_repeated_is_found_in_one_pass_over_its_bucket(tmp_path: Path) -> None:
    # A BEIR qrels file of one line repeated: every row shares one hash bucket, which the
    # search for the first repeat read once per row (200,000 rows: hours, not a second).
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "q1\tdoc-17\t1\n" * 200_000)
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 doc-17 1 1.0 t\n", encoding="utf-8")
    code, _, err = run_cli("evaluate", qrels, run, "-m", "ndcg@10")
    assert code == 2, err
    assert (
        f"{qrels}:3: duplicate judgment for query 'q1', doc 'doc-17': already given on line 2"
        in err
    )
