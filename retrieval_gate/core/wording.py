"""Plain-text wording: counted nouns (`1 query`, `3 queries`), aligned columns, excerpts, and
the one place that makes untrusted text inert for the console, the CI log and the reports."""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

from retrieval_gate.core.json_indented import indented_pieces
from retrieval_gate.core.redaction import redacted, scrubbed

_C1 = re.compile("[\x80-\x9f]")


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """`value` as JSON for any file or stream we write: readable UTF-8, registered secrets
    redacted, and control characters escaped, C1 too (json leaves U+0080-U+009F raw, and a
    terminal may act on them; only strings can hold them, so the escape is exact)."""
    clean = scrubbed(value)
    if indent == 2:
        return _escaped_c1("".join(indented_pieces(clean, _mapping_object)))
    return _escaped_c1(_json_encoder(indent).encode(clean))


def json_file_pieces(value: Any) -> Iterator[str]:
    """A JSON file's text, `json_text(value)` and a newline, in pieces of a few thousand
    tokens: a large document is written without holding its text (at 20,000 queries a
    result's text and the encoder's tokens are 20 MB at once)."""
    tokens = indented_pieces(scrubbed(value), _mapping_object)
    while piece := "".join(itertools.islice(tokens, 8192)):
        yield _escaped_c1(piece)  # one character at a time: a piece's bounds cannot split one
    yield "\n"


def _json_encoder(indent: int | None) -> json.JSONEncoder:
    """json.dumps' encoder for our files: UTF-8 text as is, NaN and infinity refused, and a
    mapping that is not a dict (a record's compact top k) written as the object it holds."""
    return json.JSONEncoder(
        indent=indent, ensure_ascii=False, allow_nan=False, default=_mapping_object
    )


def _mapping_object(value: Any) -> dict[Any, Any]:
    if isinstance(value, Mapping):
        return dict(value.items())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_id_lists(rows: Iterable[tuple[str, Sequence[str]]]) -> str:
    """`[id, [ids]]` rows (a record's top k) as JSON Lines, with `json_text`'s guarantees:
    redacted, control characters escaped. The text json.dumps gives each row, built from
    json's own C encoding of each id (an encoder call per row cost more than the ids)."""
    rows = scrubbed(list(rows))
    encode = json.encoder.encode_basestring
    text = "".join(f"[{encode(key)}, [{', '.join(map(encode, ids))}]]\n" for key, ids in rows)
    return _escaped_c1(text)


def _escaped_c1(text: str) -> str:
    """`text` with U+0080-U+009F written as JSON escapes (ASCII text, the usual, has none)."""
    if text.isascii():
        return text
    return _C1.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and `noun`, or `nouns` (default: noun + s, or -ies for a consonant + y)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {nouns or plural_noun(noun)}"


def plural_noun(noun: str) -> str:
    """`noun` + s, or -ies for a consonant + y: query -> queries, pair -> pairs."""
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"


def aligned(rows: Sequence[Sequence[str]], *, right_from: int | None = None) -> list[str]:
    """Rows as lines of columns two spaces apart; columns from `right_from` on right-aligned."""
    return aligned_columns(list(zip(*rows, strict=True)), right_from=right_from)


def aligned_columns(
    columns: Sequence[Sequence[str]], *, right_from: int | None = None
) -> list[str]:
    """`aligned`, given column by column."""
    padded = []
    for i, column in enumerate(columns):
        width = max(map(len, column))
        pad = str.rjust if right_from is not None and i >= right_from else str.ljust
        padded.append([pad(cell, width) for cell in column])
    return ["  ".join(row).rstrip() for row in zip(*padded, strict=True)]


def excerpt(text: str, limit: int = 200) -> str:
    """`text` on one line (whitespace runs collapsed, control characters shown as `?`),
    cut to `limit` characters with "...", registered secrets redacted before the cut (a
    secret cut in two would no longer match, and its first half would be shown)."""
    flat = one_line(redacted(text))
    return flat if len(flat) <= limit else flat[:limit] + "..."


# --------------------------------------------------------------------------------------------
# Untrusted text (retriever errors, query ids and text, file contents) made inert for a sink.
# Every sink goes through these: the console and CI log (`console_text`, `InertStream`), one-line
# fields (`one_line`), and the report formats (`visible_controls`, via report/filters.py).
# --------------------------------------------------------------------------------------------

# C0 controls but tab and newline, DEL, and C1 (CSI \x9b and NEL \x85 act like ESC [ and \n).
# Bidirectional overrides and isolates reorder what a terminal or a browser shows (the
# "Trojan Source" trick): shown as controls too.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")
# GitHub's runner reads a line as a workflow command when it starts with "::" once leading
# whitespace is trimmed; its older syntax "##[command]" is found anywhere in a line.
_COMMAND_START = "::"
_OLD_COMMAND = "##["
COMMAND_MARK = "\\"
"""Put before a line's first "::" (and between "##" and "["), so no runner reads a command."""


CONTROL_SHOWN = "?"
"""What every sink shows in place of a control character (the console, the log, the reports)."""


def visible_controls(text: str, *, newlines: bool = True) -> str:
    """`text` with each control character (C0 but tab, DEL, C1, the bidirectional overrides
    and isolates) shown as `CONTROL_SHOWN`, so no escape sequence reaches a terminal and no
    text is shown reordered; newlines are kept unless `newlines` is false."""
    return (_CONTROL if newlines else _CONTROL_OR_NEWLINE).sub(CONTROL_SHOWN, str(text))


def one_line(value: object) -> str:
    """`value` on one line (whitespace runs collapsed), control characters shown as `?`."""
    return visible_controls(" ".join(str(value).split()), newlines=False)


def console_text(text: str) -> str:
    """`text` safe to print to a terminal or a CI log: control characters shown as `?`
    (newlines kept) and no line that GitHub's runner would read as a workflow command."""
    text = visible_controls(redacted(text)).replace(_OLD_COMMAND, "#" + COMMAND_MARK + "#[")
    return "\n".join(_defused(line) for line in text.split("\n"))


def _defused(line: str) -> str:
    body = line.lstrip()
    if not body.startswith(_COMMAND_START):
        return line
    return line[: len(line) - len(body)] + COMMAND_MARK + body


class InertStream:
    """A text stream that passes everything through `console_text`, a line at a time: the CLI
    writes every message through one, so no path can print a raw workflow command or escape
    sequence. `raw` is the stream beneath, for data formats and the tool's own commands."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._pending = ""
        # The runner's worker threads print through it too (a retriever run in-process).
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            lines = (self._pending + text).split("\n")
            self._pending = lines.pop()
            if lines:
                self.raw.write("\n".join(console_text(line) for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            # A partial line is held back while it could still become "::" or "##[": only
            # then can the mark go in.
            held = self._pending.lstrip() in ("", ":") or self._pending.endswith("#")
            if self._pending and not held:
                self.raw.write(console_text(self._pending))
                self._pending = ""
            self.raw.flush()

    def close(self) -> None:
        """Write what is left of the last line (nothing more can change it)."""
        with self._lock:
            if self._pending:
                self.raw.write(console_text(self._pending))
                self._pending = ""
            self.raw.flush()

    def isatty(self) -> bool:
        try:
            return bool(self.raw.isatty())
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream beneath an `InertStream` (flushed first, to keep the order of the lines), or
    the stream itself."""
    if isinstance(stream, InertStream):
        stream.flush()
        return stream.raw
    return stream


# A spreadsheet reads a cell that starts with one of these as a formula (OWASP's CSV injection
# list); `=HYPERLINK(...)` in a document's text would run in whoever opens the queue.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_QUOTE = "'"


def spreadsheet_cell(text: str) -> str:
    """`text` as a CSV cell no spreadsheet reads as a formula: a leading = + - @, tab or
    carriage return gets a `'` before it, as spreadsheets themselves mark literal text.
    Every CSV the gate writes puts its text cells through this (numbers stay numbers)."""
    return _FORMULA_QUOTE + text if text.startswith(_FORMULA_START) else text


def spreadsheet_text(cell: str) -> str:
    """The text `spreadsheet_cell` wrote into `cell` (its `'` taken off again), for a CSV the
    gate reads back: ids written formula-safe still match."""
    quoted = cell.startswith(_FORMULA_QUOTE) and cell[1:].startswith(_FORMULA_START)
    return cell[1:] if quoted else cell


def spreadsheet_number(value: Any) -> float | None:
    """A number cell of a file people fill in (CSV text or a JSON value): None when left
    empty, NaN for anything that is not a number (a bool, text, a list), else its float;
    the caller refuses what is not finite, naming its column."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return math.nan
    try:
        return float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        return math.nan
