"""indented_pieces writes what json.dumps(indent=2) writes, byte for byte, and refuses alike."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_gate.core.json_indented import indented_pieces


def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value.items())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json(value: Any) -> str:
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False, default=_default)
    return encoder.encode(value)


def _ours(value: Any) -> str:
    return "".join(indented_pieces(value, _default))


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
_KEYS = (
    st.text(max_size=6)
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.booleans()
    | st.none()
)
_VALUES = st.recursive(
    _SCALARS
    | st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=6)
    | st.lists(st.text(max_size=5), max_size=6),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(_KEYS, inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_the_text_is_json_s_for_any_value(value: Any) -> None:
    assert _ours(value) == _json(value)


@pytest.mark.parametrize(
    "value",
    [
        [],
        {},
        [[]],
        {"a": {}},
        [0.1, 2.5e-300, -0.0, 1e22, 3.0],
        [1, 2.5, 3],  # ints among floats: each its own way
        [1.5, True, None],  # a boolean is no float
        ["a", "é\u2028", '\x00\x1f"\\', "\U0001f600"],
        ["a", 1],
        [np.float64(0.25), np.float64(1e-9), 0.5],  # numpy's floats are floats
        {7: "seven", 2.5: "x", True: 1, None: [0.5]},
        MappingProxyType({"top_k": ("d1", "d2")}),  # a mapping written as the object it holds
        ({"x": [1.0, 2.0]}, [["q", ["d1", "d2"]]]),
    ],
)
def test_the_text_is_json_s_for_edge_values(value: Any) -> None:
    assert _ours(value) == _json(value)


def test_what_json_cannot_write_is_refused_alike() -> None:
    value = [np.float64(0.25), np.int64(3)]  # np.int64 is no int: the default refuses it
    with pytest.raises(TypeError, match="int64"):
        _json(value)
    with pytest.raises(TypeError, match="int64"):
        _ours(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["alone", "in floats", "after an int", "as a key"])
def test_nan_and_infinity_are_refused_like_json(bad: float, where: str) -> None:
    value: Any = {
        "alone": bad,
        "in floats": [0.5, bad, 1.5],
        "after an int": [1, bad],
        "as a key": {bad: 1},
    }[where]
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        _json(value)
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        _ours(value)


def test_long_flat_lists_are_one_piece_each() -> None:
    scores = np.random.default_rng(0).random(50_000).tolist()
    value = {"scores": {"ndcg@10": scores}, "query_ids": [f"q{i}" for i in range(50_000)]}
    pieces = list(indented_pieces(value, _default))
    assert "".join(pieces) == _json(value)
    assert len(pieces) < 20  # the joins, not a token per value


@pytest.mark.parametrize("kind", ["list", "object"])
def test_deep_nesting_goes_as_deep_as_json(kind: str) -> None:
    # Query metadata is written back into records: nesting json reads, json writes, so do we.
    value: Any = [0.5]
    for _ in range(900):
        value = [value] if kind == "list" else {"k": value}
    assert _ours(value) == _json(value)
