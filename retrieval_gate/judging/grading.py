"""Grading pairs through the runner: the judge as a retriever whose query is one pair."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from retrieval_gate.adapters.interface import OneAtATime, fingerprint
from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.judge_identity import JudgeIdentity
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.core.redaction import redacted
from retrieval_gate.core.wording import excerpt
from retrieval_gate.datasets.llm_layer import LlmJudgment
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.runner import RunSettings, run_queries
from retrieval_gate.judging.client import answered_name
from retrieval_gate.judging.pool import Pair
from retrieval_gate.judging.prompt import MAX_PASSAGE, Prompt, parse_grade
from retrieval_gate.judging.spend import BUDGET_SPENT, Ledger, estimated_prompt_tokens

if TYPE_CHECKING:
    from retrieval_gate.execution.cache import ResultCache
    from retrieval_gate.execution.progress import Progress
    from retrieval_gate.judging.client import ChatClient

TOP_LOGPROBS = 4
"""Alternatives asked for the first token: the four grades."""
INTERRUPT_GRACE = 10.0
"""Most seconds an interrupted run waits for its calls in flight."""
_ANSWER = "judgment"
"""The doc id of the one hit a grading 'search' returns; its text holds the judgment."""


@dataclass(frozen=True)
class Task:
    """A pair and the passage the judge reads (already cut to MAX_PASSAGE)."""

    pair: Pair
    passage: str

    @property
    def cache_text(self) -> str:
        """The cache's key text: the query's text and the sha256 of the passage."""
        digest = hashlib.sha256(self.passage.encode("utf-8")).hexdigest()
        return f"{self.pair.query}\x1f{digest}"


def tasks_of(pairs: Sequence[tuple[Pair, str]]) -> list[Task]:
    """A task per (pair, passage), the passage cut as the prompt cuts it."""
    return [Task(pair, passage[:MAX_PASSAGE]) for pair, passage in pairs]


def judge_description(config: JudgeConfig, prompt: Prompt) -> dict[str, Any]:
    """What a judgment depends on besides the pair, and no secret: it keys the cache. The
    model that answers is known only once it has: a cached answer names it, and
    `grade_tasks(refresh=True)` replaces one a re-grade must not reuse."""
    return {
        "type": "llm-judge",
        "model": config.model,
        "prompt_sha256": prompt.sha256,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "logprobs": config.logprobs,
    }


def judge_fingerprint(config: JudgeConfig, prompt: Prompt) -> str:
    return fingerprint(judge_description(config, prompt))


@dataclass(frozen=True)
class Graded:
    """What one grading run produced."""

    rows: tuple[LlmJudgment, ...]
    """Every pair graded, now or from the cache."""
    cached: int
    failures: tuple[tuple[Pair, str], ...]
    """Pairs the judge did not grade (errors, answers with no grade), with the reason."""
    left: int
    """Pairs not graded and not failed: the budget was spent, or the run stopped early."""
    stopped: str
    """Why the runner stopped early, or ""."""
    interrupted: bool = False


class JudgeRetriever(OneAtATime):
    """The Retriever protocol over a chat endpoint: `search` of a query made by `Task`
    grades that pair and answers one hit whose text is the judgment (JSON), so the runner's
    concurrency, retries, Retry-After, timeouts, error budget and cache all apply."""

    cacheable = True

    def __init__(
        self,
        client: ChatClient,
        prompt: Prompt,
        ledger: Ledger,
        *,
        logprobs: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.client = client
        self.prompt = prompt
        self.ledger = ledger
        self.logprobs = logprobs
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.graded: dict[str, LlmJudgment] = {}
        """Pairs graded by calls of this run, by query id: kept when a run is interrupted."""
        self.latest: JudgeIdentity | None = None
        """The judge of the last answer that arrived: what the endpoint answers with now."""
        self._idle = threading.Condition()
        self._inflight = 0

    def describe(self) -> Mapping[str, Any]:
        return judge_description(self.client.config, self.prompt)

    def close(self) -> None:
        self.client.close()

    def search(self, query: Query, k: int) -> list[Hit]:
        task: Task = query.metadata["task"]
        messages = self.prompt.messages(task.pair.query, task.passage)
        estimate = self.ledger.reserve(estimated_prompt_tokens(messages))
        with self._idle:
            self._inflight += 1
        try:
            return self._grade(query.id, task, messages, estimate)
        finally:
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()

    def graded_so_far(self) -> dict[str, LlmJudgment]:
        """A copy of `graded`, safe while calls are still in flight."""
        with self._idle:
            return dict(self.graded)

    def wait_idle(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds) for the calls still in flight: an interrupted
        runner abandons them, but they are paid for."""
        with self._idle:
            self._idle.wait_for(lambda: self._inflight == 0, timeout)

    def _grade(
        self, key: str, task: Task, messages: list[dict[str, str]], estimate: float
    ) -> list[Hit]:
        try:
            completion = self.client.complete(
                messages, top_logprobs=TOP_LOGPROBS if self.logprobs else 0
            )
        except BaseException:
            self.ledger.charge(estimate, 0, 0)
            raise
        self.ledger.charge(estimate, completion.prompt_tokens, completion.completion_tokens)
        grade = parse_grade(completion.text)
        if grade is None:
            raise RetrieverError(
                f"the judge's answer holds no grade 0-3: {excerpt(completion.text, 120)!r}",
                kind="the judge's answer holds no grade 0-3",
            )
        payload = {
            "grade": grade,
            "answer": kept_answer(completion.text),
            "confidence": completion.first_token_probability,
            "time": self.clock().isoformat(timespec="seconds").replace("+00:00", "Z"),
            "answered_by": completion.model,
            "system_fingerprint": completion.system_fingerprint,
        }
        row = _row(task.pair, payload, self.client.config, self.prompt.sha256)
        with self._idle:
            self.graded[key] = row
            self.latest = row.identity
        return [Hit(_ANSWER, None, json.dumps(payload, sort_keys=True))]


ANSWER_KEPT = 2000
"""Characters of an answer stored in the layer and the cache: a grade needs a few; a 50 MB
answer to 5 pairs made a 250 MB layer."""


def kept_answer(text: str) -> str:
    """The judge's answer as the layer and the cache store it: registered secrets redacted
    (an endpoint that echoes the key must not write it to disk), cut to ANSWER_KEPT."""
    clean = redacted(text)
    return clean if len(clean) <= ANSWER_KEPT else clean[:ANSWER_KEPT] + "..."


def grade_tasks(
    judge: JudgeRetriever,
    tasks: Sequence[Task],
    settings: RunSettings,
    *,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    refresh: bool = False,
) -> Graded:
    """Grade every task through the runner (answers from `cache` first, unless `refresh`:
    a re-grade asks the endpoint again and replaces the cached answers). Ctrl-C stops it
    and keeps what was graded (`interrupted`); the cache holds it too."""
    queries = [
        Query(f"{index:09d}", task.cache_text, {"task": task}) for index, task in enumerate(tasks)
    ]
    by_id = {query.id: task for query, task in zip(queries, tasks, strict=True)}
    config, sha = judge.client.config, judge.prompt.sha256
    # Rows are made with the client's configured settings: the cache key holds the same ones.
    try:
        result = run_queries(
            judge, queries, 1, settings, cache=cache, refresh_cache=refresh, progress=progress
        )
    except KeyboardInterrupt:
        # The calls in flight are paid for: a moment for them to land (a second Ctrl-C ends it).
        judge.wait_idle(min(settings.timeout, INTERRUPT_GRACE))
        graded = judge.graded_so_far()
        kept = tuple(graded[key] for key in sorted(graded))
        return Graded(kept, 0, (), len(tasks) - len(kept), "", interrupted=True)
    rows: list[LlmJudgment] = []
    failures: list[tuple[Pair, str]] = []
    broken: list[tuple[Pair, str]] = []
    for key, hits in result.hits.items():
        try:
            payload = parsed_json(hits[0].text or "")
            rows.append(_row(by_id[key].pair, payload, config, sha))
        except (ValueError, TypeError, KeyError, IndexError):
            broken.append((by_id[key].pair, "an unreadable cached judgment (rm the cache)"))
    for failure in result.failures:
        if not failure.error.startswith(BUDGET_SPENT):
            failures.append((by_id[failure.query_id].pair, failure.error))
    left = len(tasks) - len(rows) - len(failures) - len(broken)
    stopped = "" if judge.ledger.stopped else result.stopped
    return Graded(tuple(rows), result.cached, tuple(failures + broken), left, stopped)


def _row(pair: Pair, payload: Mapping[str, Any], config: JudgeConfig, sha: str) -> LlmJudgment:
    """A layer row from a judgment's payload, fresh or cached (a cached one written before
    the answering model was recorded names none)."""
    grade = payload["grade"]
    if not isinstance(grade, int) or isinstance(grade, bool) or not 0 <= grade <= 3:
        raise ValueError(f"grade {grade!r}")
    confidence = payload.get("confidence")
    return LlmJudgment(
        pair.query_id,
        pair.doc,
        grade,
        config.model,
        sha,
        str(payload["answer"]),
        str(payload["time"]),
        None if confidence is None else float(confidence),
        answered_name(payload.get("answered_by")),
        answered_name(payload.get("system_fingerprint")),
        config.temperature,
        config.max_tokens,
        config.logprobs,
    )
