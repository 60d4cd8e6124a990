"""Merging filled label queues into a qrels file: the graded rows appended in the file's own
format, its existing lines kept byte for byte.

A row is added once: merging the same queue again adds nothing. A row that would change or
duplicate a judgment already in the file is not added; it is counted as already judged when
it agrees with the file, and listed as a conflict when it does not (an existing judgment is
changed by editing the file, never by a merge). Which rows count as "the same judgment":

- A file that names annotators (TREC whose second column varies, BEIR with an annotator
  header column, JSON Lines with an `annotator` field) keeps one grade per (query, doc,
  annotator), and the gate combines several annotators' grades: a row by an annotator who
  has not judged the (query, doc) yet is added beside the others' judgments.
- A file that names none keeps one grade per (query, doc): a row for a (query, doc) the file
  already holds is not added, whoever graded it.
- A (query, doc) the file lists with a grade below 0 (pooled, never judged) is a conflict
  for a row that would be a second line of the same judgment: the file cannot hold both, so
  the user replaces the pooled line by hand. (In a file naming annotators, another
  annotator's row is simply added: a grade below 0 counts only while nobody judged it.)
- Rows of the queues that grade a new (query, doc) differently as the same judgment (no
  annotator column to tell them apart) add nothing and are a conflict.

How each graded row's query was chosen (the queue's `draw` columns) is appended to the draw
record beside the qrels file (`datasets.draws`), once per (round, query).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.input_files import user_text
from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets.draws import Draw, draw_lines, draws_path
from retrieval_gate.errors import InputError
from retrieval_gate.labels.queue import QueueJudgment
from retrieval_gate.metrics.spec import format_value
from retrieval_gate.readers import QRELS_FORMATS, detect_qrels_format
from retrieval_gate.readers.beir import ANNOTATOR_HEADERS
from retrieval_gate.readers.jsonl import GRADE_KEYS
from retrieval_gate.readers.text import is_gzip, logical_name

MergeFormat = Literal["trec", "beir", "jsonl"]
MERGE_FORMATS: tuple[MergeFormat, ...] = ("trec", "beir", "jsonl")
NO_ANNOTATOR = "0"
"""Written where a file's annotator column needs a value and the row names nobody (TREC's
conventional second column)."""
RELEVANT = 1.0
"""Grades counted as relevant in the summary (the metrics' default `rel`)."""


@dataclass(frozen=True)
class MergeConflict:
    """Queue rows for one (query, doc) that were not added, and why."""

    query_id: str
    doc_id: str
    existing: float | None
    """The file's grade of the judgment; None when the queues disagree on a new one."""
    rows: tuple[QueueJudgment, ...]

    def describe(self) -> str:
        """One sentence saying what differs and what to do."""
        rows = ", ".join(_row_text(row) for row in self.rows)
        what = f"query {self.query_id}, doc {self.doc_id}"
        if self.existing is None:
            return (
                f"{what}: the queues grade it differently ({rows}); nothing added: agree on "
                "one grade, or name each annotator in a qrels file with an annotator column"
            )
        if self.existing < 0:
            return (
                f"{what}: the qrels file lists it as pooled but not judged (grade "
                f"{format_value(self.existing)}), and a second line would judge it twice; "
                f"not added ({rows}): replace that line by hand with the grade"
            )
        if any(row.revises == self.existing for row in self.rows):
            return (
                f"{what}: graded {format_value(self.existing)} in the qrels file, and a second "
                f"look {rows}; not changed: merge with --revise to replace that grade"
            )
        return (
            f"{what}: graded {format_value(self.existing)} in the qrels file, but {rows}; "
            "not changed: edit the qrels file to change an existing judgment"
        )


@dataclass(frozen=True)
class MergeOutcome:
    """What a merge added, left out and wrote."""

    source: Path
    """The qrels file merged into."""
    path: Path
    """The file written (`source` when merged in place)."""
    format: MergeFormat
    added: tuple[QueueJudgment, ...]
    """Rows appended, in queue order."""
    already_judged: int
    """Rows not added because the file (or an earlier row) already holds the same grade."""
    conflicts: tuple[MergeConflict, ...]
    annotators_dropped: int
    """Added rows whose annotator the file has no column for."""
    written: bool
    """False when nothing changed and `path` is `source` (the file is left untouched)."""
    revised: tuple[QueueJudgment, ...] = ()
    """Second looks (`--revise`) whose grade replaced people's on the file's line."""
    draws: tuple[Draw, ...] = ()
    """The draws added to the record beside the written file, in queue order."""

    @property
    def relevant(self) -> int:
        """Added rows with a grade of 1 or more."""
        return sum(row.grade >= RELEVANT for row in self.added)

    @property
    def conflicting_rows(self) -> int:
        """Rows not added because of a conflict."""
        return sum(len(conflict.rows) for conflict in self.conflicts)


@dataclass(frozen=True)
class _Layout:
    newline: str
    separator: str
    """TREC's column separator, as the file's first line has it."""
    writes_annotators: bool
    """The file has a place for the annotator (TREC's second column, BEIR's 4th column,
    JSON Lines' field)."""
    named: bool
    """The file's judgments name annotators (one grade per (query, doc, annotator))."""
    placeholder: str
    """The annotator written for a row that names none."""


def merge_judgments(
    qrels_path: str | Path,
    judgments: Sequence[QueueJudgment],
    *,
    out: str | Path | None = None,
    format: str | None = None,
    revise: bool = False,
) -> MergeOutcome:
    """Append `judgments` to the qrels file at `qrels_path` in its format (detected unless
    `format` names trec, beir or jsonl) and write the result to `out` (default: in place),
    atomically. Existing lines are kept byte for byte. No printing.

    InputError for a missing, gzip-compressed, nested-JSON or malformed qrels file, and for an
    id the format cannot hold (whitespace in TREC, a tab in BEIR). With `revise`, a second
    look (a row whose `revises` is the grade the file still holds, from `label-queue --by
    judge-disagrees`) replaces that grade on its line, every other byte kept; without it, or
    when the file's grade changed since the queue was made, it is a conflict.
    """
    path = Path(qrels_path)
    source = str(path)
    if not path.is_file():
        what = "is a directory, expected a qrels file" if path.is_dir() else "file not found"
        raise InputError(f"{what}; check the path", source=source)
    if is_gzip(path) or logical_name(path) != path.name.lower():
        raise InputError(
            "is gzip-compressed and cannot be appended to; decompress it (gunzip), merge into "
            "the plain file, and compress it again if you need to",
            source=source,
        )
    name = format or detect_qrels_format(path)
    if name == "json":
        raise InputError(
            "a JSON qrels file ({query: {doc: grade}}) cannot be appended to line by line; "
            "convert it to JSON Lines, TREC or BEIR .tsv and merge into that",
            source=source,
        )
    if name not in MERGE_FORMATS:
        raise InputError(
            f"unknown qrels format {name!r}; merge writes {', '.join(MERGE_FORMATS)}",
            source=source,
        )
    fmt: MergeFormat = "trec" if name == "trec" else "beir" if name == "beir" else "jsonl"
    text = user_text(path)
    existing: Judgments = QRELS_FORMATS[fmt](path)
    layout = _layout(text, fmt, existing, judgments)
    judged: dict[tuple[str, str], list[tuple[str | None, float]]] = {}
    where: dict[tuple[str, str, str | None], int] = {}
    annotators = existing.annotator.tolist() if existing.annotator is not None else None
    numbers = existing.lines.tolist() if existing.lines is not None else None
    for row, (code, doc, grade) in enumerate(
        zip(existing.query.tolist(), existing.docs.tolist(), existing.grade.tolist(), strict=True)
    ):
        who = annotators[row] if annotators is not None else None
        judged.setdefault((str(existing.query_ids[code]), doc), []).append((who, grade))
        if numbers is not None:
            where.setdefault((str(existing.query_ids[code]), doc, who), numbers[row])

    groups: dict[tuple[str, str, str | None], list[QueueJudgment]] = {}
    for judgment in judgments:
        written = (judgment.annotator or layout.placeholder) if layout.writes_annotators else None
        groups.setdefault((judgment.query_id, judgment.doc_id, written), []).append(judgment)

    added: list[tuple[QueueJudgment, str | None]] = []
    revised: dict[int, QueueJudgment] = {}
    conflicts: list[MergeConflict] = []
    already = 0
    for (query_id, doc_id, written), rows in groups.items():
        same = [
            grade
            for who, grade in judged.get((query_id, doc_id), [])
            if not layout.named or who == written
        ]
        if same:
            grade = same[0]
            if grade < 0:
                conflicts.append(MergeConflict(query_id, doc_id, grade, tuple(rows)))
                continue
            differ = tuple(row for row in rows if row.grade != grade)
            already += len(rows) - len(differ)
            line = where.get((query_id, doc_id, written if layout.named else None))
            second = (
                revise
                and line is not None
                and len(same) == 1
                and len({row.grade for row in differ}) == 1
                and all(row.revises == grade for row in differ)
            )
            if differ and second and line is not None:
                revised[line] = differ[0]
            elif differ:
                conflicts.append(MergeConflict(query_id, doc_id, grade, differ))
        elif len({row.grade for row in rows}) > 1:
            conflicts.append(MergeConflict(query_id, doc_id, None, tuple(rows)))
        else:
            added.append((rows[0], written))
            already += len(rows) - 1

    lines = [_line(fmt, layout, row, written) for row, written in added]
    result = _revised_text(text, fmt, revised) if revised else text
    if lines:
        if result and not result.endswith("\n"):
            result += layout.newline
        result += "".join(line + layout.newline for line in lines)
    target = Path(out) if out is not None else path
    write = bool(lines) or bool(revised) or target.resolve() != path.resolve()
    if write:
        write_text_atomic(target, result)
    draws = _record_draws(path, target, judgments)
    dropped = sum(bool(row.annotator) for row, written in added if written is None)
    return MergeOutcome(
        source=path,
        path=target,
        format=fmt,
        added=tuple(row for row, _ in added),
        already_judged=already,
        conflicts=tuple(conflicts),
        annotators_dropped=dropped,
        written=write,
        revised=tuple(revised[line] for line in sorted(revised)),
        draws=draws,
    )


def _record_draws(
    source: Path, target: Path, judgments: Sequence[QueueJudgment]
) -> tuple[Draw, ...]:
    """Append the draws of `judgments` the record beside `source` lacks to the record
    beside `target` (a copy of `source`'s when they differ). InputError for rows that give
    one round two kinds or two rates."""
    from retrieval_gate.datasets.draws import read_draws

    before = draws_path(source)
    record = read_draws(before)
    known = {(d.round, d.query_id) for d in record.draws} if record is not None else set()
    rounds = {d.round: (d.kind, d.rate) for d in record.draws} if record is not None else {}
    new: list[Draw] = []
    for row in judgments:
        draw = row.draw
        if draw is None or (draw.round, draw.query_id) in known:
            continue
        if rounds.setdefault(draw.round, (draw.kind, draw.rate)) != (draw.kind, draw.rate):
            raise InputError(
                f"round {draw.round!r} is {draw.kind} at rate {draw.rate} here, but another "
                "row or the draw record gives it another kind or rate; keep the draw columns "
                "label-queue wrote",
                source=row.source or None,
                line=row.line,
            )
        known.add((draw.round, draw.query_id))
        new.append(draw)
    after = draws_path(target)
    moved = after.resolve() != before.resolve()
    if new or (moved and record is not None):
        text = before.read_text(encoding="utf-8") if record is not None else ""
        if text and not text.endswith("\n"):
            text += "\n"
        write_text_atomic(after, text + draw_lines(new))
    return tuple(new)


def describe_merge(outcome: MergeOutcome, *, queues: int, skipped: int) -> list[str]:
    """The merge's summary: one line of counts, then a line per dropped column or conflict."""
    into = (
        str(outcome.path)
        if outcome.path == outcome.source
        else f"{outcome.source}, written to {outcome.path}"
    )
    counts = [
        f"added {plural(len(outcome.added), 'judgment')} ({outcome.relevant} relevant)",
        f"{plural(skipped, 'row')} without a grade skipped",
        f"{outcome.already_judged} already judged",
    ]
    if outcome.revised:
        counts.append(f"{plural(len(outcome.revised), 'grade')} revised by a second look")
    if outcome.conflicts:
        counts.append(
            f"{plural(outcome.conflicting_rows, 'row')} in "
            f"{plural(len(outcome.conflicts), 'conflict')} not added"
        )
    lines = [f"merged {plural(queues, 'queue')} into {into}: {', '.join(counts)}"]
    if outcome.annotators_dropped:
        where = (
            "has no annotator column; add one to its header ('query-id<TAB>corpus-id<TAB>"
            "score<TAB>annotator') to keep them"
            if outcome.format == "beir"
            else "names no annotators (a JSON Lines qrels file names one on every line or on none)"
        )
        lines.append(
            f"  annotators not written for {plural(outcome.annotators_dropped, 'judgment')}: "
            f"{outcome.source} {where}"
        )
    if outcome.draws:
        kinds = Counter(draw.kind for draw in outcome.draws)
        counted = ", ".join(f"{kinds[kind]} {kind}" for kind in sorted(kinds))
        lines.append(
            f"  recorded the draw of {plural(len(outcome.draws), 'query', 'queries')} "
            f"({counted}) in {draws_path(outcome.path)}: commit it beside the qrels file"
        )
    lines += [f"  conflict: {conflict.describe()}" for conflict in outcome.conflicts]
    return lines


def _layout(
    text: str, fmt: MergeFormat, existing: Judgments, judgments: Sequence[QueueJudgment]
) -> _Layout:
    end = text.find("\n")
    newline = "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"
    first = next(
        (
            line.strip("\r")
            for line in text.split("\n")
            if line.strip() and not line.lstrip().startswith("#")
        ),
        None,
    )
    named = existing.annotator is not None
    if fmt == "trec":
        separator = "\t" if first is not None and "\t" in first.strip() else " "
        parts = first.split() if first is not None else []
        # A file whose second column is one value throughout names no annotator: keep it so.
        placeholder = parts[1] if not named and len(parts) == 4 else NO_ANNOTATOR
        return _Layout(newline, separator, True, named, placeholder)
    if fmt == "beir":
        header = [part.strip().lower() for part in first.split("\t")] if first else []
        column = len(header) == 4 and header[3] in ANNOTATOR_HEADERS
        return _Layout(newline, "\t", column, named, NO_ANNOTATOR)
    writes = named if len(existing) else bool(judgments) and all(j.annotator for j in judgments)
    return _Layout(newline, "", writes, named, NO_ANNOTATOR)


def _line(fmt: MergeFormat, layout: _Layout, row: QueueJudgment, annotator: str | None) -> str:
    grade = format_value(row.grade)
    if fmt == "jsonl":
        record: dict[str, object] = {
            "query_id": row.query_id,
            "doc_id": row.doc_id,
            "relevance": int(row.grade) if float(row.grade).is_integer() else float(row.grade),
        }
        if annotator is not None:
            record["annotator"] = annotator
        return json.dumps(record, ensure_ascii=False)
    values = {"query id": row.query_id, "doc id": row.doc_id, "annotator": annotator or ""}
    for what, value in values.items():
        bad = (
            any(c.isspace() for c in value) if fmt == "trec" else any(c in value for c in "\t\r\n")
        )
        if bad or (what == "query id" and value.startswith("#")):
            why = "whitespace" if fmt == "trec" else "a tab or line break"
            if value.startswith("#"):
                why = "a leading '#' (a comment)"
            raise InputError(
                f"{what} {value!r} holds {why}, which a {fmt.upper()} qrels line cannot; "
                "rename it, or merge into a JSON Lines qrels file",
                source=row.source or None,
                line=row.line,
            )
    if fmt == "trec":
        return layout.separator.join((row.query_id, annotator or NO_ANNOTATOR, row.doc_id, grade))
    cells = [row.query_id, row.doc_id, grade]
    if annotator is not None:
        cells.append(annotator)
    return "\t".join(cells)


def _revised_text(text: str, fmt: MergeFormat, revised: dict[int, QueueJudgment]) -> str:
    """`text` with the grade on each line of `revised` (1-based) replaced, the rest of the
    line (its separators, other fields, line ending) as it was."""
    lines = text.split("\n")
    for number, row in revised.items():
        line = lines[number - 1]
        body, end = (line[:-1], "\r") if line.endswith("\r") else (line, "")
        grade = format_value(row.grade)
        if fmt == "jsonl":
            record = json.loads(body)
            key = next(key for key in GRADE_KEYS if key in record)
            record[key] = int(row.grade) if float(row.grade).is_integer() else row.grade
            body = json.dumps(record, ensure_ascii=False)
        elif fmt == "beir":
            cells = body.split("\t")
            cells[2] = grade
            body = "\t".join(cells)
        else:  # TREC: the last field, whatever whitespace stands before it
            found = re.search(r"\S+(\s*)$", body)
            if found is not None:
                body = body[: found.start()] + grade + found.group(1)
        lines[number - 1] = body + end
    return "\n".join(lines)


def _row_text(row: QueueJudgment) -> str:
    who = f" ({row.annotator})" if row.annotator else ""
    return f"{row.where} grades it {format_value(row.grade)}{who}"
