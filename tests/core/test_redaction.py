"""The secrets registry: what is redacted, in which spellings, and what is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from retrieval_gate.core import redaction


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    redaction.forget()
    yield
    redaction.forget()


def test_a_secret_is_redacted_as_written_url_quoted_and_json_escaped() -> None:
    redaction.register('p@ss/wo"rd')
    text = 'p@ss/wo"rd, p%40ss%2Fwo%22rd, p%40ss/wo%22rd and "p@ss/wo\\"rd"'
    assert redaction.redacted(text) == '<redacted>, <redacted>, <redacted> and "<redacted>"'


def test_short_values_and_an_empty_registry_change_nothing() -> None:
    assert redaction.redacted("no secrets here") == "no secrets here"
    redaction.register("abc")  # too short to protect anything, and would hit everywhere
    assert redaction.redacted("abcdef") == "abcdef"


def test_scrubbed_walks_json_values_and_forget_starts_over() -> None:
    redaction.register("s3cr3t-value")
    value = {"url": "http://h/?sig=s3cr3t-value", "s3cr3t-value": [1, "x s3cr3t-value"]}
    assert redaction.scrubbed(value) == {
        "url": "http://h/?sig=<redacted>",
        "<redacted>": [1, "x <redacted>"],
    }
    redaction.forget()
    assert redaction.scrubbed(value) == value
