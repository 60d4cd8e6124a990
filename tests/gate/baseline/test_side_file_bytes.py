"""The top-k side file written and read on its bytes: as json writes it, as the line-by-line
reader reads it."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from retrieval_gate.core import redaction
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.core.wording import json_id_lists
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline import side_file_bytes
from retrieval_gate.gate.baseline.side_file import SideTopK, with_top_k_file
from retrieval_gate.gate.baseline.side_file_bytes import written_columns, written_pieces

PLAIN = {
    "q1": ("d3", "d1", "d2"),
    "q2": (),
    "q3": ("only",),
    "q4": ("", "x" * 40, "é", "日本", "a b", "\u2028", "a\x7fb", "'"),
}


def _text(top_k: dict[str, tuple[str, ...]]) -> bytes:
    return json_id_lists(sorted(top_k.items())).encode()


def _checked(data: bytes) -> SideTopK:
    """A side file of `data` whose every query is labelled, and as many as it has lines."""
    lines = data.decode("utf-8", "replace").removesuffix("\n").split("\n") if data else []
    labelled = set()
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, list) and row and isinstance(row[0], str):
            labelled.add(row[0])
    return SideTopK(Path("side.jsonl"), "", len(lines), labelled, 10**6, "test")


def _slow(data: bytes) -> TopKIds | None:
    """What the line-by-line reader makes of `data`; None when it refuses it."""
    side = _checked(data)
    try:
        return TopKIds.of(side._read(data))
    except InputError:
        return None


def test_the_written_text_is_read_on_its_bytes_as_the_line_reader_reads_it() -> None:
    data = _text(PLAIN)
    written = written_columns(data)
    assert written is not None  # the fast path answered: nothing here needs an escape
    columns, rows = written
    assert rows == 4
    assert columns.queries.tolist() == ["q1", "q3", "q4"]  # a query of no docs holds none
    assert TopKIds(columns) == _slow(data)
    assert dict(TopKIds(columns).items()) == {q: d for q, d in PLAIN.items() if d}


@pytest.mark.parametrize(
    "doc", ['quo"te', "back\\slash", "tab\there", "new\nline", "\x1b[31m::error::x", "\x85"]
)
def test_an_id_json_escapes_is_left_to_the_line_reader(doc: str) -> None:
    data = _text({"q1": ("d1", doc)})
    assert written_columns(data) is None
    assert _slow(data) == TopKIds.of({"q1": ("d1", doc)})


@pytest.mark.parametrize(
    "text",
    [
        b'["q2", ["d1"]]\n["q1", ["d1"]]\n',  # queries out of order
        b'["q1", ["d1"]]\n["q1", ["d2"]]\n',  # a query twice
        b'["q1", ["d1"]]',  # no newline at the end
        b'["q1",["d1"]]\n',  # other spacing
        b'["q1", ["d1"]]\n\n',  # an empty line
        b'["q1", ["d1"], ["d2"]]\n',
        b'["q1", ["d1" ]]\n',
        b'["q1", "d1"]\n',
        b'["q1", ["d1"]]\n["q2"\n',
        b'["q1", ["d\x01"]]\n',  # a raw control character
        b'["q1", ["\xff"]]\n',  # not UTF-8
        b'["q1", ["\x80"]]\n',  # not UTF-8: the lowest byte past ASCII, alone
        b'{"q1": ["d1"]}\n',
        b"",
    ],
)
def test_any_other_text_goes_to_the_line_reader(text: bytes) -> None:
    assert written_columns(text) is None


@pytest.mark.parametrize("block", [1 << 24, 1, 12, 30])
def test_bytes_changed_at_random_are_read_alike_or_left_to_the_line_reader(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the bytes, the fast reader answers what the line reader would, or nothing,
    parsed whole or a few lines at a time."""
    monkeypatch.setattr(side_file_bytes, "_BYTES_AT_ONCE", block)
    data = _text(PLAIN)
    alphabet = b'[]", \n\\qd1x'
    rng = random.Random(7)
    answered = 0
    for _ in range(600):
        changed = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(changed))
            what = rng.choice(("drop", "insert", "replace"))
            if what == "drop":
                del changed[at]
            elif what == "insert":
                changed.insert(at, rng.choice(alphabet))
            else:
                changed[at] = rng.choice(alphabet)
        written = written_columns(bytes(changed))
        if written is not None and _checked(bytes(changed)).valid(*written):
            answered += 1
            assert TopKIds(written[0]) == _slow(bytes(changed)), bytes(changed)
    assert answered > 30  # some changes keep the shape (an id's letters): both read them


def test_a_doc_listed_twice_is_named_by_the_line_reader(tmp_path: Path) -> None:
    data = b'["q1", ["d1", "d2", "d1"]]\n'
    assert written_columns(data) is not None  # well formed: the checks after refuse it
    path = tmp_path / "b.top_k.jsonl"
    path.write_bytes(data)
    side = SideTopK(path, hashlib.sha256(data).hexdigest(), 1, {"q1"}, 10, "b.json")
    with pytest.raises(InputError, match="lists 'd1' twice"):
        dict(side)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'["q1", "ab"]\n', "expected a list of doc ids"),  # a string is no list of ids
        (b'["q1", ["d1"], 3]\n', "expected [query id, [doc ids]]"),
        (b'["q1", [1]]\n', "expected a list of doc ids"),
    ],
)
def test_every_row_of_the_wrong_shape_is_named_by_its_line(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "b.top_k.jsonl"
    path.write_bytes(data)
    side = SideTopK(path, hashlib.sha256(data).hexdigest(), 1, {"q1"}, 10, "b.json")
    with pytest.raises(InputError, match=re.escape(message)) as refused:
        dict(side)
    assert refused.value.line == 1


@pytest.mark.parametrize(
    ("labelled", "k", "queries", "message"),
    [
        ({"q1"}, 10, 2, "'q2' not in query_ids"),
        ({"q1", "q2"}, 1, 2, "2 doc ids, more than k = 1"),
        ({"q1", "q2"}, 10, 3, "2 queries, 3 recorded"),
    ],
)
def test_the_checks_after_the_fast_read_name_what_is_wrong(
    tmp_path: Path, labelled: set[str], k: int, queries: int, message: str
) -> None:
    data = b'["q1", ["d1", "d2"]]\n["q2", ["d1"]]\n'
    path = tmp_path / "b.top_k.jsonl"
    path.write_bytes(data)
    side = SideTopK(path, hashlib.sha256(data).hexdigest(), queries, labelled, k, "b.json")
    with pytest.raises(InputError, match=message):
        dict(side)


@pytest.mark.parametrize("block", [1 << 24, 1, 100, 1000])
def test_a_side_file_read_on_its_bytes_keeps_every_query_and_id(
    tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side_file_bytes, "_BYTES_AT_ONCE", block)  # a line to many at a time
    top_k = {
        f"q{i:04d}": tuple(f"doc-{(i * 7 + j) % 97}" for j in range(i % 5)) for i in range(300)
    }
    data = _text(top_k)
    path = tmp_path / "b.top_k.jsonl"
    path.write_bytes(data)
    side = SideTopK(path, hashlib.sha256(data).hexdigest(), 300, set(top_k), 4, "b.json")
    assert dict(side.items()) == {q: d for q, d in top_k.items() if d}
    assert json.loads(data.split(b"\n")[1]) == ["q0001", ["doc-7"]]


@pytest.mark.parametrize("seed", range(6))
def test_plain_ids_are_written_on_their_bytes_as_json_writes_them(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side_file_bytes, "_DOCS_AT_ONCE", seed * 3)  # pieces of 0 to 15 ids
    rng = random.Random(seed)
    printable = [chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\']
    top_k = {
        f"q{i:03d}{rng.choice(printable)}": tuple(
            dict.fromkeys("".join(rng.choices(printable, k=rng.randint(0, 12))) for _ in range(9))
        )[: rng.randint(1, 9)]
        for i in range(rng.randint(1, 40))
    }
    ids = TopKIds.of(top_k)
    pieces = written_pieces(ids)
    assert pieces is not None
    text = b"".join(piece.tobytes() for piece in pieces).decode()
    assert text == json_id_lists(sorted(ids.items()))
    assert written_columns(text.encode()) is not None


@pytest.mark.parametrize(
    "doc", ['quo"te', "back\\slash", "tab\there", "é", "\x7f", "\x1b[31m::error::x", "\u2028"]
)
def test_an_id_json_escapes_or_not_ascii_is_written_by_json(doc: str) -> None:
    assert written_pieces(TopKIds.of({"q1": ("d1", doc)})) is None
    assert written_pieces(TopKIds.of({doc: ("d1",)})) is None


def test_a_registered_secret_is_never_written_on_the_bytes(tmp_path: Path) -> None:
    top_k = {f"q{i:04d}": ("d1", f"token-{i}-s3cr3t-value") for i in range(1001)}
    redaction.register("s3cr3t-value")
    try:
        assert written_pieces(TopKIds.of(top_k)) is None
        path = tmp_path / "b.json"
        with_top_k_file({"top_k": TopKIds.of(top_k)}, path)
        text = (tmp_path / "b.top_k.jsonl").read_text()
    finally:
        redaction.forget()
    assert "s3cr3t" not in text
    assert text.count("<redacted>") == 1001


@pytest.mark.parametrize(
    "text",
    [
        b'["q2", ["d1"]]\n["q1", ["d1"]]\n',  # out of order across two blocks
        b'["q1", ["d1"]]\n["q1", ["d2"]]\n',  # a query twice across two blocks
        b'["q1", ["d1"]]\n\n["q2", ["d1"]]\n',  # an empty line: a block of its own
        b'["q1", ["d1"]]\n["q2", ["\xc3"]]\n',  # not UTF-8 in the second block only
    ],
)
def test_what_spans_blocks_goes_to_the_line_reader(
    text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side_file_bytes, "_BYTES_AT_ONCE", 1)  # a line a block
    assert written_columns(text) is None


def test_a_row_of_no_docs_is_no_ranking_to_check_whichever_reader_reads_it(
    tmp_path: Path,
) -> None:
    data = b'["q1", ["quo\\"te"]]\n["q2", []]\n'
    assert written_columns(data) is None  # an escape: one parse of the whole file reads it
    path = tmp_path / "b.top_k.jsonl"
    path.write_bytes(data)
    # q2 is no labelled query: a row of no docs is no ranking to check, as on the bytes.
    side = SideTopK(path, hashlib.sha256(data).hexdigest(), 2, {"q1"}, 10, "b.json")
    assert dict(side.items()) == {"q1": ('quo"te',)}
    plain = b'["q1", ["d1"]]\n["q2", []]\n'
    assert written_columns(plain) is not None
    path.write_bytes(plain)
    side = SideTopK(path, hashlib.sha256(plain).hexdigest(), 2, {"q1"}, 10, "b.json")
    assert dict(side.items()) == {"q1": ("d1",)}


@pytest.mark.parametrize("at_once", [1, 2, 3, 100])
def test_ids_of_one_width_are_written_in_pieces_as_json_writes_them(
    at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side_file_bytes, "_DOCS_AT_ONCE", at_once)
    ids = TopKIds.of({f"q{i}": tuple(f"d{i}{j:02d}" for j in range(i % 4 + 1)) for i in range(7)})
    assert ids.columns.docs.width == 4  # every id 4 bytes: held at one width
    pieces = written_pieces(ids)
    assert pieces is not None
    text = b"".join(piece.tobytes() for piece in pieces).decode()
    assert text == json_id_lists(sorted(ids.items()))
