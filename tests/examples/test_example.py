"""The bundled example gate: its labelled set is sound, it passes, and its regressed twin fails."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from retrieval_gate.config.loader import load
from tests.helpers.builders import EXAMPLE_BASELINE, copy_example
from tests.helpers.paths import CONFIGS
from tests.helpers.waiting import GUARD

EXAMPLE = CONFIGS / "example"
INTENTS = {"how-to", "troubleshooting", "billing", "account", "navigational", "security"}
SEGMENTS = {"free", "business", "enterprise"}


def read_jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    rows = [line.split("\t") for line in lines[1:]]
    return [(query, doc, int(grade)) for query, doc, grade in rows]


@pytest.fixture(scope="module")
def generator() -> Iterator[ModuleType]:
    """configs/example/make_example.py, imported from its path."""
    spec = importlib.util.spec_from_file_location("make_example", EXAMPLE / "make_example.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's configs, data and committed baseline copied into a temporary configs/
    (no cache), so running the gate writes nothing into the repository."""
    return copy_example(tmp_path_factory.mktemp("example") / "configs")


def gate(configs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`retrieval-gate check --no-cache ARGS` run in `configs`."""
    return subprocess.run(
        [sys.executable, "-m", "retrieval_gate", "check", "--no-cache", "--quiet", *args],
        cwd=configs,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=GUARD,
        check=False,
    )


def test_example_gate_passes(configs: Path) -> None:
    done = gate(configs, "-c", "example.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    assert (configs / ".retrieval-gate" / "example" / "report.md").is_file()


def test_regressed_gate_fails_and_names_the_slices(configs: Path) -> None:
    report = configs / "regressed.md"
    done = gate(configs, "-c", "example-regressed.yaml", "--markdown", str(report))
    assert done.returncode == 1, done.stdout + done.stderr
    summary = done.stdout
    assert "FAIL" in summary
    assert "on intent=" in summary
    assert "on segment=" in summary
    assert "## ❌ FAIL · retrieval-gate · example-regressed" in report.read_text(encoding="utf-8")


def test_both_configs_compare_with_the_same_baseline() -> None:
    """Everything in the baseline fingerprint but the retriever is shared."""
    good, bad = load(CONFIGS / "example.yaml"), load(CONFIGS / "example-regressed.yaml")
    assert good.baseline == bad.baseline == EXAMPLE_BASELINE.as_posix()
    for field in ("dataset", "k", "metrics", "slices", "gate"):
        assert getattr(good, field) == getattr(bad, field), field
    assert good.retriever != bad.retriever


def test_labelled_set_is_sound() -> None:
    corpus = read_jsonl(EXAMPLE / "corpus.jsonl")
    queries = read_jsonl(EXAMPLE / "queries.jsonl")
    qrels = read_qrels(EXAMPLE / "qrels" / "test.tsv")
    assert 180 <= len(corpus) <= 240
    assert 100 <= len(queries) <= 140

    docs = {row["_id"] for row in corpus}
    assert len(docs) == len(corpus)
    assert len({row["title"] for row in corpus}) == len(corpus)
    assert len({row["text"] for row in corpus}) == len(corpus)
    for row in corpus:
        assert row["title"].strip(), row["_id"]
        assert 60 <= len(row["text"].split()) <= 200, row["_id"]

    ids = {row["_id"] for row in queries}
    assert len(ids) == len(queries)
    for row in queries:
        assert row["text"].strip(), row["_id"]
        assert row["intent"] in INTENTS, row["_id"]
        assert row["segment"] in SEGMENTS, row["_id"]

    assert len({(query, doc) for query, doc, _ in qrels}) == len(qrels)
    assert {doc for _, doc, _ in qrels} <= docs
    assert {query for query, _, _ in qrels} == ids
    assert {grade for _, _, grade in qrels} == {0, 1, 2, 3}
    best = Counter[str]()
    for query, _, grade in qrels:
        best[query] = max(best[query], grade)
    assert all(best[query] >= 2 for query in ids)

    # Gated slices: at least four intents, every segment and every length bucket of 20+.
    intents = Counter(row["intent"] for row in queries)
    assert sum(count >= 20 for count in intents.values()) >= 4
    assert min(Counter(row["segment"] for row in queries).values()) >= 20
    lengths = Counter(min(len(row["text"].split()), 6) for row in queries)
    assert lengths[1] + lengths[2] >= 20
    assert lengths[3] + lengths[4] + lengths[5] >= 20
    assert lengths[6] >= 20


def test_committed_files_are_the_generators_output(generator: ModuleType) -> None:
    for name, text in generator.render().items():
        assert (EXAMPLE / name).read_text(encoding="utf-8") == text, (
            f"configs/example/{name} is out of date: run python configs/example/make_example.py"
        )


def test_readme_counts_match_the_data(generator: ModuleType) -> None:
    readme = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    stats = generator.stats(generator.render())
    assert f"| {stats['documents']['all']} articles," in readme
    assert f"| {stats['queries']['all']} questions," in readme
    assert f"| {sum(stats['grade'].values())} graded judgments," in readme
    for grade, count in stats["grade"].items():
        assert re.search(rf"^\| {grade} \|.*\| {count} \|$", readme, re.MULTILINE), grade
    for field in ("intent", "segment", "query_length"):
        for value, count in stats[field].items():
            assert f"| {value} | {count} |" in readme, (field, value)
