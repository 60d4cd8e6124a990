"""Redaction at its edges: the shortest secret it takes, secrets inside secrets, and every
spelling of one in a JSON-like value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from retrieval_gate.core import redaction
from retrieval_gate.core.redaction import MIN_LENGTH, REDACTED


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    redaction.forget()
    yield
    redaction.forget()


def test_a_secret_of_exactly_the_minimum_length_is_redacted() -> None:
    assert MIN_LENGTH == 4
    redaction.register("wxyz")
    assert redaction.redacted("a wxyz b") == f"a {REDACTED} b"
    redaction.forget()
    redaction.register("xyz")  # one shorter: left alone
    assert redaction.redacted("a xyz b") == "a xyz b"
    assert redaction.scrubbed({"xyz": "xyz"}) == {"xyz": "xyz"}


def test_a_secret_holding_another_is_redacted_whole() -> None:
    # Longest first: the short secret inside the long one must not split it, or the rest of
    # the long one ("token-" and "-tail") would be left in the text.
    redaction.register("abcd")
    redaction.register("token-abcd-tail")
    assert redaction.redacted("x token-abcd-tail y abcd z") == f"x {REDACTED} y {REDACTED} z"
    redaction.forget()
    redaction.register("token-abcd-tail")
    redaction.register("abcd")  # registered in the other order: the same
    assert redaction.redacted("token-abcd-tail") == REDACTED


def test_each_spelling_of_a_secret_is_redacted_alone() -> None:
    secret = 'a b/c"d\\e'
    redaction.register(secret)
    spellings = {
        "as written": secret,
        "URL-quoted, / too": quote(secret, safe=""),
        "URL-quoted": quote(secret),
        "in a JSON string": json.dumps(secret)[1:-1],
    }
    assert len(set(spellings.values())) == 4
    for where, spelling in spellings.items():
        assert redaction.redacted(f"<{spelling}>") == f"<{REDACTED}>", where


def test_scrubbed_redacts_keys_lists_and_tuples_and_keeps_other_values() -> None:
    redaction.register("hunter22")
    value = {
        "hunter22": ("hunter22", 2, None, ["x hunter22"]),
        "n": 3.5,
        "flag": True,
    }
    assert redaction.scrubbed(value) == {
        REDACTED: [REDACTED, 2, None, [f"x {REDACTED}"]],
        "n": 3.5,
        "flag": True,
    }
    assert redaction.scrubbed("hunter22!") == f"{REDACTED}!"
    assert redaction.scrubbed(7) == 7
