"""JSON text byte for byte as json.dumps(indent=2) writes it, long lists of numbers made in C."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from json.encoder import encode_basestring
from typing import Any

_INDENT = "  "


def indented_pieces(value: Any, default: Callable[[Any], Any]) -> Iterator[str]:
    """The text of `json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False,
    default=default).iterencode(value)`, in pieces.

    With an indent, json encodes in Python, a token at a time: a result's per-query scores
    (a float a line, millions of them at 200,000 queries) took most of a second per million.
    Here a list of floats only, or of strings only, is one join of the same C conversions
    json uses (float.__repr__, its string encoder); anything else takes json's own path, so
    the text is the same either way (tests hold it to json's)."""
    return _value(value, 0, default)


def _value(value: Any, level: int, default: Callable[[Any], Any]) -> Iterator[str]:
    # Not a generator itself: a nested list or object costs one frame a level, as in json.
    scalar = _scalar(value)
    if scalar is not None:
        return iter((scalar,))
    if isinstance(value, list | tuple):
        return _list(value, level, default)
    if isinstance(value, dict):
        return _dict(value, level, default)
    return _value(default(value), level, default)


def _scalar(value: Any) -> str | None:
    """json's text of a string, number, boolean or null (the order of its own tests), else None."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    return None


def _float(value: float) -> str:
    text = float.__repr__(value)
    if text in ("nan", "inf", "-inf"):
        raise ValueError(f"Out of range float values are not JSON compliant: {text}")
    return text


def _list(
    items: list[Any] | tuple[Any, ...], level: int, default: Callable[[Any], Any]
) -> Iterator[str]:
    if not items:
        yield "[]"
        return
    inner = "\n" + _INDENT * (level + 1)
    separator = "," + inner
    joined = _joined(items, separator)
    if joined is not None:
        yield "[" + inner + joined + "\n" + _INDENT * level + "]"
        return
    yield "[" + inner
    for i, item in enumerate(items):
        if i:
            yield separator
        yield from _value(item, level + 1, default)
    yield "\n" + _INDENT * level + "]"


def _joined(items: list[Any] | tuple[Any, ...], separator: str) -> str | None:
    """The items' texts joined, when every one is a float, or every one a string; else None."""
    first = items[0]
    try:
        if isinstance(first, float):
            text = separator.join(map(float.__repr__, items))
            # float.__repr__ writes an n only in nan and inf: any of them is json's error.
            return None if "n" in text else text
        if isinstance(first, str):
            return separator.join(map(encode_basestring, items))
    except TypeError:  # not all alike: each item its own way
        return None
    return None


def _dict(mapping: dict[Any, Any], level: int, default: Callable[[Any], Any]) -> Iterator[str]:
    if not mapping:
        yield "{}"
        return
    inner = "\n" + _INDENT * (level + 1)
    first = True
    for key, item in mapping.items():
        yield ("{" if first else ",") + inner + _key(key) + ": "
        first = False
        yield from _value(item, level + 1, default)
    yield "\n" + _INDENT * level + "}"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return encode_basestring(key)
    if isinstance(key, float):
        return encode_basestring(_float(key))
    if key is True or key is False or key is None:
        return encode_basestring(_scalar(key) or "")
    if isinstance(key, int):
        return encode_basestring(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
