"""An example for langchain.yaml: a LangChain retriever (needs langchain-core).

retrieval-gate imports `my_langchain:make_retriever`, calls it once with no arguments and then
calls `.invoke(query_text)` on the result per query. Point the target at your own retriever
object instead (`my_app.search:retriever`), or at a function that builds it.
"""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from my_retriever import TEXTS, search


class KeywordRetriever(BaseRetriever):
    """my_retriever.search as LangChain Documents; the doc id is in metadata["doc_id"]."""

    k: int = 10

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [
            Document(page_content=TEXTS[doc], metadata={"doc_id": doc, "score": score})
            for doc, score in search(query, self.k, {})
        ]


def make_retriever() -> KeywordRetriever:
    """The retriever, configured for at least the config's k results."""
    return KeywordRetriever(k=10)
