"""The `judge:` block: an LLM that grades (query, document) pairs, what it may spend, when
its labels are trusted."""

from __future__ import annotations

from pydantic import Field, field_validator

from retrieval_gate.core.strict import StrictModel


class Prices(StrictModel):
    """What the endpoint charges, in the currency of the budget, per million tokens."""

    input: float = Field(0.0, ge=0, description="price of a million prompt tokens")
    output: float = Field(0.0, ge=0, description="price of a million completion tokens")


class JudgeBudget(StrictModel):
    """The most one `judge` run may spend; past it the run stops (exit 2) and keeps what was
    paid for."""

    calls: int | None = Field(None, ge=1, description="most calls to the endpoint")
    cost: float | None = Field(
        None, gt=0, description="most money, in the currency of judge.prices"
    )


class JudgeTrust(StrictModel):
    """When LLM labels may decide the gate (gate.labels: human+llm): below either floor they
    are provisional and the verdict stays human-only."""

    min_pairs: int = Field(
        100,
        ge=1,
        description="fewest (query, doc) pairs graded both by people and by the judge",
    )
    min_kappa: float = Field(
        0.4,
        ge=-1,
        le=1,
        description="lowest quadratic-weighted Cohen's kappa of the judge against people on "
        "those pairs",
    )


class JudgeProbes(StrictModel):
    """`calibrate --probes`: known pairs rewritten to fool a judge (stuffed with the query's
    words and asking for a high grade, or cut short), graded beside their originals."""

    max_calls: int = Field(
        200,
        ge=2,
        description="most calls one probing run makes (a probe and its original: two, one when "
        "the original's grade is cached)",
    )
    reasks: int = Field(
        20,
        ge=0,
        description="of those calls, originals graded again with the cache bypassed: the "
        "spread between two answers to one pair",
    )
    max_flip_rate: float = Field(
        0.1,
        ge=0,
        le=1,
        description="highest share of one kind of probe (stuffed, cut) whose grade moves 2 "
        "levels the wrong way; above it the judge's labels are provisional",
    )


class SystemModels(StrictModel):
    """The models the system under test runs: a judge of the same family favours its own
    family's output (self-preference), which the calibration card then says."""

    embedder: str | None = Field(None, description="the embedding model, e.g. bge-small-en-v1.5")
    reranker: str | None = Field(None, description="the reranking model, e.g. rerank-english-v3.0")
    generator: str | None = Field(None, description="the answering LLM, e.g. gpt-4o")


class JudgeConfig(StrictModel):
    """An LLM judge behind any OpenAI-compatible chat-completions endpoint (a hosted API, or
    vLLM, Ollama, llama.cpp's server, a LiteLLM proxy on this machine)."""

    base_url: str = Field(
        description="the endpoint's base URL; requests go to BASE_URL/chat/completions, e.g. "
        "http://127.0.0.1:11434/v1 (Ollama)"
    )
    model: str = Field(min_length=1, description="the model name the endpoint knows")
    api_key_env: str | None = Field(
        None,
        description="environment variable holding the API key, sent as a Bearer token; "
        "unset: no key (a local server)",
    )
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature")
    seed: int | None = Field(0, description="the request's seed, where the endpoint honours it")
    logprobs: bool = Field(
        True,
        description="ask for the answer's log-probabilities: the layer's confidence (how sure "
        "the judge was); set false for an endpoint that refuses the request",
    )
    max_tokens: int = Field(16, ge=1, le=4096, description="most tokens of an answer")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once")
    timeout: float = Field(60.0, gt=0, description="seconds one request may take")
    retries: int = Field(3, ge=0, le=20, description="extra attempts after a 429, 5xx or timeout")
    error_budget: float = Field(
        0.01, ge=0, le=1, description="share of the pairs whose grading may fail"
    )
    rubric: str | None = Field(
        None,
        description="a file with the rubric's prompt (placeholders {query} and {passage}); "
        "unset: the built-in 0-3 rubric",
    )
    output: str | None = Field(
        None,
        description="the judgment layer (JSONL) the judge writes and the gate reads; unset: "
        "beside the qrels, as <qrels name>.llm.jsonl",
    )
    depth: int | None = Field(
        None, ge=1, description="grade the top DEPTH of each run; unset: the gate's k"
    )
    calibration_queries: int | None = Field(
        None,
        ge=1,
        description="human-judged queries whose pooled pairs the judge also grades, drawn "
        "with judge.seed; unset: every human-judged query",
    )
    prices: Prices = Field(default_factory=lambda: Prices())
    budget: JudgeBudget = Field(default_factory=lambda: JudgeBudget())
    trust: JudgeTrust = Field(default_factory=lambda: JudgeTrust())
    probes: JudgeProbes = Field(default_factory=lambda: JudgeProbes())
    system_models: SystemModels = Field(
        default_factory=lambda: SystemModels(),
        description="the models of the system under test (embedder, reranker, generator); "
        "a judge of the same family is named on the calibration card",
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("judge.base_url must start with http:// or https://")
        return url.rstrip("/")
