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


def test_an_excerpt_cut_through_a_secret_shows_none_of_it() -> None:
    """An engine that echoes the request's key in a long error body: the excerpt's cut
    would split the key, and a split key no longer matches the registry."""
    from retrieval_gate.core.wording import excerpt

    secret = "k3y-" + "x7" * 40
    redaction.register(secret)
    body = '{"reason": "bad credentials", "headers": "ApiKey ' + secret + '"}'
    assert body.index(secret) < 60 < body.index(secret) + len(secret)  # the cut splits it
    shown = excerpt(body, limit=60)
    assert "k3y-" not in shown
    assert "<redacted>" in shown


def test_a_key_from_the_environment_is_registered_and_an_unset_one_named() -> None:
    from retrieval_gate.errors import GateError

    key = redaction.secret_from_env("judge.api_key_env", "RG_KEY", {"RG_KEY": "sk-live-1234"})
    assert key == "sk-live-1234"
    assert redaction.redacted("Bearer sk-live-1234") == "Bearer <redacted>"
    for environ in ({}, {"RG_KEY": ""}):
        with pytest.raises(GateError, match=r"judge\.api_key_env names RG_KEY, which is not set"):
            redaction.secret_from_env("judge.api_key_env", "RG_KEY", environ)
