"""A client of any OpenAI-compatible chat-completions endpoint, with errors the runner retries."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_gate.adapters.http import MAX_RETRY_AFTER, public_url, retry_after_seconds
from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.core import redaction
from retrieval_gate.core.wording import excerpt, one_line
from retrieval_gate.errors import GateError, RetrieverError

Message = Mapping[str, str]
"""One chat message: {"role": "system" | "user" | "assistant", "content": text}."""


@dataclass(frozen=True)
class Completion:
    """An answer: its text, the tokens the endpoint counted (`usage`), and the probability of
    its first token when the endpoint returned log-probabilities."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    first_token_probability: float | None = None
    top_tokens: Mapping[str, float] | None = None
    """Probability of each of the most likely first tokens, when returned."""
    model: str = ""
    """The model the endpoint says answered (its `model`), as `answered_name` keeps it."""
    system_fingerprint: str = ""
    """The endpoint's `system_fingerprint` (its backend configuration), where it sends one."""


NAME_KEPT = 200
"""Most characters of a response's `model` or `system_fingerprint` kept: a model's name is
a few dozen; an endpoint that sends megabytes must not fill the layer and the reports."""
_NAME_READ = 4 * NAME_KEPT


def answered_name(value: object) -> str:
    """A response's `model` or `system_fingerprint` as the layer keeps it: on one line, control
    characters shown as `?`, registered secrets redacted, at most NAME_KEPT characters; a value
    that is not text (an object, a number) as its JSON; "" for none. Applying it twice changes
    nothing."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    # Cut before the work (a 50 MB name), redacted before the last cut (a cut secret would no
    # longer match), and the last cut leaves room for "..." so a kept name is kept as it is.
    clean = one_line(redaction.redacted(text[:_NAME_READ]))
    return clean if len(clean) <= NAME_KEPT else clean[: NAME_KEPT - 3] + "..."


class ChatClient:
    """POST BASE_URL/chat/completions. Thread-safe: the runner calls it from several workers.

    A 429 or 5xx, a timeout or a dropped connection is a retryable RetrieverError (the
    runner's retry policy decides); a 429 or 503 is `throttled`, with the wait its
    `Retry-After` asks for: the runner slows the pool (execution/throttle.py). Other 4xx
    and unreadable answers are not retryable. The API key (from the variable
    judge.api_key_env names) and any password in the URL are redacted from every message.
    """

    def __init__(self, config: JudgeConfig, environ: Mapping[str, str] | None = None) -> None:
        import httpx

        self.config = config
        environ = os.environ if environ is None else environ
        headers = {"Content-Type": "application/json"}
        url = httpx.URL(config.base_url)
        if config.api_key_env and (url.username or url.password):
            # httpx turns URL user info into Basic auth, which would replace the Bearer key.
            raise GateError(
                "judge.base_url carries a user and password and judge.api_key_env names a "
                "key: both would go in the one Authorization header; keep one of them"
            )
        if config.api_key_env:
            key = redaction.secret_from_env("judge.api_key_env", config.api_key_env, environ)
            headers["Authorization"] = f"Bearer {key}"
        if url.password:
            redaction.register(url.password)
        self.name = f"judge {public_url(config.base_url)}"
        self._url = f"{config.base_url}/chat/completions"
        connections = max(config.concurrency, 1)
        # Redirects are not followed: httpx would send the Authorization header to whatever
        # origin a redirect names.
        self._client = httpx.Client(
            headers=headers,
            timeout=config.timeout,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    def describe(self) -> dict[str, Any]:
        """What answers depend on, no secret: endpoint, model and sampling."""
        config = self.config
        return {
            "type": "llm-judge",
            "base_url": public_url(config.base_url),
            "model": config.model,
            "temperature": config.temperature,
            "seed": config.seed,
            "max_tokens": config.max_tokens,
        }

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        top_logprobs: int = 0,
    ) -> Completion:
        """The endpoint's answer to `messages`. With `top_logprobs`, asks for that many
        alternatives of each token (an endpoint that ignores the request still answers)."""
        import httpx

        config = self.config
        body: dict[str, Any] = {
            "model": config.model,
            "messages": [dict(message) for message in messages],
            "temperature": config.temperature,
            "max_tokens": max_tokens or config.max_tokens,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        if top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        try:
            response = self._client.post(self._url, json=body)
        except httpx.TimeoutException:
            raise RetrieverError(
                f"{self.name}: no answer within {config.timeout:g}s", retryable=True
            ) from None
        except httpx.TransportError as error:
            raise RetrieverError(
                redaction.redacted(f"{self.name}: {type(error).__name__}: {error}"),
                retryable=True,
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise RetrieverError(
                redaction.redacted(f"{self.name}: {type(error).__name__}: {error}")
            ) from None
        if response.is_redirect:
            raise RetrieverError(
                f"{self.name}: HTTP {response.status_code}: redirected; redirects are not "
                "followed (the key would go to another origin): set judge.base_url to the "
                "final address"
            )
        if response.status_code >= 400:
            raise self._http_error(response)
        try:
            data = response.json()
        except ValueError:
            raise RetrieverError(
                f"{self.name}: the answer is not JSON: {self._shown(response.text)}",
                kind=f"{self.name}: the answer is not JSON",
            ) from None
        return self._completion(data)

    def close(self) -> None:
        self._client.close()

    def _http_error(self, response: Any) -> RetrieverError:
        status = response.status_code
        wait = None
        if status in (429, 503):
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            if wait is not None:
                wait = min(wait, MAX_RETRY_AFTER)
        after = "" if wait is None else f" (Retry-After: {wait:.3g}s)"
        hint = ""
        if status in (401, 403):
            hint = (
                f"; the endpoint refused the key in {self.config.api_key_env}"
                if self.config.api_key_env
                else "; the endpoint wants a key: set judge.api_key_env"
            )
        elif status == 404:
            hint = (
                f"; check judge.base_url (requests go to {public_url(self._url)}) and judge.model"
            )
        return RetrieverError(
            f"{self.name}: HTTP {status}{after}{hint}: {self._shown(response.text)}",
            retryable=status == 429 or status >= 500,
            kind=f"{self.name}: HTTP {status}",
            throttled=status in (429, 503),
            retry_after=wait,
        )

    def _completion(self, data: Any) -> Completion:
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise RetrieverError(
                f"{self.name}: the answer has no choices[0].message.content: "
                f"{self._shown(json.dumps(data)[:2000])}",
                kind=f"{self.name}: the answer has no choices[0].message.content",
            ) from None
        if not isinstance(content, str):
            content = "" if content is None else str(content)
        usage = data.get("usage") if isinstance(data, dict) else None
        prompt_tokens = _count(usage, "prompt_tokens")
        completion_tokens = _count(usage, "completion_tokens")
        first, top = _first_token(choice)
        return Completion(
            content,
            prompt_tokens,
            completion_tokens,
            first,
            top,
            answered_name(data.get("model")),
            answered_name(data.get("system_fingerprint")),
        )

    def _shown(self, text: str) -> str:
        return redaction.redacted(excerpt(text))


def _count(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _first_token(choice: Any) -> tuple[float | None, dict[str, float] | None]:
    """The first token's probability and its alternatives', from OpenAI's `logprobs` shape
    ({"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]})."""
    try:
        first = choice["logprobs"]["content"][0]
        probability = math.exp(float(first["logprob"]))
        top = {
            str(item["token"]): math.exp(float(item["logprob"]))
            for item in first.get("top_logprobs") or ()
        }
    except (KeyError, IndexError, TypeError, ValueError, OverflowError):
        return None, None
    if not 0.0 <= probability <= 1.0 + 1e-9:
        return None, None
    return min(probability, 1.0), top or None
