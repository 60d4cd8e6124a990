"""An LLM judge whose alias switches models mid-run: how often `judge` and `check` catch it.

The endpoint is the tests' chat-completions stand-in on 127.0.0.1 (tests/helpers/fake_llm.py),
grading the example (30% of its judgments held back, seeded) from the full labels with a
seeded over-grading of 20%. After a seeded share of the first run's answers, uniform over
the run, the alias `judge-1` points at another model, with another fingerprint, that grades
every pair one level higher. Each trial draws its seed, switch point and concurrency (1, 2
or 4) and runs the command line, as a person would:

- caught by `judge`: with the budget to spare, the layer ends with the new model's grade on
  every pair, no row of the old one left;
- not decided on the mix: with a budget that cuts the re-grade short, `check` (gate.labels
  human+llm) makes every gated check inconclusive and its result names both judges.

    python benchmarks/simulations/bench_judge_switch.py              # 20 and 10 trials: ~4 min
    python benchmarks/simulations/bench_judge_switch.py --trials 5 --cut 2
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import rate, table
from retrieval_gate.datasets.llm_layer import read_layer
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import JudgeExample, assisted_config, judge_example

SWITCHED = "judge-1-2026-12"
SWITCH = {"switched_model": SWITCHED, "switched_fingerprint": "fp_b", "switched_bias": 1}
OVER_GRADE = 0.2


def _draw(seed: int) -> tuple[float, int]:
    """A trial's switch point (a share of the first run's answers) and concurrency."""
    rng = np.random.default_rng(seed)
    return float(rng.uniform(0.0, 1.0)), int(rng.choice((1, 2, 4)))


def _to_grade(config: Path) -> int:
    dry = run_cli("judge", "-c", config, "--quiet", "--dry-run")
    return int(re.search(r"to grade: (\d+) pairs", dry.out)[1])  # type: ignore[index]


def _new_grades(example: JudgeExample, seed: int) -> bool:
    """Whether every row of the layer is the switched model's, with its grade."""
    judge = example.fake_judge(over_grade=OVER_GRADE, seed=seed)
    for row in read_layer(example.layer):
        grade, _ = judge.grade(example.queries[row.query], example.passages[row.doc])
        if row.answered_by != SWITCHED or row.grade != min(3, grade + 1):
            return False
    return True


def caught_by_judge(seed: int) -> bool:
    """One trial with the budget to spare: the layer ends as the new model graded it."""
    share, concurrency = _draw(seed)
    with tempfile.TemporaryDirectory() as folder, fake_llm(**SWITCH) as llm:  # type: ignore[arg-type]
        example = judge_example(
            Path(folder), llm.base_url, held_back=0.3, seed=seed, concurrency=concurrency
        )
        llm.judge = example.fake_judge(over_grade=OVER_GRADE, seed=seed)
        tasks = _to_grade(example.config)
        llm.switch_after = min(tasks - 1, max(1, round(share * tasks)))
        done = run_cli("judge", "-c", example.config, "--quiet")
        return done.ret == 0 and _new_grades(example, seed)


def undecided_by_check(seed: int) -> bool:
    """One trial whose budget cuts the re-grade short: `check` decides no gated check and
    its result names both judges."""
    share, concurrency = _draw(seed)
    with tempfile.TemporaryDirectory() as folder, fake_llm(**SWITCH) as llm:  # type: ignore[arg-type]
        root = Path(folder)
        example = judge_example(root, llm.base_url, held_back=0.7, seed=seed)
        llm.judge = example.fake_judge(over_grade=OVER_GRADE, seed=seed)
        config = assisted_config(
            root,
            "example.yaml",
            base_url=llm.base_url,
            model="judge-1",
            output=None,
            concurrency=concurrency,
            trust={"min_pairs": 50, "min_kappa": 0.0},
        )
        tasks = _to_grade(config)
        llm.switch_after = min(tasks - 1, max(1, round(share * tasks)))
        # The first run, and a tenth of the pairs to grade again.
        budget = tasks + max(1, llm.switch_after // 10)
        judged = run_cli("judge", "-c", config, "--quiet", "--max-calls", str(budget))
        if judged.ret != 2:
            return False
        result = root / "result.json"
        run_cli("check", "-c", config, "--json", result, "--no-reports")
        if not result.is_file():
            return False
        document = json.loads(result.read_text(encoding="utf-8"))
        judge = document["labels"]["judge"]
        named = {answered["model"] for answered in judge["answered_by"]}
        gated = [c for c in document["comparisons"] if c["gated"]]
        return (
            judge["mixed"]
            and named == {"judge-1", SWITCHED}
            and bool(gated)
            and all(c["verdict"] == "inconclusive" for c in gated)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials of `judge` (default 20)")
    parser.add_argument("--cut", type=int, default=10, help="trials of `check` (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="the first trial's seed")
    args = parser.parse_args()
    seeds = range(args.seed, args.seed + max(args.trials, args.cut))
    judge = sum(caught_by_judge(seed) for seed in seeds[: args.trials])
    check = sum(undecided_by_check(seed) for seed in seeds[: args.cut])
    print(
        table(
            ["the alias switches mid-run", "trials", "caught [Wilson 95%]"],
            [
                ["judge re-grades every pair", str(args.trials), rate(judge, args.trials)],
                ["re-grade cut short: check undecided", str(args.cut), rate(check, args.cut)],
            ],
            right={1, 2},
        )
    )


if __name__ == "__main__":
    main()
