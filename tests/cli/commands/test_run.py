"""`retrieval-gate run`: the metric table of one run of the retriever."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers.cli import run_cli
from tests.helpers.judged_example import judge_example


def test_under_llm_labels_the_table_is_of_the_human_judged_queries(tmp_path: Path) -> None:
    """The judge's pool runs every query; people judged 30% of them: the others scored 0 and
    pulled the mean down (ndcg@10 0.2560 over 131 queries, where the 39 judged gave 0.8601)."""
    example = judge_example(tmp_path, "http://127.0.0.1:9/v1", held_back=0.7)
    document = yaml.safe_load(example.config.read_text(encoding="utf-8"))
    document.setdefault("gate", {})["labels"] = "human"
    people_only = tmp_path / "people-only.yaml"
    people_only.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    document["gate"]["labels"] = "human+llm"
    assisted = tmp_path / "assisted.yaml"
    assisted.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    code, expected, err = run_cli("run", "-c", people_only, "--quiet", "--no-cache")
    assert code == 0, err
    code, out, err = run_cli("run", "-c", assisted, "--quiet", "--no-cache")
    assert code == 0, err
    assert out == expected
    assert "no person has judged ran for the judge's pool and are left out" in err
