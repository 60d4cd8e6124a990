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
from typing import Literal

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray, object_array, sorted_uniques
from retrieval_gate.readers.text import BOM, GZIP_MAGIC

MIN_BYTES = 16 << 20
"""Below this the pure reader wins, pyarrow's import included: 0.25 s against 0.33 s at
9.5 MB, 0.44 s against 0.36 s at 19 MB (benchmarks/bench_readers.py)."""

DISABLE_ENV = "RETRIEVAL_GATE_NO_ARROW"

Kind = Literal["ids", "str", "float"]
"""`ids`: few distinct values, dictionary-encoded; `str`: one Python string per row."""


@dataclass(frozen=True)
class Columns:
    """Kept columns of a file, by field index."""

    ids: dict[int, tuple[IntArray, ObjectArray]]
    """Codes into sorted unique values."""
    strings: dict[int, ObjectArray]
    numbers: dict[int, FloatArray]
    last_row: tuple[str, ...]


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
    return _parse(data.removeprefix(BOM), num_fields, keep)


def _parse(data: bytes, num_fields: int, keep: dict[int, Kind]) -> Columns | None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv

    first_line = data[: data.find(b"\n")] if b"\n" in data else data
    delimiter = b"\t" if b"\t" in first_line else b" "
    # The other whitespace character would split fields where pyarrow does not.
    if (b" " if delimiter == b"\t" else b"\t") in data or data.startswith(b"#"):
        return None
    names = [f"f{i}" for i in range(num_fields)]
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
                column_types={
                    name: pa.float64() if keep.get(i) == "float" else pa.string()
                    for i, name in enumerate(names)
                },
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows == 0:
        return None
    # An empty field means doubled, leading or trailing delimiters: whitespace-splitting
    # would see other fields there.
    for i, name in enumerate(names):
        if keep.get(i) != "float" and pc.min(pc.binary_length(table.column(name))).as_py() == 0:
            return None
    ids: dict[int, tuple[IntArray, ObjectArray]] = {}
    strings: dict[int, ObjectArray] = {}
    numbers: dict[int, FloatArray] = {}
    for i, kind in keep.items():
        column = table.column(names[i]).combine_chunks()
        if kind == "float":
            values = column.to_numpy()
            if not np.isfinite(values).all():
                return None
            numbers[i] = values.astype(np.float64, copy=False)
        elif kind == "ids":
            encoded = pc.dictionary_encode(column)
            uniques = encoded.dictionary
            if pc.any(pc.starts_with(uniques, "#")).as_py():
                return None  # a comment line with the right number of fields
            codes = encoded.indices.to_numpy().astype(np.int64)
            ids[i] = sorted_uniques(codes, object_array(uniques.to_pylist()))
        else:
            strings[i] = column.to_numpy(zero_copy_only=False)
    last_row = tuple(str(table.column(name)[-1].as_py()) for name in names)
    return Columns(ids, strings, numbers, last_row)
