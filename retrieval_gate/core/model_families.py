"""Which family a model name belongs to, so a judge of the system's own family can be named."""

from __future__ import annotations

import re

FAMILIES: tuple[tuple[str, str], ...] = (
    # (family, pattern on the lowercased name without a provider prefix), first match wins.
    ("OpenAI GPT", r"^(gpt-|chatgpt|o[1-9](-|$)|text-embedding-|davinci|babbage)"),
    ("Anthropic Claude", r"^claude"),
    ("Google Gemini/Gemma", r"^(gemini|gemma|text-embedding-00|textembedding-gecko)"),
    ("Meta Llama", r"^(meta-)?llama|^codellama"),
    ("Mistral", r"^(mistral|mixtral|codestral|ministral|magistral|pixtral)"),
    ("Qwen", r"^(qwen|qwq|gte-qwen)"),
    ("DeepSeek", r"^deepseek"),
    ("Microsoft Phi", r"^phi-?[0-9]"),
    ("Cohere", r"^(command|embed-(english|multilingual)|rerank-)"),
    ("BAAI BGE", r"^bge-"),
    ("Jina", r"^jina-"),
    ("Nomic", r"^nomic-"),
    ("intfloat E5", r"^(multilingual-)?e5-"),
    ("Sentence Transformers", r"^(all-minilm|all-mpnet|paraphrase-|msmarco-|multi-qa-)"),
)


def model_family(name: str) -> str | None:
    """The family of a model name as endpoints and hubs write it (`gpt-4o-mini`,
    `openai/gpt-4o`, `Qwen/Qwen2.5-14B-Instruct`, `qwen2.5:14b`, `BAAI/bge-small-en-v1.5`);
    None for a name no family here claims."""
    plain = name.strip().lower().rsplit("/", 1)[-1]
    for family, pattern in FAMILIES:
        if re.search(pattern, plain):
            return family
    return None
