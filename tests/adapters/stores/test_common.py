"""Every vector store through the command line, on the real store in this process: the index
built from the corpus, the exit-2 errors (connection, collection, dimension), hostile ids."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.report import annotations_of, read_result, summary_of
from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli
from tests.helpers.local_server import free_port
from tests.helpers.paths import CONFIGS
from tests.helpers.waiting import GUARD

KINDS = ["qdrant", "chroma", "lancedb"]
WORDLLAMA = {"wordllama": {"dim": 64}}
NAME = {"qdrant": "collection", "chroma": "collection", "lancedb": "table"}
CONNECTION = {"qdrant": "path", "chroma": "path", "lancedb": "uri"}


def built(kind: str, **extra: Any) -> dict[str, Any]:
    """A store block whose collection is built from the corpus with wordllama."""
    return {
        "type": kind,
        NAME[kind]: "docs",
        "embedding": WORDLLAMA,
        "index": {"from": "corpus"},
        **extra,
    }


def store_gate(tmp_path: Path, retriever: dict[str, Any], **extra: Any) -> Path:
    """A small labelled set gated with the store; six queries cannot reach significance."""
    return labelled_set(
        tmp_path, retriever=retriever, gate={"require_significance": False}, **extra
    )


def index_folders(config: Path, kind: str) -> list[Path]:
    return sorted((config.parent / ".retrieval-gate" / "index").glob(f"{kind}-*"))


@pytest.mark.parametrize("kind", KINDS)
def test_the_index_is_built_once_per_corpus(tmp_path: Path, kind: str) -> None:
    config = store_gate(tmp_path, built(kind))
    code, _, err = run_cli("baseline", "-c", config, "--quiet")
    assert code == 0, err
    [folder] = index_folders(config, kind)
    assert not list(folder.parent.glob(".*.tmp"))  # no scratch folder left behind
    inode = folder.stat().st_ino  # a rebuild would rename a new folder into place
    code, out, err = run_cli("check", "-c", config, "--quiet")
    assert code == 0, err + out
    assert index_folders(config, kind) == [folder]
    assert folder.stat().st_ino == inode
    corpus = config.parent / "set" / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + json.dumps({"_id": "new", "text": "added"}) + "\n")
    assert run_cli("check", "-c", config, "--quiet")[0] in (0, 1)
    assert len(index_folders(config, kind)) == 2  # a changed corpus is another index


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_collection_is_exit_2_naming_it(tmp_path: Path, kind: str) -> None:
    config = store_gate(tmp_path, built(kind))
    assert run_cli("baseline", "-c", config, "--quiet")[0] == 0
    [folder] = index_folders(config, kind)
    where = folder.relative_to(config.parent).as_posix()
    block = {"type": kind, CONNECTION[kind]: where, NAME[kind]: "nope", "embedding": WORDLLAMA}
    if kind == "lancedb":
        block["id_field"] = "doc_id"
    code, _, err = run_cli("check", "-c", store_gate(tmp_path, block), "--quiet")
    assert code == 2
    assert f"retriever ({kind}, {NAME[kind]} 'nope')" in err
    assert "'docs'" in err  # what the store does have
    assert "index: {from: corpus}" in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrong_dimension_is_exit_2(tmp_path: Path, kind: str) -> None:
    config = store_gate(tmp_path, built(kind))
    assert run_cli("baseline", "-c", config, "--quiet")[0] == 0
    [folder] = index_folders(config, kind)
    where = folder.relative_to(config.parent).as_posix()
    block = {
        "type": kind,
        CONNECTION[kind]: where,
        NAME[kind]: "docs",
        "embedding": {"wordllama": {"dim": 128}},
        "id_field": "doc_id",
    }
    code, _, err = run_cli("check", "-c", store_gate(tmp_path, block), "--quiet")
    assert code == 2
    assert "holds vectors of dimension 64, the embedding gives 128" in err
    assert f"{NAME[kind]} 'docs'" in err


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {"type": "qdrant", "url": "http://127.0.0.1:{port}", "collection": "docs"},
            "cannot reach Qdrant at http://127.0.0.1:",
        ),
        (
            {"type": "chroma", "host": "127.0.0.1", "port": "{port}", "collection": "docs"},
            "cannot reach Chroma at 127.0.0.1:",
        ),
        ({"type": "qdrant", "path": "absent", "collection": "docs"}, "path 'absent' is not"),
        ({"type": "chroma", "path": "absent", "collection": "docs"}, "path 'absent' is not"),
        (
            {"type": "lancedb", "uri": "absent", "table": "docs", "id_field": "id"},
            "uri 'absent' is not a folder",
        ),
    ],
)
def test_a_bad_connection_is_exit_2(tmp_path: Path, block: dict[str, Any], message: str) -> None:
    port = free_port()
    block = {
        name: int(value.format(port=port)) if name == "port" else value
        for name, value in block.items()
    }
    if "url" in block:
        block["url"] = block["url"].format(port=port)
    block["embedding"] = WORDLLAMA
    code, _, err = run_cli("check", "-c", store_gate(tmp_path, block), "--quiet")
    assert code == 2
    assert message in err
    assert f"retriever ({block['type']}" in err
    assert "Traceback" not in err


HOSTILE = ["::error::pwned", "<script>alert(1)</script>", "\x1b[31mred", "|x|", "bell\x07"]


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_ids_from_the_store_reach_no_report_sink(tmp_path: Path, kind: str) -> None:
    corpus = [
        {"_id": f"{name}{i}", "title": f"topic {i}", "text": f"about topic number {i}"}
        for i in range(12)
        for name in HOSTILE
    ]
    queries = [
        {"_id": f"{HOSTILE[i % len(HOSTILE)]}q{i}", "text": f"topic number {i}",
         "intent": "a" if i % 2 else "b"}
        for i in range(12)
    ]  # fmt: skip
    qrels = [(q["_id"], f"{HOSTILE[0]}{i}", 2) for i, q in enumerate(queries)]

    def gate(retriever: dict[str, Any]) -> Path:
        return store_gate(tmp_path, retriever, queries=queries, qrels=qrels, corpus=corpus)

    # The store's ids go into the baseline; BM25 (worse here) loses them: the reports name
    # the queries and documents lost.
    code, _, err = run_cli("baseline", "-c", gate(built(kind)), "--quiet")
    assert code == 0, err
    paths = {suffix: tmp_path / f"out.{suffix}" for suffix in ("json", "md", "html", "xml")}
    code, out, err = run_cli(
        "check", "-c", gate({"type": "bm25"}), "--json", paths["json"], "--markdown",
        paths["md"], "--html", paths["html"], "--junit", paths["xml"],
    )  # fmt: skip
    assert code == 1, err
    record = read_result(paths["json"])
    sinks = {name: path.read_text(encoding="utf-8") for name, path in paths.items()}
    sinks |= {"stdout": out, "stderr": err, "summary": summary_of(record)}
    sinks["annotations"] = "\n".join(message for _, message in annotations_of(record))
    for name in ("md", "html", "stdout"):  # the store's ids are shown, made harmless
        assert "pwned0" in sinks[name], name
    for name, text in sinks.items():
        if name != "json":  # the result keeps the ids as they were, JSON-escaped
            assert "\x1b" not in text, name
            assert "\x07" not in text, name
        if name in ("md", "html", "xml"):
            assert "<script>" not in text, name
        assert not any(line.lstrip().startswith("::") for line in text.splitlines()), name


# Run in a real process whose import system cannot find the store's client library, as in an
# environment where its extra was never installed.
_WITHOUT = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {module!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Missing())
from retrieval_gate.cli.main import main_entry
sys.argv = ["retrieval-gate", *sys.argv[1:]]
main_entry()
"""


@pytest.mark.parametrize(
    ("store", "module"),
    [("chroma", "chromadb"), ("lancedb", "lancedb"), ("qdrant", "qdrant_client")],
)
def test_a_store_without_its_package_is_exit_2_naming_the_extra(
    tmp_path: Path, store: str, module: str
) -> None:
    shutil.copytree(CONFIGS / "tiny", tmp_path / "tiny")
    (tmp_path / "adapters").mkdir()
    shutil.copy(CONFIGS / "adapters" / f"{store}.yaml", tmp_path / "adapters" / f"{store}.yaml")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _WITHOUT.format(module=module),
            "run",
            "-c",
            f"adapters/{store}.yaml",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"pip install 'retrieval-gate[{store}]'" in done.stderr
    assert f"{module} is not installed" in done.stderr
    assert "internal error" not in done.stderr
