"""A slice of every query is the overall check again: `init` leaves it out, `lint` warns, and
`check` neither prints its failures twice nor gives it a share of alpha (issue 27, item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from retrieval_gate.config.loader import load
from retrieval_gate.datasets.convert import convert_cranfield
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.slicing import same_as_all, slice_queries
from tests.helpers.cli import run_cli

CONFIG = """\
version: 1
name: cran
dataset: {path: cran}
retriever: {type: bm25}
k: 10
metrics:
  ndcg@10: {max_drop: 2pt}
  recall@10: {max_drop: 3pt}
  mrr(rel=1)@10: {max_drop: 3pt}
slices:
  by: [query_length]
baseline: .retrieval-gate/baseline.json
"""


def findings(config: Path) -> list[dict[str, Any]]:
    code, out, err = run_cli("lint", "-c", str(config), "--format", "json")
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)["findings"]
    return found


def slices_comment(text: str) -> str:
    """The comment lines above `slices:` that say what init found, joined."""
    block = text.split("# Per-slice gating")[1].split("\nslices:")[0]
    return " ".join(line.removeprefix("# ") for line in block.splitlines()[1:])


@pytest.fixture(scope="module")
def cranfield(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cranfield as a BEIR folder, converted from the shared raw files (never copied into
    the repository): every one of its 225 queries has 6 words or more."""
    folder = tmp_path_factory.mktemp("cranfield") / "cran"
    convert_cranfield(shared_data / "cranfield", folder)
    return folder


@pytest.fixture(scope="module")
def sliced(cranfield: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository gating Cranfield with BM25, sliced by query length, with its baseline."""
    root = tmp_path_factory.mktemp("sliced")
    (root / "cran").symlink_to(cranfield, target_is_directory=True)
    (root / "retrieval-gate.yaml").write_text(CONFIG, encoding="utf-8")
    code, _, err = run_cli("baseline", "-c", str(root / "retrieval-gate.yaml"))
    assert code == 0, err
    return root


def test_init_leaves_out_a_length_slice_of_every_cranfield_query(
    cranfield: Path, tmp_path: Path
) -> None:
    (tmp_path / "cran").symlink_to(cranfield, target_is_directory=True)
    code, _, err = run_cli("init", "--dir", str(tmp_path), "--dataset", "cran")
    assert (code, err) == (0, "")
    path = tmp_path / "retrieval-gate.yaml"
    text = path.read_text(encoding="utf-8")
    assert load(path, environ={}).slices.by == []
    comment = slices_comment(text)
    assert (
        "query_length is left out: all 225 queries are 6+ words long, so its one slice, "
        "query_length=6+, would repeat the overall check (each failure twice, a share of alpha "
        "for nothing)." in comment
    )
    # What init wrote is what lint finds nothing to say about.
    assert "repeats-overall" not in {f["code"] for f in findings(path)}


def test_init_keeps_a_length_slice_that_splits_the_queries(tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    folder.mkdir()
    texts = ["refund", "reset my password", "why was I charged twice this month"]
    (folder / "queries.tsv").write_text(
        "".join(f"q{i}\t{text}\n" for i, text in enumerate(texts)), encoding="utf-8"
    )
    (folder / "qrels.txt").write_text("q0 0 d1 1\n", encoding="utf-8")
    assert run_cli("init", "--dir", str(tmp_path))[0] == 0
    config = tmp_path / "retrieval-gate.yaml"
    assert load(config, environ={}).slices.by == ["query_length"]
    assert "left out" not in slices_comment(config.read_text(encoding="utf-8"))


def test_init_on_plain_queries_of_one_length_slices_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    folder.mkdir()
    (folder / "queries.tsv").write_text("q1\trefund\nq2\tinvoice copy\n", encoding="utf-8")
    (folder / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    assert run_cli("init", "--dir", str(tmp_path))[0] == 0
    config = tmp_path / "retrieval-gate.yaml"
    assert load(config, environ={}).slices.by == []
    assert slices_comment(config.read_text(encoding="utf-8")) == (
        "eval/queries.tsv is not JSON Lines: it carries no metadata, and query_length is left "
        "out: all 2 queries are 1-2 words long, so its one slice, query_length=1-2, would "
        "repeat the overall check (each failure twice, a share of alpha for nothing)."
    )


def test_lint_warns_about_a_length_slice_of_every_query(sliced: Path) -> None:
    config = sliced / "retrieval-gate.yaml"
    found = [f for f in findings(config) if f["code"] == "repeats-overall"]
    assert len(found) == 1
    assert found[0]["severity"] == "warning"
    assert found[0]["message"] == (
        "slices.by: query_length puts all 225 queries in one slice, query_length=6+ (they have "
        "6 to 46 words): it repeats the overall check, so `check` leaves it out"
    )
    fix = found[0]["fix"]
    assert fix.startswith("remove query_length from slices.by, or split the queries by length: ")
    assert found[0]["where"] == f"{config}:11"  # the `by:` line
    # The bins it suggests do split them, into slices big enough to gate.
    bins = yaml.safe_load(fix.split("`slices.query_length.bins: ")[1].rstrip("`"))
    split = sliced / "split.yaml"
    split.write_text(
        CONFIG.replace(
            "by: [query_length]", f"by: [query_length]\n  query_length: {{bins: {bins}}}"
        ),
        encoding="utf-8",
    )
    assert not {"repeats-overall", "small-slice"} & {f["code"] for f in findings(split)}


def test_check_does_not_repeat_the_overall_check(sliced: Path) -> None:
    config = sliced / "retrieval-gate.yaml"
    # Without stemming BM25 loses 2.2 points of ndcg@10: one failing check, the overall one.
    config.write_text(
        CONFIG.replace("{type: bm25}", "{type: bm25, stemmer: null}"), encoding="utf-8"
    )
    try:
        code, out, err = run_cli("check", "-c", str(config), "--quiet")
    finally:
        config.write_text(CONFIG, encoding="utf-8")
    assert code == 1, err
    head = out.splitlines()[0]
    assert head.startswith("retrieval-gate cran: FAIL; ndcg@10 fell 2.2 pt (p = ")
    assert "more failing" not in head
    assert "query_length" not in out
    assert out.count("x ndcg@10 fell 2.2 pt") == 1
    assert (
        "warning: slice query_length=6+ holds all 225 queries: it would repeat the overall check "
        "(each failure twice, a share of alpha for nothing), so it is not checked on its own"
    ) in err
    result = json.loads((sliced / ".retrieval-gate" / "cran" / "result.json").read_text())
    assert {c["slice"] for c in result["comparisons"]} == {"all"}
    assert len(result["failures"]) == 1
    # The overall checks have all of alpha: no share went to the slice.
    assert [c["level"] for c in result["comparisons"]] == pytest.approx([0.05 / 3] * 3)


def test_lint_names_a_field_of_one_value_and_a_value_on_every_query(tmp_path: Path) -> None:
    rows = [
        {
            "_id": f"q{i}",
            "text": "x " * (1 + i % 7),
            "lang": "en",
            "tags": ["web", "mobile"] if i % 2 else ["web"],
        }
        for i in range(40)
    ]
    (tmp_path / "queries.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    (tmp_path / "qrels.txt").write_text(
        "".join(f"q{i} 0 d1 1\n" for i in range(40)), encoding="utf-8"
    )
    config = tmp_path / "retrieval-gate.yaml"
    config.write_text(
        "version: 1\nname: t\ndataset: {queries: queries.jsonl, qrels: qrels.txt}\n"
        "retriever: {type: run_file, path: run.trec}\nk: 10\n"
        "metrics: {ndcg@10: {max_drop: 5pt}}\n"
        "slices: {by: [lang, tags, query_length], combine: [[lang, query_length]]}\n",
        encoding="utf-8",
    )
    found = [f for f in findings(config) if f["code"] == "repeats-overall"]
    assert [(f["message"], f["fix"]) for f in found] == [
        (
            "slices.by: lang puts all 40 queries in one slice, lang=en: it repeats the overall "
            "check, so `check` leaves it out",
            "remove lang from slices.by",
        ),
        (
            "1 slice holds all 40 queries (every query has that value, among others): tags=web; "
            "it repeats the overall check, so `check` leaves it out",
            "nothing to change unless those values should not be on every query; the other "
            "slices of those fields are checked",
        ),
    ]


def test_compare_leaves_out_every_slice_of_all_the_queries() -> None:
    rng = np.random.default_rng(3)
    base = rng.random(60)
    scores = {"m": base}
    current = {"m": base - 0.05}
    everything = np.arange(60, dtype=np.int64)
    slices = {
        "all": everything,
        "lang=en": everything[::-1].copy(),  # the same queries in another order
        "half=a": everything[:30],
        "half=b": everything[30:],
    }
    assert same_as_all(slices) == ["lang=en"]
    thresholds = {"m": Threshold(max_drop=0.02)}
    checks = compare(scores, current, slices, thresholds, {}, ComparisonSettings())
    assert [c.slice for c in checks] == ["all", "half=a", "half=b"]
    alone = compare(
        scores,
        current,
        {k: v for k, v in slices.items() if k != "lang=en"},
        thresholds,
        {},
        ComparisonSettings(),
    )
    assert checks == alone


def test_slices_of_an_empty_set_are_not_taken_for_the_overall_check() -> None:
    assert same_as_all(slice_queries([], ["query_length"], [], [1, 3, 6])) == []
    assert same_as_all({"all": np.arange(0), "x=1": np.arange(0)}) == []
