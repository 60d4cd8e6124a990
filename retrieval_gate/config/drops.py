"""A threshold's drop as a user writes it (3pt, 0.03, 5%, 20ms) and its parsed model."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from retrieval_gate.core.strict import StrictModel

_POINTS = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(pt|pts|point|points)\s*$", re.IGNORECASE)
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


class Drop(StrictModel):
    """A tolerated change for the worse: `value` on the [0, 1] scale (written in points),
    relative to the baseline, or in the check's own `unit` (300ms, 0.5 stars)."""

    value: float = Field(ge=0)
    relative: bool = False
    unit: str = ""
    """The unit word as written for a check in its own units; "" on the [0, 1] scale."""
    text: str

    @model_validator(mode="after")
    def _within_scale(self) -> Drop:
        if not self.relative and not self.unit and self.value > 1:
            raise _drop_error(f"{self.value:g} is past the whole 0-1 scale")
        return self

    def __str__(self) -> str:
        return self.text


_DROP_FORMS = (
    "write points (2pt, 0.02) or a percentage of the baseline (3%), or for a check in its own "
    "units the number and its unit (50ms, 0.5 stars)"
)
_OWN_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z][A-Za-z_]{0,15})\s*$")
_SIGNED = re.compile(r"^\s*-\s*([0-9]*\.?[0-9]+)\s*(pt|pts|point|points|%)?\s*$", re.IGNORECASE)


def _parse_drop(raw: Any) -> Any:
    """`2pt` -> 0.02 points, a bare `0.02` -> 0.02 points, `3%` -> 3% of the baseline value.
    Anything else is a `drop_*` error that quotes what was written (see loader._describe_errors)."""
    if isinstance(raw, dict | Drop):
        return raw
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        if not math.isfinite(raw):
            raise _drop_error(f"{raw} is not a finite drop; {_DROP_FORMS}")
        if raw < 0:
            raise _drop_error(f"{raw:g} is negative; a drop is 0 or more: {_DROP_FORMS}")
        if raw > 1:
            raise _drop_error(
                f"{raw:g} would allow a drop of {raw * 100:g}pt, past the whole metric (a bare "
                f"number is a fraction of the 0-1 scale); write {raw:g}pt for {raw:g} points, "
                f"{raw:g}% for a share of the baseline, or the unit of a check in its own "
                f"units ({raw:g}ms)"
            )
        return {"value": float(raw), "text": f"{float(raw) * 100:g}pt"}
    if isinstance(raw, str):
        written = shorten(" ".join(raw.split()))
        if match := _POINTS.match(raw):
            points = float(match[1])
            if points > 100:
                raise _drop_error(
                    f"{written} would allow a drop past the whole metric; a drop in points is "
                    "at most 100pt (the whole 0-1 scale)"
                )
            return {"value": points / 100, "text": f"{points:g}pt"}
        if match := _PERCENT.match(raw):
            if float(match[1]) > 100:
                raise _drop_error(
                    f"{written} would allow a drop past the whole metric; a relative drop is "
                    "at most 100%"
                )
            return {"value": float(match[1]) / 100, "relative": True, "text": f"{match[1]}%"}
        if match := _OWN_UNIT.match(raw):
            value, unit = float(match[1]), match[2]
            return {"value": value, "unit": unit, "text": f"{value:g} {unit}"}
        if _SIGNED.match(raw):
            raise _drop_error(f"{written} is negative; a drop is 0 or more: {_DROP_FORMS}")
    raise _drop_error(f"{shorten(repr(raw))} is not a drop; {_DROP_FORMS}")


def _drop_error(message: str) -> PydanticCustomError:
    # The message is formatted already: braces in what the user wrote stay as written.
    return PydanticCustomError("drop_invalid", "{message}", {"message": message})


def shorten(text: str, limit: int = 80) -> str:
    """`text`, cut to about `limit` characters for an error message that quotes it."""
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} characters)"


DropSpec = Annotated[
    Drop,
    BeforeValidator(_parse_drop),
    # What a user writes (the parsed model is internal): editors validate against this.
    WithJsonSchema(
        {
            "title": "drop",
            "anyOf": [
                {
                    "type": "string",
                    "pattern": r"^\s*[0-9]*\.?[0-9]+\s*([A-Za-z][A-Za-z_]{0,15}|%)\s*$",
                },
                {"type": "number", "minimum": 0, "maximum": 1},
            ],
        }
    ),
]
