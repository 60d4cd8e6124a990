"""The top-k side file's text as `json_id_lists` writes it, written and parsed on its bytes
(numpy over the whole buffer, no object per id)."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import ByteIds, IntArray, U8Array, object_array
from retrieval_gate.core.redaction import any_registered
from retrieval_gate.core.top_k_ids import TopKColumns, TopKIds

_DOCS_AT_ONCE = 1 << 20
"""Ids laid out in one piece of a side file (`written_pieces`)."""
_BYTES_AT_ONCE = 1 << 24
"""Bytes of whole lines a side file is parsed in at a time (`written_columns`)."""

_SEPARATORS = {2: b", ", 3: b", [", 4: b"]]\n[", 7: b", []]\n["}
"""What `json_id_lists` writes between two strings, told apart by length: doc to doc, query
to its first doc, last doc to the next query, a query of no docs to the next query."""


def written_columns(data: bytes) -> tuple[TopKColumns, int] | None:
    """The rows of a side file as `json_id_lists` writes them (`["q", ["d", ...]]` lines,
    queries sorted, no escapes), parsed on the bytes without an object per id, and how many
    rows it has; None for any other text, which the line-by-line reader then parses or names.

    A row of no docs counts among the rows but not among the columns' queries, as
    `TopKIds.of` keeps it. The lines are parsed a block at a time: the index arrays of a
    parse are several times the text they index."""
    if not data.endswith(b"\n") or b"\\" in data or not data.startswith(b'["'):
        return None
    blocks = []
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + _BYTES_AT_ONCE - 1) + 1 or len(data)
        block = _parsed(np.frombuffer(data, dtype=np.uint8)[start:end])
        if block is None:
            return None
        blocks.append(block)
        start = end
    names = [name for block in blocks for name in block[0]]
    if any(a >= b for a, b in itertools.pairwise(names)):
        return None  # not sorted, or a query twice
    per_query = np.concatenate([block[1] for block in blocks])
    listed = per_query > 0
    bounds = np.zeros(int(listed.sum()) + 1, dtype=np.int64)
    np.cumsum(per_query[listed], out=bounds[1:])
    docs = blocks[0][2] if len(blocks) == 1 else ByteIds.concatenate([b[2] for b in blocks])
    del blocks
    queries = object_array(itertools.compress(names, listed.tolist()))
    return TopKColumns(queries, bounds, docs), len(names)


def _parsed(raw: U8Array) -> tuple[list[str], IntArray, ByteIds] | None:
    """Whole lines of a side file (`written_columns`): their queries, how many docs each
    lists, and the docs; None unless `json_id_lists` writes them so."""
    if len(raw) < 2 or raw[0] != ord("[") or raw[1] != ord('"'):
        return None
    quotes = np.flatnonzero(raw == ord('"'))
    if len(quotes) % 2:
        return None
    opens, closes = quotes[0::2], quotes[1::2]
    # Between two strings, each separator's length says what comes next (_SEPARATORS).
    gaps = opens[1:] - closes[:-1] - 1
    query = np.empty(len(opens), dtype=bool)
    query[0] = True
    query[1:] = np.isin(gaps, (4, 7))
    allowed = np.where(query[:-1], np.isin(gaps, (3, 7)), np.isin(gaps, (2, 4)))
    if not bool(allowed.all()):
        return None
    for length, separator in _SEPARATORS.items():
        at = closes[:-1][gaps == length]
        if len(at) and not _all_equal(raw, at + 1, separator):
            return None
    ending = b", []]\n" if query[-1] else b"]]\n"
    if raw[int(closes[-1]) + 1 :].tobytes() != ending:
        return None
    # Newlines only where separators hold them; no other control character anywhere.
    rows = int(query.sum())
    if np.count_nonzero(raw < 0x20) != rows or np.count_nonzero(raw == ord("\n")) != rows:
        return None
    if int(raw.max()) >= 0x80:
        try:  # a block ends at a newline, which no UTF-8 sequence holds: each checks alone
            raw.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            return None
    names = [
        raw[a + 1 : b].tobytes().decode()
        for a, b in zip(opens[query].tolist(), closes[query].tolist(), strict=True)
    ]
    doc = ~query
    per_query = np.diff(np.append(np.flatnonzero(query), len(query))) - 1
    return names, per_query, _strings_between(raw, opens[doc] + 1, closes[doc])


def _all_equal(raw: npt.NDArray[np.uint8], starts: IntArray, text: bytes) -> bool:
    """Whether `text` is at each of `starts` in `raw` (a byte at a time: no index matrix)."""
    return all(bool((raw[starts + i] == byte).all()) for i, byte in enumerate(text))


def _strings_between(raw: npt.NDArray[np.uint8], starts: IntArray, ends: IntArray) -> ByteIds:
    """The bytes of `raw[starts[i]:ends[i]]` as ids, gathered through a mask (one byte per byte
    of the file) rather than an index per byte."""
    lengths = ends - starts
    data = raw[_spans(len(raw), starts, lengths)]
    if len(lengths) and lengths[0] > 0 and bool((lengths == lengths[0]).all()):
        # One width: no offsets (8 bytes an id), the rows of the buffer say where each is.
        return ByteIds.of_width(data, len(lengths), int(lengths[0]))
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return ByteIds(data, offsets)


def written_pieces(top_k: TopKIds) -> list[U8Array] | None:
    """`json_id_lists(top_k.items())` encoded, in pieces of whole lines built on the ids'
    bytes (no string per id), when every id is printable ASCII without a quote or a
    backslash (JSON writes those as they are) and no secret is registered; None otherwise,
    for `json_id_lists` to write (and redact)."""
    if any_registered():
        return None
    columns = top_k.columns
    names = columns.queries.tolist()
    if not names or not all(_plain(name) for name in names):
        return None
    docs = columns.docs
    used = docs.data[: len(docs) * docs.width] if docs.width else docs.data[: docs.offsets[-1]]
    plain = (used >= 0x20) & (used < 0x7F) & (used != ord('"')) & (used != ord("\\"))
    if not bool(plain.all()):
        return None
    pieces = []
    start = 0
    while start < len(names):  # a block of queries at a time: its index arrays stay small
        reach = np.searchsorted(columns.bounds, columns.bounds[start] + _DOCS_AT_ONCE, "right")
        end = min(max(start + 1, int(reach) - 1), len(names))
        pieces.append(_laid_out(names[start:end], columns.bounds[start : end + 1], docs))
        start = end
    return pieces


def _laid_out(names: list[str], bounds: IntArray, docs: ByteIds) -> U8Array:
    """The lines of queries `names`, whose ids are `docs[bounds[0]:bounds[-1]]`."""
    first, stop = int(bounds[0]), int(bounds[-1])
    if docs.width:
        lengths = np.full(stop - first, docs.width, dtype=np.int64)
        used = docs.data[first * docs.width : stop * docs.width]
    else:
        offsets = docs.offsets[first : stop + 1]
        lengths, used = np.diff(offsets), docs.data[offsets[0] : offsets[-1]]
    bounds = bounds - first
    # Pieces in file order: each query's `["q", [` then its docs' `"d", ` (`"d"]]\n` last).
    last = np.zeros(len(lengths), dtype=bool)
    last[bounds[1:] - 1] = True
    cells = lengths + np.where(last, 5, 4)
    heads = np.fromiter((len(name) + 6 for name in names), dtype=np.int64, count=len(names))
    query = np.repeat(np.arange(len(names)), np.diff(bounds))
    doc_piece = np.arange(len(lengths)) + query + 1
    pieces = np.empty(len(lengths) + len(names), dtype=np.int64)
    pieces[doc_piece] = cells
    head_piece = bounds[:-1] + np.arange(len(names))
    pieces[head_piece] = heads
    starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(pieces, out=starts[1:])
    out = np.empty(int(starts[-1]), dtype=np.uint8)
    text = "".join(f'["{name}", [' for name in names).encode()
    out[_spans(len(out), starts[head_piece], heads)] = np.frombuffer(text, dtype=np.uint8)
    at = starts[doc_piece]
    out[at] = ord('"')
    out[_spans(len(out), at + 1, lengths)] = used
    end = at + 1 + lengths
    out[end] = ord('"')
    inner, final = end[~last], end[last]
    out[inner + 1], out[inner + 2] = ord(","), ord(" ")
    out[final + 1], out[final + 2], out[final + 3] = ord("]"), ord("]"), ord("\n")
    return out


def _plain(name: str) -> bool:
    return name.isascii() and name.isprintable() and '"' not in name and "\\" not in name


def _spans(size: int, starts: IntArray, lengths: IntArray) -> npt.NDArray[np.bool_]:
    """A mask of `size` bytes, true in `[starts[i], starts[i] + lengths[i])` (spans apart)."""
    edges = np.zeros(size + 1, dtype=np.int8)
    edges[starts] += 1  # an empty span's start is its end: the two cancel
    edges[starts + lengths] -= 1
    return np.cumsum(edges[:-1], dtype=np.int8).view(np.bool_)
