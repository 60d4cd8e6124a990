"""Runner settings every retriever config carries, and redaction for descriptions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from retrieval_gate.core.strict import no_bool_for_numbers

# Name parts that usually mean a credential; their values never reach a description.
SECRET_PART = re.compile(r"(api)?key|token|secret|passw(or)?d|auth(orization)?|credentials?|cookie")


class AdapterSettings(BaseModel):
    """How the runner calls a retriever. None of these change results, so none of them are
    part of a retriever's description (and fingerprint). Numbers are finite, and the runner's
    settings take no booleans (StrictModel's rule; the `type` discriminator rules out its
    validator on every field)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    concurrency: int = Field(
        default=8, ge=1, description="Calls in flight at once (worker threads in the runner)."
    )
    timeout: float = Field(
        default=30.0, gt=0, description="Seconds to wait for one call (one query, or one batch)."
    )
    retries: int = Field(
        default=3,
        ge=0,
        description="Extra attempts after a retryable failure (timeout, HTTP 429/5xx).",
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        description="Queries per call for retrievers that take batches; 1 sends one at a time.",
    )

    @field_validator("concurrency", "timeout", "retries", "batch_size", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_for_numbers(cls, value, info)


def is_secret(name: str) -> bool:
    """Whether a parameter name looks like it holds a credential: api_key, apiKey,
    X-Auth-Token, password (not keywords or top_k)."""
    parts = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    return any(SECRET_PART.fullmatch(part) for part in re.split(r"[^a-z0-9]+", parts))


def redact(values: Any) -> Any:
    """`values` with credential-looking entries of every mapping in it replaced by
    "<redacted>". Credentials pick who calls, not what comes back, so the description of a
    retriever loses nothing that matters."""
    if isinstance(values, Mapping):
        return {
            name: "<redacted>" if is_secret(str(name)) else redact(value)
            for name, value in values.items()
        }
    if isinstance(values, list):
        return [redact(value) for value in values]
    return values
