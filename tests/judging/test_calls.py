"""Chat requests through the runner: the judge block's settings, answers by key, failures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest

from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.errors import GateError, RetrieverError
from retrieval_gate.execution.runner import RunSettings
from retrieval_gate.judging.calls import Answers, Request, ask_all, settings_of
from retrieval_gate.judging.client import ChatClient, Completion, Message

CONFIG = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", concurrency=1, retries=0)


class _Client:
    """A chat client that answers each message's text upper-cased, and refuses "fail"."""

    def __init__(self, config: JudgeConfig = CONFIG) -> None:
        self.config = config
        self.asked: list[tuple[str, int | None]] = []

    def describe(self) -> dict[str, Any]:
        return {"type": "test-chat"}

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None) -> Completion:
        text = messages[-1]["content"]
        self.asked.append((text, max_tokens))
        if text == "fail":
            raise RetrieverError("refused", kind="refused")
        return Completion(text.upper(), 3, 1)


def _ask(client: _Client, *texts: str) -> Answers:
    requests = [
        Request(f"r{n}", [{"role": "user", "content": text}], max_tokens=n or None)
        for n, text in enumerate(texts)
    ]
    return ask_all(cast(ChatClient, client), requests)


def test_the_runner_settings_are_the_judge_block_s() -> None:
    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", concurrency=3,
                         timeout=12.5, retries=5, error_budget=0.25, seed=7)  # fmt: skip
    assert settings_of(config) == RunSettings(
        concurrency=3, timeout=12.5, retries=5, error_budget=0.25, seed=7
    )
    # A judge without a seed still jitters its retries the same way every run.
    assert settings_of(config.model_copy(update={"seed": None})).seed == 0


def test_every_request_is_asked_once_and_answered_by_its_key() -> None:
    client = _Client()
    answers = _ask(client, "one", "two", "three")
    assert {key: c.text for key, c in answers.completions.items()} == {
        "r0": "ONE",
        "r1": "TWO",
        "r2": "THREE",
    }
    assert sorted(client.asked) == [("one", None), ("three", 2), ("two", 1)]
    assert (answers.failures, answers.calls) == ((), 3)


def test_no_request_asks_nothing() -> None:
    client = _Client()
    assert _ask(client) == Answers({}, (), 0)
    assert client.asked == []


def test_a_failed_request_is_a_failure_and_the_others_are_answered() -> None:
    client = _Client(CONFIG.model_copy(update={"error_budget": 0.01}))
    texts = ["fail", *(f"q{n}" for n in range(199))]  # 1 of 200: within a 1% error budget
    answers = _ask(client, *texts)
    assert [(f.query_id, f.error) for f in answers.failures] == [("r0", "refused")]
    assert len(answers.completions) == 199
    assert "r0" not in answers.completions


def test_requests_that_all_fail_alike_stop_the_batch() -> None:
    client = _Client()
    with pytest.raises(GateError, match="refused"):
        _ask(client, *["fail"] * 30)
    assert len(client.asked) < 30
