"""A pull request under gate.labels human+llm: what `check` pays the judge, and what it decides.

Main's layer is the example's: `judge` graded the pool of its retriever and the baseline, with
70% of people's judgments held back (seeded). The pull request changes the retrieval of a
seeded 10% of the queries: their top 10 becomes the regressed example's, everything else
stays as the baseline has it (a saved run, `--run`). For each seed it runs the command line,
as CI would, against the tests' chat-completions stand-in on 127.0.0.1 (a judge grading from
the full labels, one level off on a seeded 20% of pairs):

- `check` on the PR: the calls it pays (the pool pairs new to main's layer) and its verdict;
- a full re-judge: a fresh layer graded from nothing for the same pool (no cache), then
  `check --no-judge` on it: the calls it costs and its verdict;
- the PR's `check` with the key's variable unset (a fork): no call, and every check either
  holds over every grade its unjudged pairs could get or is inconclusive and fails
  (docs/gate.md, "Unjudged pairs and mixed judges"): never a verdict on a silent subset.

    python benchmarks/simulations/bench_pr_judge.py             # 5 seeds, about 2 minutes
    python benchmarks/simulations/bench_pr_judge.py --seeds 2 --share 0.2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import table
from retrieval_gate.config.loader import load
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.pipeline.execute import execute
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import assisted_config, judge_example

KEY = "BENCH_PR_JUDGE_KEY"
OVER_GRADE = 0.2


def pr_run(folder: Path, regressed: Path, share: float, seed: int) -> tuple[Path, int]:
    """A TREC run: the baseline's top 10, with `share` of the queries (seeded) ranked as the
    regressed example ranks them; and how many queries changed."""
    config = load(folder / "example.yaml")
    baseline = read_baseline(config.resolve(config.baseline))
    other = execute(load(regressed), cache=False).run.hits
    queries = sorted(baseline.top_k)
    rng = np.random.default_rng(seed)
    moved = set(rng.choice(queries, size=round(share * len(queries)), replace=False).tolist())
    lines = []
    for query in queries:
        docs = (
            [hit.doc_id for hit in other[query]][:10] if query in moved else baseline.top_k[query]
        )
        lines += [f"{query} Q0 {doc} {rank} {10 - rank} pr" for rank, doc in enumerate(docs, 1)]
    path = folder / "pr.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(moved)


def with_judge(path: Path, out: Path, **fields: Any) -> Path:
    """`path`'s config with judge fields set, written to `out`."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["judge"].update(fields)
    out.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return out


def trial(seed: int, share: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as temp, fake_llm(api_key="sk-bench") as llm:
        folder = Path(temp)
        os.environ[KEY] = "sk-bench"
        example = judge_example(folder, llm.base_url, held_back=0.7, seed=seed)
        llm.judge = example.fake_judge(over_grade=OVER_GRADE)
        main = assisted_config(
            folder, "example.yaml", base_url=llm.base_url, model="judge-1", output=None,
            api_key_env=KEY, seed=seed,
        )  # fmt: skip
        regressed = assisted_config(folder, "example-regressed.yaml", output=None)
        run, moved = pr_run(folder, regressed, share, seed)
        judged = run_cli("judge", "-c", main, "--quiet")
        assert judged.ret == 0, judged.err
        (folder / "fork.llm.jsonl").write_bytes(example.layer.read_bytes())  # main's, as it is
        before = len(llm.requests)
        pr = run_cli("check", "-c", main, "--run", run, "--json", folder / "pr.json", "--quiet")
        paid = len(llm.requests) - before
        full = with_judge(main, folder / "full.yaml", output=str(folder / "full.llm.jsonl"))
        before = len(llm.requests)
        again = run_cli("judge", "-c", full, "--run", run, "--no-cache", "--quiet")
        assert again.ret == 0, again.err
        cost = len(llm.requests) - before
        decided = run_cli(
            "check", "-c", full, "--run", run, "--no-judge", "--json", folder / "full.json"
        )
        # A fork: main's layer, no key, the PR's new pairs ungraded.
        fork = with_judge(main, folder / "fork.yaml", output=str(folder / "fork.llm.jsonl"))
        del os.environ[KEY]
        before = len(llm.requests)
        forked = run_cli("check", "-c", fork, "--run", run, "--json", folder / "fork.json")
        called = len(llm.requests) - before
        documents = {
            name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("pr", "full", "fork")
        }
    holes = documents["fork"]["label_holes"]
    undecided = {(h["metric"], h["slice"]) for h in holes if not h["robust"]}
    honest = all(
        c["verdict"] == "inconclusive" and c["failed"]
        for c in documents["fork"]["comparisons"]
        if (c["metric"], c["slice"]) in undecided
    )
    return {
        "seed": seed,
        "moved": moved,
        "paid": paid,
        "full": cost,
        "pr": (pr.ret, documents["pr"]["status"]),
        "whole": (decided.ret, documents["full"]["status"]),
        "fork": (forked.ret, called, len(holes), len(undecided), honest),
        "skipped": documents["fork"]["labels"]["judging"]["skipped"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="trials, one seed each (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="the first trial's seed")
    parser.add_argument(
        "--share", type=float, default=0.1, help="share of queries the PR changes (default 0.1)"
    )
    args = parser.parse_args()
    rows, results = [], []
    for seed in range(args.seed, args.seed + args.seeds):
        found = trial(seed, args.share)
        results.append(found)
        code, called, holes, undecided, honest = found["fork"]
        rows.append(
            [
                str(seed),
                str(found["moved"]),
                str(found["paid"]),
                str(found["full"]),
                f"{found['paid'] / found['full']:.3f}",
                f"{found['pr'][1]} ({found['pr'][0]})",
                f"{found['whole'][1]} ({found['whole'][0]})",
                f"exit {code}, {called} calls, {undecided} of {holes} bounded checks undecided"
                + ("" if honest else " (DECIDED ON A SUBSET)"),
            ]
        )
    print(
        f"The example (131 queries, k 10, 70% of people's judgments held back); a PR changing "
        f"{args.share:.0%} of the queries' top 10; a judge {OVER_GRADE:.0%} one grade off.\n"
    )
    print(
        table(
            ["seed", "queries moved", "PR calls", "full re-judge calls", "ratio", "PR verdict",
             "full re-judge verdict", "no key (a fork)"],
            rows,
            right={1, 2, 3, 4},
        )
    )  # fmt: skip
    worst = max(r["paid"] / r["full"] for r in results)
    same = sum(r["pr"] == r["whole"] for r in results)
    print(
        f"\nlargest ratio {worst:.3f} (at most 0.20 wanted); the PR's verdict equals the full "
        f"re-judge's in {same} of {len(results)}; without the key, {results[0]['skipped']!r}"
    )


if __name__ == "__main__":
    main()
