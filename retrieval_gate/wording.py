"""Plain-text wording: counted nouns (`1 query`, `3 queries`), aligned columns, excerpts."""

from __future__ import annotations

from collections.abc import Sequence


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and `noun`, or `nouns` (default: noun + s, or -ies for a consonant + y)."""
    if count == 1:
        return f"{count} {noun}"
    if nouns is None:
        nouns = (
            noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
        )
    return f"{count} {nouns}"


def aligned(rows: Sequence[Sequence[str]], *, right_from: int | None = None) -> list[str]:
    """Rows as lines of columns two spaces apart; columns from `right_from` on right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if right_from is not None and i >= right_from else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def excerpt(text: str, limit: int = 200) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with "..."."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."
