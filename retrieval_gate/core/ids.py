"""Factorising string ids into integer codes, and finding duplicate (query, doc) rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import pairwise, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

try:
    from numpy._core import multiarray as np_multiarray
except ImportError:  # numpy < 2
    from numpy.core import multiarray as np_multiarray  # type: ignore[no-redef]

from retrieval_gate.errors import InputError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
ObjectArray = npt.NDArray[np.object_]


def object_array(values: Iterable[str]) -> ObjectArray:
    """A 1-d object array of Python strings (np.array would make a fixed-width unicode array)."""
    items = list(values)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def factorize(
    ids: Sequence[str] | ObjectArray, *, sort: bool = False
) -> tuple[IntArray, ObjectArray]:
    """Codes into the unique ids (first-seen order, or sorted as Python strings with `sort`)."""
    index: dict[str, int] = dict.fromkeys(ids, 0)
    keys = sorted(index) if sort else list(index)
    for code, key in enumerate(keys):
        index[key] = code
    codes = np.fromiter(map(index.__getitem__, ids), dtype=np.int64, count=len(ids))
    return codes, object_array(keys)


def positions(
    of: Sequence[str] | ObjectArray, among: Mapping[str, int] | Sequence[str] | ObjectArray
) -> IntArray:
    """The index of each of `of` among the ids `among` (or in their index, id -> position),
    -1 where it is not there."""
    if isinstance(among, Mapping):
        index = among
    else:
        names = among.tolist() if isinstance(among, np.ndarray) else among
        index = {name: i for i, name in enumerate(names)}
    wanted = of.tolist() if isinstance(of, np.ndarray) else of
    return np.fromiter(map(index.get, wanted, repeat(-1)), dtype=np.int64, count=len(wanted))


def run_starts(values: npt.NDArray[Any]) -> IntArray:
    """Where each run of equal consecutive values starts (rows grouped by query: where each
    query's rows start)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, values[1:] != values[:-1]])


def byte_codes(ids: ByteIds) -> IntArray:
    """A code per id, equal for equal ids (codes follow the ids' hashes, not their order):
    one sort of 64-bit hashes, every run of equal hashes confirmed byte for byte. A dict of
    strings (`factorize`) is slower over millions of ids: 4,000,000 doc ids of 750,000 distinct
    took 0.9 s here against 2.8 s."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    # The hashes sorted where they lie once their order is known: no third array of rows.
    ordered = ids.hashes(keep=False)
    order = np.argsort(ordered)
    ordered.sort()
    fresh = np.empty(len(ordered), dtype=bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    del ordered
    # Rows whose hash equals the row's before are confirmed byte for byte, a block at a time
    # so that the indices and the ids compared stay small beside the ids themselves.
    words = ids.words() if ids.width else None
    for start in range(0, len(fresh) - 1, _CONFIRMED):
        repeat = np.flatnonzero(~fresh[start + 1 : start + 1 + _CONFIRMED]) + start
        later, earlier = order[repeat + 1], order[repeat]
        if words is not None:
            same = same_words(words, later, words, earlier)
        else:
            same = ids.equal(later, ids, earlier)
        if not same.all():
            return factorize(ids.strings())[0]  # two ids share a hash: code them exactly
    del words
    codes = np.empty(len(fresh), dtype=np.int64)
    codes[order] = np.cumsum(fresh) - 1
    return codes


def same_words(words: U64Array, rows: IntArray, other: U64Array, other_rows: IntArray) -> BoolArray:
    """Whether each of `rows` of `words` (`ByteIds.words`) equals `other`'s at `other_rows`."""
    if words.shape[1] == 1:
        same: BoolArray = words[rows, 0] == other[other_rows, 0]
        return same
    every: BoolArray = (words[rows] == other[other_rows]).all(axis=1)
    return every


def first_duplicate(query: IntArray, docs: ObjectArray) -> tuple[int, int] | None:
    """Row indices (earlier, later) of the first repeated (query, doc) pair in row order.

    Rows are bucketed by a 64-bit mix of the query code and the doc's string hash, so no
    doc vocabulary is built; rows sharing a bucket are compared exactly.
    """
    if len(docs) < 2:
        return None
    hashes = np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs)).view(np.uint64)
    with np.errstate(over="ignore"):
        key = hashes ^ (query.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    # A plain sort answers "any repeat?"; the stable argsort that locates it runs on error only.
    ordered = np.sort(key)
    if not np.any(ordered[1:] == ordered[:-1]):
        return None
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    edges = np.flatnonzero(np.r_[True, key_sorted[1:] != key_sorted[:-1], True])
    shared = np.flatnonzero(np.diff(edges) > 1)
    found: tuple[int, int] | None = None
    # One pass over each shared bucket, its rows in file order (the sort is stable), finds its
    # earliest repeat: checking each row against every row before it in its bucket was
    # n^2 / 2 comparisons for a file of one line repeated.
    for start, end in zip(edges[shared].tolist(), edges[shared + 1].tolist(), strict=True):
        seen: dict[tuple[int, object], int] = {}
        for row in order[start:end].tolist():
            if found is not None and row >= found[1]:
                break
            earlier = seen.setdefault((int(query[row]), docs[row]), row)
            if earlier != row:
                found = (earlier, row)
                break
    return found


def check_unique(
    query: IntArray,
    query_ids: ObjectArray,
    docs: ObjectArray | ByteIds,
    *,
    source: str,
    lines: Sequence[int] | None,
    what: str,
) -> None:
    """Nothing, or an error naming both rows of the first repeated (query, doc); ids given as
    bytes are checked on their hashes, without a Python string per row."""
    if isinstance(docs, ByteIds):
        keys = sorted_keys(pair_keys(query, docs.hashes(keep=False), in_place=True))
        duplicate = first_duplicate_bytes(query, docs, keys)
    else:
        duplicate = first_duplicate(query, docs)
    if duplicate is None:
        return
    earlier, later = duplicate
    name = docs.take(np.asarray([later])).strings()[0] if isinstance(docs, ByteIds) else docs[later]
    pair = f"query {query_ids[query[later]]!r}, doc {name!r}"
    if lines is None:
        raise InputError(
            f"duplicate {what} for {pair} (entries {earlier + 1} and {later + 1})", source=source
        )
    raise InputError(
        f"duplicate {what} for {pair}: already given on line {lines[earlier]}; "
        "keep one line per (query, doc)",
        source=source,
        line=lines[later],
    )


U8Array = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]
U64Array = npt.NDArray[np.uint64]

_PAD = 16
"""Zero bytes after the last id: hashing reads two aligned 8-byte words past any start."""
_WORD = np.dtype("<u8")
"""Bytes read as little-endian words, so hashes do not depend on the machine."""
_MASK = (1 << 64) - 1
_CONFIRMED = 1 << 22
"""Rows of equal hashes `byte_codes` confirms at a time."""
_CACHED = 1 << 16
"""Rows of 8 bytes per step of a chain of numpy operations: each step's temporaries stay
in the CPU's cache and are reused instead of being fresh memory every time."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


class ByteIds:
    """Ids as one UTF-8 buffer and row offsets: no Python object per row.

    Id `i` is `data[offsets[i]:offsets[i + 1]]`. Comparisons are on bytes, which orders
    UTF-8 text as code points do (so as Python strings and as trec_eval's strcmp). `width` is
    the length of every id when they all have one (None: not known to); then the offsets are
    only built if asked for.
    """

    __slots__ = ("_count", "_hashes", "_offsets", "data", "width")

    def __init__(self, data: U8Array, offsets: IntArray, width: int | None = None) -> None:
        size = int(offsets[-1])
        if len(data) < size + _PAD:
            padded = np.zeros(size + _PAD, dtype=np.uint8)
            padded[:size] = data[:size]
            data = padded
        self.data = data
        self._offsets: IntArray | None = offsets
        self._count = len(offsets) - 1
        self.width = width
        self._hashes: U64Array | None = None

    @classmethod
    def of_width(cls, data: U8Array, count: int, width: int) -> ByteIds:
        """`count` ids of `width` bytes each, back to back in `data` (padded when it is not:
        see _PAD)."""
        if len(data) < count * width + _PAD:
            padded = np.zeros(count * width + _PAD, dtype=np.uint8)
            padded[: count * width] = data[: count * width]
            data = padded
        ids = cls.__new__(cls)
        ids.data = data
        ids._offsets = None
        ids._count = count
        ids.width = width
        ids._hashes = None
        return ids

    @property
    def offsets(self) -> IntArray:
        """Where each id starts, and the end of the last one."""
        if self._offsets is None:
            assert self.width is not None  # of_width sets it
            self._offsets = np.arange(self._count + 1, dtype=np.int64) * self.width
        return self._offsets

    @classmethod
    def from_strings(cls, ids: Sequence[str] | ObjectArray) -> ByteIds:
        """The UTF-8 bytes of `ids`."""
        items: list[str] = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        joined = "".join(items)
        raw = joined.encode()
        if len(raw) == len(joined):  # ASCII: character counts are byte counts
            lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        else:
            encoded = [item.encode() for item in items]
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(items))
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.zeros(len(raw) + _PAD, dtype=np.uint8)
        data[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        same = len(lengths) > 0 and bool((lengths == lengths[0]).all())
        return cls(data, offsets, int(lengths[0]) if same else None)

    @classmethod
    def concatenate(cls, parts: Sequence[ByteIds]) -> ByteIds:
        """The ids of `parts`, one part after another, in one buffer."""
        widths = {part.width for part in parts if len(part)}
        width = widths.pop() if len(widths) == 1 else None
        count = sum(map(len, parts))
        if width:  # one width: whole rows side by side, and no offsets (8 bytes an id)
            data = np.zeros(count * width + _PAD, dtype=np.uint8)
            at = 0
            for part in parts:
                data[at : at + len(part) * width] = part.data[: len(part) * width]
                at += len(part) * width
            joined = cls.of_width(data, count, width)
        else:
            sizes = [int(part.offsets[-1]) for part in parts]
            data = np.zeros(sum(sizes) + _PAD, dtype=np.uint8)
            offsets = np.zeros(count + 1, dtype=np.int64)
            at = row = 0
            for part, size in zip(parts, sizes, strict=True):
                data[at : at + size] = part.data[:size]
                offsets[row + 1 : row + len(part) + 1] = part.offsets[1:] + at
                at, row = at + size, row + len(part)
            joined = cls(data, offsets, width)
        if all(part._hashes is not None for part in parts):  # already paid for: keep them
            joined._hashes = np.concatenate([part._hashes for part in parts])
        return joined

    def __len__(self) -> int:
        return self._count

    @property
    def lengths(self) -> IntArray:
        """Byte length of each id."""
        return np.diff(self.offsets)

    def strings(self) -> ObjectArray:
        """The ids as Python strings."""
        used = self.data[: len(self) * (self.width or 0)]
        # ASCII of one width converts in C, unless an id holds NUL (numpy's fixed-width bytes
        # drop trailing NULs).
        if len(used) and int(used.max()) < 0x80 and int(used.min()) > 0:
            fixed = used.view(f"S{self.width}")
            return fixed.astype(f"U{self.width}").astype(object)
        text = self.data[: int(self.offsets[-1])].tobytes()
        bounds = self.offsets.tolist()
        return object_array(text[a:b].decode() for a, b in pairwise(bounds))

    def fixed(self, rows: IntArray) -> npt.NDArray[np.bytes_]:
        """The ids of `rows` as a fixed-width bytes array (sorts and compares in C)."""
        if self.width:  # rows of the (ids, width) matrix: one gather of whole rows
            matrix = self.data[: self._count * self.width].reshape(self._count, self.width)
            return matrix[rows].view(f"S{self.width}").reshape(-1)
        if self.width == 0:
            return np.zeros(len(rows), dtype="S1")
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        width = max(int(lengths.max()) if len(rows) else 1, 1)
        matrix = np.zeros((len(rows), width), dtype=np.uint8)
        # A column at a time: no (rows x width) index matrix, 8 bytes per byte gathered.
        for column in range(width):
            present = np.flatnonzero(lengths > column)
            matrix[present, column] = self.data[starts[present] + column]
        return matrix.view(f"S{width}").reshape(-1)

    def equal(self, rows: IntArray, other: ByteIds, other_rows: IntArray) -> npt.NDArray[np.bool_]:
        """Whether the id at each of `rows` equals `other`'s at `other_rows`, byte for byte
        (fixed-width bytes alone would take 'a' and 'a\\x00' for one id)."""
        if self.width and self.width == other.width:
            # Ids of one width as zero-padded 8-byte words: they compare as integers.
            same_rows: BoolArray = (self.words(rows) == other.words(other_rows)).all(axis=1)
            return same_rows
        same: npt.NDArray[np.bool_] = self.fixed(rows) == other.fixed(other_rows)
        same &= self._lengths_of(rows) == other._lengths_of(other_rows)
        return same

    def words(self, rows: IntArray | None = None) -> U64Array:
        """The ids (of one width) of `rows`, or all of them in one pass over the buffer, as
        rows of zero-padded 8-byte words, which compare as integers."""
        assert self.width is not None
        matrix = self.data[: self._count * self.width].reshape(self._count, self.width)
        count = self._count if rows is None else len(rows)
        padded = np.zeros((count, -(-self.width // 8) * 8), dtype=np.uint8)
        padded[:, : self.width] = matrix if rows is None else matrix[rows]
        return padded.view(np.uint64)

    def _lengths_of(self, rows: IntArray) -> IntArray:
        if self.width is not None:
            return np.full(len(rows), self.width, dtype=np.int64)
        return self.offsets[rows + 1] - self.offsets[rows]

    def take(self, rows: IntArray) -> ByteIds:
        """The ids of `rows`, in that order, copied into a buffer of their own."""
        if self.width:  # rows of the (ids, width) matrix: one gather, and the width kept
            matrix = self.data[: self._count * self.width].reshape(self._count, self.width)
            data = np.zeros(len(rows) * self.width + _PAD, dtype=np.uint8)
            data[: len(rows) * self.width] = matrix[rows].reshape(-1)
            return ByteIds.of_width(data, len(rows), self.width)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
        return ByteIds(self.data[index], offsets)

    def hashes(self, *, keep: bool = True) -> U64Array:
        """A 64-bit hash of each id (equal ids hash equal; others collide rarely); kept for
        the next call unless `keep` is False (then the caller owns the array)."""
        if self._hashes is not None:
            return self._hashes if keep else self._hashes.copy()
        if self.width is not None and len(self):
            hashes = hash_fixed(self.data, len(self), self.width)
        else:
            hashes = hash_bytes(self.data, self.offsets)
        if keep:
            self._hashes = hashes
        return hashes


class DualIds:
    """Ids held as Python strings or as one UTF-8 buffer (`ByteIds`: no object per row), each
    form built from the other on first use: joins read the bytes, messages the strings."""

    __slots__ = ("_bytes", "_strings")

    def __init__(self, ids: ObjectArray | ByteIds) -> None:
        self._strings: ObjectArray | None = None if isinstance(ids, ByteIds) else ids
        self._bytes: ByteIds | None = ids if isinstance(ids, ByteIds) else None

    @classmethod
    def of(cls, ids: ObjectArray | ByteIds | DualIds) -> DualIds:
        """`ids` held in two forms; itself when it already is, so that its holders share
        what either builds (judgments and their qrels decode the strings once)."""
        return ids if isinstance(ids, DualIds) else cls(ids)

    @property
    def held(self) -> ByteIds | ObjectArray:
        """The bytes when held (a check on their hashes makes no string per row), else the
        strings."""
        return self._bytes if self._bytes is not None else self.strings

    @property
    def strings(self) -> ObjectArray:
        if self._strings is None:
            assert self._bytes is not None  # one of the two forms is always held
            self._strings = self._bytes.strings()
        return self._strings

    @property
    def bytes(self) -> ByteIds:
        if self._bytes is None:
            assert self._strings is not None
            self._bytes = ByteIds.from_strings(self._strings)
        return self._bytes

    @property
    def has_strings(self) -> bool:
        """Whether the strings are held (reading them costs nothing)."""
        return self._strings is not None

    def strings_at(self, rows: IntArray) -> ObjectArray:
        """`strings[rows]`, without a string for every other row when only bytes are held."""
        if self._strings is not None:
            return self._strings[rows]
        return self.bytes.take(rows).strings()


def mix(values: U64Array) -> U64Array:
    """splitmix64's finaliser, in place: every input bit moves every output bit."""
    for start in range(0, len(values), _CACHED):  # blocks that stay in the CPU's cache
        block = values[start : start + _CACHED]
        block ^= block >> np.uint64(30)
        block *= _MIX1
        block ^= block >> np.uint64(27)
        block *= _MIX2
        block ^= block >> np.uint64(31)
    return values


def hash_fixed(data: U8Array, rows: int, width: int) -> U64Array:
    """`hash_bytes` of `rows` ids of `width` bytes each, back to back in `data` (padded):
    each 8-byte word is read in place through a strided view, then its excess bytes cut."""
    out: U64Array = np.empty(rows, dtype=np.uint64)
    seed = np.uint64((width * int(_GOLDEN)) & _MASK)
    for start in range(0, rows, _CACHED):
        block = out[start : start + _CACHED]
        block[:] = seed
        for at in range(0, width, 8):
            words = np.ndarray(
                (len(block),), dtype=_WORD, buffer=data, offset=start * width + at, strides=(width,)
            )
            take = min(width - at, 8)
            block ^= words if take == 8 else words & np.uint64((1 << (8 * take)) - 1)
            mix(block)
    return out


def hash_bytes(data: U8Array, offsets: IntArray) -> U64Array:
    """Hashes of the byte strings `data[offsets[i]:offsets[i + 1]]`, 8 bytes per numpy pass.

    `data` must hold 16 bytes past the last string (ByteIds pads it so).
    """
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    out: U64Array = lengths.astype(np.uint64) * _GOLDEN
    if n == 0:
        return out
    words = data[: len(data) // 8 * 8].view(_WORD)
    rows: IntArray | None = None  # None: every row is still being hashed
    starts, remaining = offsets[:-1].copy(), lengths.copy()
    longest = int(lengths.max())
    for _ in range(0, longest, 8):
        active = remaining > 0
        if not active.all():  # long ids are rare: hash only those still running
            keep = np.flatnonzero(active)
            rows = keep if rows is None else rows[keep]
            starts, remaining = starts[keep], remaining[keep]
        at = (starts >> 3).astype(np.int64)
        shift = (starts & 7).astype(np.uint64) * np.uint64(8)
        word = (words[at] >> shift) | (words[at + 1] << (np.uint64(64) - shift))
        take = np.minimum(remaining, 8).astype(np.uint64) * np.uint64(8)
        word &= np.where(take == 64, ~np.uint64(0), (np.uint64(1) << take) - np.uint64(1))
        if rows is None:
            out ^= word
            mix(out)
        else:
            part = out[rows] ^ word
            out[rows] = mix(part)
        starts += 8
        remaining -= 8
    return out


@contextmanager
def small_pages() -> Iterator[None]:
    """Within: numpy does not ask the kernel for huge pages for its large arrays.

    Where the kernel compacts memory to provide them (Linux's default `defrag=madvise`), the
    first touch of every fresh 2 MB costs more than all the arithmetic on it: reading a
    large run file took 40% less system time without them. Restored on exit.
    """
    toggle = getattr(np_multiarray, "_set_madvise_hugepage", None)
    previous = toggle(False) if toggle is not None else None
    try:
        yield
    finally:
        if toggle is not None:
            toggle(previous)


_BLOCK = 1 << 20
"""Rows per step of the loops below: their temporaries stay small and are reused."""


def pair_keys(query: IntArray, doc_hashes: U64Array, *, in_place: bool = False) -> U64Array:
    """One 64-bit hash of each (query code, doc hash) pair (written over `doc_hashes` when
    `in_place`)."""
    key = doc_hashes if in_place else doc_hashes.copy()
    for start in range(0, len(key), _CACHED):
        block = key[start : start + _CACHED]
        block += query[start : start + _CACHED].astype(np.uint64) * _GOLDEN
    return mix(key)


def row_bits(rows: int) -> int:
    """Low bits that hold a row index in a sorted key (see `sorted_keys`)."""
    return max(rows - 1, 1).bit_length()


def sorted_keys(keys: U64Array) -> U64Array:
    """`keys`, in place, with their row index in the low `row_bits` bits, sorted: one plain
    sort (no argsort) groups equal keys and says which rows they came from."""
    bits = np.uint64(row_bits(len(keys)))
    keys >>= bits
    keys <<= bits
    for start in range(0, len(keys), _CACHED):
        block = keys[start : start + _CACHED]
        block |= np.arange(start, start + len(block), dtype=np.uint64)
    keys.sort()
    return keys


def key_collisions(ordered: U64Array) -> list[IntArray]:
    """Rows sharing a key's high bits, one ascending array per group of `ordered`
    (from `sorted_keys`); candidates only: equal keys may come from different ids."""
    bits = np.uint64(row_bits(len(ordered)))
    limit = np.uint64(1) << bits
    found = []
    for start in range(0, len(ordered) - 1, _BLOCK):
        block = ordered[start : start + _BLOCK + 1]
        # Equal high bits: the xor of neighbours is below the row bits.
        same = np.flatnonzero((block[1:] ^ block[:-1]) < limit)
        found.append(same + start)
    same = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    if len(same) == 0:
        return []
    low = (np.uint64(1) << bits) - np.uint64(1)
    groups = []
    for start in same[np.r_[True, same[1:] != same[:-1] + 1]].tolist():
        end = start + 1
        key = ordered[start] >> bits
        while end < len(ordered) and (ordered[end] >> bits) == key:
            end += 1
        groups.append((ordered[start:end] & low).astype(np.int64))
    return groups


def first_duplicate_bytes(
    query: IntArray, docs: ByteIds, ordered: U64Array
) -> tuple[int, int] | None:
    """Row indices (earlier, later) of the first repeated (query, doc) in row order, from the
    sorted pair keys of `sorted_keys(pair_keys(query, docs.hashes()))`."""
    found: tuple[int, int] | None = None
    for rows in key_collisions(ordered):
        names = docs.take(rows).strings().tolist()  # exact: fixed-width bytes drop end NULs
        seen: dict[tuple[int, str], int] = {}
        for row, code, name in zip(rows.tolist(), query[rows].tolist(), names, strict=True):
            earlier = seen.setdefault((code, name), row)
            if earlier != row:
                if found is None or row < found[1]:
                    found = (earlier, row)
                break
    return found
