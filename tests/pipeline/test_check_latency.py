"""Latency and cost checks through the command line, against a real local HTTP retriever."""

from __future__ import annotations

import json
import shutil
import time
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.local_server import Answer, serving
from tests.helpers.paths import REPO

EXAMPLE = REPO / "configs" / "example"


def _judged() -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for line in (EXAMPLE / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        found.setdefault(query, []).append((doc, int(grade)))
    return found


JUDGED = _judged()


def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
    """The judged documents of the query, best first; a few ms per query (more for some
    queries), times `slow`; `tokens` tokens of cost."""
    asked = parse_qs(urlsplit(path).query)
    query = asked["id"][0]
    base = 0.002 + (zlib.crc32(query.encode()) % 5) / 1000
    time.sleep(base * float(asked.get("slow", ["1"])[0]))
    hits = sorted(JUDGED.get(query, []), key=lambda pair: -pair[1])
    payload = {
        "took": 1,
        "usage": {"total_tokens": int(asked.get("tokens", ["100"])[0])},
        "hits": [{"id": doc, "score": float(grade)} for doc, grade in hits],
    }
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(respond) as url:
        yield url


def config(server: str, *, slow: str = "1", tokens: str = "100") -> str:
    return f"""version: 1
name: latency
dataset: {{path: example}}
retriever:
  type: http
  method: GET
  url: "{server}/search?id={{id}}&slow={slow}&tokens={tokens}"
  results: hits
  cost: usage.total_tokens
  concurrency: 1
k: 10
metrics:
  ndcg@10: {{max_drop: 6pt}}
  latency_p95: {{max_increase: 20%}}
  latency_mean: {{max_increase: 20%}}
  cost_mean: {{max_increase: 10%}}
baseline: baseline.json
"""


@pytest.fixture
def repo(tmp_path: Path, server: str) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(EXAMPLE, root / "example")
    (root / "gate.yaml").write_text(config(server))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the gate")
    return root


def check(repo: Path, *args: str) -> tuple[int, str, dict]:
    result = repo / "result.json"
    code, _, err = run_cli(
        "check", "-c", repo / "gate.yaml", "--quiet", "--json", result, "--no-cache", *args
    )
    return code, err, json.loads(result.read_text()) if result.exists() else {}


def overall(document: dict, metric: str) -> dict:
    return next(c for c in document["comparisons"] if c["metric"] == metric and c["slice"] == "all")


def test_a_real_slowdown_fails_when_both_sides_ran_interleaved(repo: Path, server: str) -> None:
    # 16x: a p95 of about 96 ms against 6 ms, more than 1.5x that unless a loaded machine
    # adds 170 ms to each call (8x failed so with four busy processes per core).
    (repo / "gate.yaml").write_text(config(server, slow="16"))
    git(repo, "commit", "-qam", "a slower service")
    code, err, document = check(repo, "--against", "HEAD~1")
    assert code == 1, err
    p95 = overall(document, "latency_p95")
    assert p95["reason"] == "", p95
    assert p95["verdict"] == "regressed", p95
    assert p95["unit"] == "ms"
    assert p95["direction"] == "lower"
    assert p95["current_mean"] > 1.5 * p95["baseline_mean"]
    assert p95["n"] == 131 - 5  # the warm-up queries are left out
    assert overall(document, "ndcg@10")["delta"] == 0
    assert overall(document, "cost_mean")["verdict"] != "regressed"
    assert any(w.endswith("on both sides: 5 warm-up") for w in document["warnings"])


def test_against_a_committed_baseline_latency_is_report_only_and_cost_is_gated(
    repo: Path, server: str
) -> None:
    code, _, err = run_cli("baseline", "-c", repo / "gate.yaml", "--quiet", "--no-cache")
    assert code == 0, err
    saved = json.loads((repo / "baseline.json").read_text())
    assert len(saved["scores"]["latency_p95"]) == 131
    assert saved["scores"]["cost_mean"][0] == 100.0
    (repo / "gate.yaml").write_text(config(server, slow="3", tokens="150"))
    code, err, document = check(repo)
    assert code == 1, err
    p95 = overall(document, "latency_p95")
    assert p95["reason"] == "the baseline's latencies were measured in another job: report-only"
    assert p95["verdict"] is None or p95["verdict"] != "regressed" or not p95["failed"]
    cost = overall(document, "cost_mean")
    assert cost["verdict"] == "regressed"
    assert cost["delta"] == pytest.approx(50.0)
    assert [(c["metric"], c["slice"]) for c in document["failures"]] == [("cost_mean", "all")]
    report = (repo / ".retrieval-gate" / "latency" / "report.md").read_text()
    assert "report-only" in report


def test_a_cost_field_that_is_not_a_number_is_a_mapping_error_naming_it(
    repo: Path, server: str
) -> None:
    text = config(server).replace("cost: usage.total_tokens", "cost: hits[0].id")
    (repo / "gate.yaml").write_text(text)
    code, err, _ = check(repo)
    assert code == 2
    assert "retriever.cost (hits[0].id)" in err
    assert "is not a number" in err


def test_latency_checks_refuse_a_sequential_check(repo: Path, server: str) -> None:
    (repo / "gate.yaml").write_text(config(server) + "gate: {sequential: true}\n")
    code, err, _ = check(repo)
    assert code == 2
    assert "latency and cost checks need every query" in err


def test_a_threshold_facing_the_wrong_way_names_its_line(repo: Path, server: str) -> None:
    text = config(server).replace(
        "latency_p95: {max_increase: 20%}", "latency_p95: {max_drop: 2pt}"
    )
    (repo / "gate.yaml").write_text(text)
    code, err, _ = check(repo)
    assert code == 2
    assert "gate.yaml:14: metrics.latency_p95: lower is better here" in err


def test_new_judgments_rescore_relevance_and_carry_latency_and_cost_over(repo: Path) -> None:
    code, _, err = run_cli("baseline", "-c", repo / "gate.yaml", "--quiet", "--no-cache")
    assert code == 0, err
    saved = json.loads((repo / "baseline.json").read_text())
    qrels = repo / "example" / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    query, doc, grade = lines[-1].split("\t")
    lines[-1] = f"{query}\t{doc}\t{3 - int(grade)}"  # one judgment changed
    qrels.write_text("\n".join(lines) + "\n")
    code, err, document = check(repo)
    assert code in (0, 1), err
    assert any("the judgments changed since the baseline" in w for w in document["warnings"])
    measured = [v for v in saved["scores"]["latency_mean"] if v is not None]
    assert overall(document, "latency_mean")["baseline_mean"] == pytest.approx(
        sum(measured) / len(measured)
    )
    assert document["baseline"]["scores"]["cost_mean"] == saved["scores"]["cost_mean"]


PRINTING = """import time
from retrieval_gate.core.reported import Reported

def search(query, k):
    print("done 0")  # what the interleaving protocol says: it must not reach it
    time.sleep(SLEEP)
    return Reported(["kb-1406", "kb-1407"], latency=1.0, cost=2.0)
"""


def test_a_python_retriever_that_prints_keeps_the_turns_in_step(repo: Path) -> None:
    (repo / "printing.py").write_text(PRINTING.replace("SLEEP", "0.001"))
    (repo / "gate.yaml").write_text(
        "version: 1\nname: latency\ndataset: {path: example}\n"
        "retriever: {type: python, target: 'printing:search', concurrency: 1}\n"
        "metrics:\n  ndcg@10: {}\n  latency_p95: {max_increase: 20%}\n"
        "gate: {latency: {source: retriever, warmup: 0, batch: 4}}\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a python retriever")
    (repo / "printing.py").write_text(PRINTING.replace("SLEEP", "0.002"))
    git(repo, "commit", "-qam", "slower, but it reports 1 ms")
    code, err, document = check(repo, "--against", "HEAD~1")
    assert code == 0, err
    p95 = overall(document, "latency_p95")
    assert p95["reason"] == ""
    assert p95["n"] == 131
    assert p95["baseline_mean"] == p95["current_mean"] == 1.0  # the retriever's own figure
