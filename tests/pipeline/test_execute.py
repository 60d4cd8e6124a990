"""`retrieval-gate run`: config to scores through a real retriever, exit codes and outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_gate.metrics import evaluate
from retrieval_gate.pipeline.execute import execute
from retrieval_gate.readers import read_qrels, read_run
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

TINY = CONFIGS / "tiny"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    shutil.copytree(TINY, folder, ignore=shutil.ignore_patterns("cache.sqlite*"))
    return folder


def test_run_scores_the_bundled_set_with_bm25_and_saves_the_run(tiny: Path) -> None:
    output = tiny / "out" / "run.trec"
    code, out, err = run_cli("run", "-c", str(tiny / "retrieval-gate.yaml"), "-o", str(output))
    assert code == 0, err
    assert out.splitlines()[0].split() == ["metric", "all"]
    assert "1 query with no judgments not run: pricing-page" in err
    saved = evaluate(read_run(output), read_qrels(tiny / "qrels.txt"), ["ndcg@10"]).mean()
    printed = dict(line.split() for line in out.splitlines()[1:5])
    assert f"{saved['ndcg@10']:.4f}" == printed["ndcg@10"]


def test_second_run_is_answered_from_the_cache(tiny: Path) -> None:
    config = tiny / "retrieval-gate.yaml"
    first = execute(config)
    second = execute(config)
    assert first.run.cached == 0
    assert second.run.cached == len(second.dataset.queries)
    assert second.scores.mean() == first.scores.mean()
    assert execute(config, cache=False).run.cached == 0


def with_gate(text: str, **settings: object) -> str:
    """The tiny config's text with `settings` added to its `gate:` block."""
    import yaml

    document = yaml.safe_load(text)
    document.setdefault("gate", {}).update(settings)
    return yaml.safe_dump(document, sort_keys=False)


def test_run_file_retriever_scores_exactly_like_evaluate(tiny: Path) -> None:
    text = (tiny / "retrieval-gate.yaml").read_text()
    text = text.replace("type: bm25", "type: run_file\n  path: run.txt")
    # The bundled run leaves out one of the 5 labelled queries on purpose.
    (tiny / "file.yaml").write_text(with_gate(text, min_coverage=0.8))
    execution = execute(tiny / "file.yaml", cache=False)
    expected = evaluate(read_run(tiny / "run.txt"), read_qrels(tiny / "qrels.txt"),
                        list(execution.config.metrics))  # fmt: skip
    assert execution.scores.mean() == expected.mean()


def test_too_many_failed_queries_is_exit_2_listing_them(tiny: Path) -> None:
    (tiny / "flaky.py").write_text(
        "def search(query, k):\n"
        "    if 'password' not in query:\n"
        "        raise ValueError('index offline')\n"
        "    return ['kb-101']\n"
    )
    text = (tiny / "retrieval-gate.yaml").read_text()
    config = tiny / "flaky.yaml"
    config.write_text(text.replace("type: bm25", "type: python\n  target: flaky:search"))
    code, _, err = run_cli("run", "-c", str(config), "--quiet", "--no-cache")
    assert code == 2
    assert "4 of 5 queries failed (80.0%), more than the error budget" in err
    assert "index offline" in err


def test_failures_within_the_budget_are_scored_0_and_listed(tiny: Path) -> None:
    (tiny / "shard.py").write_text(
        "def search(query, k):\n"
        "    if 'okta' in query:\n"
        "        raise ValueError('shard down')\n"
        "    return ['kb-101']\n"
    )
    text = (tiny / "retrieval-gate.yaml").read_text()
    config = tiny / "flaky.yaml"
    config.write_text(
        with_gate(
            text.replace("type: bm25", "type: python\n  target: shard:search"), error_budget=0.5
        )
    )
    execution = execute(config, cache=False)
    assert [f.query_id for f in execution.run.failures] == ["sso-okta"]
    assert "sso-okta" in execution.scores.missing_queries
    assert any("1 query failed and score 0" in w and "shard down" in w
               for w in execution.warnings)  # fmt: skip


def many_queries(folder: Path, target: str, count: int = 30) -> Path:
    """A labelled set of `count` queries and a config calling the python `target` on it."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "queries.jsonl").open("w") as file:
        for i in range(count):
            file.write(json.dumps({"_id": f"q{i:02d}", "text": f"query {i}"}) + "\n")
    (folder / "qrels.txt").write_text("".join(f"q{i:02d} 0 d{i} 1\n" for i in range(count)))
    config = folder / "gate.yaml"
    config.write_text(
        "version: 1\n"
        "dataset: {queries: queries.jsonl, qrels: qrels.txt}\n"
        f"retriever: {{type: python, target: '{target}', retries: 1, concurrency: 3}}\n"
        "metrics: {ndcg@10: {max_drop: 2pt}}\n"
    )
    return config


COUNTING = """\
import pathlib

CALLS = pathlib.Path(__file__).with_name("calls.txt")


def search(query, k):
    with CALLS.open("a") as calls:
        calls.write(query + "\\n")
    number = int(query.split()[-1])
    if FAILS(number):
        raise ConnectionRefusedError("[Errno 111] Connection refused")
    return ["d%d" % number]
"""


def test_a_retriever_failing_every_query_the_same_way_is_stopped_early(tmp_path: Path) -> None:
    (tmp_path / "all_down.py").write_text(COUNTING.replace("FAILS(number)", "True"))
    config = many_queries(tmp_path, "all_down:search")
    code, out, err = run_cli("run", "-c", str(config), "--quiet", "--no-cache")
    assert code == 2
    assert out == ""
    assert err == (
        "retrieval-gate: error: the first 10 queries all failed the same way: retriever.target "
        "'all_down:search' raised ConnectionRefusedError: [Errno 111] Connection refused; stopped "
        "(nothing was judged)\n"
    )
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert len(calls) == 20  # 10 queries, each tried twice (retries: 1); 20 never called
    assert len(set(calls)) == 10


def test_a_retriever_failing_some_queries_runs_them_all(tmp_path: Path) -> None:
    (tmp_path / "every_third_down.py").write_text(
        COUNTING.replace("FAILS(number)", "number % 3 == 0")
    )
    config = many_queries(tmp_path, "every_third_down:search")
    code, _, err = run_cli("run", "-c", str(config), "--quiet", "--no-cache")
    assert code == 2
    assert "10 of 30 queries failed (33.3%), more than the error budget of 1%" in err
    assert "stopped" not in err
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert len(set(calls)) == 30  # every query asked; the failing ones twice
    assert len(calls) == 40


@pytest.mark.parametrize(
    ("mutation", "fragment"),
    [
        (("k: 10", "k: [10"), ": YAML syntax error"),
        (("k: 10", "kk: 10"), ":10: kk: unknown key; did you mean 'k'?"),
        (("k: 10", "k: many"), ":10: k: Input should be a valid integer"),
        (("corpus: corpus.jsonl", "corpus: nowhere.jsonl"), "dataset.corpus: "),
        (("ndcg@10:", "ndgc@10:"), ":12: metrics.ndgc@10: unknown metric 'ndgc'"),
        (("type: bm25", "type: solr"), ":9: retriever.type: unknown type 'solr'"),
    ],
)
def test_each_bad_config_is_exit_2_with_a_one_screen_message(
    tiny: Path, mutation: tuple[str, str], fragment: str
) -> None:
    config = tiny / "retrieval-gate.yaml"
    text = config.read_text()
    assert mutation[0] in text
    config.write_text(text.replace(mutation[0], mutation[1], 1))
    code, out, err = run_cli("run", "-c", str(config), "--quiet")
    assert code == 2
    assert out == ""
    assert fragment in err
    assert len(err.splitlines()) <= 20


def test_in_process_retrievers_are_never_cached(tiny: Path) -> None:
    (tiny / "fixed.py").write_text("def search(query, k):\n    return ['kb-101']\n")
    text = (tiny / "retrieval-gate.yaml").read_text()
    config = tiny / "fixed.yaml"
    config.write_text(text.replace("type: bm25", "type: python\n  target: fixed:search"))
    execute(config)
    assert execute(config).run.cached == 0
    assert not (tiny / ".retrieval-gate" / "cache.sqlite").exists()


def test_a_run_file_below_min_coverage_is_refused_before_any_query(tiny: Path) -> None:
    from retrieval_gate.errors import CoverageError

    text = (tiny / "retrieval-gate.yaml").read_text()
    text = text.replace("type: bm25", "type: run_file\n  path: run.txt")
    (tiny / "file.yaml").write_text(with_gate(text, min_coverage=0.9))
    with pytest.raises(CoverageError, match=r"^retriever.path run.txt: answers 4 of 5 labelled"):
        execute(tiny / "file.yaml")
    assert not list(tiny.glob("**/cache.sqlite*"))  # refused before the cache was opened
