"""Secrets the loaded config brought in, and the one way to take them out of what we write."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from retrieval_gate.errors import GateError

REDACTED = "<redacted>"
MIN_LENGTH = 4
"""Shorter values (a flag, a port) would redact unrelated text and protect nothing."""
_SECRETS: set[str] = set()


def forget() -> None:
    """Start over: a newly loaded config brings its own secrets."""
    _SECRETS.clear()


def register(value: str) -> None:
    """Redact `value` from now on, as written and as it reads in a URL or a JSON string."""
    if len(value) < MIN_LENGTH:
        return
    _SECRETS.update({value, quote(value, safe=""), quote(value), json.dumps(value)[1:-1]})


def any_registered() -> bool:
    """Whether a secret is registered (`redacted` may change a text)."""
    return bool(_SECRETS)


def redacted(text: str) -> str:
    """`text` with every registered secret replaced by REDACTED (longest first)."""
    if not _SECRETS:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def scrubbed(value: Any) -> Any:
    """A JSON-like value with REDACTED in place of every registered secret in its strings
    (keys included)."""
    if not _SECRETS:
        return value
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, Mapping):  # a dict, or a record's compact top k
        return {scrubbed(k): scrubbed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrubbed(v) for v in value]
    return value


def secret_from_env(field: str, variable: str, environ: Mapping[str, str]) -> str:
    """The key `variable` holds, registered as a secret; a GateError naming `field` (the
    config key that names the variable) when it is unset or empty."""
    key = environ.get(variable)
    if not key:
        raise GateError(
            f"{field} names {variable}, which is not set: export the endpoint's API key in "
            "it, or remove it for a server that needs none"
        )
    register(key)
    return key
