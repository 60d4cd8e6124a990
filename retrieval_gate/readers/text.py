"""Opening input files: gzip read transparently, missing files reported clearly."""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
ENCODING = "utf-8-sig"
"""UTF-8 that drops a leading byte-order mark (and reads files without one unchanged)."""
BOM = b"\xef\xbb\xbf"


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its name)."""
    with regular_file(path).open("rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_text(path: str | Path) -> IO[str]:
    """A UTF-8 text handle on `path`, decompressing gzip; an InputError if it cannot be read.

    A leading UTF-8 byte-order mark (Windows editors and Excel write one) is dropped, so every
    reader (queries, qrels, corpus, runs) accepts it as the config loader does."""
    path = regular_file(path)
    try:
        if is_gzip(path):
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding=ENCODING, newline="")
        return path.open(encoding=ENCODING, newline="")
    except FileNotFoundError:
        raise InputError("file not found; check the path", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=str(path)) from None
    except PermissionError:
        raise InputError("permission denied", source=str(path)) from None


def first_content_line(path: str | Path) -> str | None:
    """The first line that is neither blank nor a `#` comment, for format detection."""
    try:
        with open_text(path) as handle:
            for line in handle:
                stripped = line.strip()
                if stripped and not stripped.startswith("#"):
                    return stripped
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", source=str(path)) from None
    return None


def logical_name(path: str | Path) -> str:
    """The file name without a trailing `.gz`, lower-cased, for suffix-based detection."""
    name = Path(path).name.lower()
    return name[:-3] if name.endswith(".gz") else name


def numbered(handle: IO[str], source: str) -> Iterator[tuple[int, str]]:
    """(line number, line) pairs; a decoding error names the line."""
    number = 0
    try:
        for number, line in enumerate(handle, 1):
            yield number, line
    except UnicodeDecodeError:
        # The decoder reads ahead in blocks: the line it was on is not the one at fault.
        at = _first_undecodable_line(source) or number + 1
        raise InputError("is not UTF-8 text", source=source, line=at) from None
    except (EOFError, gzip.BadGzipFile, zlib.error):
        raise InputError(
            "is a truncated or damaged gzip file; compress it again", source=source
        ) from None


def _first_undecodable_line(source: str) -> int | None:
    """The first line of the file `source` that is not UTF-8, if it is a readable file."""
    path = Path(source)
    try:
        with gzip.open(path, "rb") if is_gzip(path) else path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return number
    except OSError:
        return None
    return None


def field_lines(
    path: str | Path, layout: str, count: int, *, at_least: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of a columnar text file such as TREC qrels
    and runs; `#` comments and blank lines skipped. A line with another number of fields (or,
    with `at_least`, fewer) is an error naming the line and quoting it."""
    source = str(path)
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < count or (len(parts) > count and not at_least):
                raise InputError(
                    f"expected {layout}, got {len(parts)} fields: {quoted(line)}",
                    source=source,
                    line=number,
                )
            yield number, parts


def quoted(text: str) -> str:
    """`text` stripped, cut to 80 characters and quoted as a Python literal (so a control
    character shows as its escape), for an error message about a file's content."""
    text = text.strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")


def numbers(texts: list[str], lines: list[int], source: str, field: str, hint: str) -> FloatArray:
    """Finite floats of `texts`; the first bad one is an error naming its line."""
    try:
        values = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
    except ValueError:
        values = None
    if values is not None and np.isfinite(values).all():
        return values
    for text, number in zip(texts, lines, strict=True):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(
                f"{field} {text!r} is not a finite number; expected {hint}",
                source=source,
                line=number,
            )
    raise AssertionError("a value failed to convert in bulk but not one by one")


def json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSON Lines file; blank lines skipped."""
    source = str(path)
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
            if not line.strip():
                continue
            try:
                row = parsed_json(line)
            except json.JSONDecodeError as error:
                raise InputError(
                    f"invalid JSON: {error.msg} (column {error.colno})", source=source, line=number
                ) from None
            except RecursionError:
                raise InputError("nested too deeply", source=source, line=number) from None
            if not isinstance(row, dict):
                raise InputError("expected a JSON object per line", source=source, line=number)
            yield number, row


def json_field(
    row: Mapping[str, Any], keys: tuple[str, ...], source: str, line: int, what: str
) -> Any:
    """The value of the first of `keys` in `row`; an error naming the line when none is."""
    for key in keys:
        if key in row:
            return row[key]
    raise InputError(
        f"no {what}: expected one of the keys {', '.join(keys)}", source=source, line=line
    )


def json_id(
    row: Mapping[str, Any], keys: tuple[str, ...], source: str, line: int, what: str
) -> str:
    """An id field: a non-empty string (integers are taken as their text)."""
    return id_value(json_field(row, keys, source, line, what), source, line, what)


def id_value(value: Any, source: str, line: int | None, what: str) -> str:
    """`value` as an id: a non-empty string (an integer is taken as its text); an error
    naming `what` (and `value`, cut to one short line) otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            f"{what} {excerpt(repr(value), 60)} must be a string (or an integer)",
            source=source,
            line=line,
        )
    text = str(value)
    if not text.strip():
        raise InputError(f"{what} is empty", source=source, line=line)
    return text
