"""Two branches' judgment layers merged into one: the union of their rows, for git's merge."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.datasets.llm_layer import LlmJudgment, layer_line, layer_rows
from retrieval_gate.errors import InputError

Key = tuple[str, str, str, str, str]
SIDES = ("base", "ours", "theirs")
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


class _OutOfOrderError(Exception):
    """A layer not sorted by key (edited by hand): merged in memory instead of streamed."""


@dataclass
class LayerMerge:
    """What a merge did: the rows written, those taken from THEIRS, the pairs both sides
    graded differently (the later answer kept; `regraded`: those whose grades differ), and
    the rows BASE had that one side removed, kept."""

    rows: int = 0
    from_theirs: int = 0
    both_graded: int = 0
    regraded: list[Key] = field(default_factory=list)
    kept_removed: int = 0


def merge_layers(base: Path, ours: Path, theirs: Path, *, name: str | None = None) -> LayerMerge:
    """Write into `ours`, atomically, the three-way merge of three versions of a layer, by key
    (query, doc, model, prompt sha256, and in a chunked corpus the hash of the text graded):

    - a row on one side only is kept, and so is a row BASE had that one side removed: the
      judge never removes a row, a branch that rebuilt the file would lose grades paid for,
      and rows of another judge do not change what the gate decides (a row both sides
      removed stays removed);
    - a row one side changed and the other left as BASE had it: the changed one;
    - a pair both sides graded, differently: the answer given later (`time`), ties broken
      by the larger line, so the result does not depend on which side is ours.

    The files are read and written in one pass when sorted by key, as `judge` writes them;
    a file out of order is sorted in memory. A malformed row is an InputError naming the
    side, the file (`name`, git's %P, when given) and the line; `ours` is then left as it was."""
    paths = {"base": base, "ours": ours, "theirs": theirs}
    labels = {side: f"{name or paths[side]} [{side}]" for side in SIDES}
    try:
        sources = [_streamed(paths[side], labels[side]) for side in SIDES]
        return _write(ours, sources)
    except _OutOfOrderError:
        sources = [_in_memory(paths[side], labels[side]) for side in SIDES]
        return _write(ours, sources)


def _write(target: Path, sources: list[Iterator[LlmJudgment]]) -> LayerMerge:
    tally = LayerMerge()

    def lines() -> Iterator[str]:
        for base, ours, theirs in _joined(sources):
            row = _resolve(base, ours, theirs, tally)
            if row is not None:
                tally.rows += 1
                yield layer_line(row)

    write_text_atomic(target, lines())
    return tally


def _resolve(
    base: LlmJudgment | None,
    ours: LlmJudgment | None,
    theirs: LlmJudgment | None,
    tally: LayerMerge,
) -> LlmJudgment | None:
    if ours == theirs:
        return ours
    if ours is None or theirs is None:
        if base is not None:
            tally.kept_removed += 1
        tally.from_theirs += ours is None
        return ours or theirs
    if ours == base:
        tally.from_theirs += 1
        return theirs
    if theirs == base:
        return ours
    tally.both_graded += 1
    if ours.grade != theirs.grade:
        tally.regraded.append(ours.key)
    kept = max(ours, theirs, key=_recency)
    tally.from_theirs += kept is theirs
    return kept


def _recency(row: LlmJudgment) -> tuple[datetime, str]:
    """When the answer was given (an unreadable time counts as the earliest), then its line."""
    try:
        moment = datetime.fromisoformat(row.time.replace("Z", "+00:00"))
    except ValueError:
        moment = _EARLIEST
    if moment.tzinfo is None:  # the judge writes UTC; a time without a zone is taken as UTC
        moment = moment.replace(tzinfo=timezone.utc)
    return moment, layer_line(row)


def _joined(
    sources: list[Iterator[LlmJudgment]],
) -> Iterator[tuple[LlmJudgment | None, LlmJudgment | None, LlmJudgment | None]]:
    """(base, ours, theirs) rows of each key, in key order, from three sorted sources."""
    heads = [next(source, None) for source in sources]
    while True:
        keys = [head.key for head in heads if head is not None]
        if not keys:
            return
        key = min(keys)
        found: list[LlmJudgment | None] = []
        for index, head in enumerate(heads):
            if head is not None and head.key == key:
                found.append(head)
                heads[index] = next(sources[index], None)
            else:
                found.append(None)
        yield found[0], found[1], found[2]


def _streamed(path: Path, label: str) -> Iterator[LlmJudgment]:
    """The rows of a layer sorted by key, one at a time; _OutOfOrderError when it is not sorted."""
    previous: LlmJudgment | None = None
    previous_line = 0
    for line, row in _rows(path, label):
        if previous is not None and row.key <= previous.key:
            if row.key == previous.key:
                raise _twice(row, label, line, previous_line)
            raise _OutOfOrderError
        previous, previous_line = row, line
        yield row


def _in_memory(path: Path, label: str) -> Iterator[LlmJudgment]:
    held: dict[Key, tuple[int, LlmJudgment]] = {}
    for line, row in _rows(path, label):
        if row.key in held:
            raise _twice(row, label, line, held[row.key][0])
        held[row.key] = (line, row)
    return iter([held[key][1] for key in sorted(held)])


def _rows(path: Path, label: str) -> Iterator[tuple[int, LlmJudgment]]:
    """`layer_rows`, its errors naming the side and the file as git's user knows it."""
    rows = layer_rows(path)
    while True:
        try:
            yield next(rows)
        except StopIteration:
            return
        except InputError as error:
            where = str(error.source) + (f":{error.line}" if error.line is not None else "")
            message = str(error).removeprefix(f"{where}: ")
            raise InputError(_advice(message), source=label, line=error.line) from None


def _twice(row: LlmJudgment, label: str, line: int, first: int) -> InputError:
    return InputError(
        _advice(
            f"query {row.query!r}, doc {row.doc!r} graded twice by the same judge (first on "
            f"line {first}); keep one line per pair and judge"
        ),
        source=label,
        line=line,
    )


def _advice(message: str) -> str:
    return (
        f"{message}. Nothing was merged: fix that side's file and merge again (git leaves it "
        "as a conflict until then)"
    )
