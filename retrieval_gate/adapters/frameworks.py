"""The `langchain`, `llamaindex` and `haystack` retrievers, duck-typed: no framework import."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from retrieval_gate.adapters.hits import doc_id, score, to_hits
from retrieval_gate.adapters.interface import Adapter
from retrieval_gate.adapters.python import user_exits
from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.adapters.targets import load_target, user_errors
from retrieval_gate.core.model import Document, Hit, Query
from retrieval_gate.errors import GateError, RetrieverError


class FrameworkConfig(AdapterSettings):
    """What the framework retrievers share: the object to call and where doc ids live."""

    target: str = Field(
        description=(
            "'module:attribute' naming the retriever object, or a function or class that "
            "makes it when called with no arguments. The config's folder is importable."
        )
    )
    id_field: str = Field(
        default="id",
        description=(
            "Metadata key (looked up first) or attribute holding the doc id; 'id' falls back "
            "to the framework's own document or node id."
        ),
    )


class LangchainConfig(FrameworkConfig):
    """A LangChain retriever: `invoke(text)` returns Documents."""

    type: Literal["langchain"] = Field(default="langchain", description="A LangChain retriever.")


class LlamaIndexConfig(FrameworkConfig):
    """A LlamaIndex retriever: `retrieve(text)` returns NodeWithScore items."""

    type: Literal["llamaindex"] = Field(default="llamaindex", description="A LlamaIndex retriever.")


class HaystackConfig(FrameworkConfig):
    """A Haystack component or pipeline whose output holds `documents`."""

    type: Literal["haystack"] = Field(
        default="haystack", description="A Haystack component or pipeline."
    )
    input: str = Field(
        default="query",
        description="The input that receives the query text (component or pipeline).",
    )


F = TypeVar("F", bound=FrameworkConfig)


class _FrameworkRetriever(Adapter[F]):
    """Calls the object the target names, one query at a time, and reads doc ids. It returns
    as many results as it is configured to (truncated to k): configure it for at least k.
    Objects that are not thread-safe should set `concurrency: 1`."""

    method: ClassVar[str]
    framework: ClassVar[str]

    def __init__(
        self,
        config: F,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        super().__init__(config, base_dir=base_dir, corpus=corpus)
        self.where = f"retriever.target {config.target!r}"
        expected = f"a {self.framework} object with a {self.method} method"
        kind = getattr(config, "type", "framework")
        self.named = f"retriever {kind} (target {config.target})"
        with user_exits(self.named, "the module", "while importing"):
            value = load_target(config.target, expected, search_dir=base_dir)
        if inspect.isclass(value) or inspect.isfunction(value):
            try:
                with user_exits(self.named, "the target", "while making the retriever"):
                    value = value()
            except GateError:
                raise
            except Exception as error:
                raise GateError(
                    f"{self.where}: calling it to make the retriever failed: "
                    f"{type(error).__name__}: {error}"
                ) from error
        if not callable(getattr(value, self.method, None)):
            raise GateError(f"{self.where} is a {type(value).__name__}; expected {expected}")
        self.obj = value

    def describe(self) -> Mapping[str, Any]:
        return self.config.model_dump(
            include={"type", "target", "id_field", "input"}, exclude_none=True
        )

    def search(self, query: Query, k: int) -> list[Hit]:
        exits = user_exits(self.named, "the retriever", "while searching", RetrieverError)
        with exits, user_errors(self.where):
            items = self._retrieve(query.text, k)
        return to_hits(self._hits(items), k, self.where)

    def _hits(self, items: list[Any]) -> Iterator[Hit]:
        """Converted lazily: results past the k-th distinct doc are never looked at."""
        for position, item in enumerate(items, 1):
            try:
                yield self._hit(item)
            except (AttributeError, ValueError) as error:
                raise RetrieverError(f"{self.where}: result {position}: {error}") from None

    def _retrieve(self, text: str, k: int) -> list[Any]:
        raise NotImplementedError

    def _hit(self, item: Any) -> Hit:
        raise NotImplementedError

    def _id(self, item: Any, metadata: Any, native: Any) -> str:
        """metadata[id_field], else the item's id_field attribute, else (for the default
        'id') the framework's own id."""
        field = self.config.id_field
        if isinstance(metadata, Mapping) and metadata.get(field) is not None:
            return doc_id(metadata[field])
        if getattr(item, field, None) is not None:
            return doc_id(getattr(item, field))
        if field == "id" and native is not None:
            return doc_id(native)
        raise ValueError(
            f"{type(item).__name__} has no metadata[{field!r}] and no .{field}; set "
            "retriever.id_field to the metadata key that holds your doc ids"
        )


class LangchainRetriever(_FrameworkRetriever[LangchainConfig]):
    """`obj.invoke(text)`; LangChain Documents carry no score, so hits rank as returned."""

    config_class = LangchainConfig
    method = "invoke"
    framework = "LangChain retriever (Runnable)"

    def _retrieve(self, text: str, k: int) -> list[Any]:
        return list(self.obj.invoke(text))

    def _hit(self, item: Any) -> Hit:
        return Hit(self._id(item, item.metadata, getattr(item, "id", None)))


class LlamaIndexRetriever(_FrameworkRetriever[LlamaIndexConfig]):
    """`obj.retrieve(text)`: NodeWithScore items; the id defaults to the node id."""

    config_class = LlamaIndexConfig
    method = "retrieve"
    framework = "LlamaIndex retriever"

    def _retrieve(self, text: str, k: int) -> list[Any]:
        return list(self.obj.retrieve(text))

    def _hit(self, item: Any) -> Hit:
        node = item.node
        return Hit(self._id(node, node.metadata, node.node_id), score(item.score))


class HaystackRetriever(_FrameworkRetriever[HaystackConfig]):
    """A component's `run(**{input: text})` (with `top_k=k` when it takes one), or a
    pipeline's `run({input: text})`; the documents come from the output's `documents`, or
    from the one component output that has them."""

    config_class = HaystackConfig
    method = "run"
    framework = "Haystack component or pipeline"

    def _retrieve(self, text: str, k: int) -> list[Any]:
        run = self.obj.run
        parameters = inspect.signature(run).parameters
        if self.config.input in parameters:
            extra = {"top_k": k} if "top_k" in parameters else {}
            output = run(**{self.config.input: text}, **extra)
        else:  # a Pipeline: run(data) spreads the input to every component that takes it
            output = run({self.config.input: text})
        return list(_documents(output, self.where))

    def _hit(self, item: Any) -> Hit:
        return Hit(self._id(item, item.meta, item.id), score(item.score))


def _documents(output: Any, where: str) -> Any:
    if isinstance(output, Mapping) and "documents" in output:
        return output["documents"]
    found = [
        value["documents"]
        for value in (output.values() if isinstance(output, Mapping) else ())
        if isinstance(value, Mapping) and "documents" in value
    ]
    if len(found) != 1:
        keys = ", ".join(map(str, output)) if isinstance(output, Mapping) else type(output)
        raise RetrieverError(
            f"{where}: expected one 'documents' output, found {len(found)} (output: {keys})"
        )
    return found[0]
