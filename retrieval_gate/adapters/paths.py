"""Small path expressions into JSON: `hits[*]`, `data.results[*]`, `_source.doc_id`, `[0]`."""

from __future__ import annotations

import re
from typing import Any

from retrieval_gate.errors import GateError

# A step is a key (anything but . [ ]), an index [N] (negative counts from the end) or [*].
STEP = re.compile(r"\.?(?:\[(\*|-?\d+)\]|([^.\[\]]+))")
PATH = re.compile(rf"(?:{STEP.pattern})*")

Step = str | int | None  # key, index, every item


class PathError(ValueError):
    """The data has no value where the path points; the message completes "... has"."""


def parse_path(path: str, field: str) -> tuple[Step, ...]:
    """The steps of `path` (a leading `$` is allowed); GateError naming `field` if malformed."""
    text = path.strip().removeprefix("$")
    if not PATH.fullmatch(text):
        raise GateError(
            f"retriever.{field}: cannot read path {path!r}; write dotted keys with [N] indexes "
            "and [*] for every item, e.g. hits[*] or data.results[*]"
        )
    return tuple(
        match[2] if match[2] is not None else None if match[1] == "*" else int(match[1])
        for match in STEP.finditer(text)
    )


def select(data: Any, steps: tuple[Step, ...]) -> list[Any]:
    """Every value the steps reach, in document order (one value unless a step is [*])."""
    values = [data]
    for position, step in enumerate(steps):
        where = f" in {show(steps[:position])!r}" if position else ""
        found: list[Any] = []
        for value in values:
            if isinstance(step, str):
                if not isinstance(value, dict):
                    raise PathError(f"{_kind(value)}{where} where an object was expected")
                if step not in value:
                    raise PathError(f"no {step!r}{where}")
                found.append(value[step])
            elif not isinstance(value, list):
                raise PathError(f"{_kind(value)}{where} where a list was expected")
            elif step is None:
                found.extend(value)
            elif -len(value) <= step < len(value):
                found.append(value[step])
            else:
                raise PathError(f"no item [{step}]{where} (it has {len(value)})")
        values = found
    return values


def show(steps: tuple[Step, ...]) -> str:
    """The path text of `steps`."""
    text = ""
    for step in steps:
        if isinstance(step, str):
            text += f".{step}" if text else step
        else:
            text += "[*]" if step is None else f"[{step}]"
    return text


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"
