"""The judge's identity through the command line: an endpoint whose alias switches models."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from retrieval_gate.datasets.llm_layer import read_layer
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import JudgeExample, assisted_config, judge_example

SWITCHED = "judge-1-2026-12"
"""The model the alias `judge-1` points at after the switch; it grades one level higher."""
SWITCH = {"switched_model": SWITCHED, "switched_fingerprint": "fp_b", "switched_bias": 1}


def _to_grade(example: JudgeExample) -> int:
    """Pairs a first `judge` run grades, from its dry run."""
    dry = run_cli("judge", "-c", example.config, "--quiet", "--dry-run")
    assert dry.ret == 0, dry.err
    return int(re.search(r"to grade: (\d+) pairs", dry.out)[1])  # type: ignore[index]


def _switched_grade(example: JudgeExample, query: str, doc: str, seed: int) -> int:
    """The grade the switched model gives a pair: the first model's, one level up."""
    grade, _ = example.fake_judge(over_grade=0.2, seed=seed).grade(
        example.queries[query], example.passages[doc]
    )
    return min(3, grade + 1)


@pytest.mark.parametrize(
    ("seed", "share", "concurrency"),
    [(0, 0.0, 1), (1, 0.05, 4), (2, 0.5, 2), (3, 0.9, 4), (4, 1.0, 3)],
)
def test_a_switch_mid_run_is_caught_and_every_pair_graded_again_by_the_new_model(
    tmp_path: Path, seed: int, share: float, concurrency: int
) -> None:
    """Whenever the switch comes (after the first answer, up to before the last), the layer
    ends with the switched model's grades on every pair: no row of the old model is left."""
    with fake_llm(system_fingerprint="fp_a", **SWITCH) as llm:  # type: ignore[arg-type]
        example = judge_example(
            tmp_path, llm.base_url, held_back=0.3, seed=seed, concurrency=concurrency
        )
        llm.judge = example.fake_judge(over_grade=0.2, seed=seed)
        tasks = _to_grade(example)
        llm.switch_after = min(tasks - 1, max(1, round(share * tasks)))
        code, out, err = run_cli("judge", "-c", example.config, "--quiet")
    assert code == 0, err
    rows = read_layer(example.layer)
    assert len(rows) == tasks
    assert {(row.answered_by, row.system_fingerprint) for row in rows} == {(SWITCHED, "fp_b")}
    assert all(row.grade == _switched_grade(example, row.query, row.doc, seed) for row in rows)
    again = int(re.search(r"graded again: (\d+) pairs", out)[1])  # type: ignore[index]
    assert again >= llm.switch_after
    assert tasks + llm.switch_after <= len(llm.requests) <= 2 * tasks
    assert re.findall(r"answered by: (.*)", out) == [
        f"{SWITCHED} (fingerprint fp_b) at temperature 0.0, max_tokens 16, logprobs on: "
        f"{tasks} pairs of the pool"
    ]


def test_a_regrade_cut_short_names_both_judges_and_no_check_is_decided_on_the_mix(
    tmp_path: Path,
) -> None:
    with fake_llm(**SWITCH) as llm:  # type: ignore[arg-type]
        example = judge_example(tmp_path, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge()
        config = assisted_config(
            tmp_path,
            "example.yaml",
            base_url=llm.base_url,
            model="judge-1",
            output=None,
            trust={"min_pairs": 50, "min_kappa": 0.0},
        )
        tasks = _to_grade(example)
        llm.switch_after = tasks // 2
        budget = str(tasks + 100)  # the first pass, and 100 of the pairs to grade again
        code, _, err = run_cli("judge", "-c", config, "--quiet", "--max-calls", budget)
        assert code == 2
        assert f"judging budget ({budget} calls) is spent" in err
        assert "graded by 2 judges (judge-1 at temperature 0.0" in err
        assert f"{SWITCHED} (fingerprint fp_b) at temperature 0.0" in err
        by_model = Counter(row.answered_by for row in read_layer(example.layer))
        assert by_model == {"judge-1": tasks // 2 - 100, SWITCHED: tasks - tasks // 2 + 100}
        result = tmp_path / "result.json"
        code, out, err = run_cli(
            "check", "-c", config, "--json", result, "--markdown", tmp_path / "r.md"
        )
        assert code == 1, err  # a check on a mix of judges is inconclusive and fails
        document = json.loads(result.read_text(encoding="utf-8"))
        judge = document["labels"]["judge"]
        assert judge["mixed"] is True
        assert [(a["model"], a["system_fingerprint"]) for a in judge["answered_by"]] == [
            ("judge-1", None),
            (SWITCHED, "fp_b"),
        ]
        assert document["labels"]["decided_by"] == "human+llm"
        gated = [c for c in document["comparisons"] if c["gated"]]
        assert gated
        assert {c["verdict"] for c in gated} == {"inconclusive"}
        assert "graded by 2 judges" in err
        report = (tmp_path / "r.md").read_text(encoding="utf-8")
        first, second = (answered["pairs"] for answered in judge["answered_by"])
        # The pairs the checks scored: the pool's (not the calibration pairs beyond it).
        assert 0 < first <= by_model["judge-1"]
        assert 0 < second <= by_model[SWITCHED]
        assert (
            f"graded by 2 judges, judge-1 on {first} pairs and {SWITCHED} (fingerprint fp\\_b) "
            f"on {second} pairs: those checks are inconclusive, not decided on a mix"
        ) in report
        assert "inconclusive, which fail this gate (their labels mix 2 judges)" in report
        # With the budget to finish, a run with nothing new to grade settles on one judge.
        code, out, err = run_cli("judge", "-c", config, "--quiet")
        assert code == 0, err
        assert "to grade: 0 pairs" in out
        assert f"graded again: {by_model['judge-1']} pairs" in out
        assert {row.answered_by for row in read_layer(example.layer)} == {SWITCHED}
        code, _out, err = run_cli("check", "-c", config, "--json", result)
    document = json.loads(result.read_text(encoding="utf-8"))
    assert document["labels"]["judge"]["mixed"] is False
    assert "inconclusive" not in {c["verdict"] for c in document["comparisons"] if c["gated"]}


HOSTILE = {"name": "::error::forged\x1b[31m", "nested": [[["deep"]]]}


def test_a_hostile_model_and_fingerprint_stay_bounded_inert_text_everywhere(
    tmp_path: Path,
) -> None:
    fingerprint = "\x1b]0;title\x07\n::warning::" + "f" * 1_000_000
    with fake_llm(answered_as=HOSTILE, system_fingerprint=fingerprint) as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge()
        config = assisted_config(
            tmp_path, "example.yaml", base_url=llm.base_url, model="judge-1", output=None
        )
        judged = run_cli("judge", "-c", config, "--quiet")
    assert judged.ret == 0, judged.err
    rows = read_layer(example.layer)
    [answered] = {row.answered_by for row in rows}
    [kept] = {row.system_fingerprint for row in rows}
    assert answered == '{"name": "::error::forged\\u001b[31m", "nested": [[["deep"]]]}'
    assert kept.startswith("?]0;title? ::warning::fff")
    assert len(kept) == 200
    assert example.layer.stat().st_size < 1000 * len(rows)
    result, report = tmp_path / "result.json", tmp_path / "r.html"
    checked = run_cli("check", "-c", config, "--json", result, "--html", report)
    assert checked.ret == 0, checked.err
    judge = json.loads(result.read_text(encoding="utf-8"))["labels"]["judge"]
    assert judge["answered_by"][0]["model"] == answered
    assert judge["mixed"] is False
    for text in (judged.out, judged.err, checked.out, checked.err, report.read_text()):
        assert not any(line.lstrip().startswith("::") for line in text.splitlines())
        assert "\x1b" not in text
        assert "\x07" not in text
    # Named in the report, HTML-escaped, on the labels line.
    assert "answered by {&#34;name&#34;: &#34;::error::forged" in report.read_text()
