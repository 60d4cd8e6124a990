"""`check` under human+llm grades the pool pairs new to the layer, and nothing else, first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_gate.datasets.llm_layer import read_layer
from tests.helpers.cli import run_cli
from tests.helpers.fake_llm import fake_llm
from tests.helpers.judged_example import assisted_config, judge_example, pooled_pairs

KEY = "RG_TEST_JUDGE_KEY"


def test_a_pull_request_pays_for_its_new_pairs_once(tmp_path: Path) -> None:
    """main's layer graded by `judge` for the example's retriever; a PR that swaps it for
    the regressed one: `check` grades exactly the pairs of its top 10 the layer lacks, says
    what it spent, decides as the full labels do, and a second `check` calls nobody."""
    with fake_llm() as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge(over_grade=0.3)
        main, pr = (
            assisted_config(tmp_path, name, base_url=llm.base_url, model="judge-1", output=None)
            for name in ("example.yaml", "example-regressed.yaml")
        )
        assert run_cli("judge", "-c", main, "--quiet").ret == 0
        held = {(row.query, row.doc) for row in read_layer(example.layer)}
        new = pooled_pairs([pr]) - held
        before = len(llm.requests)
        first = run_cli("check", "-c", pr, "--json", tmp_path / "first.json", "--quiet")
        paid = len(llm.requests) - before
        second = run_cli("check", "-c", pr, "--json", tmp_path / "second.json", "--quiet")
        assert len(llm.requests) - before == paid  # the second check called nobody
    assert 0 < len(new) == paid
    assert first.ret == second.ret == 1  # the regressed example fails, as with every label
    judging = json.loads((tmp_path / "first.json").read_text())["labels"]["judging"]
    assert judging["needed"] == judging["graded"] == judging["calls"] == paid
    assert judging["skipped"] == ""
    assert judging["prompt_tokens"] > 0
    assert f"Judged in this check: {paid} of {paid} new pairs ({paid} calls" in first.out
    again = json.loads((tmp_path / "second.json").read_text())["labels"]
    assert again["judging"]["needed"] == 0
    assert again["uncovered"] == []
    assert "The judge's layer held every pair of both top k: no call" in second.out
    assert new <= {(row.query, row.doc) for row in read_layer(example.layer)}


@pytest.mark.parametrize("flag", [(), ("--no-judge",)])
def test_without_the_key_nothing_is_called_and_nothing_decided_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: tuple[str, ...]
) -> None:
    """A fork's PR gets no secret: `check` grades nothing, says why, keeps every query,
    bounds each check over the grades its unjudged pairs could get and exits on that."""
    monkeypatch.setenv(KEY, "sk-test")
    with fake_llm(api_key="sk-test") as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge(over_grade=0.3)
        main, pr = (
            assisted_config(
                tmp_path, name, base_url=llm.base_url, model="judge-1", output=None,
                api_key_env=KEY,
            )
            for name in ("example.yaml", "example-regressed.yaml")
        )  # fmt: skip
        assert run_cli("judge", "-c", main, "--quiet").ret == 0
        before = len(llm.requests)
        monkeypatch.delenv(KEY)
        found = run_cli("check", "-c", pr, *flag, "--json", tmp_path / "r.json", "--quiet")
        assert len(llm.requests) == before
    document = json.loads((tmp_path / "r.json").read_text())
    labels = document["labels"]
    why = "--no-judge" if flag else f"judge.api_key_env names {KEY}, which is not set"
    assert labels["judging"]["skipped"].startswith(why)
    assert labels["judging"]["graded"] == 0 < labels["judging"]["needed"]
    assert labels["queries"] == 131
    assert labels["uncovered"]
    assert document["label_holes"]
    depends = [h for h in document["label_holes"] if not h["robust"]]
    for hole in depends:
        check = next(
            c
            for c in document["comparisons"]
            if (c["metric"], c["slice"]) == (hole["metric"], hole["slice"])
        )
        assert check["verdict"] == "inconclusive"
        assert check["failed"]
    assert found.ret == (1 if document["failures"] else 0)
    assert found.ret == 1  # the drop is past every bound, or the bounds cannot tell
    assert "sk-test" not in found.out + found.err + (tmp_path / "r.json").read_text()


def test_a_judge_the_probes_caught_obeying_pleas_is_provisional_in_check(tmp_path: Path) -> None:
    """`calibrate --probes` records its verdict beside the layer; `check` reads it and lets
    people's labels alone decide, saying why, until a probing clears the judge."""
    with fake_llm(obeys_pleas=True) as llm:
        example = judge_example(tmp_path, llm.base_url, held_back=0.3)
        llm.judge = example.fake_judge()
        main = assisted_config(
            tmp_path, "example.yaml", base_url=llm.base_url, model="judge-1", output=None
        )
        assert run_cli("judge", "-c", main, "--quiet").ret == 0
        trusted = run_cli("check", "-c", main, "--json", tmp_path / "before.json", "--quiet")
        assert run_cli("calibrate", "-c", main, "--probes").ret == 0
        caught = run_cli("check", "-c", main, "--json", tmp_path / "after.json", "--quiet")
        llm.obeys_pleas = False  # the cache holds the gullible answers: ask again
        assert run_cli("calibrate", "-c", main, "--probes", "--no-cache").ret == 0
        cleared = run_cli("check", "-c", main, "--json", tmp_path / "cleared.json", "--quiet")
    before, after, again = (
        json.loads((tmp_path / f"{name}.json").read_text())["labels"]
        for name in ("before", "after", "cleared")
    )
    assert trusted.ret == 0, trusted.out
    assert before["provisional_reason"] == again["provisional_reason"] == ""
    assert "stuffed robustness probes flipped" in after["provisional_reason"]
    assert "LLM labels are provisional: " in caught.out + caught.err
    assert cleared.ret == 0
