"""`check`'s plan: every rule of which options combine refuses from the config and the flag."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.pipeline.check_plan import RULES, CheckPlan, Rule, plan_check, refusals
from tests.helpers.builders import CONFIGS, copy_example
from tests.helpers.cli import run_cli

Part = tuple[dict[str, Any], dict[str, Any]]
"""Config keys to set, and `check`'s keywords (the command line's flags)."""

BASE: dict[str, Any] = {
    "version": 1,
    "name": "plan",
    "dataset": {"queries": "queries.jsonl"},
    "retriever": {"type": "python", "target": "search:search"},
    "k": 10,
    "metrics": {"ndcg@10": {"max_drop": "2pt"}},
}
EVALUATOR: Part = (
    {
        "metrics": {"ragas:faithfulness": {"max_drop": "3pt"}},
        "evaluators": {"ragas": {"format": "ragas", "current": "ragas.csv"}},
    },
    {},
)
JUDGE: Part = (
    {"gate": {"labels": "human+llm"}, "judge": {"base_url": "http://x/v1", "model": "m"}},
    {},
)
UNLABELLED: Part = (
    {"unlabelled": {"queries": "production.jsonl", "checks": {"overlap@10": {"max_drop": "5pt"}}}},
    {},
)
LATENCY: Part = ({"metrics": {"latency_p95": {"max_increase": "20%"}}}, {})
AGAINST: Part = ({}, {"against": "main"})
RUN: Part = ({}, {"run_path": "run.trec"})
SEQUENTIAL: dict[str, Part] = {"config": ({"gate": {"sequential": True}}, {}),
                               "flag": ({}, {"sequential": True})}  # fmt: skip
REPEATS: dict[str, Part] = {"config": ({"gate": {"repeats": 2}}, {}),
                            "flag": ({}, {"repeats": 2})}  # fmt: skip

# Rule -> source -> the two halves that each pass alone and are refused together. A source
# is where the user set what the rule is about: a config key, or a flag.
CASES: dict[str, dict[str, tuple[Part, Part]]] = {
    "sequential-evaluators": {source: (part, EVALUATOR) for source, part in SEQUENTIAL.items()},
    "sequential-against": {source: (part, AGAINST) for source, part in SEQUENTIAL.items()},
    "sequential-repeats": {source: (SEQUENTIAL[source], REPEATS[source]) for source in REPEATS},
    "sequential-labels": {source: (part, JUDGE) for source, part in SEQUENTIAL.items()},
    "sequential-unlabelled": {source: (part, UNLABELLED) for source, part in SEQUENTIAL.items()},
    "sequential-operational": {source: (part, LATENCY) for source, part in SEQUENTIAL.items()},
    "against-run-or-baseline": {
        "flag": (AGAINST, RUN),
        "flag (--baseline)": (AGAINST, ({}, {"baseline_path": "other.json"})),
    },
    "saved-run-repeats": {source: (RUN, part) for source, part in REPEATS.items()},
}
FLAGS_ONLY = {"against-run-or-baseline"}
"""Rules over options that have no config key: --against, --run, --baseline."""
FLAGS = {
    "sequential": "--sequential",
    "repeats": "--repeats",
    "against": "--against",
    "run_path": "--run",
    "baseline_path": "--baseline",
}


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if both else value
    return merged


def _plan(folder: Path, *parts: Part) -> tuple[Path, dict[str, Any], CheckPlan]:
    """The config of `parts` written in `folder`, the keywords, and their plan."""
    document, options = BASE, {}
    for keys, given in parts:
        document, options = _merged(document, keys), {**options, **given}
    path = folder / "gate.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path, options, plan_check(load(path), **options)


def _cases() -> list[Any]:
    return [
        pytest.param(rule, source, halves, id=f"{rule.name}-{source}")
        for rule in RULES
        for source, halves in CASES.get(rule.name, {"untested": (({}, {}), ({}, {}))}).items()
    ]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_every_rule_has_cases_from_the_config_and_the_flag(rule: Rule) -> None:
    sources = set(CASES.get(rule.name, {}))
    assert "flag" in sources, f"{rule.name}: no case; add its halves to CASES"
    assert "config" in sources or rule.name in FLAGS_ONLY, f"{rule.name}: no case from a config"


def test_the_rules_have_one_name_each() -> None:
    assert len({rule.name for rule in RULES}) == len(RULES)
    assert set(CASES) <= {rule.name for rule in RULES}


@pytest.mark.parametrize(("rule", "source", "halves"), _cases())
def test_each_half_passes_and_both_are_refused_through_the_command_line(
    tmp_path: Path, rule: Rule, source: str, halves: tuple[Part, Part]
) -> None:
    for half in halves:
        assert refusals(_plan(tmp_path, half)[2]) == []
    config, options, plan = _plan(tmp_path, *halves)
    assert [refused.name for refused in refusals(plan)] == [rule.name]
    argv: list[str] = []
    for keyword, value in options.items():
        argv += [FLAGS[keyword]] + ([] if value is True else [str(value)])
    code, _, err = run_cli("check", "-c", config, *argv, "--quiet", "--no-reports")
    assert code == 2
    assert rule.message(plan) in err


def test_the_message_names_what_asked_for_the_early_fail(tmp_path: Path) -> None:
    flag = _plan(tmp_path, SEQUENTIAL["flag"], EVALUATOR)[2]
    assert RULES[0].message(flag).endswith("drop --sequential")
    config, _, plan = _plan(tmp_path, SEQUENTIAL["config"], EVALUATOR)
    assert RULES[0].message(plan).startswith(f"{config}: gate.sequential stops")


def test_no_sequential_lifts_what_gate_sequential_refuses(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SEQUENTIAL["config"], EVALUATOR, ({}, {"sequential": False}))[2]
    assert plan.sequential is None
    assert refusals(plan) == []


def test_sequential_on_the_evaluators_example_is_refused_as_gate_sequential_is(
    tmp_path: Path,
) -> None:
    """The flag used to reach the sequential run, which read ragas:faithfulness as a metric."""
    example = copy_example(tmp_path)
    flagged = example / "example-evaluators.yaml"
    shutil.copy(CONFIGS / flagged.name, flagged)
    configured = example / "configured.yaml"
    configured.write_text(
        flagged.read_text(encoding="utf-8") + "\ngate: {sequential: true}\n", encoding="utf-8"
    )
    refusal = (
        "stops before every query ran, but an evaluator's export scores them all "
        "(metrics.ragas:faithfulness)"
    )
    for argv in ([flagged, "--sequential"], [configured]):
        code, _, err = run_cli("check", "-c", *argv, "--quiet", "--no-reports")
        assert code == 2, err
        assert refusal in err


@pytest.mark.parametrize(
    ("parts", "probed", "unprobed"),
    [
        ((), True, ""),
        ((({}, {"noise_probe": False}),), False, ""),
        ((({"gate": {"noise_probe": False}}, {}),), False, ""),
        ((REPEATS["config"],), False, ""),
        ((REPEATS["flag"],), False, ""),
        ((RUN,), False, "a saved run cannot be run again: its noise was not probed"),
        (
            (SEQUENTIAL["flag"],),
            False,
            "gate.sequential runs the queries once: the noise was not probed",
        ),
        ((AGAINST,), True, ""),
    ],
)
def test_the_noise_probe_runs_with_one_run_a_side_of_a_retriever_to_call(
    tmp_path: Path, parts: tuple[Part, ...], probed: bool, unprobed: str
) -> None:
    plan = _plan(tmp_path, *parts)[2]
    assert (plan.noise_probe is not None) == probed
    assert plan.unprobed == unprobed
