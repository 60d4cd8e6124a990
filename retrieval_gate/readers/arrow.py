"""Multi-threaded reading of large whitespace-separated files with pyarrow (the `fast` extra).

Only clean files take this path: one delimiter, a fixed number of fields, no comments,
finite numbers. Anything else returns None and the exact pure-Python reader takes over, so
errors always name their line and results never depend on which path ran.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray, object_array, sorted_uniques
from retrieval_gate.readers.text import GZIP_MAGIC

MIN_BYTES = 4 << 20
"""Smaller files are read faster by the pure reader than pyarrow takes to import."""

DISABLE_ENV = "RETRIEVAL_GATE_NO_ARROW"

Kind = Literal["str", "float"]


@dataclass(frozen=True)
class Columns:
    """Kept columns of a file: strings as (codes, uniques), numbers as float64 arrays."""

    ids: dict[int, tuple[IntArray, ObjectArray]]
    numbers: dict[int, FloatArray]
    last_row: tuple[str, ...]

    def sorted_ids(self, column: int) -> tuple[IntArray, ObjectArray]:
        """Codes and uniques of `column`, uniques sorted as Python strings."""
        return sorted_uniques(*self.ids[column])


def available() -> bool:
    """pyarrow importable and not switched off with RETRIEVAL_GATE_NO_ARROW=1."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def read_columns(path: str | Path, num_fields: int, keep: dict[int, Kind]) -> Columns | None:
    """The `keep` columns of a clean `num_fields`-field file, or None to use the exact reader."""
    path = Path(path)
    try:
        if path.stat().st_size < MIN_BYTES or not available():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if data[:2] == GZIP_MAGIC:
        data = gzip.decompress(data)
    return _parse(data, num_fields, keep)


def _parse(data: bytes, num_fields: int, keep: dict[int, Kind]) -> Columns | None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv

    first_line = data[: data.find(b"\n")] if b"\n" in data else data
    delimiter = b"\t" if b"\t" in first_line else b" "
    other = b" " if delimiter == b"\t" else b"\t"
    if other in data or first_line.lstrip().startswith(b"#"):
        return None
    names = [f"f{i}" for i in range(num_fields)]
    types = {
        name: pa.float64() if keep.get(i) == "float" else pa.string()
        for i, name in enumerate(names)
    }
    try:
        table = csv.read_csv(
            pa.BufferReader(data),
            read_options=csv.ReadOptions(column_names=names, block_size=1 << 24),
            parse_options=csv.ParseOptions(
                delimiter=delimiter.decode(),
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=csv.ConvertOptions(
                column_types=types,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                check_utf8=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows == 0:
        return None
    ids: dict[int, tuple[IntArray, ObjectArray]] = {}
    numbers: dict[int, FloatArray] = {}
    for i, name in enumerate(names):
        column = table.column(name)
        if keep.get(i) == "float":
            values = column.to_numpy()
            if not np.isfinite(values).all():
                return None
            numbers[i] = values.astype(np.float64, copy=False)
            continue
        if pc.min(pc.utf8_length(column)).as_py() == 0:
            return None
        if keep.get(i) == "str":
            encoded = _dictionary_encode(pa, pc, column)
            if encoded is None:
                return None
            ids[i] = encoded
    last_row = tuple(str(table.column(name)[-1].as_py()) for name in names)
    return Columns(ids, numbers, last_row)


def _dictionary_encode(pa: Any, pc: Any, column: Any) -> tuple[IntArray, ObjectArray] | None:
    encoded = pc.dictionary_encode(column.combine_chunks())
    uniques = encoded.dictionary
    if pc.any(pc.match_substring_regex(uniques, r"^#")).as_py():
        return None
    codes = encoded.indices.to_numpy().astype(np.int64)
    return codes, object_array(uniques.to_pylist())
