"""The draw record beside a qrels file: how each human-labelled query was chosen."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from retrieval_gate.core.input_files import user_text
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.wording import spreadsheet_number
from retrieval_gate.errors import InputError

DrawKind = Literal["sample", "active", "targeted"]
DRAW_KINDS: tuple[DrawKind, ...] = ("sample", "active", "targeted")
RANDOM_KINDS: tuple[DrawKind, ...] = ("sample", "active")
SUFFIX = ".draws.jsonl"
"""The record of qrels file `X` is `X.draws.jsonl`, beside it."""
_ROUND = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


@dataclass(frozen=True)
class Draw:
    """One query drawn in one round of `label-queue`: a line of the record."""

    query_id: str
    round: str
    """The round's id (`label-queue` derives it from the draw's inputs)."""
    kind: DrawKind
    """sample (uniform), active (by the judge's doubt) or targeted (probability unknown)."""
    rate: float | None = None
    """The round's rate: a query of weight w had probability min(1, rate * w) in it."""
    weight: float | None = None
    """The query's weight in the round (1 in a uniform round; its doubt, floored, in an active
    one, scaled so that the round's candidates average 1)."""
    p: float | None = None
    """The query's probability of being drawn in the round, min(1, rate * weight)."""

    def row(self) -> dict[str, Any]:
        """The record's line as a JSON object, keys in order."""
        return {
            "query_id": self.query_id,
            "round": self.round,
            "draw": self.kind,
            "rate": self.rate,
            "weight": self.weight,
            "p": self.p,
        }


@dataclass(frozen=True)
class DrawRecord:
    """A qrels file's draw record as read."""

    draws: tuple[Draw, ...]
    source: str

    def inclusion(self) -> dict[str, float]:
        """Per query drawn by a random round (sample or active): its probability of being
        drawn by any of the record's random rounds.

        Each round r draws query q independently with p_r(q) = min(1, rate_r * w_q), where w_q
        is 1 in a uniform round and q's recorded weight in an active one, so q is in the
        labelled set with probability 1 - prod_r (1 - p_r(q)) over every random round, also
        those after q was labelled (a round skips a labelled query: drawing it again would
        add nothing) and those before it that did not draw it. For uniform rounds this is
        exact: n1 of N, then n2 of the N - n1 left, gives (n1 + n2) / N, a uniform sample of
        n1 + n2. A query never drawn by an active round has no recorded weight there; it is
        taken as 1, the round's average."""
        rounds: dict[str, tuple[DrawKind, float]] = {}
        weights: dict[str, float] = {}
        drawn: set[str] = set()
        for draw in self.draws:
            if draw.kind == "targeted" or draw.rate is None or draw.weight is None:
                continue
            rounds.setdefault(draw.round, (draw.kind, draw.rate))
            drawn.add(draw.query_id)
            if draw.kind == "active":
                weights.setdefault(draw.query_id, draw.weight)
        result = {}
        for query in sorted(drawn):
            missed = 1.0
            for kind, rate in rounds.values():
                weight = weights.get(query, 1.0) if kind == "active" else 1.0
                missed *= 1.0 - min(1.0, rate * weight)
            result[query] = 1.0 - missed
        return result

    def kinds(self) -> dict[str, set[DrawKind]]:
        """Per recorded query: the kinds of draw that chose it."""
        found: dict[str, set[DrawKind]] = {}
        for draw in self.draws:
            found.setdefault(draw.query_id, set()).add(draw.kind)
        return found


def draws_path(qrels: Path) -> Path:
    """Where the draw record of the qrels file `qrels` is kept."""
    return qrels.with_name(qrels.name + SUFFIX)


def read_draws(path: Path) -> DrawRecord | None:
    """The draw record at `path`; None when there is none. InputError naming the line for
    anything but the lines `qrels merge` writes."""
    source = str(path)
    if not path.exists():
        return None
    text = user_text(path)
    draws = []
    rounds: dict[str, tuple[str, float | None]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        draw = _draw(line, source, number)
        kind, rate = rounds.setdefault(draw.round, (draw.kind, draw.rate))
        if (kind, rate) != (draw.kind, draw.rate):
            raise InputError(
                f"round {draw.round!r} is {draw.kind} at rate {draw.rate} here but {kind} at "
                f"rate {rate} above; a round has one kind and one rate: restore the lines "
                "`qrels merge` wrote",
                source=source,
                line=number,
            )
        draws.append(draw)
    return DrawRecord(tuple(draws), source)


def draw_lines(draws: Iterable[Draw]) -> str:
    """The record's lines of `draws`, one JSON object each."""
    return "".join(json.dumps(draw.row(), ensure_ascii=False) + "\n" for draw in draws)


def checked_draw(fields: Mapping[str, Any], source: str, line: int) -> Draw | None:
    """The draw that `fields` (a queue row or a record line) state, None when they state
    none (no `draw`); InputError naming the field for one out of range."""
    kind = fields.get("draw")
    if kind is None or kind == "":
        return None
    if kind not in DRAW_KINDS:
        raise InputError(
            f"draw {kind!r} is not one of {', '.join(DRAW_KINDS)}; keep the value "
            "`retrieval-gate label-queue` wrote",
            source=source,
            line=line,
        )
    query_id = fields.get("query_id")
    if not isinstance(query_id, str) or not query_id.strip():
        raise InputError("query_id must be a non-empty string", source=source, line=line)
    round_id = fields.get("round")
    if not isinstance(round_id, str) or not _ROUND.fullmatch(round_id):
        raise InputError(
            f"round {round_id!r} must be the id label-queue wrote (letters, digits, _.:-, at "
            "most 64)",
            source=source,
            line=line,
        )
    numbers = {
        name: _number(fields.get(name), name, source, line) for name in ("rate", "weight", "p")
    }
    if kind == "targeted":
        return Draw(query_id.strip(), round_id, "targeted")
    rate, weight, p = numbers["rate"], numbers["weight"], numbers["p"]
    if rate is None or weight is None or p is None or rate <= 0 or weight <= 0:
        raise InputError(
            f"a {kind} draw needs its rate and weight above 0 and its p; keep the values "
            "`retrieval-gate label-queue` wrote",
            source=source,
            line=line,
        )
    if not 0.0 < p <= 1.0 or not math.isclose(p, min(1.0, rate * weight), rel_tol=1e-9):
        raise InputError(
            f"p {p!r} must be min(1, rate * weight) = {min(1.0, rate * weight)!r}; keep the "
            "values `retrieval-gate label-queue` wrote",
            source=source,
            line=line,
        )
    return Draw(query_id.strip(), round_id, kind, rate, weight, p)


def _draw(line: str, source: str, number: int) -> Draw:
    try:
        fields = parsed_json(line)
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON: {error.msg} (column {error.colno}); each line of a draw record is "
            "one object",
            source=source,
            line=number,
        ) from None
    except RecursionError:
        raise InputError("nested too deeply", source=source, line=number) from None
    if not isinstance(fields, dict):
        raise InputError("expected a JSON object per line", source=source, line=number)
    draw = checked_draw(fields, source, number)
    if draw is None:
        raise InputError(
            f"no draw: every line names one of {', '.join(DRAW_KINDS)}", source=source, line=number
        )
    return draw


def _number(value: Any, name: str, source: str, line: int) -> float | None:
    number = spreadsheet_number(value)
    if number is None:
        return None
    if not math.isfinite(number):
        raise InputError(
            f"{name} {value!r} is not a finite number; keep the value label-queue wrote",
            source=source,
            line=line,
        )
    return number
