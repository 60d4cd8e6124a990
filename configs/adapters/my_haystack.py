"""An example for haystack.yaml: a Haystack component (needs haystack-ai).

retrieval-gate imports `my_haystack:KeywordRetriever`, makes one with no arguments and calls
`run(query=text, top_k=k)` per query, reading the output's `documents`. A Pipeline works too:
it is called as `run({"query": text})` and the one component output holding documents is read.
"""

from haystack import Document, component
from my_retriever import TEXTS, search


@component
class KeywordRetriever:
    """my_retriever.search as Haystack Documents whose id is the doc id."""

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int = 10) -> dict[str, list[Document]]:
        """The top_k documents for `query`, best first."""
        return {
            "documents": [
                Document(id=doc, content=TEXTS[doc], score=score)
                for doc, score in search(query, top_k, {})
            ]
        }
