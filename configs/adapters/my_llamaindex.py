"""An example for llamaindex.yaml: a LlamaIndex retriever (needs llama-index-core).

retrieval-gate imports `my_llamaindex:make_retriever`, calls it once with no arguments and then
calls `.retrieve(query_text)` on the result per query. Point the target at your own retriever
(`my_app.index:retriever`, e.g. `index.as_retriever(similarity_top_k=10)`).
"""

from __future__ import annotations

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from my_retriever import TEXTS, search


class KeywordRetriever(BaseRetriever):
    """my_retriever.search as scored nodes whose node id is the doc id."""

    def __init__(self, k: int = 10) -> None:
        super().__init__()
        self.k = k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_=doc, text=TEXTS[doc]), score=score)
            for doc, score in search(query_bundle.query_str, self.k, {})
        ]


def make_retriever() -> KeywordRetriever:
    """The retriever, configured for at least the config's k results."""
    return KeywordRetriever(k=10)
