"""The label queue: the unjudged documents of the current top k, for annotators, and the
filled queue read back.

A document is judged for a query when the query's qrels grade it 0 or more (judged@k's
rule); a document absent from them, or graded below 0 (pooled, never judged), is unjudged
and counts as non-relevant, so a retriever that brings new documents up looks worse than
it may be. The queue lists those documents, most impactful first: those of the checks whose
verdict depends on them (`check`'s label-hole bounds, when the queue is made from its
result), then the highest ranks, then the queries whose primary metric fell most since the
baseline.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.qrels import is_judged
from retrieval_gate.core.wording import (
    json_text,
    spreadsheet_cell,
    spreadsheet_number,
    spreadsheet_text,
)
from retrieval_gate.datasets.draws import Draw, DrawKind, checked_draw
from retrieval_gate.errors import InputError
from retrieval_gate.metrics.spec import format_value

if TYPE_CHECKING:
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.datasets.llm_layer import LlmJudgment

QueueFormat = Literal["jsonl", "csv"]
QUEUE_FORMATS: tuple[QueueFormat, ...] = ("jsonl", "csv")
DELTA_DIGITS = 4
"""Decimals of the `delta` column."""

FILL_HINT = "write a grade such as 0, 1, 2 (or leave it empty to skip the document)"


@dataclass(frozen=True)
class QueueItem:
    """One unjudged (query, doc) of the current top k; the fields are the queue's columns."""

    query_id: str
    query: str
    """The query's text."""
    doc_id: str
    rank: int | None
    """1-based rank in the current top k; None: in the baseline's top k only (listed for a
    label-dependent check, whose bounds count both sides' unjudged documents)."""
    new: bool | None
    """True when the doc was not in the baseline's top k of the query; None: no baseline."""
    delta: float | None
    """The query's primary metric, current - baseline, rounded; None: no baseline value."""
    metric: str
    """The primary metric's canonical name."""
    title: str | None
    """From the corpus; None when the corpus does not hold the doc (or there is none)."""
    text: str | None
    grade: float | None = None
    """Left empty for the annotator."""
    annotator: str | None = None
    """Left empty; the annotator may fill it."""
    depends: bool | None = None
    """True when a label-dependent check of the result covers the query (its verdict depends
    on the unjudged documents); None: made without a `check` result that bounds them."""
    people_grade: float | None = None
    """People's grade of a judged pair put up for a second look (`--by judge-disagrees`): a
    `grade` that differs from it revises it (`qrels merge --revise`); None: unjudged."""
    judge_grade: int | None = None
    """The LLM judge's grade of the pair, when its layer holds one."""
    draw: DrawKind | None = None
    """How the query was chosen: sample (uniform), active (by the judge's doubt) or targeted
    (by impact, doubt or a label hole: probability unknown); `qrels merge` records it."""
    round: str | None = None
    """The id of the draw (`datasets.draws`)."""
    rate: float | None = None
    """The round's rate (sample and active draws)."""
    weight: float | None = None
    """The query's weight in the round: 1 in a uniform one, its doubt in an active one."""
    p: float | None = None
    """The query's probability of being drawn in the round, min(1, rate * weight)."""

    def row(self) -> dict[str, Any]:
        """The item as a queue row, columns in order."""
        return {name: getattr(self, name) for name in COLUMNS}


COLUMNS: tuple[str, ...] = tuple(field.name for field in fields(QueueItem))
"""The queue's columns, in order."""


@dataclass(frozen=True)
class QueueJudgment:
    """A graded row of a filled queue."""

    query_id: str
    doc_id: str
    grade: float
    annotator: str | None
    line: int
    """1-based line of the row in `source` (where the row starts, for CSV)."""
    source: str = ""
    revises: float | None = None
    """The people's grade the queue showed (`people_grade`): the row is a second look that
    replaces it, if the file still holds it; None: a new judgment."""
    draw: Draw | None = None
    """How the row's query was chosen, as the queue states it; None: it states nothing."""

    @property
    def where(self) -> str:
        """`source:line` (`line N` without a source)."""
        return f"{self.source}:{self.line}" if self.source else f"line {self.line}"


@dataclass(frozen=True)
class JudgedQueue:
    """A filled queue as read back: its graded rows, in file order, and the rows left empty."""

    judgments: tuple[QueueJudgment, ...]
    skipped: int
    """Rows without a grade (not judged yet)."""
    source: str


@dataclass(frozen=True)
class LabelQueue:
    """The queue of a config's current top k, and what it was computed from."""

    items: tuple[QueueItem, ...]
    k: int
    metric: str
    baseline: Path | None
    """The baseline that gave `new` (and maybe `delta`); None when there is none."""
    warnings: tuple[str, ...]

    @property
    def queries(self) -> int:
        """Queries with at least one unjudged document."""
        return len({item.query_id for item in self.items})

    @property
    def new(self) -> int:
        """Unjudged documents that were not in the baseline's top k."""
        return sum(item.new is True for item in self.items)


def unjudged_items(
    dataset: Dataset,
    top_k: Mapping[str, Sequence[str]],
    *,
    k: int,
    metric: str,
    deltas: Mapping[str, float] | None = None,
    baseline_top_k: Mapping[str, Sequence[str]] | None = None,
    dependent: Set[str] | None = None,
) -> list[QueueItem]:
    """The unjudged (query, doc) pairs of `top_k` (each cut to k), in queue order.

    Queries the labelled set does not hold are left out. `deltas` (query -> primary metric
    change) and `baseline_top_k` (query -> the baseline's ranked doc ids; a query absent from
    it retrieved nothing then) are None when there is no baseline: then `delta` and `new`
    are None. `dependent`: the queries of the label-dependent checks (None: not known); their
    pairs come first, with those of the baseline's top k that the current one lacks, so the
    first rows are exactly the pairs the bounds count. Then: rank, delta ascending (most
    regressed first, None last), query id and doc id.
    """
    items = _items(
        dataset,
        top_k,
        k,
        metric,
        deltas,
        baseline_top_k,
        lambda judged, doc, _: not is_judged(judged, doc),
        dependent,
    )
    items.sort(key=_queue_order)
    return items


def judge_unsure_first(
    items: Sequence[QueueItem], judge: Mapping[tuple[str, str], LlmJudgment]
) -> list[QueueItem]:
    """`items` with the pairs the LLM judge was least sure of first (lowest confidence);
    pairs it graded without a confidence, then pairs it did not grade, follow in their
    order."""

    def order(item: QueueItem) -> tuple[int, float]:
        row = judge.get((item.query_id, item.doc_id))
        if row is None:
            return (2, 0.0)
        return (0, row.confidence) if row.confidence is not None else (1, 0.0)

    shown = [_with_judge(item, judge) for item in items]
    return sorted(shown, key=order)  # stable: ties keep the impact order


def judge_disagreements(
    dataset: Dataset,
    top_k: Mapping[str, Sequence[str]],
    judge: Mapping[tuple[str, str], LlmJudgment],
    *,
    k: int,
    metric: str,
    deltas: Mapping[str, float] | None = None,
    baseline_top_k: Mapping[str, Sequence[str]] | None = None,
) -> list[QueueItem]:
    """The judged (query, doc) pairs of `top_k` whose LLM grade (`judge`, by (query, doc))
    differs from people's, for a second look: the largest |judge - people| first, then the
    judge's lowest confidence, then queue order."""

    gaps: dict[tuple[str, str], float] = {}

    def keep(judged: Mapping[str, float], doc: str, query_id: str) -> bool:
        row = judge.get((query_id, doc))
        if row is None or not is_judged(judged, doc) or row.grade == judged[doc]:
            return False
        gaps[query_id, doc] = abs(row.grade - judged[doc])
        return True

    items = [
        dataclasses.replace(
            _with_judge(item, judge),
            people_grade=dataset.qrels.judgments_of(item.query_id)[item.doc_id],
        )
        for item in _items(dataset, top_k, k, metric, deltas, baseline_top_k, keep)
    ]

    def order(
        item: QueueItem,
    ) -> tuple[float, float, tuple[bool, bool, int, bool, float, str, str]]:
        row = judge[item.query_id, item.doc_id]
        sure = row.confidence if row.confidence is not None else 1.0
        return (-gaps[item.query_id, item.doc_id], sure, _queue_order(item))

    return sorted(items, key=order)


def _with_judge(item: QueueItem, judge: Mapping[tuple[str, str], LlmJudgment]) -> QueueItem:
    """`item` with the judge's grade of its pair, when the layer holds one."""
    row = judge.get((item.query_id, item.doc_id))
    return item if row is None else dataclasses.replace(item, judge_grade=row.grade)


def _items(
    dataset: Dataset,
    top_k: Mapping[str, Sequence[str]],
    k: int,
    metric: str,
    deltas: Mapping[str, float] | None,
    baseline_top_k: Mapping[str, Sequence[str]] | None,
    keep: Callable[[Mapping[str, float], str, str], bool],
    dependent: Set[str] | None = None,
) -> list[QueueItem]:
    """A queue item per (query, doc) of `top_k` (cut to k) that `keep(the query's
    judgments, doc, query id)` keeps, for the queries the labelled set holds, by rank."""
    qrels = dataset.qrels
    corpus = dataset.corpus
    items: list[QueueItem] = []
    # Every query's ids decoded at once: a record's top k decodes per read (`TopKIds`).
    earlier = None if baseline_top_k is None else dict(baseline_top_k.items())
    # A dependent query the current run retrieved nothing for still has the baseline's pairs.
    extra = set() if dependent is None or earlier is None else dependent & earlier.keys()
    for query_id in sorted({*top_k, *extra}):
        ranked = top_k.get(query_id, ())
        position = qrels.position.get(query_id)
        if position is None:
            continue
        judged = qrels.by_query[position]
        before = None if earlier is None else set(earlier.get(query_id, ()))
        delta = _rounded(deltas.get(query_id)) if deltas is not None else None
        text = dataset.query(query_id).text
        depends = None if dependent is None else query_id in dependent
        ranks: dict[str, int | None] = {}
        for rank, doc_id in enumerate(ranked[:k], 1):
            if doc_id not in ranks and keep(judged, doc_id, query_id):
                ranks[doc_id] = rank
        if depends and earlier is not None:
            for doc_id in earlier.get(query_id, ())[:k]:
                if doc_id not in ranks and keep(judged, doc_id, query_id):
                    ranks[doc_id] = None
        for doc_id, at in ranks.items():
            document = corpus.get(doc_id) if corpus is not None else None
            items.append(
                QueueItem(
                    query_id=query_id,
                    query=text,
                    doc_id=doc_id,
                    rank=at,
                    new=None if before is None else doc_id not in before,
                    delta=delta,
                    metric=metric,
                    depends=depends,
                    title=None if document is None else document.title,
                    text=None if document is None else document.text,
                )
            )
    return items


def render_queue(items: Sequence[QueueItem], fmt: QueueFormat) -> str:
    """The queue as JSON Lines (one object per line, columns in order) or CSV (a header row,
    RFC 4180 quoting, empty cells for None, `true`/`false`). Equal items give equal text."""
    if fmt == "jsonl":
        return "".join(json_text(item.row(), indent=None) + "\n" for item in items)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(COLUMNS)
        for item in items:
            writer.writerow([_cell(value) for value in item.row().values()])
        return buffer.getvalue()
    raise ValueError(f"unknown queue format {fmt!r}; available: {', '.join(QUEUE_FORMATS)}")


def queue_format(path: str | Path | None, fmt: str | None = None) -> QueueFormat:
    """`fmt` when given, else from the suffix of `path` (.csv, .jsonl), else jsonl."""
    chosen = fmt or ("csv" if path is not None and Path(path).suffix.lower() == ".csv" else "jsonl")
    if chosen not in QUEUE_FORMATS:
        raise InputError(
            f"unknown label queue format {chosen!r}; available: {', '.join(QUEUE_FORMATS)}"
        )
    return "csv" if chosen == "csv" else "jsonl"


def read_judged_queue(path: str | Path) -> JudgedQueue:
    """A filled label queue: JSON Lines or CSV (by suffix, else a first line starting with
    `{` is JSON Lines). Rows whose grade is empty are skipped and counted.

    InputError (naming the file and line) for a grade that is not a finite number or is
    negative, a missing query_id/doc_id, or one annotator grading a (query, doc) twice
    differently.
    """
    path = Path(path)
    source = str(path)
    try:
        text = regular_file(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found; check the path", source=source) from None
    except UnicodeDecodeError:
        raise InputError(
            "is not UTF-8 text; save the queue as UTF-8 (CSV UTF-8 in a spreadsheet)",
            source=source,
        ) from None
    except OSError as error:
        raise InputError(
            f"cannot read the file: {error.strerror or error}", source=source
        ) from None
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        jsonl = True
    elif suffix == ".csv":
        jsonl = False
    else:
        jsonl = text.lstrip().startswith("{")
    rows = _jsonl_rows(text, source) if jsonl else _csv_rows(text, source)
    judgments: list[QueueJudgment] = []
    skipped = 0
    first: dict[tuple[str, str, str | None], QueueJudgment] = {}
    for line, query_id, doc_id, grade_value, annotator, people, drawn in rows:
        grade = _grade(grade_value, source, line)
        if grade is None:
            skipped += 1
            continue
        shown = _grade(people, source, line, "people_grade")
        draw = checked_draw({**drawn, "query_id": query_id}, source, line)
        judgment = QueueJudgment(query_id, doc_id, grade, annotator, line, source, shown, draw)
        key = (query_id, doc_id, annotator)
        earlier = first.setdefault(key, judgment)
        if earlier.grade != grade:
            who = f"annotator {annotator!r}" if annotator else "no annotator named"
            raise InputError(
                f"query {query_id!r}, doc {doc_id!r} is graded {format_value(grade)} here and "
                f"{format_value(earlier.grade)} on line {earlier.line} ({who}); keep one of the "
                "two rows, or name the annotator of each",
                source=source,
                line=line,
            )
        judgments.append(judgment)
    return JudgedQueue(tuple(judgments), skipped, source)


_Row: TypeAlias = "tuple[int, str, str, Any, str | None, Any, dict[str, Any]]"
"""(line, query id, doc id, grade as written, annotator, people_grade as written, the draw's
columns as written) of a row."""
DRAW_COLUMNS = ("draw", "round", "rate", "weight", "p")


def _jsonl_rows(text: str, source: str) -> Iterator[_Row]:
    # Split on "\n" only: JSON text written with ensure_ascii=False may hold U+2028 and
    # other characters str.splitlines() would also split on.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = parsed_json(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"invalid JSON: {error.msg} (column {error.colno}); each line of a JSON Lines "
                "queue is one object",
                source=source,
                line=number,
            ) from None
        except RecursionError:
            raise InputError("nested too deeply", source=source, line=number) from None
        if not isinstance(row, dict):
            raise InputError(
                "expected a JSON object per line, as the queue was written",
                source=source,
                line=number,
            )
        query_id = _id(row.get("query_id"), "query_id", source, number)
        doc_id = _id(row.get("doc_id"), "doc_id", source, number)
        yield (
            number,
            query_id,
            doc_id,
            row.get("grade"),
            _annotator(row.get("annotator"), source, number),
            row.get("people_grade"),
            {name: row.get(name) for name in DRAW_COLUMNS},
        )


def _csv_rows(text: str, source: str) -> Iterator[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    columns: dict[str, int] = {}
    start = 1
    try:
        for row in reader:
            number, start = start, reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip() for cell in row]
                columns = {name: i for i, name in reversed(list(enumerate(header)))}
                missing = [name for name in ("query_id", "doc_id", "grade") if name not in columns]
                if missing:
                    raise InputError(
                        f"no {' or '.join(missing)} column; the header has "
                        f"{', '.join(repr(name) for name in header)}. Keep the header row "
                        "`retrieval-gate label-queue` wrote (query_id, ..., grade, annotator)",
                        source=source,
                        line=number,
                    )
                continue
            cells = {
                name: spreadsheet_text(row[i]) if i < len(row) else ""
                for name, i in columns.items()
            }
            query_id = _id(cells["query_id"].strip() or None, "query_id", source, number)
            doc_id = _id(cells["doc_id"].strip() or None, "doc_id", source, number)
            annotator = cells.get("annotator", "").strip() or None
            drawn = {name: cells.get(name, "").strip() for name in DRAW_COLUMNS}
            people = cells.get("people_grade")
            yield number, query_id, doc_id, cells["grade"], annotator, people, drawn
    except csv.Error as error:
        raise InputError(f"not valid CSV: {error}", source=source, line=start) from None
    if header is None:
        raise InputError(
            "empty file: expected the header row and the rows of a label queue", source=source
        )


def _id(value: Any, name: str, source: str, line: int) -> str:
    if value is None:
        raise InputError(
            f"no {name}: every row of a label queue keeps the query_id and doc_id it was "
            "written with",
            source=source,
            line=line,
        )
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(
            f"{name} {value!r} must be a non-empty string, as the queue was written",
            source=source,
            line=line,
        )
    return str(value).strip()


def _annotator(value: Any, source: str, line: int) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            f"annotator {value!r} must be a name (a string) or null", source=source, line=line
        )
    return str(value).strip()


def _grade(value: Any, source: str, line: int, field: str = "grade") -> float | None:
    """The grade of a row (`field`: its column); None when it is left empty."""
    number = spreadsheet_number(value)
    if number is None:
        return None
    if not math.isfinite(number):
        raise InputError(
            f"{field} {value!r} is not a finite number; {FILL_HINT}", source=source, line=line
        )
    if number < 0:
        raise InputError(
            f"{field} {value!r} is negative; a judgment is a grade of 0 or more (below 0 "
            f"means pooled but not judged): {FILL_HINT}",
            source=source,
            line=line,
        )
    return number


def _rounded(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), DELTA_DIGITS) + 0.0  # + 0.0: no "-0.0"


def _queue_order(item: QueueItem) -> tuple[bool, bool, int, bool, float, str, str]:
    return (
        item.depends is not True,
        item.rank is None,
        item.rank or 0,
        item.delta is None,
        item.delta if item.delta is not None else 0.0,
        item.query_id,
        item.doc_id,
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return spreadsheet_cell(value) if isinstance(value, str) else str(value)
