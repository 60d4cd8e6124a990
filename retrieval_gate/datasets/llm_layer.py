"""The LLM judgment layer: a JSONL file of a judge's grades, kept apart from people's qrels."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.ids import object_array
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.wording import excerpt
from retrieval_gate.datasets.anchors import MAX_SOURCE_ID, SPAN_HASH_DIGITS, Anchor
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import json_lines

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig

LAYER_SUFFIX = ".llm.jsonl"
_FIELDS = ("query", "doc", "grade", "model", "prompt_sha256", "answer", "time")
MAX_GRADE = 3


@dataclass(frozen=True)
class LlmJudgment:
    """One pair graded by a judge: its grade, the judge (model, prompt sha256), its raw answer
    and when it was given (UTC, ISO 8601); `confidence` is the probability the judge gave its
    grade, when the endpoint returned log-probabilities. The rest say which judge it was
    (`identity`); rows written before they were recorded have none."""

    query: str
    doc: str
    grade: int
    model: str
    prompt_sha256: str
    answer: str
    time: str
    confidence: float | None = None
    answered_by: str = ""
    """The response's `model`: the model behind the configured name when it answered."""
    system_fingerprint: str = ""
    """The response's `system_fingerprint`, where the endpoint sends one."""
    temperature: float | None = None
    max_tokens: int | None = None
    logprobs: bool | None = None
    anchor: Anchor | None = None
    """The text the judge read: the chunk's source, span and hash when `judge` graded a
    chunk of a chunked corpus (computed from the corpus); None in an unchunked corpus and
    in rows written before anchors were recorded."""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """(query, doc, model, prompt sha256, the anchor's hash or ""): a layer holds one row
        per key, so a chunk id a re-chunk gave to other text keeps both texts' grades."""
        held = self.anchor.hash if self.anchor is not None else ""
        return (self.query, self.doc, self.model, self.prompt_sha256, held)

    @property
    def judge(self) -> tuple[str, str]:
        """(model, prompt sha256)."""
        return (self.model, self.prompt_sha256)

    @property
    def identity(self) -> JudgeIdentity:
        """The whole judge: configured name, prompt, answering model, fingerprint, settings."""
        return JudgeIdentity(
            self.model,
            self.prompt_sha256,
            self.answered_by,
            self.system_fingerprint,
            self.temperature,
            self.max_tokens,
            self.logprobs,
        )


def layer_path(config: GateConfig) -> Path:
    """Where `config`'s judge writes its layer: judge.output, else beside the qrels as
    <qrels name>.llm.jsonl, else (qrels from ir_datasets) in .retrieval-gate/<name>/."""
    if config.judge is not None and config.judge.output:
        return config.resolve(config.judge.output)
    spec = config.dataset
    qrels: Path | None = None
    if spec.qrels:
        qrels = config.resolve(spec.qrels)
    elif spec.path:
        qrels = config.resolve(spec.path) / "qrels" / f"{spec.split}.tsv"
    if qrels is None:
        return config.resolve(f".retrieval-gate/{config.name}/judgments{LAYER_SUFFIX}")
    name = qrels.name
    for suffix in (".gz", ".tsv", ".txt", ".jsonl", ".qrels"):
        name = name.removesuffix(suffix)
    return qrels.with_name(name + LAYER_SUFFIX)


def read_layer(path: str | Path) -> tuple[LlmJudgment, ...]:
    """Every row of a judgment layer, in file order. A malformed row, or a key given twice, is
    an InputError naming the line."""
    source = str(path)
    if not Path(path).is_file():
        raise InputError(
            "no LLM judgment layer here: run `retrieval-gate judge` first, or set judge.output",
            source=source,
        )
    rows: list[LlmJudgment] = []
    seen: dict[tuple[str, str, str, str, str], int] = {}
    for line, raw in json_lines(path):
        row = _row(raw, source, line)
        if row.key in seen:
            raise InputError(
                f"query {row.query!r}, doc {row.doc!r} graded twice by the same judge "
                f"(first on line {seen[row.key]}); keep one line per pair and judge",
                source=source,
                line=line,
            )
        seen[row.key] = line
        rows.append(row)
    return tuple(rows)


def layer_rows(path: str | Path) -> Iterator[tuple[int, LlmJudgment]]:
    """(line number, row) of a judgment layer as read, one at a time: a malformed row is an
    InputError naming the line. Unlike `read_layer`, a key given twice is not looked for."""
    source = str(path)
    for line, raw in json_lines(path):
        yield line, _row(raw, source, line)


def layer_line(row: LlmJudgment) -> str:
    """`row` as the layer writes it: one JSON line, ending with a newline."""
    return _line(row)


def write_layer(path: str | Path, rows: Iterable[LlmJudgment]) -> int:
    """Add `rows` to the layer at `path` (a row with the key of an existing one replaces it),
    sorted by key, atomically; returns the rows the file holds. The rest of the file is
    kept as it was: the layer only grows."""
    path = Path(path)
    held = {row.key: row for row in (read_layer(path) if path.is_file() else ())}
    held.update((row.key, row) for row in rows)
    ordered = [held[key] for key in sorted(held)]
    write_text_atomic(path, (_line(row) for row in ordered))
    return len(ordered)


def judges_of(rows: Sequence[LlmJudgment]) -> tuple[tuple[str, str], ...]:
    """The (model, prompt sha256) judges a layer holds, sorted."""
    return tuple(sorted({row.judge for row in rows}))


def identities_of(rows: Iterable[LlmJudgment]) -> tuple[JudgeIdentity, ...]:
    """The whole judges (`LlmJudgment.identity`) of `rows`, sorted."""
    return tuple(sorted({row.identity for row in rows}, key=lambda found: found.sort_key))


def layer_qrels(
    rows: Sequence[LlmJudgment],
    query_ids: Sequence[str],
    *,
    judge: tuple[str, str],
    source: str = "<llm layer>",
) -> Qrels:
    """The grades of one judge (model, prompt sha256) as qrels over `query_ids` (sorted, as
    a Dataset's): rows of other judges, or of queries outside the set, are left out."""
    known = set(query_ids)
    kept = [row for row in rows if row.judge == judge and row.query in known]
    query_array = object_array(sorted(known))
    position = {q: i for i, q in enumerate(query_array.tolist())}
    query = np.asarray([position[row.query] for row in kept], dtype=np.int64)
    docs = object_array([row.doc for row in kept])
    grades = np.asarray([float(row.grade) for row in kept], dtype=np.float64)
    return Qrels(query_array, query, docs, grades, source)


def _row(raw: dict[str, Any], source: str, line: int) -> LlmJudgment:
    missing = [name for name in _FIELDS if name not in raw]
    if missing:
        raise InputError(
            f"a judgment layer row needs {', '.join(_FIELDS)}; missing {', '.join(missing)}",
            source=source,
            line=line,
        )
    for name in ("query", "doc", "model", "prompt_sha256", "answer", "time"):
        if not isinstance(raw[name], str) or (name != "answer" and not raw[name]):
            raise InputError(f"{name} must be a non-empty string", source=source, line=line)
    grade = raw["grade"]
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
        raise InputError(
            f"grade {grade!r} must be a whole number from 0 to {MAX_GRADE}",
            source=source,
            line=line,
        )
    confidence = raw.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not (math.isfinite(confidence) and 0 <= confidence <= 1)
    ):
        raise InputError(
            f"confidence {confidence!r} must be a probability (0 to 1) or null",
            source=source,
            line=line,
        )
    return LlmJudgment(
        raw["query"],
        raw["doc"],
        grade,
        raw["model"],
        raw["prompt_sha256"],
        raw["answer"],
        raw["time"],
        None if confidence is None else float(confidence),
        **_identity_fields(raw, source, line),
        anchor=_anchor(raw.get("anchor"), source, line),
    )


def _anchor(value: object, source: str, line: int) -> Anchor | None:
    """A row's recorded anchor: [source, start, end, hash] as `judge` writes it, or absent."""
    if value is None:
        return None
    fits = (
        isinstance(value, list)
        and len(value) == 4
        and isinstance(value[0], str)
        and 0 < len(value[0]) <= MAX_SOURCE_ID
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value[1:3])
        and 0 <= value[1] <= value[2]
        and isinstance(value[3], str)
        and len(value[3]) == SPAN_HASH_DIGITS
        and all(c in "0123456789abcdef" for c in value[3])
    )
    if not fits:
        raise InputError(
            f"anchor {_shown(value)} must be [source id, start, end, hash] (a source id of 1 to "
            f"{MAX_SOURCE_ID} characters, 0 <= start <= end, {SPAN_HASH_DIGITS} lowercase hex "
            "digits) as `retrieval-gate judge` writes it; remove the field and the row is "
            "anchored where the baseline's chunking had its doc",
            source=source,
            line=line,
        )
    assert isinstance(value, list)
    return Anchor(value[0], value[1], value[2], value[3])


def _identity_fields(raw: dict[str, Any], source: str, line: int) -> dict[str, Any]:
    """The judge's identity fields of a row (absent in rows of older versions: not recorded)."""
    found: dict[str, Any] = {}
    for name in ("answered_by", "system_fingerprint"):
        value = raw.get(name, "")
        if not isinstance(value, str):
            raise InputError(
                f"{name} {_shown(value)} must be a string (the model the endpoint named) or absent",
                source=source,
                line=line,
            )
        found[name] = value
    temperature = raw.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not (math.isfinite(temperature) and temperature >= 0)
    ):
        raise InputError(
            f"temperature {_shown(temperature)} must be a number, 0 or more, or absent",
            source=source,
            line=line,
        )
    max_tokens = raw.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise InputError(
            f"max_tokens {_shown(max_tokens)} must be a whole number, 1 or more, or absent",
            source=source,
            line=line,
        )
    logprobs = raw.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise InputError(
            f"logprobs {_shown(logprobs)} must be true, false or absent", source=source, line=line
        )
    found["temperature"] = None if temperature is None else float(temperature)
    found["max_tokens"] = max_tokens
    found["logprobs"] = logprobs
    return found


def _shown(value: object) -> str:
    return excerpt(repr(value), 60)


_IDENTITY_FIELDS = ("answered_by", "system_fingerprint", "temperature", "max_tokens", "logprobs")


def _line(row: LlmJudgment) -> str:
    # The identity fields are written only when recorded, so a row of an older version is
    # rewritten byte for byte as it was read.
    document = asdict(row)
    for name in (*_IDENTITY_FIELDS, "anchor"):
        if document[name] in ("", None):
            del document[name]
    if row.anchor is not None:
        anchor = row.anchor
        document["anchor"] = [anchor.source, anchor.start, anchor.end, anchor.hash]
    # ensure_ascii: a grade's raw answer may hold any character; the file stays plain ASCII.
    return json.dumps(document, ensure_ascii=True, separators=(", ", ": ")) + "\n"
