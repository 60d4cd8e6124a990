"""The fields an `http` retriever's request templates fill in: {query}, {k}, {metadata.X}."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from retrieval_gate.core.model import Query
from retrieval_gate.errors import RetrieverError

FIELD = re.compile(r"\{(query|queries|candidates|k|id|metadata\.[^{}]+)\}")


class RequestFields:
    """The values templates may use for one request: one query, or a batch of them."""

    def __init__(
        self,
        *,
        k: int,
        query: Query | None = None,
        queries: Sequence[Query] = (),
        candidates: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.k = k
        self.query = query
        self.queries = queries
        self.candidates = candidates

    def value(self, name: str) -> Any:
        if name == "k":
            return self.k
        if name == "candidates":
            if self.candidates is None:
                raise RetrieverError(
                    "{candidates} is only filled in a stages retriever's rerank request"
                )
            return list(self.candidates)
        if name == "queries" and self.queries:
            return [{"id": query.id, "text": query.text} for query in self.queries]
        if self.query is None:
            raise RetrieverError(f"{{{name}}} is not available in batch requests; use {{queries}}")
        if name == "query":
            return self.query.text
        if name == "id":
            return self.query.id
        if name == "queries":
            return [{"id": self.query.id, "text": self.query.text}]
        key = name.removeprefix("metadata.")
        if key not in self.query.metadata:
            raise RetrieverError(
                f"query {self.query.id!r} has no metadata field {key!r}, which the retriever's "
                f"request template uses ({{{name}}})"
            )
        return self.query.metadata[key]

    def fill(self, template: str, *, quote_values: bool = False) -> str:
        def text(match: re.Match[str]) -> str:
            value = self.value(match[1])
            value = value if isinstance(value, str) else json.dumps(value)
            return quote(value, safe="") if quote_values else value

        return FIELD.sub(text, template)

    def fill_json(self, template: Any) -> Any:
        if isinstance(template, str):
            whole = FIELD.fullmatch(template)
            return self.value(whole[1]) if whole else self.fill(template)
        if isinstance(template, Mapping):
            return {key: self.fill_json(value) for key, value in template.items()}
        if isinstance(template, list):
            return [self.fill_json(value) for value in template]
        return template


def templated(*templates: str) -> bool:
    """Whether any of `templates` names a field a request fills in."""
    return any(FIELD.search(template) for template in templates)
