"""Model names as endpoints and hubs write them, sorted into families."""

from __future__ import annotations

import pytest

from retrieval_gate.core.model_families import model_family


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o-mini", "OpenAI GPT"),
        ("openai/gpt-4o", "OpenAI GPT"),
        ("o3-mini", "OpenAI GPT"),
        ("text-embedding-3-small", "OpenAI GPT"),
        ("claude-3-5-sonnet-20241022", "Anthropic Claude"),
        ("Qwen/Qwen2.5-14B-Instruct", "Qwen"),
        ("qwen2.5:14b-instruct", "Qwen"),
        ("meta-llama/Llama-3.1-8B-Instruct", "Meta Llama"),
        ("llama3.1:8b", "Meta Llama"),
        ("mixtral-8x7b", "Mistral"),
        ("gemini-1.5-pro", "Google Gemini/Gemma"),
        ("BAAI/bge-small-en-v1.5", "BAAI BGE"),
        ("rerank-english-v3.0", "Cohere"),
        ("intfloat/multilingual-e5-large", "intfloat E5"),
        ("sentence-transformers/all-MiniLM-L6-v2", "Sentence Transformers"),
    ],
)
def test_a_name_falls_in_its_family(name: str, family: str) -> None:
    assert model_family(name) == family


@pytest.mark.parametrize("name", ["sim-judge", "judge-1", "", "my-own-model", "o", "ollama"])
def test_a_name_no_family_claims_has_none(name: str) -> None:
    assert model_family(name) is None
