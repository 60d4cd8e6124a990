"""A labelled set written from a config's corpus: the LLM writes queries, the judge keeps them."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.model import Document
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.judging.calls import Answers, Request, ask_all
from retrieval_gate.judging.pool import document_text
from retrieval_gate.judging.prompt import Prompt, load_prompt, parse_grade
from retrieval_gate.judging.spend import cost_of
from retrieval_gate.judging.synthesis import (
    RESERVED,
    STYLES,
    WRITE_TOKENS,
    NearDuplicates,
    PlanItem,
    clean_query,
    plan,
    strata_of,
    stratified_order,
    writing_messages,
)

if TYPE_CHECKING:
    from retrieval_gate.execution.progress import Progress
    from retrieval_gate.judging.client import ChatClient

GRADE_TOKENS = 4
"""Most tokens of a grade: a single digit."""
MIN_RATE = 0.05
"""The lowest share of kept queries a batch is sized for: when the judge keeps almost none,
batches stay at twenty times what is still wanted rather than the whole plan."""
SET_CONFIG = "retrieval-gate.yaml"
_LISTED_FAILURES = 5


@dataclass(frozen=True)
class SynthesisOptions:
    """What `synthesize` was asked for."""

    out: Path
    queries: int = 200
    styles: tuple[str, ...] = tuple(STYLES)
    stratify: str | None = None
    seed: int = 0
    min_grade: int = 2
    """Grade 2 (the judge's "highly relevant": the document answers the query) or more: a
    query its own source only relates to (1) would enter the qrels at the top grade."""
    force: bool = False


@dataclass(frozen=True)
class SyntheticQuery:
    """A kept query: its text, style, source document, stratum, and the judge's grade."""

    text: str
    style: str
    source_doc: str
    stratum: str | None
    grade: int


@dataclass
class Tally:
    """What happened to the queries asked for."""

    asked: int = 0
    written: int = 0
    """Answers that held a usable query."""
    unusable: int = 0
    """Answers that did not (empty, several paragraphs, control characters)."""
    not_relevant: int = 0
    """Graded below the minimum grade against their own source, or not graded at all."""
    duplicates: int = 0
    failed: int = 0
    """Requests that failed after their retries."""
    requested: int = 0
    """Requests sent (writing and grading), retries not counted."""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    kept: int = 0

    @property
    def unused(self) -> int:
        """Queries written past the last one needed (a batch is written at once)."""
        rejected = self.unusable + self.not_relevant + self.duplicates + self.failed
        return self.asked - self.kept - rejected


@dataclass(frozen=True, eq=False)
class Synthesis:
    """The kept queries (numbered in plan order), what happened to the rest, the files."""

    kept: tuple[SyntheticQuery, ...]
    tally: Tally
    planned: int
    documents: int
    strata: Mapping[str, int]
    """Documents per stratum in the corpus."""
    cost: float
    files: tuple[Path, ...] = ()
    stopped: str = ""
    """Why it stopped before enough queries were kept (a budget), or ""."""
    warnings: tuple[str, ...] = field(default_factory=tuple)


def synthesize(
    config: GateConfig,
    options: SynthesisOptions,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Synthesis:
    """Write up to `options.queries` queries from the config's corpus with its judge, keep
    those the judge grades relevant to their source and that repeat no kept query, and write
    the labelled set into `options.out`. A dry run plans and sends nothing."""
    from retrieval_gate.datasets.files import read_corpus
    from retrieval_gate.judging.client import ChatClient

    judge = _judge_of(config)
    corpus_path = corpus_file(config)
    # A document with neither title nor text has nothing to write a query from.
    corpus = {d: doc for d, doc in read_corpus(corpus_path).items() if document_text(doc)}
    _check_options(options, corpus, corpus_path)
    strata = strata_of(corpus, options.stratify)
    items = plan(stratified_order(strata, options.seed), options.styles)
    counts = dict(sorted(Counter(strata.values()).items()))
    if dry_run:
        return Synthesis((), Tally(), len(items), len(corpus), counts, 0.0)
    _check_out(options)
    prompt = load_prompt(config.resolve(judge.rubric) if judge.rubric else None)
    client = ChatClient(judge)
    kept: list[SyntheticQuery] = []
    tally = Tally()
    try:
        stopped = _run(client, prompt, corpus, strata, items, options, kept, tally, progress)
    except (KeyboardInterrupt, GateError):  # what was paid for is kept
        if kept:
            write_set(config, options, kept, corpus_path)
        raise
    finally:
        client.close()
    warnings = []
    if len(kept) < options.queries and not stopped:
        warnings.append(
            f"kept {len(kept)} of the {options.queries} queries asked for: every document was "
            "asked for a query in every style; add styles, or a larger corpus"
        )
    files = write_set(config, options, kept, corpus_path) if kept else ()
    if not kept:
        raise GateError(
            f"no query was kept of {tally.asked} asked for ({_rejections(tally)}); check the "
            "judge block's model and the corpus"
        )
    return Synthesis(
        tuple(kept), tally, len(items), len(corpus), counts, spent(judge, tally), files, stopped,
        tuple(warnings),
    )  # fmt: skip


def corpus_file(config: GateConfig) -> Path:
    """The corpus.jsonl the config's dataset names: dataset.corpus, else the BEIR folder's."""
    spec = config.dataset
    if spec.corpus:
        path = config.resolve(spec.corpus)
    elif spec.path:
        path = config.resolve(spec.path) / "corpus.jsonl"
    else:
        raise InputError(
            "synthesize writes queries from a corpus.jsonl: set dataset.corpus, or dataset.path "
            "to a BEIR folder that has one",
            source=str(config.path),
        )
    if not path.is_file():
        raise InputError(
            f"no corpus at {path}: set dataset.corpus to the corpus.jsonl to write queries from",
            source=str(config.path),
        )
    return path


def spent(judge: JudgeConfig, tally: Tally) -> float:
    """What the calls cost at judge.prices."""
    return cost_of(judge.prices, tally.prompt_tokens, tally.completion_tokens)


def estimated_calls(planned: int, wanted: int) -> tuple[int, int]:
    """The fewest calls a run makes (a query and a grade for each one kept) and the most
    (every planned query written and graded)."""
    return min(2 * wanted, 2 * planned), 2 * planned


def _judge_of(config: GateConfig) -> JudgeConfig:
    if config.judge is None:
        raise InputError(
            "synthesize needs an LLM: add a judge: block (base_url, model) to the config; it "
            "writes the queries and grades each against its source document",
            source=str(config.path),
        )
    return config.judge


def _check_options(
    options: SynthesisOptions, corpus: Mapping[str, Document], corpus_path: Path
) -> None:
    if not corpus:
        raise InputError(
            "the corpus has no document with a title or text to write queries from",
            source=str(corpus_path),
        )
    if options.stratify in RESERVED:
        raise InputError(
            f"--stratify {options.stratify}: that name is one of the query metadata fields "
            f"synthesize writes ({', '.join(RESERVED)}); stratify by a corpus metadata field"
        )
    present = sorted({field for document in corpus.values() for field in document.metadata})
    if options.stratify and options.stratify not in present:
        listing = ", ".join(map(one_line, present[:20])) or "none"
        raise InputError(
            f"--stratify {one_line(options.stratify)}: no document of the corpus has that "
            f"metadata field (fields present: {listing}; corpus.jsonl rows: "
            '{"_id", "title", "text", "metadata": {...}}); name one, or leave --stratify out',
            source=str(corpus_path),
        )


def _check_out(options: SynthesisOptions) -> None:
    existing = [options.out / name for name in ("queries.jsonl", SET_CONFIG)]
    if not options.force and any(path.exists() for path in existing):
        raise InputError(
            f"{options.out} already holds a labelled set: pass --force to replace it, or "
            "choose another --out"
        )


def _run(
    client: ChatClient,
    prompt: Prompt,
    corpus: Mapping[str, Document],
    strata: Mapping[str, str],
    items: Sequence[PlanItem],
    options: SynthesisOptions,
    kept: list[SyntheticQuery],
    tally: Tally,
    progress: Progress | None,
) -> str:
    """Write and grade the plan's queries in batches, in plan order, until enough are kept
    (into `kept`, counting in `tally`); return why a budget stopped it early, or "".

    The kept queries are the first `options.queries` of the plan that are usable, graded at
    least the minimum and repeat no earlier kept one, whatever the batch sizes: a batch
    only decides how many extra calls are made past the last one kept."""
    judge = client.config
    duplicates = NearDuplicates()
    position = 0
    while len(kept) < options.queries and position < len(items):
        wanted = options.queries - len(kept)
        # Sized by the share kept so far (all, before the first batch): few calls are spent
        # past the last query needed, and the result does not depend on the size.
        rate = max(tally.kept / tally.asked if tally.asked else 1.0, MIN_RATE)
        size = min(math.ceil(wanted / rate), len(items) - position)
        size, stopped = _affordable(judge, tally, size)
        if stopped:
            return stopped
        batch = items[position : position + size]
        position += size
        tally.asked += len(batch)
        written = _ask(client, tally, [
            Request(str(n), writing_messages(document_text(corpus[item.doc_id]), item.style),
                    WRITE_TOKENS)
            for n, item in enumerate(batch)
        ], progress)  # fmt: skip
        texts: dict[int, str] = {}
        for n in range(len(batch)):
            completion = written.completions.get(str(n))
            if completion is None:
                continue
            text = clean_query(completion.text)
            tally.written += text is not None
            if text is None:
                tally.unusable += 1
            elif duplicates.near(text):
                tally.duplicates += 1
            else:
                texts[n] = text
        graded = _ask(client, tally, [
            Request(str(n), prompt.messages(text, document_text(corpus[batch[n].doc_id])),
                    GRADE_TOKENS)
            for n, text in texts.items()
        ], progress)  # fmt: skip
        for n, text in texts.items():
            if len(kept) == options.queries:
                break
            completion = graded.completions.get(str(n))
            if completion is None:
                continue
            grade = parse_grade(completion.text)
            if grade is None or grade < options.min_grade:
                tally.not_relevant += 1
            elif duplicates.near(text):
                tally.duplicates += 1
            else:
                duplicates.add(text)
                item = batch[n]
                stratum = strata[item.doc_id] if options.stratify else None
                kept.append(SyntheticQuery(text, item.style, item.doc_id, stratum, grade))
                tally.kept += 1
    return ""


def _affordable(judge: JudgeConfig, tally: Tally, size: int) -> tuple[int, str]:
    """The batch size the budget still pays for (two calls a query), or why it pays for none."""
    budget = judge.budget
    if budget.calls is not None:
        left = (budget.calls - tally.calls) // 2
        if left < 1:
            return 0, f"judge.budget.calls ({budget.calls}) is spent"
        size = min(size, left)
    if budget.cost is not None and not tally.calls:
        return 1, ""  # one query first: its two calls price the rest
    if budget.cost is not None:
        paid = spent(judge, tally)
        per_call = paid / tally.calls
        if paid >= budget.cost:
            return 0, f"judge.budget.cost ({budget.cost:g}) is spent ({paid:.4g})"
        affordable = int((budget.cost - paid) / per_call) // 2 if per_call > 0 else size
        if affordable < 1:
            return 0, f"judge.budget.cost ({budget.cost:g}) is spent ({paid:.4g})"
        size = min(size, affordable)
    return size, ""


def _ask(
    client: ChatClient, tally: Tally, requests: list[Request], progress: Progress | None
) -> Answers:
    answers = ask_all(client, requests, progress=progress)
    tally.requested += len(requests)
    tally.calls += answers.calls
    for completion in answers.completions.values():
        tally.prompt_tokens += completion.prompt_tokens
        tally.completion_tokens += completion.completion_tokens
    failed = {failure.query_id for failure in answers.failures}
    tally.failed += len(failed)
    total = tally.requested
    if tally.failed > client.config.error_budget * total:
        listed = "\n".join(f"  {one_line(f.error)}" for f in answers.failures[:_LISTED_FAILURES])
        raise GateError(
            f"{tally.failed} of {total} requests to the judge failed, more than "
            f"judge.error_budget ({client.config.error_budget:g}) allows:\n{listed}\n"
            "fix the endpoint, or raise judge.error_budget if these failures are expected"
        )
    completions = {k: v for k, v in answers.completions.items() if k not in failed}
    return Answers(completions, answers.failures, answers.calls)


def _rejections(tally: Tally) -> str:
    return (
        f"{tally.unusable} unusable answers, {tally.not_relevant} not relevant, "
        f"{tally.duplicates} near-duplicates, {tally.failed} failed requests"
    )


def write_set(
    config: GateConfig,
    options: SynthesisOptions,
    kept: Sequence[SyntheticQuery],
    corpus_path: Path,
) -> tuple[Path, ...]:
    """Write queries.jsonl, qrels/test.tsv and a config gating the retriever on them."""
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.wording import json_text
    from retrieval_gate.judging.synthesis import query_ids

    out = options.out
    lines = []
    qrels = []
    for query_id, query in zip(query_ids(len(kept)), kept, strict=True):
        metadata: dict[str, Any] = {
            "style": query.style,
            "synthetic": True,
            "source_doc": query.source_doc,
        }
        if options.stratify is not None:
            metadata[options.stratify] = query.stratum
        row = {"_id": query_id, "text": query.text, "metadata": metadata}
        lines.append(json_text(row, indent=None) + "\n")
        qrels.append(f"{query_id}\t{query.source_doc}\t3\n")
    queries_path = out / "queries.jsonl"
    qrels_path = out / "qrels" / "test.tsv"
    config_path = out / SET_CONFIG
    write_text_atomic(queries_path, "".join(lines))
    write_text_atomic(qrels_path, "query-id\tcorpus-id\tscore\n" + "".join(qrels))
    write_text_atomic(config_path, set_config(config, options, corpus_path))
    return queries_path, qrels_path, config_path


def set_config(config: GateConfig, options: SynthesisOptions, corpus_path: Path) -> str:
    """The YAML of a config that gates the config's retriever on the synthetic set: its
    retriever, k, metrics and judge blocks as written (${VAR}s unexpanded), the corpus where
    it is, and slices by style (and by the stratification field)."""
    import yaml

    from retrieval_gate.config.loader import parse_yaml

    _, source = parse_yaml(config.path.read_text(encoding="utf-8-sig"), str(config.path))
    out = options.out
    slices = ["style"] + ([options.stratify] if options.stratify else [])
    data: dict[str, Any] = {
        "version": 1,
        "name": f"{config.name}-synthetic",
        "dataset": {"path": ".", "corpus": _relative(corpus_path, out)},
        "retriever": source["retriever"],
        "k": config.k,
        "metrics": source.get("metrics", list(config.metrics)),
        "slices": {"by": slices, "min_size": 20},
    }
    judge = dict(source.get("judge") or {})
    if judge:
        judge.pop("output", None)  # beside this set's qrels, not the human set's
        if judge.get("rubric"):
            judge["rubric"] = _relative(config.resolve(str(judge["rubric"])), out)
        data["judge"] = judge
    header = (
        "# A synthetic labelled set written by `retrieval-gate synthesize` (an LLM wrote each\n"
        "# query from one document, and graded it against that document): every query has one\n"
        "# relevant document, at grade 3; the rest of its top k is unjudged until pool-judged.\n"
        "# Synthetic queries share words with their source: they flatter lexical retrievers.\n"
        "# Replace them with real queries and human labels as those come.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _relative(path: Path, start: Path) -> str:
    """`path` relative to `start` with forward slashes, or absolute when there is no such
    path (another drive)."""
    try:
        return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def relocated_retriever(config: GateConfig, out: Path) -> bool:
    """Whether the retriever block may name paths that now resolve from `out`, not from the
    config's folder (a command, a Python module, a run file)."""
    kind = getattr(config.retriever, "type", "")
    return kind not in ("bm25", "http") and out.resolve() != config.base_dir.resolve()
