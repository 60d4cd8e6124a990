"""`judge`'s orchestration: pool the top k, estimate, grade through the runner, write the layer."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.model import Document, Query
from retrieval_gate.core.qrels import is_judged
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset, load_labels
from retrieval_gate.datasets.anchors import Anchor, dataset_anchors
from retrieval_gate.datasets.layer_anchors import of_chunking, stamped
from retrieval_gate.datasets.llm_layer import (
    LlmJudgment,
    identities_of,
    layer_path,
    read_layer,
    write_layer,
)
from retrieval_gate.errors import GateError
from retrieval_gate.judging.calls import settings_of
from retrieval_gate.judging.grading import Graded, Task, judge_fingerprint, tasks_of
from retrieval_gate.judging.pool import Pool, calibration_sample, passage_text, pool_pairs
from retrieval_gate.judging.prompt import Prompt, load_prompt
from retrieval_gate.judging.spend import Budget, Ledger, cost_of, estimated_prompt_tokens

if TYPE_CHECKING:
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.execution.runner import RunSettings
    from retrieval_gate.judging.grading import JudgeRetriever


@dataclass(frozen=True, eq=False)
class JudgePlan:
    """What `judge` would grade, before any call to the judge."""

    config: GateConfig
    judge: JudgeConfig
    prompt: Prompt
    layer: Path
    pool: Pool
    tasks: tuple[Task, ...]
    """Pairs to grade: pooled, with text, not yet in the layer for this judge."""
    in_layer: int
    """Pool pairs the layer already holds for this judge (model, prompt sha256)."""
    no_text: int
    """Pool pairs with no text anywhere: skipped."""
    human: Mapping[str, Mapping[str, float]]
    """People's grades, {query id: {doc: grade}}."""
    sources: tuple[str, ...]
    """Where the pooled rankings came from, one phrase each."""
    warnings: tuple[str, ...]
    held: tuple[Task, ...] = ()
    """The pool pairs the layer holds for this judge, with their text: graded again when the
    endpoint now answers as another judge (`run_judge`)."""
    anchors: Mapping[str, Anchor] = dataclasses.field(default_factory=dict)
    """Chunk id -> the text it holds, in a chunked corpus: each row written is anchored to
    it, and a row anchored to another chunking's text does not hold this chunk's pair."""


@dataclass(frozen=True)
class Estimate:
    """What grading the plan would spend: calls not answered by the cache, their tokens
    (prompt tokens estimated from characters / 4, completion tokens at judge.max_tokens, an
    upper bound) and their cost at judge.prices."""

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost: float


@dataclass(frozen=True)
class Agreement:
    """The judge against people on the pairs both graded: how many, and quadratic-weighted
    Cohen's kappa (NaN when undefined)."""

    pairs: int
    kappa: float


@dataclass(frozen=True, eq=False)
class Judged:
    """What a `judge` run did."""

    plan: JudgePlan
    graded: Graded
    ledger: Ledger
    rows: int
    """Rows the layer holds after the run."""
    agreement: Agreement
    """On the pairs of the config's qrels."""
    against: Agreement | None
    """On the pairs of the `against` qrels, when given."""
    regraded: Graded | None = None
    """The pairs graded again because the endpoint answered as another judge than the one
    whose rows the layer held for them (None: none were)."""
    judges: tuple[tuple[JudgeIdentity, int], ...] = ()
    """The judges whose rows the layer holds for the pool after the run, and how many pairs
    each graded: one, unless a re-grade could not finish."""


def plan_judging(
    config: GateConfig,
    *,
    run_path: str | Path | None = None,
    reference_path: str | Path | None = None,
    cache: bool = True,
    progress: TextIO | None = None,
) -> JudgePlan:
    """The pairs `config`'s judge grades: every query's pooled top judge.depth (default k)
    of the current run (the retriever, or `run_path`) and the reference (`reference_path`,
    else the committed baseline's top k), less what people judged (but for the calibration
    queries) and what the layer holds already."""
    judge = config.judge
    if judge is None:
        raise GateError(
            f"{config.path} has no `judge:` block: add one (base_url, model) to grade with an "
            "LLM; see docs/llm-labels.md"
        )
    prompt = load_prompt(config.resolve(judge.rubric) if judge.rubric else None)
    labels = load_labels(config.dataset, config.base_dir, judgments_required=False)
    human = labels.judgments.qrels(config.dataset.annotators.combine).to_dict()
    queries = _all_queries(labels.queries)
    depth = judge.depth or config.k
    warnings: list[str] = []
    current, hit_texts, source = _current(
        config, queries, labels.corpus, depth, run_path, cache, progress
    )
    rankings, sources = [current], [source]
    reference = _reference(config, depth, reference_path, warnings)
    if reference is not None:
        rankings.append(reference[0])
        sources.append(reference[1])
    judged = [q.id for q in queries if any(grade >= 0 for grade in human.get(q.id, {}).values())]
    # A null judge.seed (an endpoint without seeds) still draws the same sample every run.
    seed = 0 if judge.seed is None else judge.seed
    sample = calibration_sample(judged, judge.calibration_queries, seed)
    if queries and all(query.metadata.get("synthetic") is True for query in queries):
        # Their one judged document is the one they were written from, at the top grade:
        # agreeing with that says nothing about the judge, and regrading it costs a call each.
        sample = ()
        warnings.append(
            "every query is synthetic: no calibration sample (its only judged document is "
            "its source, at the top grade); the judge's labels stay provisional"
        )
    anchors = None
    if labels.corpus is not None:
        anchors = dataset_anchors(config.dataset, config.base_dir, labels.corpus).anchors
    return _plan(
        config, prompt, labels.corpus, human, queries, (rankings, sources), depth,
        sample, hit_texts, warnings, anchors=anchors or {},
    )  # fmt: skip


def plan_for_records(
    config: GateConfig,
    rankings: Sequence[tuple[Mapping[str, Sequence[str]], str]],
    *,
    dataset: Dataset,
) -> JudgePlan:
    """What `check` grades before it decides under gate.labels human+llm: every pair of each
    query's pooled top judge.depth (default k) of the two records compared (`rankings`:
    each one's top k and where it came from) that the layer lacks for this judge, people's
    pairs included, as the prediction-powered estimate scores every pair of the pool with the
    judge's labels (`gate/modes/assisted.pools_of`). `dataset` is the one `check` loaded: its
    queries, people's grades and corpus are not read again."""
    judge = config.judge
    assert judge is not None  # the schema requires a judge with human+llm
    prompt = load_prompt(config.resolve(judge.rubric) if judge.rubric else None)
    human = dataset.qrels.to_dict()
    depth = judge.depth or config.k
    # Every human-judged query's people-judged pairs of the pool are graded too (the estimate
    # scores the pool with the judge's labels alone); beyond the pool, nothing.
    sample = tuple(sorted({q.id for q in dataset.queries} & set(human)))
    return _plan(
        config, prompt, dataset.corpus, human, _all_queries(dataset.queries),
        ([top for top, _ in rankings], [source for _, source in rankings]), depth, sample,
        {}, [], beyond=False,
        anchors=dataset.anchors.anchors if dataset.anchors is not None else {},
    )  # fmt: skip


def _plan(
    config: GateConfig,
    prompt: Prompt,
    corpus: Mapping[str, Document] | None,
    human: Mapping[str, Mapping[str, float]],
    queries: Sequence[Query],
    pooled: tuple[Sequence[Mapping[str, Sequence[str]]], Sequence[str]],
    depth: int,
    sample: Sequence[str],
    hit_texts: Mapping[str, str],
    warnings: list[str],
    *,
    beyond: bool = True,
    anchors: Mapping[str, Anchor],
) -> JudgePlan:
    """The plan of grading the pool of `pooled` (rankings, where each came from): its pairs
    the layer lacks for this judge and whose text is known."""
    judge = config.judge
    assert judge is not None
    rankings, sources = pooled
    pool = pool_pairs(queries, human, rankings, depth, sample, beyond=beyond)
    layer = layer_path(config)
    rows = of_chunking(read_layer(layer) if layer.is_file() else (), anchors or None)
    held = {(row.query, row.doc, row.model, row.prompt_sha256) for row in rows}
    sha = prompt.sha256
    todo, kept, no_text = [], [], 0
    for pair in pool.pairs:
        text = passage_text(pair.doc, corpus, hit_texts)
        if (pair.query_id, pair.doc, judge.model, sha) in held:
            if text is not None:
                kept.append((pair, text))
        elif text is None:
            no_text += 1
        else:
            todo.append((pair, text))
    in_layer = len(pool.pairs) - len(todo) - no_text
    if no_text:
        warnings.append(
            f"no text: {plural(no_text, 'pair')} skipped (the document is not in "
            "dataset.corpus and the retriever returned no text for it)"
        )
    tasks = tuple(tasks_of(todo))
    return JudgePlan(
        config, judge, prompt, layer, pool, tasks, in_layer, no_text, human, tuple(sources),
        tuple(warnings), tuple(tasks_of(kept)), anchors,
    )  # fmt: skip


def estimate(plan: JudgePlan, store: ResultCache | None) -> Estimate:
    """What grading `plan` would spend; no call is made."""
    fp = judge_fingerprint(plan.judge, plan.prompt)
    calls = prompt_tokens = cached = 0
    for task in plan.tasks:
        if store is not None and store.get(fp, task.cache_text, 1) is not None:
            cached += 1
            continue
        calls += 1
        prompt_tokens += estimated_prompt_tokens(
            plan.prompt.messages(task.pair.query, task.passage)
        )
    completion_tokens = calls * plan.judge.max_tokens
    cost = cost_of(plan.judge.prices, prompt_tokens, completion_tokens)
    return Estimate(calls, cached, prompt_tokens, completion_tokens, cost)


def run_judge(
    plan: JudgePlan,
    *,
    budget: Budget,
    store: ResultCache | None = None,
    progress: TextIO | None = None,
    against: Mapping[str, Mapping[str, float]] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Judged:
    """Grade the plan's pairs and add them to the layer (written even when the budget, the
    error budget or Ctrl-C stopped the run: what was paid for is kept). Then, when the pool's
    rows were graded by more than one judge (the endpoint answered as another model, or a
    row predates identities), grade the others' pairs again under the judge the endpoint
    answers with now (`regrade`), within the same budget."""
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.judging.client import ChatClient
    from retrieval_gate.judging.grading import JudgeRetriever, grade_tasks

    judge = plan.judge
    ledger = Ledger(judge.prices, budget, judge.max_tokens)
    client = ChatClient(judge, environ)
    retriever = JudgeRetriever(client, plan.prompt, ledger, logprobs=judge.logprobs)
    settings = settings_of(judge)
    shown = make_progress(progress, enabled=True, unit="pair") if progress is not None else None
    try:
        graded = grade_tasks(retriever, plan.tasks, settings, cache=store, progress=shown)
        written = stamped(graded.rows, plan.anchors)
        rows = write_layer(plan.layer, written) if written or plan.layer.is_file() else 0
        if graded.interrupted:
            raise KeyboardInterrupt
        regraded = None
        if not ledger.stopped and not graded.stopped:
            regraded = regrade(plan, retriever, settings, store=store)
            if regraded is not None:
                rows = write_layer(plan.layer, stamped(regraded.rows, plan.anchors))
                if regraded.interrupted:
                    raise KeyboardInterrupt
    finally:
        retriever.close()
    layer = of_chunking(
        read_layer(plan.layer) if plan.layer.is_file() else (), plan.anchors or None
    )
    mine = [row for row in layer if row.judge == (judge.model, plan.prompt.sha256)]
    return Judged(
        plan,
        graded,
        ledger,
        rows,
        agreement_with(mine, plan.human),
        None if against is None else agreement_with(mine, against),
        regraded,
        judges_counted(pool_rows(plan, mine)),
    )


REGRADE_ROUNDS = 4
"""Most times `regrade` grades again (a probe and three rounds): an endpoint that keeps
switching models is reported."""


def regrade(
    plan: JudgePlan,
    retriever: JudgeRetriever,
    settings: RunSettings,
    *,
    store: ResultCache | None = None,
) -> Graded | None:
    """The pool's pairs graded again under one judge, or None when the layer's rows of the
    pool already share one. The judge is the one the endpoint answered with last (this run's
    latest answer); pairs whose row another judge graded are asked again, the cache
    refreshed (its answer is the old judge's), until every row agrees or REGRADE_ROUNDS
    rounds, the budget or an error stop it. A run that made no call yet first asks one pair
    of the older judges' (by the rows' times) to learn what the endpoint answers with now.
    What was graded is returned (the last grade of a pair winning); the caller writes it."""
    from retrieval_gate.judging.grading import grade_tasks

    tasks = {(task.pair.query_id, task.pair.doc): task for task in (*plan.held, *plan.tasks)}
    layer = of_chunking(
        read_layer(plan.layer) if plan.layer.is_file() else (), plan.anchors or None
    )
    current = {
        (row.query, row.doc): row
        for row in layer
        if row.judge == (plan.judge.model, plan.prompt.sha256) and (row.query, row.doc) in tasks
    }
    done: dict[tuple[str, str], LlmJudgment] = {}
    rounds: list[Graded] = []
    for _ in range(REGRADE_ROUNDS):
        judges = {row.identity for row in current.values()}
        if len(judges) < 2:
            break
        now = retriever.latest or max(current.values(), key=_newest).identity
        stale = [tasks[pair] for pair, row in sorted(current.items()) if row.identity != now]
        if retriever.latest is None:
            stale = stale[:1]  # a probe: the newest row's judge is a guess until one answers
        graded = grade_tasks(retriever, stale, settings, cache=store, refresh=True)
        rounds.append(graded)
        for row in graded.rows:
            current[row.query, row.doc] = done[row.query, row.doc] = row
        if graded.interrupted or graded.stopped or retriever.ledger.stopped:
            break
    if not rounds:
        return None
    last = rounds[-1]
    return Graded(
        tuple(done[pair] for pair in sorted(done)),
        0,
        tuple(failure for graded in rounds for failure in graded.failures),
        last.left,
        last.stopped,
        interrupted=last.interrupted,
    )


def pool_rows(plan: JudgePlan, rows: Sequence[LlmJudgment]) -> list[LlmJudgment]:
    """Of `rows`, those of the plan's pool pairs."""
    pairs = {(pair.query_id, pair.doc) for pair in plan.pool.pairs}
    return [row for row in rows if (row.query, row.doc) in pairs]


def judges_counted(rows: Sequence[LlmJudgment]) -> tuple[tuple[JudgeIdentity, int], ...]:
    """The judges of `rows` (`LlmJudgment.identity`) and how many rows each graded, sorted."""
    counts = Counter(row.identity for row in rows)
    return tuple((found, counts[found]) for found in identities_of(rows))


def _newest(row: LlmJudgment) -> tuple[str, tuple[str, ...]]:
    # ISO 8601 UTC times sort as text; a tie goes to the greater identity, the same every run.
    return (row.time, row.identity.sort_key)


def agreement_with(
    rows: Sequence[LlmJudgment], human: Mapping[str, Mapping[str, float]]
) -> Agreement:
    """The judge's `rows` against people's grades on the pairs both graded."""
    from retrieval_gate.stats.calibration import judge_kappa

    people, judge = [], []
    for row in rows:
        grades = human.get(row.query, {})
        if is_judged(grades, row.doc):
            people.append(grades[row.doc])
            judge.append(float(row.grade))
    if not people:
        return Agreement(0, math.nan)
    return Agreement(len(people), judge_kappa(people, judge))


def _all_queries(queries: Sequence[Query]) -> list[Query]:
    """Every query of the queries file, judged by people or not (the judge needs no labels),
    the first of a repeated id kept."""
    first: dict[str, Query] = {}
    for query in queries:
        first.setdefault(query.id, query)
    return list(first.values())


def _current(
    config: GateConfig,
    queries: Sequence[Query],
    corpus: Mapping[str, Document] | None,
    depth: int,
    run_path: str | Path | None,
    cache: bool,
    progress: TextIO | None,
) -> tuple[dict[str, list[str]], dict[str, str], str]:
    """The current run's top `depth` of every query, the texts its hits carried, and a phrase
    saying where it came from."""
    from retrieval_gate.adapters import build_retriever
    from retrieval_gate.adapters.interface import fingerprint
    from retrieval_gate.adapters.run_file import RunFileRetriever
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.execution.progress import make_progress
    from retrieval_gate.execution.runner import check_budget, read_saved, run_queries
    from retrieval_gate.metrics.top_k import top_k_ids
    from retrieval_gate.pipeline.execute import run_settings
    from retrieval_gate.readers import read_run

    if run_path is not None:
        top = top_k_ids(read_run(Path(run_path)), depth)
        return {q: list(docs) for q, docs in top.items()}, {}, f"the current run: {run_path}"
    retriever = build_retriever(config.retriever, base_dir=config.base_dir, corpus=corpus)
    description = dict(retriever.describe())
    settings = run_settings(config)
    if isinstance(retriever, RunFileRetriever):
        retriever.close()
        result = read_saved(retriever.run, queries, depth, fingerprint(description))
    else:
        cached = cache and bool(getattr(retriever, "cacheable", False))
        store = ResultCache(config.resolve(config.cache)) if cached else None
        try:
            result = run_queries(
                retriever,
                queries,
                depth,
                settings,
                cache=store,
                progress=make_progress(progress, enabled=True) if progress is not None else None,
            )
        finally:
            retriever.close()
            if store is not None:
                store.close()
    check_budget(result, len(queries), settings.error_budget)
    ranking = {q: [hit.doc_id for hit in hits] for q, hits in result.hits.items()}
    texts = {hit.doc_id: hit.text for hits in result.hits.values() for hit in hits if hit.text}
    return ranking, texts, f"the current run: the {description.get('type', '')} retriever"


def _reference(
    config: GateConfig, depth: int, reference_path: str | Path | None, warnings: list[str]
) -> tuple[dict[str, list[str]], str] | None:
    """The reference's top `depth` and where it came from: `reference_path` (a run file),
    else the committed baseline's stored top k, else None."""
    from retrieval_gate.gate.baseline.file import read_baseline
    from retrieval_gate.metrics.top_k import top_k_ids
    from retrieval_gate.readers import read_run

    if reference_path is not None:
        top = top_k_ids(read_run(Path(reference_path)), depth)
        return {q: list(docs) for q, docs in top.items()}, f"the reference: {reference_path}"
    path = config.resolve(config.baseline)
    if not path.exists():
        warnings.append(
            f"no baseline at {path}: pooled from the current run only (give --reference-run "
            "to pool another run's top k too)"
        )
        return None
    baseline = read_baseline(path)
    if baseline.fingerprints.k < depth:
        warnings.append(
            f"{path} holds each query's top {baseline.fingerprints.k}, not the top {depth}: "
            "the reference adds that much to the pool"
        )
    cut = {q: list(docs)[:depth] for q, docs in baseline.top_k.items()}
    return cut, f"the reference: the baseline's top k ({path})"
