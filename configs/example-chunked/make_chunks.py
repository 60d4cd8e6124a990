"""Writes the chunked example: the Quillhour articles cut by LangChain's text splitter at two
chunk sizes, and chunk-level labels for the first.

- corpus-300.jsonl: every article of ../example/corpus.jsonl cut by
  `RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0)` (lengths in characters:
  pure Python, no tokenizer to download): about two chunks an article. Each chunk keeps its
  article's title and names it in `metadata.source`; it gives no offset, so the gate finds
  each chunk in its article (`dataset.documents`) by exact text containment.
- corpus-200.jsonl: the same articles cut at chunk_size=200: about three chunks an article.
  The pull request of `example-chunked-pr.yaml` changes only this size.
- qrels.tsv: the labels on the 300-character chunks. DERIVED, not judged again: every chunk of
  a judged article carries the article's grade from ../example/qrels/test.tsv (the articles are
  short and each on one task). The chunk ids (`kb-1101#0`, `kb-1101#1`, ...) are the same
  at both sizes, for other text: a chunk id says nothing of what a label judged.

Deterministic: the splitter has no randomness, and the files are written in corpus order.
Run from anywhere (needs `pip install langchain-text-splitters`):
python configs/example-chunked/make_chunks.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "example"
SIZES = (300, 200)
LABELLED = 300
"""The chunk size the labels were given at: the main branch's chunker."""


def chunked(articles: list[dict[str, str]], size: int) -> list[dict[str, object]]:
    """Each article's chunks at `size` characters, in order, ids `<article>#<n>`."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0)
    return [
        {
            "_id": f"{article['_id']}#{n}",
            "title": article["title"],
            "text": text,
            "metadata": {"source": article["_id"]},
        }
        for article in articles
        for n, text in enumerate(splitter.split_text(article["text"]))
    ]


def render() -> dict[str, str]:
    """File name -> its text: both corpora and the labels."""
    lines = (EXAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    articles = [json.loads(line) for line in lines]
    corpora = {size: chunked(articles, size) for size in SIZES}
    files = {
        f"corpus-{size}.jsonl": "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks)
        for size, chunks in corpora.items()
    }
    with (EXAMPLE / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        judged = list(csv.DictReader(handle, delimiter="\t"))
    chunks_of: dict[str, list[str]] = {}
    for chunk in corpora[LABELLED]:
        metadata = chunk["metadata"]
        assert isinstance(metadata, dict)
        chunks_of.setdefault(metadata["source"], []).append(str(chunk["_id"]))
    rows = ["query-id\tcorpus-id\tscore"]
    for row in judged:
        rows += [f"{row['query-id']}\t{c}\t{row['score']}" for c in chunks_of[row["corpus-id"]]]
    files["qrels.tsv"] = "\n".join(rows) + "\n"
    return files


def main() -> None:
    """Write the files next to this script."""
    for name, text in render().items():
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
