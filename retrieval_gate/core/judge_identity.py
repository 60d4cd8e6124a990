"""Which judge graded an LLM label: configured name, prompt, the model that answered, settings."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from retrieval_gate.core.wording import one_line

UNKNOWN = "an unrecorded model"
"""How a row with no `answered_by` (written before it was recorded, or by an endpoint that
does not say) names the model that answered."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Who graded a row: the configured model name and prompt sha256, the model the endpoint
    said answered (its `model`) with its `system_fingerprint`, and the sampling settings.
    "" and None: not recorded. Two rows of one configured judge whose identities differ were
    graded by two judges (an alias re-pointed, a setting changed), and no comparison mixes
    them."""

    model: str
    prompt_sha256: str
    answered_by: str = ""
    system_fingerprint: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    logprobs: bool | None = None

    @property
    def sort_key(self) -> tuple[str, ...]:
        """A total order (None sorts before any value)."""
        return tuple("" if value is None else f"{value!r}" for value in asdict(self).values())

    def answering(self) -> str:
        """The model that answered and its fingerprint, one line: `gpt-4o-2024-08-06
        (fingerprint fp_1)`, or UNKNOWN."""
        name = one_line(self.answered_by) if self.answered_by else UNKNOWN
        if self.system_fingerprint:
            name += f" (fingerprint {one_line(self.system_fingerprint)})"
        return name

    def describe(self) -> str:
        """`answering()` and the settings recorded, one line."""
        settings = [
            f"{name} {value}"
            for name, value in (
                ("temperature", self.temperature),
                ("max_tokens", self.max_tokens),
                ("logprobs", None if self.logprobs is None else "on" if self.logprobs else "off"),
            )
            if value is not None
        ]
        return self.answering() + (f" at {', '.join(settings)}" if settings else "")
