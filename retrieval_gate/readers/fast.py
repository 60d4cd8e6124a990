"""Reading clean whitespace-separated files with numpy alone: no Python object per row."""

# Only clean files take this path: one space or tab between fields, a fixed number of fields,
# `\n` line ends, no comment or blank lines, finite numbers. Anything else returns None and
# the exact reader takes over, so errors always name their line and the result never depends
# on which path ran.

from __future__ import annotations

import gzip
import mmap
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import ByteIds, FloatArray, IntArray, U8Array, run_starts
from retrieval_gate.core.input_files import regular_file

CHUNK = 1 << 20
"""Bytes tokenised at a time: keeps the per-byte temporaries small and in cache. (One thread:
a second one scanning chunks cost more CPU time than it saved wall time.)"""

MAX_ID_BYTES = 255
"""Longer ids go to the exact reader: fixed-width copies of a column stay small."""

_NEWLINE, _SPACE, _TAB, _HASH, _DOT, _MINUS, _PLUS, _ZERO = b"\n \t#.-+0"
_FAST_DIGITS = 15
"""An integer of at most 15 digits and 10**15 are exact doubles, so one division gives the
correctly rounded value, the one float() gives."""
_WIDTH = 16
"""Bytes of a number read at once (right-aligned): 15 digits and a dot; longer ones (a sign
with 15 digits and a dot, say) take numpy's conversion."""
_PAD_MASKS = np.array(
    [
        [
            int.from_bytes(bytes([255] * pad + [0] * (8 - pad)), "little")
            for pad in (min(8, _WIDTH - length), max(0, 8 - length))
        ]
        for length in range(_WIDTH + 1)
    ],
    dtype=np.uint64,
).T.copy()
"""Per word and field length, the bytes of the right-aligned window left of the field."""
_INT_POWERS = np.array([10**i for i in range(_WIDTH)], dtype=np.uint64)
_POWERS = _INT_POWERS.astype(np.float64)
_UNICODE_SPACE = re.compile(
    rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
"""UTF-8 of the non-ASCII characters str.split() splits on."""
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


class DeclinedError(Exception):
    """The file is not clean: the exact reader must read it."""


@dataclass(frozen=True)
class Table:
    """The kept columns of a clean file."""

    group_ids: list[str]
    """Field 0 of each run of consecutive rows sharing it (queries come in blocks)."""
    group_rows: IntArray
    """Rows in each run."""
    ids: dict[int, ByteIds]
    numbers: dict[int, FloatArray]
    constant: dict[int, str]
    """Fields holding one value on every row: that value."""
    last_row: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.group_rows.sum())


Lengths = IntArray | tuple[int, int]
"""One chunk's id lengths, or (their one width, rows) when they all have it."""


def read_table(
    path: str | Path,
    num_fields: int,
    *,
    ids: tuple[int, ...] = (),
    numbers: tuple[int, ...] = (),
    constant: tuple[int, ...] = (),
) -> Table | None:
    """The columns of a clean `num_fields`-field file, or None when the exact reader must run
    (unclean content, or a file that cannot be read: the exact reader says why)."""
    try:
        with regular_file(path).open("rb") as handle:
            data = _load(handle)
    except (OSError, EOFError, zlib.error, ValueError):
        return None
    _reuse_freed_memory()
    try:
        return _parse(data, _start(data), len(data), num_fields, (ids, numbers, constant))
    except DeclinedError:
        return None


def read_batches(
    path: str | Path,
    num_fields: int,
    batch_bytes: int,
    *,
    ids: tuple[int, ...] = (),
    numbers: tuple[int, ...] = (),
) -> Iterator[Table]:
    """The columns of a clean file, `batch_bytes` of it at a time (more when one group of
    rows is longer), each batch ending where field 0 changes: the rows of a group of
    consecutive rows sharing field 0 are never split. Raises DeclinedError (before or
    during the iteration) when the exact reader must run."""
    try:
        with regular_file(path).open("rb") as handle:
            data = _load(handle)
    except (OSError, EOFError, zlib.error, ValueError):
        raise DeclinedError from None
    _reuse_freed_memory()
    at = _start(data)
    if at >= len(data):
        raise DeclinedError  # empty: the exact reader decides what that means
    while at < len(data):
        end = _group_end(data, at, at + batch_bytes)
        yield _parse(data, at, end, num_fields, (ids, numbers, ()))
        at = end


def _start(data: bytes | mmap.mmap) -> int:
    """Where the text starts: after a UTF-8 byte order mark, if any."""
    return 3 if data[:3] == _BOM else 0


def _group_end(data: bytes | mmap.mmap, at: int, want: int) -> int:
    """The first line start at or before `want` (after `at`) where field 0 changes; past
    `want` when the group there started at `at`; the end of the data when it is near."""
    if want >= len(data):
        return len(data)
    cut = data.rfind(b"\n", at, want) + 1
    if cut <= at:  # no line end before `want`: the line is longer than a batch
        cut = data.find(b"\n", want) + 1 or len(data)
        if cut >= len(data):
            return len(data)
    head = _first_field(data, cut)
    end = cut
    # Back over the lines of the group that straddles `cut` (a group of rows is a query's
    # results: a few hundred lines at most, usually).
    while end > at:
        start = max(data.rfind(b"\n", at, end - 1) + 1, at)
        if _first_field(data, start) != head:
            break
        end = start
    if end > at:
        return end
    # The whole batch is one group: it ends where field 0 next changes.
    while cut < len(data) and _first_field(data, cut) == head:
        cut = data.find(b"\n", cut) + 1 or len(data)
    return cut


def _first_field(data: bytes | mmap.mmap, start: int) -> bytes:
    """Field 0 of the line at `start` with the separator after it (so that a longer field
    sharing its beginning differs)."""
    line = data[start : start + MAX_ID_BYTES + 2]
    for index, byte in enumerate(line):
        if byte <= _SPACE:
            return line[: index + 1]
    return line


def _reuse_freed_memory() -> None:
    """Freeing one 4 MiB block (never touched: it costs two system calls) makes glibc's
    malloc keep the next chunks' temporaries in its heap instead of returning them to the
    kernel after every chunk and faulting them in again (a third of the reading time).

    glibc maps blocks above a threshold (128 KiB at first) and trims its heap once twice that
    is free at its top; freeing a mapped block raises the threshold to the block's size. Other
    allocators ignore this.
    """
    np.empty(4 << 20, dtype=np.uint8)


def _load(handle: BinaryIO) -> bytes | mmap.mmap:
    """The file's bytes: mapped, not copied (the page cache already holds them), unless
    it is gzip, or empty (which cannot be mapped)."""
    if handle.read(2) == _GZIP_MAGIC:
        handle.seek(0)
        return gzip.decompress(handle.read())
    handle.seek(0)
    if os.fstat(handle.fileno()).st_size == 0:
        return b""
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@dataclass(frozen=True)
class _Piece:
    """What one chunk holds, before the pieces are joined in order."""

    rows: int
    labels: list[bytes]
    counts: list[int]
    ids: dict[int, tuple[U8Array, Lengths]]
    numbers: dict[int, FloatArray]
    constant: dict[int, bytes]
    last: list[bytes]


def _scan(chunk: U8Array, num_fields: int, fields: tuple[tuple[int, ...], ...]) -> _Piece:
    """The kept columns of one chunk."""
    id_fields, number_fields, constant_fields = fields
    ends = _separators(chunk, num_fields)
    labels, counts = _runs(chunk, *_field(ends, num_fields, 0))
    constant: dict[int, bytes] = {}
    for i in constant_fields:
        seen = _fixed(chunk, *_field(ends, num_fields, i))
        constant[i] = bytes(seen[0])
        if not (seen == seen[0]).all():
            raise DeclinedError
    bounds = ends[-num_fields - 1 :].tolist() if len(ends) > num_fields else [-1, *ends]
    return _Piece(
        len(ends) // num_fields,
        labels,
        counts,
        {i: _gather(chunk, *_field(ends, num_fields, i)) for i in id_fields},
        {i: _numbers(chunk, *_field(ends, num_fields, i)) for i in number_fields},
        constant,
        [chunk[a + 1 : b].tobytes() for a, b in pairwise(bounds)],
    )


def _parse(
    data: bytes | mmap.mmap,
    begin: int,
    stop: int,
    num_fields: int,
    fields: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
) -> Table:
    """The table of the lines in `data[begin:stop]`."""
    id_fields = fields[0]
    groups: list[bytes] = []
    group_rows: list[int] = []
    id_bytes: dict[int, _Growing] = {}
    id_lengths: dict[int, list[Lengths]] = {i: [] for i in id_fields}
    numbers: dict[int, _Growing] = {}
    constant: dict[int, bytes] = {}
    last: list[bytes] = []
    for chunk in _chunks(data, begin, stop):
        piece = _scan(chunk, num_fields, fields)
        # np.empty costs nothing until written: a generous guess of the size is free.
        guess = int((stop - begin) / CHUNK * piece.rows * 1.25) + 1024
        labels, counts = piece.labels, piece.counts
        if groups and labels[0] == groups[-1]:
            group_rows[-1] += counts.pop(0)
            labels.pop(0)
        groups.extend(labels)
        group_rows.extend(counts)
        for i, (values, lengths) in piece.ids.items():
            capacity = guess * len(values) // piece.rows
            id_bytes.setdefault(i, _Growing(np.uint8, capacity)).extend(values)
            id_lengths[i].append(lengths)
        for i, parsed in piece.numbers.items():
            numbers.setdefault(i, _Growing(np.float64, guess)).extend(parsed)
        for i, value in piece.constant.items():
            if constant.setdefault(i, value) != value:
                raise DeclinedError
        last = piece.last
    if not groups:
        raise DeclinedError  # empty: the exact reader decides what that means
    return Table(
        [label.decode() for label in groups],
        np.asarray(group_rows, dtype=np.int64),
        {i: _ids(id_bytes[i], id_lengths[i]) for i in id_fields},
        {i: column.values() for i, column in numbers.items()},
        {i: value.decode() for i, value in constant.items()},
        tuple(field.decode() for field in last),
    )


class _Growing:
    """A column written chunk after chunk into one array, grown (rarely) by doubling."""

    def __init__(self, dtype: type[np.generic], capacity: int) -> None:
        self.array: npt.NDArray[np.generic] = np.empty(max(capacity, 16), dtype=dtype)
        self.size = 0

    def extend(self, values: npt.NDArray[Any]) -> None:
        end = self.size + len(values)
        if end > len(self.array):
            grown = np.empty(max(end, 2 * len(self.array)), dtype=self.array.dtype)
            grown[: self.size] = self.array[: self.size]
            self.array = grown
        self.array[self.size : end] = values
        self.size = end

    def values(self) -> npt.NDArray[Any]:
        return self.array[: self.size]


def _chunks(data: bytes | mmap.mmap, begin: int, stop: int) -> Iterator[U8Array]:
    """Pieces of `data[begin:stop]` that end at line ends (a missing final newline is added;
    `stop` is a line start or the end)."""
    view = np.frombuffer(data, dtype=np.uint8)
    # Pages already scanned leave this process's memory (the page cache keeps them): the peak
    # then holds the columns, not the whole file as well.
    release = getattr(data, "madvise", None)
    page = mmap.PAGESIZE
    released = begin // page * page
    at = begin
    while at < stop:
        end = data.rfind(b"\n", at, min(at + CHUNK, stop)) + 1
        if end <= at:  # a line longer than a chunk
            end = data.find(b"\n", at + CHUNK, stop) + 1 or stop
        chunk = view[at:end]
        if chunk[-1] != _NEWLINE:
            chunk = np.append(chunk, np.uint8(_NEWLINE))
        if chunk.max() >= 0x80:
            _check_text(bytes(data[at:end]))
        yield chunk
        if release is not None and end // page * page > released:
            release(mmap.MADV_DONTNEED, released, end // page * page - released)
            released = end // page * page
        at = end


def _check_text(piece: bytes) -> None:
    """Non-ASCII bytes must be UTF-8 without the Unicode spaces str.split() splits on."""
    try:
        piece.decode()
    except UnicodeDecodeError:
        raise DeclinedError from None
    if _UNICODE_SPACE.search(piece):
        raise DeclinedError


def _separators(chunk: U8Array, num_fields: int) -> IntArray:
    """The end of every field (its separator's position), line after line: each line must be
    `num_fields` non-empty fields with one space or tab between them."""
    # Every byte <= 32 is a separator here; control characters other than tab and newline
    # then fail the checks below, so they only ever reach the exact reader.
    ends = np.flatnonzero(chunk <= _SPACE)
    if len(ends) % num_fields or ends[0] == 0:
        raise DeclinedError
    kinds = chunk[ends]
    lines = len(ends) // num_fields
    # Counts, not a per-separator pattern: every line ends in a newline and no other
    # separator is one, and all the others are spaces or tabs.
    if not (kinds[num_fields - 1 :: num_fields] == _NEWLINE).all() or (
        np.count_nonzero(kinds == _SPACE) + np.count_nonzero(kinds == _TAB) + lines != len(ends)
    ):
        raise DeclinedError
    gaps = np.diff(ends)
    if ends[0] > MAX_ID_BYTES or (len(gaps) and (gaps.min() < 2 or gaps.max() > MAX_ID_BYTES + 1)):
        raise DeclinedError  # blank lines, leading or doubled separators, huge fields
    if chunk[0] == _HASH or (chunk[ends[num_fields - 1 : -1 : num_fields] + 1] == _HASH).any():
        raise DeclinedError  # comment lines
    return ends


def _field(ends: IntArray, num_fields: int, i: int) -> tuple[IntArray, IntArray]:
    """Start and end of field `i` on every line."""
    stop = ends[i::num_fields]
    if i:
        return ends[i - 1 :: num_fields] + 1, stop
    start = np.empty_like(stop)
    start[0] = 0
    start[1:] = ends[num_fields - 1 : -1 : num_fields] + 1
    return start, stop


def _fixed(chunk: U8Array, starts: IntArray, ends: IntArray) -> npt.NDArray[np.bytes_]:
    """The fields as a fixed-width bytes array (no field holds a NUL byte here)."""
    lengths = ends - starts
    width = int(lengths.max())
    column = np.arange(width, dtype=np.int64)
    if (lengths == width).all():  # one width (the usual case): no padding to clear
        return _windows(chunk, width)[starts].view(f"S{width}")
    matrix = chunk[np.minimum(starts[:, None] + column, len(chunk) - 1)]
    matrix[column >= lengths[:, None]] = 0
    fixed: npt.NDArray[np.bytes_] = matrix.view(f"S{width}").reshape(-1)
    return fixed


def _windows(chunk: U8Array, width: int) -> npt.NDArray[np.void]:
    """Every `width`-byte window of the chunk as one record (a view: nothing is copied), so
    that a gather of fields copies whole records instead of bytes through an index matrix."""
    windows: npt.NDArray[np.void] = np.ndarray(
        (len(chunk) - width + 1,), dtype=f"V{width}", buffer=chunk, strides=(1,)
    )
    return windows


def _runs(chunk: U8Array, starts: IntArray, ends: IntArray) -> tuple[list[bytes], list[int]]:
    """Each run of equal consecutive values: the value and its length."""
    values = _fixed(chunk, starts, ends)
    first = run_starts(values)
    counts = np.diff(np.append(first, len(values)))
    return values[first].tolist(), counts.tolist()


def _gather(chunk: U8Array, starts: IntArray, ends: IntArray) -> tuple[U8Array, Lengths]:
    """The fields' bytes back to back, and their lengths."""
    lengths = ends - starts
    width = int(lengths[0])
    if (lengths == width).all():  # ids of one width (the usual case): one record each
        return _windows(chunk, width)[starts].view(np.uint8), (width, len(starts))
    offsets = np.cumsum(lengths) - lengths
    index = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
    return chunk[index], lengths


def _ids(column: _Growing, lengths: list[Lengths]) -> ByteIds:
    """ByteIds over the gathered bytes (zero-padded as ByteIds needs)."""
    size = column.size
    column.extend(np.zeros(16, dtype=np.uint8))
    data = column.values()
    widths = {part[0] if isinstance(part, tuple) else -1 for part in lengths}
    if len(widths) == 1 and min(widths) > 0:
        width = widths.pop()
        return ByteIds.of_width(data, size // width, width)
    every = np.concatenate(
        [np.full(part[1], part[0]) if isinstance(part, tuple) else part for part in lengths]
    )
    offsets = np.zeros(len(every) + 1, dtype=np.int64)
    np.cumsum(every, out=offsets[1:])
    return ByteIds(data, offsets)


def _numbers(chunk: U8Array, starts: IntArray, ends: IntArray) -> FloatArray:
    """The fields as floats, exactly as float() reads them; non-finite ones decline.

    Plain decimals (`-12.5`, `3`, `.25`, at most 15 digits) are read 8 bytes per integer
    operation from their right-aligned bytes; anything else (exponents, longer numbers) goes
    through numpy's own string conversion.
    """
    lengths = ends - starts
    rows = len(lengths)
    # Every 16-byte window of the chunk, as one record each (a view: nothing is copied).
    if len(chunk) < _WIDTH:  # (its rows all take the slow path below)
        chunk = np.pad(chunk, (0, _WIDTH - len(chunk)))
    windows = _windows(chunk, _WIDTH)
    matrix = windows[np.maximum(ends - _WIDTH, 0)].view(np.uint8).reshape(rows, _WIDTH)
    first = chunk[starts]
    negative = first == _MINUS
    signed = negative | (first == _PLUS)
    fits = (lengths <= _WIDTH) & (ends >= _WIDTH)
    at = np.flatnonzero(signed & fits)
    matrix[at, _WIDTH - lengths[at]] = _ZERO
    words = matrix.view(np.uint64)
    # Bytes left of the field read as leading zeros.
    clipped = np.minimum(lengths, _WIDTH)
    for word in (0, 1):
        pad = _PAD_MASKS[word].take(clipped)
        words[:, word] &= ~pad
        words[:, word] |= pad & _ZEROS
    dot_at: IntArray | int = _WIDTH - 1 - bytes(chunk[starts[0] : ends[0]])[::-1].find(b".")
    if 0 < dot_at < _WIDTH - 1 and (matrix[:, dot_at] == _DOT).all():
        # Every number has its dot in the same place (a fixed number of decimals, as run
        # files are usually written): no row needs its dot looked for.
        matrix[:, dot_at] = _ZERO
        digits_ok = _digit_bytes(words)
        odd = ~fits | (digits_ok[:, 0] != _HIGH) | (digits_ok[:, 1] != _HIGH)
    else:
        dots = _equal_bytes(words, _DOTS)
        dot_count = _high_bit_count(dots)
        digits_ok = _digit_bytes(words) | dots
        odd = ~fits | (dot_count > 1) | (digits_ok[:, 0] != _HIGH) | (digits_ok[:, 1] != _HIGH)
        digit_count = lengths - dot_count - signed
        odd |= (digit_count <= 0) | (digit_count > _FAST_DIGITS)
        dot_at = _lowest_byte(dots)  # 0..15 from the left; 16 when there is no dot
    # Drop the dot: the bytes left of it move one place right (a 128-bit shift by 8).
    low = words[:, 0] & _LEFT_OF[0].take(dot_at)
    high = ((words[:, 1] & _LEFT_OF[1].take(dot_at)) << np.uint64(8)) | (low >> np.uint64(56))
    high |= words[:, 1] & _RIGHT_OF[1].take(dot_at)
    low = (low << np.uint64(8)) | (words[:, 0] & _RIGHT_OF[0].take(dot_at)) | _FILL.take(dot_at)
    mantissa = _eight_digits(low - _ZEROS) * np.uint64(10**8) + _eight_digits(high - _ZEROS)
    decimals = np.where(dot_at < _WIDTH, _WIDTH - 1 - dot_at, 0)
    result: FloatArray = mantissa.astype(np.float64)
    result /= _POWERS[decimals]
    np.negative(result, out=result, where=negative)
    if odd.any():
        rows_odd = np.flatnonzero(odd)
        try:
            result[rows_odd] = _fixed(chunk, starts[rows_odd], ends[rows_odd]).astype(np.float64)
        except ValueError:
            raise DeclinedError from None
    if not np.isfinite(result).all():
        raise DeclinedError  # the exact reader names the line
    return result


def _byte_masks(selected: list[bool]) -> list[int]:
    """The two little-endian words whose bytes are 0xFF where `selected`."""
    return [
        int.from_bytes(bytes(255 if on else 0 for on in selected[at : at + 8]), "little")
        for at in (0, 8)
    ]


_LEFT_OF = np.array(
    [_byte_masks([i < dot < _WIDTH for i in range(_WIDTH)]) for dot in range(_WIDTH + 1)],
    dtype=np.uint64,
).T.copy()
_RIGHT_OF = np.array(
    [_byte_masks([i > dot or dot == _WIDTH for i in range(_WIDTH)]) for dot in range(_WIDTH + 1)],
    dtype=np.uint64,
).T.copy()
_FILL = np.array([0x30] * _WIDTH + [0], dtype=np.uint64)
"""The '0' that fills the first byte once the bytes before the dot moved right."""
_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ZEROS = np.uint64(0x3030303030303030)
_DOTS = np.uint64(0x2E2E2E2E2E2E2E2E)
_ABOVE_NINE = np.uint64(0x4646464646464646)


def _equal_bytes(words: npt.NDArray[np.uint64], pattern: np.uint64) -> npt.NDArray[np.uint64]:
    """The high bit of each byte of `words` that equals the byte of `pattern`, exactly."""
    x = words ^ pattern
    equal: npt.NDArray[np.uint64] = ~(((x & _LOW7) + _LOW7) | x | _LOW7)
    return equal


def _digit_bytes(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The high bit of each byte of `words` that is an ASCII digit."""
    low = words & _LOW7
    at_least_zero = ((low | _HIGH) - _ZEROS) & _HIGH
    above_nine = (low + _ABOVE_NINE) & _HIGH
    digits: npt.NDArray[np.uint64] = at_least_zero & ~above_nine & ~(words & _HIGH)
    return digits


def _high_bit_count(flags: npt.NDArray[np.uint64]) -> IntArray:
    """Per row, how many bytes have their high bit set (flags from `_equal_bytes`)."""
    ones = (flags[:, 0] >> np.uint64(7)) + (flags[:, 1] >> np.uint64(7))
    counts: IntArray = ((ones * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)
    return counts


def _lowest_byte(flags: npt.NDArray[np.uint64]) -> IntArray:
    """Per row, the first (leftmost) byte with its high bit set, for rows with at most one
    such byte (others are read the slow way: theirs is only kept within 0..16); 16 when none
    is."""
    out = np.full(len(flags), _WIDTH, dtype=np.int64)
    for word in (1, 0):
        # One set bit at 8k + 7: the multiplication moves byte 7 - k of _BYTE_INDEX, which
        # holds k, to the top byte.
        bits = flags[:, word] >> np.uint64(7)
        index = ((bits * _BYTE_INDEX) >> np.uint64(56)).astype(np.int64) + 8 * word
        np.copyto(out, index, where=bits != 0)
    return np.minimum(out, _WIDTH, out=out)


_BYTE_INDEX = np.uint64(0x0001020304050607)


def _eight_digits(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The value of 8 digits (0-9 bytes, most significant first) held in each word."""
    words = (words * np.uint64(10) + (words >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    words = (words * np.uint64(100) + (words >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    value: npt.NDArray[np.uint64] = (words * np.uint64(10000) + (words >> np.uint64(32))) & (
        np.uint64(0xFFFFFFFF)
    )
    return value
