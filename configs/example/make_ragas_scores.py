"""Writes ragas-baseline.csv and ragas-current.csv: SYNTHETIC faithfulness scores per Quillhour
query, in the shape of a Ragas results table. No LLM ran: these are not real Ragas output.

The shape is what Ragas 0.2 documents for `EvaluationResult.to_pandas()` saved with
`to_csv(index=False)`: the samples' columns (user_input, retrieved_contexts, response,
reference) and then one column per metric, here `faithfulness`. Faithfulness in Ragas is the
share of an answer's claims the retrieved contexts support, so each score here is k/n for an
answer of n claims (3 to 8), drawn from a seeded generator. The current side differs from the
baseline on a few queries by a claim either way: a change the gate should pass.

Run from anywhere: python configs/example/make_ragas_scores.py
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 30
CHANGED_SHARE = 0.15
"""Share of queries whose current answer gains or loses one supported claim."""


def main() -> None:
    """Write both files next to this script."""
    queries = [json.loads(line) for line in (HERE / "queries.jsonl").read_text().splitlines()]
    titles = {
        row["_id"]: row["title"]
        for row in map(json.loads, (HERE / "corpus.jsonl").read_text().splitlines())
    }
    best = _best_articles(HERE / "qrels" / "test.tsv")
    rng = random.Random(SEED)
    baseline, current = [], []
    for query in queries:
        claims = rng.randint(3, 8)
        supported = min(claims, max(0, round(claims * rng.betavariate(8, 2))))
        contexts = [titles[doc] for doc in best.get(query["_id"], [])[:2]]
        sample = {
            "user_input": query["text"],
            "retrieved_contexts": repr(contexts),  # pandas writes a list cell as its repr
            "response": f"(synthetic answer of {claims} claims)",
            "reference": f"(synthetic reference: {contexts[0] if contexts else 'none'})",
        }
        baseline.append({**sample, "faithfulness": supported / claims})
        moved = supported
        if rng.random() < CHANGED_SHARE:
            moved = min(claims, max(0, supported + rng.choice((-1, 1))))
        current.append({**sample, "faithfulness": moved / claims})
    for name, rows in (("ragas-baseline.csv", baseline), ("ragas-current.csv", current)):
        with (HERE / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        mean = sum(row["faithfulness"] for row in rows) / len(rows)
        print(f"{name}: {len(rows)} queries, mean faithfulness {mean:.4f}")


def _best_articles(qrels: Path) -> dict[str, list[str]]:
    """Query id -> its judged articles, best grade first."""
    graded: dict[str, list[tuple[int, str]]] = {}
    for line in qrels.read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        graded.setdefault(query, []).append((-int(grade), doc))
    return {query: [doc for _, doc in sorted(rows)] for query, rows in graded.items()}


if __name__ == "__main__":
    main()
