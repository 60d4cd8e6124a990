"""The `unlabelled:` block: a sample of production queries with no labels, and the label-free
checks run on it (overlap@k, rbo@k and lost@k against the reference, ann_recall@k against an
exact search)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from retrieval_gate.core.strict import StrictModel

PREFIX = "unlabelled:"
"""What the reports put before a label-free check's name: it used no labels."""
KEY = re.compile(r"^(overlap|rbo|lost|ann_recall)@([1-9][0-9]{0,4})$")
KEYS = "overlap@K, rbo@K, lost@K or ann_recall@K (e.g. overlap@10)"
_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%|pt|pts|points?)?\s*$", re.IGNORECASE)


def _parse_share(raw: Any) -> Any:
    """`5%`, `5pt` and 0.05 all mean five in a hundred queries."""
    if isinstance(raw, bool):
        raise PydanticCustomError("share_invalid", "a share is a number or a percentage")
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str) and (match := _SHARE.match(raw)):
        value = float(match[1]) / (100 if match[2] else 1)
    else:
        raise PydanticCustomError(
            "share_invalid",
            "{raw} is not a share of the queries: write 5% (or 0.05)",
            {"raw": repr(raw)[:80]},
        )
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise PydanticCustomError(
            "share_invalid", "a share of the queries is within 0% and 100%, got {raw}", {"raw": raw}
        )
    return value


Share = Annotated[float, BeforeValidator(_parse_share)]


class LabelFreeGate(StrictModel):
    """The thresholds of one label-free check."""

    max_drop: Share | None = Field(
        None,
        description="overlap, rbo, ann_recall: the largest tolerated drop of the mean against "
        "the reference's own run-to-run agreement (1 for an exact search), 5pt or 0.05",
    )
    min: float | None = Field(
        None, ge=0, le=1, description="overlap, rbo, ann_recall: a floor of the mean, e.g. 0.95"
    )
    p: float = Field(
        0.9,
        gt=0,
        lt=1,
        description="rbo: the persistence (at 0.9 the top 10 ranks carry 86% of the weight)",
    )
    more_than: int | None = Field(
        None, ge=0, description="lost: a query counts when it lost more than this many"
    )
    max_share: Share | None = Field(
        None,
        description="lost: the largest tolerated rise in the share of queries that lost more "
        "than more_than of the reference's top k, over the reference's own share, e.g. 5%",
    )
    max: float | None = Field(
        None, ge=0, le=1, description="lost: a ceiling of that share, e.g. 0.1"
    )


class UnlabelledConfig(StrictModel):
    """Production queries without labels, and what to check on them."""

    queries: str = Field(
        description="a JSONL file, one query a line: {id, text, ...}; the other fields are "
        "metadata, sliced by slices.by as the labelled set's"
    )
    sample: int | None = Field(
        None, ge=1, description="check a seeded random sample of this many queries (all: unset)"
    )
    seed: int = Field(0, ge=0, description="the sample's seed")
    checks: dict[str, LabelFreeGate] = Field(
        min_length=1,
        description="label-free check -> thresholds: overlap@10 {max_drop: 5pt}, rbo@10 "
        "{max_drop: 5pt, p: 0.9}, lost@10 {more_than: 3, max_share: 5%}, ann_recall@10 "
        "{min: 0.95} (the configured store against its exact search)",
    )

    @field_validator("checks")
    @classmethod
    def _known_checks(cls, checks: dict[str, LabelFreeGate]) -> dict[str, LabelFreeGate]:
        for key, gate in checks.items():
            match = KEY.match(key)
            if not match:
                raise PydanticCustomError(
                    "check_unknown",
                    "unlabelled check {key}: write {keys}",
                    {"key": repr(key)[:80], "keys": KEYS},
                )
            if problem := _gate_problem(match[1], int(match[2]), gate):
                raise PydanticCustomError(
                    "check_thresholds",
                    "unlabelled.checks.{key}: {problem}",
                    {"key": key, "problem": problem},
                )
        return checks


def _gate_problem(measure: str, k: int, gate: LabelFreeGate) -> str | None:
    """What is wrong with `gate` as the thresholds of `measure`@`k`, or None."""
    if measure == "lost":
        if gate.more_than is None:
            return "lost@K counts the queries that lost more than more_than: set it, e.g. 3"
        if gate.more_than >= k:
            return f"more_than must be below k ({k}): no query can lose more than {k}"
        if gate.max_drop is not None or gate.min is not None:
            return (
                "lost@K takes max_share (a rise in the share of queries) and max, not "
                "max_drop or min"
            )
        return None
    extra = [name for name in ("more_than", "max_share", "max") if getattr(gate, name) is not None]
    if extra:
        return f"{', '.join(extra)} belong to lost@K; {measure}@K takes max_drop and min"
    return None
