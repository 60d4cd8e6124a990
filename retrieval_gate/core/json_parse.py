"""JSON text parsed as json does, an over-long integer literal refused as a JSONDecodeError."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

__all__ = ["first_non_finite", "parsed_json"]

_LONG_INTEGER = re.compile(r"-?\d{%d,}")


def parsed_json(text: str | bytes) -> Any:
    """`json.loads(text)`; an integer literal longer than Python converts (4,300 digits by
    default) is a JSONDecodeError at its position, like any other invalid JSON, so every
    reader that names the line of bad JSON names it too (json raises a bare ValueError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as error:
        if "integer string conversion" not in str(error):
            raise
        document = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        limit = sys.get_int_max_str_digits() or 4300
        found = re.compile(_LONG_INTEGER.pattern % (limit + 1)).search(document)
        at = found.start() if found else 0
        digits = len(found.group().lstrip("-")) if found else limit + 1
        raise json.JSONDecodeError(
            f"an integer of {digits} digits (at most {limit} are read)",
            document,
            at,
        ) from None


def first_non_finite(value: Any, path: str = "") -> str | None:
    """The dotted path (`comparisons.3.delta`) of the first NaN or infinite number in a
    parsed document, or None. The gate never writes one (json's allow_nan is off), so in a
    document it reads back, one is an edit or a forgery that no figure can be made of."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path or "(top level)"
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = first_non_finite(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None
