"""auc and gauc against scikit-learn's roc_auc_score, query by query, on random cases.

The cases are the oracle tests' small random qrels and runs (`tests/helpers/random_cases.py`):
scores from a few values or all equal (ties), negative grades, queries absent from the run,
empty rankings (a grade below 0 is pooled but unjudged, as trec_eval reads it). For each case
and both ways of counting unjudged documents, every query's
`auc` is compared with roc_auc_score on the same scored documents (NaN when they hold one
class), and `gauc` with the weighted mean of those per-query AUCs.

    python benchmarks/accuracy/bench_auc.py [--cases 5000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import table
from retrieval_gate.metrics import evaluate
from tests.helpers.random_cases import make_case


def _judged(grade: int | None) -> bool:
    """As trec_eval reads qrels: a grade below 0 is pooled but unjudged."""
    return grade is not None and grade >= 0


def _reference(results: dict[str, float], judged: dict[str, int], rel: int, skip: bool) -> float:
    # Imported here: scikit-learn takes a second or two, which --help need not wait for.
    from sklearn.metrics import roc_auc_score

    labels, scores = [], []
    for doc, score in results.items():
        grade = judged.get(doc)
        if skip and not _judged(grade):
            continue
        labels.append(int(grade is not None and grade >= rel))
        scores.append(score)
    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else math.nan


def compared(cases: int) -> list[list[str]]:
    rows = []
    for unjudged in ("skip", "nonrel"):
        queries = defined = agree = 0
        worst = 0.0
        gauc_cases = gauc_agree = 0
        for seed in range(cases):
            qrels, run, rel = make_case(seed)
            names = [f"auc(rel={rel},unjudged={unjudged})", f"gauc(rel={rel},unjudged={unjudged})"]
            scores = evaluate(run, qrels, names)
            ours = scores.values[str(scores.metrics[0])]
            total = weights = 0.0
            for i, qid in enumerate(scores.query_ids):
                results = run.get(qid, {})
                expected = _reference(results, qrels[qid], rel, unjudged == "skip")
                queries += 1
                if math.isnan(expected):
                    agree += math.isnan(ours[i])
                    continue
                defined += 1
                gap = abs(float(ours[i]) - expected)
                worst = max(worst, gap)
                agree += gap <= 1e-12
                weight = sum(
                    1 for d in results if unjudged == "nonrel" or _judged(qrels[qid].get(d))
                )
                total += weight * expected
                weights += weight
            gauc = scores.mean()[str(scores.metrics[1])]
            if weights:
                gauc_cases += 1
                gauc_agree += abs(gauc - total / weights) <= 1e-12
        rows.append(
            [
                unjudged,
                f"{cases:,}",
                f"{queries:,}",
                f"{defined:,}",
                f"{queries - defined:,}",
                f"{agree:,} / {queries:,}",
                f"{worst:.1e}",
                f"{gauc_agree:,} / {gauc_cases:,}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5_000)
    args = parser.parse_args()
    header = [
        "unjudged",
        "cases",
        "queries",
        "two classes",
        "one class (NaN)",
        "auc equal (1e-12)",
        "largest gap",
        "gauc equal",
    ]
    print(table(header, compared(args.cases), {1, 2, 3, 4, 5, 6, 7}))


if __name__ == "__main__":
    main()
