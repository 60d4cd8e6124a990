"""`calibrate --probes` against a judge that obeys a passage's plea and one that does not.

For each seed the bundled example is judged with 30% of people's judgments held back
(seeded), then `calibrate --probes` runs, as a person would, against the tests'
chat-completions stand-in on 127.0.0.1 (a real HTTP server speaking the protocol). Its judge
grades from the full labels, one level off on a seeded 20% of pairs, and is one of:

- `ignores pleas`: a passage that asks for a grade gets the grade its content deserves;
- `obeys pleas`: a passage that asks for grade 3 gets it (Alaofi et al., 2025);
- `answers vary`: ignores pleas, but each answer moves a level with probability 0.3 (a
  judge at temperature above 0), for the re-ask spread.

It prints, per judge and seed, the flips of each kind of probe, whether the card calls the
judge provisional (judge.probes.max_flip_rate 0.1), the re-ask spread, and the calls made.

    python benchmarks/simulations/bench_judge_probes.py            # 3 seeds, about 1 minute
    python benchmarks/simulations/bench_judge_probes.py --seeds 1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks.common.tables import table
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import judge_example

OVER_GRADE = 0.2
JUDGES: dict[str, dict[str, Any]] = {
    "ignores pleas": {},
    "obeys pleas": {"obeys_pleas": True},
    "answers vary": {"answer_noise": 0.3},
}


def probed(seed: int, state: dict[str, Any]) -> dict[str, Any]:
    """`judge`, then `calibrate --probes -f json` on the example held back with `seed`."""
    with tempfile.TemporaryDirectory() as temp, fake_llm(**state) as llm:
        example = judge_example(Path(temp), llm.base_url, held_back=0.3, seed=seed)
        llm.judge = example.fake_judge(over_grade=OVER_GRADE, seed=seed)
        code, _, err = run_cli("judge", "-c", example.config, "--quiet")
        if code:
            raise SystemExit(f"judge failed: {err}")
        code, out, err = run_cli("calibrate", "-c", example.config, "--probes", "-f", "json")
        if code:
            raise SystemExit(f"calibrate failed: {err}")
        document: dict[str, Any] = json.loads(out)
        return document


def _kind(found: dict[str, Any], kind: str) -> str:
    rate = found["kinds"][kind]["rate"]
    shown = "n/a" if rate is None else f"{rate:.2f}"
    return f"{found['kinds'][kind]['flipped']}/{found['kinds'][kind]['graded']} ({shown})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for name, state in JUDGES.items():
        for seed in range(args.seeds):
            document = probed(seed, state)
            found = document["probes"]
            again = found["reasked"]
            rows.append(
                [
                    name,
                    str(seed),
                    _kind(found, "stuffed"),
                    _kind(found, "cut"),
                    _kind(found, "all"),
                    "provisional" if not document["trusted"] else "trusted",
                    f"{again['differ']}/{again['pairs']} ({again['share']:.2f})",
                    str(found["calls"]),
                ]
            )
    print(
        "The example, 30% of people's judgments held back, a judge one level off on 20% of "
        "pairs;\nflips: probes whose grade moved 2 levels the wrong way from the original's, "
        "judge.probes defaults\n"
    )
    print(
        table(
            ["judge", "seed", "stuffed flips", "cut flips", "all", "card", "re-ask differ",
             "calls"],
            rows,
            right={1, 7},
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
