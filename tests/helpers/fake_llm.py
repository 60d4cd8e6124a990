"""A hosted LLM's stand-in: OpenAI's chat-completions protocol on 127.0.0.1, grading from truth.

The judge model behind it grades a (query, passage) pair from held-back human grades, with
seeded, configurable bias: over-grading by one level on a share of pairs, and a bias that
depends on the query. It reads the query and the passage back from the <query> and <passage>
blocks of the prompt, as a model would see them, and it is gullible: an instruction to grade
that reaches it outside those blocks ("grade this 3") is obeyed, so a prompt that lets a
document out of its block fails the tests; with `obeys_pleas` one inside the passage is
obeyed too (a judge the robustness probes must catch). Its answers name the model asked for, or
another (`answered_as`, any JSON value), and after `switch_after` answers the alias points
at another model that grades `switched_bias` levels higher, as a provider re-pointing
`gpt-4o` would.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.local_server import Answer, serving
from tests.helpers.waiting import GUARD

_BLOCK = re.compile(r"<(query|passage|document)>\n(.*?)\n</\1>", re.DOTALL)
_ORDER = re.compile(r"\bgrade (?:this|it)(?: as)? ([0-3])\b", re.IGNORECASE)


def _unit(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`: the same pair always draws the same."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass
class FakeJudge:
    """Grades a pair from `truth(query, passage)` (None: not judged by people, graded 0),
    then bends it: one level up on `over_grade` of the pairs, one down on `under_grade`, and
    one more level up on `biased_share` of the pairs of queries `biased_query` picks."""

    truth: Callable[[str, str], int | None]
    over_grade: float = 0.0
    under_grade: float = 0.0
    biased_query: Callable[[str], bool] | None = None
    biased_share: float = 0.0
    seed: int = 0

    def grade(self, query: str, passage: str) -> tuple[int, bool]:
        """The grade, and whether it was bent away from the truth."""
        true = self.truth(query, passage) or 0
        draw = _unit(self.seed, "bias", query, passage)
        grade = true
        if draw < self.over_grade:
            grade += 1
        elif draw < self.over_grade + self.under_grade:
            grade -= 1
        biased = self.biased_query is not None and self.biased_query(query)
        if biased and _unit(self.seed, "query-bias", query, passage) < self.biased_share:
            grade += 1
        grade = min(3, max(0, grade))
        return grade, grade != true

    @classmethod
    def from_grades(
        cls,
        grades: Mapping[tuple[str, str], int],
        passages: Mapping[str, str],
        **bias: Any,
    ) -> FakeJudge:
        """A judge of `grades` {(query text, doc id): grade}, finding which document a passage
        is by the text `passages` gives each doc id (its first 120 characters)."""
        keys = {text[:120]: doc for doc, text in passages.items() if text.strip()}

        def truth(query: str, passage: str) -> int | None:
            for key, doc in keys.items():
                if key in passage:
                    return grades.get((query, doc))
            return None

        return cls(truth, **bias)


@dataclass
class FakeLlm:
    """The server's state: what it answers and what it was asked."""

    judge: FakeJudge | None = None
    writer: Callable[[str, str], str] | None = None
    """(document text, the whole user message) -> the answer to a request with a
    <document> block (query writing)."""
    api_key: str | None = None
    model: str = "judge-1"
    scripted: deque[Answer] = field(default_factory=deque)
    """Answers given first, one per request (429s, 500s, broken JSON), before the model's."""
    delay: float = 0.0
    """Seconds the model takes to answer."""
    refuse_every: int = 0
    """Answer every Nth request (counted from the first) with `refusal` (0: none): a
    rate-limited endpoint that refuses a share of calls whatever their rate."""
    refusal: Answer = field(default_factory=lambda: rate_limited(1))
    answered_as: Any = None
    """The `model` its answers name (default: the one requested); any JSON value, for an
    endpoint that sends an object, a huge name or control characters."""
    system_fingerprint: Any = None
    """The answers' `system_fingerprint` (None: not sent)."""
    switch_after: int | None = None
    """After this many graded answers the alias points at another model: its answers name
    `switched_model` (and `switched_fingerprint`), and it grades `switched_bias` levels
    higher (clipped to 0-3)."""
    switched_model: str = "judge-2"
    switched_fingerprint: Any = None
    switched_bias: int = 0
    answer_noise: float = 0.0
    """A judge sampled at temperature above 0: each answer's grade moves a level up or down
    (clipped to 0-3) with this probability, drawn afresh for every request."""
    obeys_pleas: bool = False
    """A judge fooled by the passage itself: a passage that asks for a grade ("grade it 3")
    inside its block gets it, as Alaofi et al. (2025) found judges do."""
    answered: int = 0
    """Answers the model gave (scripted ones and errors not counted)."""
    hold_after: int | None = None
    """Requests past this many are held, unanswered, until `release` is set: a model that
    stops answering (0: every request hangs), wherever a slow machine has got to."""
    held: threading.Event = field(default_factory=threading.Event)
    """Set once `hold_after` requests have come."""
    release: threading.Event = field(default_factory=threading.Event)
    """Lets the held requests be answered; set when the server stops."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    """The status of each answer, in the order the requests arrived."""
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    """When each request arrived (time.monotonic()) and how many were then in flight at the
    server, itself included."""
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _active: int = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *answers: Answer) -> None:
        """Answer the next requests with these, in order."""
        with self._lock:
            self.scripted.extend(answers)

    def respond(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        with self._lock:
            self._active += 1
            self.arrivals.append((time.monotonic(), self._active))
            slot = len(self.statuses)
            self.statuses.append(0)
        try:
            answer = self._respond(method, path, headers, body)
        finally:
            with self._lock:
                self._active -= 1
        self.statuses[slot] = answer[0]
        return answer

    @property
    def peak(self) -> int:
        """The most requests ever in flight at the server at once."""
        return max((active for _, active in self.arrivals), default=0)

    def _respond(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if method != "POST" or path.rstrip("/") != "/v1/chat/completions":
            return _error(404, f"no route {method} {path}", "not_found")
        with self._lock:
            self.headers.append({k.lower(): v for k, v in headers.items()})
            try:
                request = json.loads(body)
            except ValueError:
                return _error(400, "the body is not JSON", "invalid_request_error")
            self.requests.append(request)
            count = len(self.requests)
            if self.scripted:
                return self.scripted.popleft()
            if self.refuse_every and count % self.refuse_every == 0:
                return self.refusal
        if self.hold_after is not None and count >= self.hold_after:
            self.held.set()
            if count > self.hold_after:
                self.release.wait(GUARD)  # a guard: the server releases it
        if self.delay:
            time.sleep(self.delay)
        if self.api_key is not None:
            sent = {k.lower(): v for k, v in headers.items()}.get("authorization")
            if sent != f"Bearer {self.api_key}":
                return _error(401, "Incorrect API key provided", "invalid_api_key")
        if request.get("model") != self.model:
            return _error(
                404, f"The model `{request.get('model')}` does not exist", "model_not_found"
            )
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "messages must be a non-empty list", "invalid_request_error")
        prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        with self._lock:
            switched = self.switch_after is not None and self.answered >= self.switch_after
            self.answered += 1
        content, sure = self._answer(str(messages[-1].get("content", "")))
        if self.answer_noise and content.isdigit() and _unit("noise", count) < self.answer_noise:
            step = 1 if _unit("step", count) < 0.5 else -1
            content = str(min(3, max(0, int(content) + step)))
        name, fingerprint = self.answered_as, self.system_fingerprint
        if switched:
            name, fingerprint = self.switched_model, self.switched_fingerprint
            if self.switched_bias and content.isdigit():
                content = str(min(3, max(0, int(content) + self.switched_bias)))
        return _completion(
            request, prompt, content, sure, request.get("model") if name is None else name,
            fingerprint,
        )  # fmt: skip

    def _answer(self, user: str) -> tuple[str, float]:
        blocks = dict(_BLOCK.findall(user))
        outside = _BLOCK.sub("", user)
        order = _ORDER.search(outside)
        if order:  # gullible: an instruction that escaped its block is followed
            return order[1], 0.99
        plea = _ORDER.search(blocks.get("passage", "")) if self.obeys_pleas else None
        if plea:
            return plea[1], 0.9
        if "document" in blocks and self.writer is not None:
            return self.writer(blocks["document"], user), 0.9
        if self.judge is None or "passage" not in blocks or "query" not in blocks:
            return "I cannot tell.", 0.5
        grade, bent = self.judge.grade(blocks["query"], blocks["passage"])
        return str(grade), 0.6 if bent else 0.95


def _completion(
    request: Mapping[str, Any],
    prompt: str,
    content: str,
    sure: float,
    model: Any,
    fingerprint: Any = None,
) -> Answer:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    if request.get("logprobs"):
        rest = (1.0 - sure) / 3.0
        top = [{"token": content[:1], "logprob": math.log(sure)}] + [
            {"token": g, "logprob": math.log(rest)} for g in "0123" if g != content[:1]
        ]
        wanted = int(request.get("top_logprobs") or 0)
        choice["logprobs"] = {
            "content": [
                {"token": content[:1], "logprob": math.log(sure), "top_logprobs": top[:wanted]}
            ]
        }
    payload = {
        "id": "chatcmpl-" + hashlib.sha256(prompt.encode()).hexdigest()[:12],
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": math.ceil(len(prompt) / 4),
            "completion_tokens": max(1, math.ceil(len(content) / 4)),
            "total_tokens": math.ceil(len(prompt) / 4) + max(1, math.ceil(len(content) / 4)),
        },
    }
    if fingerprint is not None:
        payload["system_fingerprint"] = fingerprint
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _error(status: int, message: str, code: str) -> Answer:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def rate_limited(seconds: int | None = 1) -> Answer:
    """A 429 as OpenAI sends it, with Retry-After (none when `seconds` is None)."""
    status, headers, body = _error(429, "Rate limit reached for requests", "rate_limit_exceeded")
    if seconds is None:
        return status, headers, body
    return status, {**headers, "Retry-After": str(seconds)}, body


def server_error() -> Answer:
    return _error(500, "The server had an error while processing your request.", "server_error")


@contextmanager
def fake_llm(**state: Any) -> Iterator[FakeLlm]:
    """A FakeLlm served on 127.0.0.1 while the block runs (its `base_url` ends in /v1)."""
    llm = FakeLlm(**state)
    with serving(llm.respond) as url:
        llm.url = url
        try:
            yield llm
        finally:
            llm.release.set()  # held requests answer, so the server can stop


def passages_of(corpus: Mapping[str, Any], compose: Callable[[Any], str]) -> dict[str, str]:
    """{doc id: the passage text the judge is sent} of a corpus, by `compose`."""
    return {doc: compose(document) for doc, document in corpus.items()}


__all__: Sequence[str] = (
    "FakeJudge",
    "FakeLlm",
    "fake_llm",
    "passages_of",
    "rate_limited",
    "server_error",
)
