"""`dataset: {ir_datasets: ID}`: Cranfield read through the real ir_datasets package, offline.

ir_datasets keeps what it downloads under IR_DATASETS_HOME. For `cranfield` it extracts
`cran.all.1400`, `cran.qry` and `cranqrel` from the downloaded cran.tar.gz into
`cranfield/docs.txt`, `queries.txt` and `qrels.txt` there, and reads those files whenever they
exist, without the archive and without its md5 (ir_datasets/datasets/cranfield.py: `Cache(
TarExtract(main, 'cran.all.1400'), base_path/'docs.txt')`). The tests build that folder from
../shared/data/cranfield. The archive itself cannot be rebuilt to ir_datasets' md5 (the shared
files had their carriage returns removed), so the extracted layout is the one used.

ir_datasets fixes its dataset folders when it is imported, so everything that imports it runs
in a child process with IR_DATASETS_HOME set, and with every proxy variable pointing at a
closed local port: a download attempt fails at once instead of reaching the network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.config.schema import DatasetConfig
from retrieval_gate.datasets import load_labels
from retrieval_gate.datasets.convert import convert_cranfield
from retrieval_gate.datasets.ir_datasets_source import INSTALL
from retrieval_gate.errors import InputError
from retrieval_gate.metrics import evaluate
from retrieval_gate.pipeline.execute import execute
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

# Looked for, not imported: importing ir_datasets creates its folders under IR_DATASETS_HOME.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ir_datasets") is None,
    reason=f"ir_datasets is not installed ({INSTALL})",
)

METRICS = {"ndcg@10": "{max_drop: 2pt}", "recall@100": "{max_drop: 5pt}", "ap": "{max_drop: 2pt}",
           "p@10": "{max_drop: 2pt}"}  # fmt: skip
BINARY = ("recall@100", "ap", "precision@10")
"""Metrics that only ask whether a grade is >= 1: equal under either grading of Cranfield."""
IRDS_FILES = {"cran.all.1400": "docs.txt", "cran.qry": "queries.txt", "cranqrel": "qrels.txt"}

PROBE = """
import json, sys
from retrieval_gate.pipeline.execute import execute

result = execute(sys.argv[1], cache=False)
data = result.dataset
qrels = data.qrels
print(json.dumps({
    "layout": data.layout,
    "source": data.source,
    "fingerprint": data.fingerprint,
    "queries": [[q.id, q.text, dict(q.metadata)] for q in data.queries],
    "qrels": [[qrels.query_ids[q], d, g] for q, d, g in
              zip(qrels.query.tolist(), qrels.docs.tolist(), qrels.grade.tolist())],
    "corpus": {k: [v.title, v.text] for k, v in data.corpus.items()},
    "warnings": [str(w) for w in data.warnings],
    "hits": {q: [[h.doc_id, h.score] for h in hits] for q, hits in result.run.hits.items()},
    "scores": result.scores.per_query(),
}))
"""


def config(folder: Path, dataset: str) -> Path:
    """A bm25 config over `dataset` (a YAML flow mapping) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    metrics = "".join(f"  {name}: {gate}\n" for name, gate in METRICS.items())
    path = folder / "retrieval-gate.yaml"
    path.write_text(
        f"version: 1\nname: cranfield\ndataset: {dataset}\nretriever:\n  type: bm25\n"
        f"  stemmer: english\nk: 100\nmetrics:\n{metrics}",
        encoding="utf-8",
    )
    return path


def irds_home(shared_data: Path, home: Path, replace: dict[str, bytes] | None = None) -> Path:
    """`home` laid out as ir_datasets leaves it after downloading and extracting cranfield."""
    folder = home / "cranfield"
    folder.mkdir(parents=True)
    for source, target in IRDS_FILES.items():
        data = (shared_data / "cranfield" / source).read_bytes()
        (folder / target).write_bytes((replace or {}).get(source, data))
    return home


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(home: Path) -> dict[str, str]:
    """The environment of a child that reads `home` and cannot download anything."""
    proxy = f"http://127.0.0.1:{closed_port()}"
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy",)}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = proxy
    env.update(IR_DATASETS_HOME=str(home), IR_DATASETS_DL_TRIES="1", PYTHONPATH=str(REPO))
    return env


def child(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=home.parent,
    )


def probe(home: Path, config_path: Path) -> dict[str, Any]:
    done = child(home, "-c", PROBE, str(config_path))
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def validate(home: Path, config_path: Path) -> tuple[int, str]:
    done = child(home, "-m", "retrieval_gate", "config", "validate", "-c", str(config_path))
    return done.returncode, done.stdout + done.stderr


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def both(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """bm25 on Cranfield twice: converted as `datasets fetch cranfield` does (in this process),
    and named `ir_datasets: cranfield` (in a child)."""
    root = tmp_path_factory.mktemp("both")
    convert_cranfield(shared_data / "cranfield", root / "fetched")
    fetched = execute(config(root / "fetch", f"{{path: {root / 'fetched'}}}"), cache=False)
    home = irds_home(shared_data, root / "irds")
    named = probe(home, config(root / "named", "{ir_datasets: cranfield}"))
    return fetched, named


def test_same_queries_documents_and_judgments(both: tuple[Any, Any]) -> None:
    fetched, named = both
    data = fetched.dataset
    assert (named["layout"], named["source"]) == ("ir_datasets", "ir_datasets:cranfield")
    assert len(named["queries"]) == 225
    # ir_datasets keeps a field's line breaks; the fetch converter joins lines with spaces.
    assert [[i, words(t), m] for i, t, m in named["queries"]] == [
        [q.id, q.text, dict(q.metadata)] for q in data.queries
    ]
    assert {k: [words(t) for t in v] for k, v in named["corpus"].items()} == {
        k: [d.title, d.text] for k, d in data.corpus.items()
    }
    qrels = data.qrels
    expected = {
        (qrels.query_ids[q], d): g
        for q, d, g in zip(
            qrels.query.tolist(), qrels.docs.tolist(), qrels.grade.tolist(), strict=True
        )
    }
    # ir_datasets keeps Cleverdon's codes; the fetch converter stores 5 - code, and 0 for -1.
    assert {(q, d): 5 - g if g > 0 else 0 for q, d, g in named["qrels"]} == expected
    assert len(named["qrels"]) == 1837


def test_same_rankings_and_scores(both: tuple[Any, Any]) -> None:
    fetched, named = both
    hits = {q: [[h.doc_id, h.score] for h in answer] for q, answer in fetched.run.hits.items()}
    assert named["hits"] == hits
    scores = fetched.scores.per_query()
    assert set(named["scores"]) == set(scores)
    for query, values in scores.items():
        for metric in BINARY:
            assert named["scores"][query][metric] == values[metric], (query, metric)
    # nDCG differs only by the grades: the ir_datasets run scored against the fetch grades
    # gives the fetch path's nDCG@10 for every query, exactly.
    run = {q: dict(answer) for q, answer in named["hits"].items()}
    grades: dict[str, dict[str, int]] = {}
    for query, doc, grade in named["qrels"]:
        grades.setdefault(query, {})[doc] = 5 - int(grade) if grade > 0 else 0
    regraded = evaluate(run, grades, ["ndcg@10"]).per_query()
    assert {q: v["ndcg@10"] for q, v in regraded.items()} == {
        q: v["ndcg@10"] for q, v in scores.items()
    }
    means = fetched.scores.mean()
    assert 0.355 <= means["ndcg@10"] <= 0.363


def test_cranfield_grades_are_warned_about(both: tuple[Any, Any]) -> None:
    _, named = both
    assert any("Cleverdon" in w and "datasets fetch cranfield" in w for w in named["warnings"])


def test_hostile_query_text_stays_data(shared_data: Path, tmp_path: Path) -> None:
    hostile = "\x1b[31mred\x1b[0m \x00nul \x07bell \u202egnp.exe <script>alert(1)</script>"
    queries = (shared_data / "cranfield" / "cran.qry").read_text(encoding="utf-8")
    first, rest = queries.split("\n.W\n", 1)
    replaced = f"{first}\n.W\n{hostile}\n{rest}".encode()
    home = irds_home(shared_data, tmp_path / "irds", {"cran.qry": replaced})
    named = probe(home, config(tmp_path / "named", "{ir_datasets: cranfield}"))
    text = named["queries"][0][1]
    assert named["queries"][0][0] == "1"
    assert text.startswith(hostile)


def test_unknown_id_names_it_and_suggests(tmp_path: Path) -> None:
    code, out = validate(tmp_path / "irds", config(tmp_path / "c", "{ir_datasets: cranfeld}"))
    assert code == 2
    assert "'cranfeld' is not an ir_datasets id; did you mean cranfield?" in out
    assert "Traceback" not in out


def test_a_dataset_without_qrels_is_refused(tmp_path: Path) -> None:
    code, out = validate(tmp_path / "irds", config(tmp_path / "c", "{ir_datasets: beir/scifact}"))
    assert code == 2
    assert "'beir/scifact' has no qrels" in out


def test_a_download_attempt_is_a_clear_error(tmp_path: Path) -> None:
    """Nothing under IR_DATASETS_HOME: ir_datasets tries to download, the (closed) proxy
    refuses, and the gate says what failed and where ir_datasets looks, exit 2."""
    home = tmp_path / "irds"
    code, out = validate(home, config(tmp_path / "c", "{ir_datasets: cranfield}"))
    assert code == 2, out
    assert "cannot read the queries of 'cranfield' through ir_datasets" in out
    assert "cran.tar.gz" in out
    assert str(home) in out
    assert "Traceback" not in out
    assert not (home / "cranfield" / "queries.txt").exists()


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import fails as if not installed
    with pytest.raises(InputError, match=r"pip install 'retrieval-gate\[ir-datasets\]'"):
        load_labels(DatasetConfig(ir_datasets="cranfield"), Path("."))


def test_missing_extra_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ir_datasets", None)
    path = config(tmp_path, "{ir_datasets: cranfield}")
    code, _, err = run_cli("config", "validate", "-c", str(path))
    assert code == 2
    assert "retrieval-gate[ir-datasets]" in err


@pytest.mark.parametrize(
    ("extra", "named"),
    [("path: x", "dataset.path"), ("qrels: q.tsv", "dataset.qrels"), ("split: dev", "split")],
)
def test_files_beside_an_id_are_refused(extra: str, named: str, tmp_path: Path) -> None:
    path = config(tmp_path, f"{{ir_datasets: cranfield, {extra}}}")
    code, _, err = run_cli("config", "validate", "-c", str(path))
    assert code == 2
    assert named in err
    assert "names the whole labelled set" in err


def test_query_field_and_a_local_corpus(shared_data: Path, tmp_path: Path) -> None:
    """An explicit dataset.query_field picks the query text; dataset.corpus replaces the
    documents; a field the queries lack is named with the ones they have."""
    home = irds_home(shared_data, tmp_path / "irds")
    convert_cranfield(shared_data / "cranfield", tmp_path / "fetched")
    corpus = tmp_path / "fetched" / "corpus.jsonl"
    good = config(
        tmp_path / "a", f"{{ir_datasets: cranfield, query_field: text, corpus: {corpus}}}"
    )
    code, out = validate(home, good)
    assert code == 0, out
    assert "225 labelled queries, 1837 judgments, 1400 documents" in out
    bad = config(tmp_path / "b", "{ir_datasets: cranfield, query_field: description}")
    code, out = validate(home, bad)
    assert code == 2
    assert "have no 'description' field; set dataset.query_field to one of: text" in out
