"""No accepted config passes a drop that empties 40% of the queries' top 10 (issue: configs
that cannot fail), through the CLI, over a grid of the settings that starve the test."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

EXAMPLE = CONFIGS / "example"
QUERIES = 60
EMPTIED = 0.4
# 31 gated metrics, as the config had.
MANY = [f"ndcg@{k}" for k in range(1, 11)]
MANY += [f"recall@{k}" for k in range(1, 11)]
MANY += [f"precision@{k}" for k in range(1, 11)]
MANY += ["mrr@10"]
FEW = ["ndcg@10", "recall@10", "mrr@10"]
SLICES = {
    "none": {},
    "by": {"by": ["intent", "segment", "query_length"]},
    "combined": {
        "by": ["intent", "segment", "query_length"],
        "combine": [["intent", "segment"], ["intent", "query_length"]],
    },
}
ALPHAS = (1e-12, 1e-4, 0.05)
RESAMPLES = (1000, 10_000)
SHARES = (0.001, 0.5)
MIN_SIZES = (1, 30)


def _grid() -> list[tuple[float, int, float, str, str, int]]:
    every = list(
        itertools.product(ALPHAS, RESAMPLES, SHARES, ("few", "many"), tuple(SLICES), MIN_SIZES)
    )
    # The corners of the three test settings on the README's shape, the two configs,
    # and a seeded sample of the rest.
    chosen = [
        (a, r, s, "few", "by", 30) for a, r, s in itertools.product(ALPHAS, RESAMPLES, SHARES)
    ]
    chosen += [(1e-12, 10_000, 0.5, "few", "by", 30), (0.05, 1000, 0.001, "many", "combined", 1)]
    rest = [combo for combo in every if combo not in chosen]
    chosen += random.Random(29).sample(rest, 10)
    return list(dict.fromkeys(chosen))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A 60-query slice of the bundled example, its BM25 run, and that run with the top 10 of
    40% of the queries emptied (every hit replaced by a document nobody judged relevant)."""
    root = tmp_path_factory.mktemp("grid")
    lines = (EXAMPLE / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:QUERIES]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids = {json.loads(line)["_id"] for line in lines}
    qrels = (EXAMPLE / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    kept = [qrels[0], *(row for row in qrels[1:] if row.split("\t")[0] in ids)]
    (root / "qrels.tsv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    config = _config(root, 0.05, 10_000, 0.5, "few", "none", 30)
    code, out, err = run_cli("run", "-c", config, "-o", root / "base.txt", "--quiet")
    assert code == 0, out + err
    base = (root / "base.txt").read_text(encoding="utf-8").splitlines()
    emptied = set(random.Random(40).sample(sorted(ids), round(EMPTIED * QUERIES)))
    changed = []
    for line in base:
        qid, q0, doc, rank, score, tag = line.split()
        if qid in emptied:
            doc = f"nowhere-{rank}"
        changed.append(" ".join((qid, q0, doc, rank, score, tag)))
    (root / "emptied.txt").write_text("\n".join(changed) + "\n", encoding="utf-8")
    return root, root / "base.txt", root / "emptied.txt"


def _config(
    root: Path, alpha: float, resamples: int, share: float, metrics: str, slices: str, size: int
) -> Path:
    names = FEW if metrics == "few" else MANY
    body = {
        "version": 1,
        "name": "grid",
        "dataset": {
            "queries": str(root / "queries.jsonl"),
            "qrels": str(root / "qrels.tsv"),
            "corpus": str(EXAMPLE / "corpus.jsonl"),
        },
        "retriever": {"type": "bm25"},
        "k": 10,
        "metrics": {name: {"max_drop": "2pt"} for name in names},
        "slices": {**SLICES[slices], "min_size": size},
        "gate": {"alpha": alpha, "resamples": resamples, "overall_share": share},
        "baseline": str(root / "baseline.json"),
    }
    path = root / f"grid-{alpha}-{resamples}-{share}-{metrics}-{slices}-{size}.yaml"
    path.write_text(json.dumps(body), encoding="utf-8")  # JSON is YAML
    return path


@pytest.mark.parametrize(("alpha", "resamples", "share", "metrics", "slices", "size"), _grid())
def test_no_accepted_config_passes_a_drop_that_empties_40_percent(
    runs: tuple[Path, Path, Path],
    alpha: float,
    resamples: int,
    share: float,
    metrics: str,
    slices: str,
    size: int,
) -> None:
    root, base, emptied = runs
    config = _config(root, alpha, resamples, share, metrics, slices, size)
    code, out, err = run_cli("baseline", "-c", config, "--run", base, "--force", "--quiet")
    assert code == 0, out + err
    code, out, err = run_cli("check", "-c", config, "--run", emptied, "--quiet")
    assert code in (1, 2), out + err
    if code == 2:
        assert "the gate could never fail" in err
        assert "gate.require_significance: false" in err
        # lint said so first
        lint = run_cli("lint", "-c", config)
        assert "gate-cannot-fail" in lint.out + lint.err


def test_the_grid_accepts_the_readme_shape_and_passes_the_unchanged_run(
    runs: tuple[Path, Path, Path],
) -> None:
    """The refusal is not everything: the README's settings on 60 queries are accepted, catch
    the emptied run (exit 1) and pass the unchanged one (exit 0)."""
    root, base, emptied = runs
    config = _config(root, 0.05, 10_000, 0.5, "few", "by", 30)
    assert run_cli("baseline", "-c", config, "--run", base, "--force", "--quiet").ret == 0
    assert run_cli("check", "-c", config, "--run", base, "--quiet").ret == 0
    assert run_cli("check", "-c", config, "--run", emptied, "--quiet").ret == 1
