"""Every config under configs/ loads, and the adapter templates in configs/adapters/ run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_gate.adapters import ADAPTERS
from retrieval_gate.adapters.fusion import fuse
from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.model import Hit
from retrieval_gate.datasets import load as load_dataset
from retrieval_gate.pipeline.execute import execute
from tests.helpers.paths import CONFIGS
from tests.helpers.waiting import GUARD

CONFIG_FILES = sorted(CONFIGS.rglob("*.yaml"))
IDS = [path.relative_to(CONFIGS).as_posix() for path in CONFIG_FILES]
# The example code beside the adapter templates, imported by name from the config's folder.
EXAMPLE_MODULES = ("my_retriever", "my_langchain", "my_llamaindex", "my_haystack", "my_server")
# Templates wrapping my_retriever.search: they must rank exactly as the python template does.
WRAPPERS = ("command", "http", "langchain", "llamaindex", "haystack")
FRAMEWORKS = {
    "langchain": "langchain_core",
    "llamaindex": "llama_index.core",
    "haystack": "haystack",
}


def dataset_paths(config: GateConfig) -> list[Path]:
    """The files and folders the config's dataset names, resolved."""
    spec = config.dataset
    return [
        config.resolve(value)
        for value in (spec.path, spec.queries, spec.qrels, spec.corpus)
        if value is not None
    ]


@pytest.mark.parametrize("path", CONFIG_FILES, ids=IDS)
def test_every_config_loads_with_environment_defaults(path: Path) -> None:
    """The schema: every key known and valid, every ${VAR} with a default."""
    config = load(path, environ={})
    assert config.path == path


@pytest.mark.parametrize("path", CONFIG_FILES, ids=IDS)
def test_every_config_dataset_loads(path: Path) -> None:
    """What configs/ names must exist; a labelled set elsewhere (datasets/, fetched by
    `retrieval-gate datasets fetch`) may be missing, and then only the schema is checked."""
    config = load(path, environ={})
    missing = [found for found in dataset_paths(config) if not found.exists()]
    shipped = [found for found in missing if found.resolve().is_relative_to(CONFIGS)]
    assert not shipped, f"{path}: dataset files under configs/ are missing: {shipped}"
    if missing:
        pytest.skip(f"{path.name}: the labelled set is not fetched ({missing[0]}); schema only")
    dataset = load_dataset(config.dataset, config.base_dir)
    assert dataset.queries
    assert len(dataset.qrels) > 0
    if config.retriever.type == "bm25":
        assert dataset.corpus, f"{path}: the bm25 retriever needs dataset.corpus"


def test_every_adapter_type_has_a_template() -> None:
    types = {load(path, environ={}).retriever.type for path in CONFIG_FILES}
    assert set(ADAPTERS) <= types
    templates = sorted((CONFIGS / "adapters").glob("*.yaml"))
    assert {load(path, environ={}).retriever.type for path in templates} == set(ADAPTERS) - {
        "bm25"  # configs/tiny/retrieval-gate.yaml
    }


@pytest.fixture
def copy(tmp_path: Path) -> Iterator[Path]:
    """configs/adapters and configs/tiny copied into tmp_path/configs; the example modules
    they import are forgotten afterwards, so each test imports its own copy."""
    for folder in ("adapters", "tiny"):
        shutil.copytree(
            CONFIGS / folder,
            tmp_path / "configs" / folder,
            ignore=shutil.ignore_patterns("__pycache__", ".retrieval-gate"),
        )
    path = list(sys.path)
    yield tmp_path / "configs" / "adapters"
    sys.path[:] = path
    for name in EXAMPLE_MODULES:
        sys.modules.pop(name, None)


def ranking(config: Path) -> dict[str, list[str]]:
    """Each query's doc ids, best first, from running the config's retriever."""
    result = execute(config, cache=False)
    assert not result.run.failures
    return {query: [hit.doc_id for hit in hits] for query, hits in result.run.hits.items()}


def test_the_python_template_runs_end_to_end(copy: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "retrieval_gate", "run", "-c", "configs/adapters/python.yaml"],
        cwd=copy.parents[1],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = dict(line.split() for line in done.stdout.splitlines()[1:4])
    assert rows == {"ndcg@10": "0.8149", "recall@10": "0.8333", "rr@10": "0.8000"}


@pytest.mark.parametrize("kind", WRAPPERS)
def test_wrapper_templates_rank_as_the_python_template(
    copy: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind in FRAMEWORKS:
        pytest.importorskip(FRAMEWORKS[kind])
    monkeypatch.setenv("PYTHON", sys.executable)  # command.yaml: argv ${PYTHON:-python3}
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")
    expected = ranking(copy / "python.yaml")
    if kind != "http":
        assert ranking(copy / f"{kind}.yaml") == expected
        return
    sys.path.insert(0, str(copy))
    from my_server import make_server  # type: ignore[import-not-found]

    server = make_server(0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        monkeypatch.setenv("SEARCH_URL", f"http://127.0.0.1:{port}/search")
        assert ranking(copy / "http.yaml") == expected
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_run_file_template_reads_the_bundled_run(copy: Path) -> None:
    hits = ranking(copy / "run_file.yaml")
    assert hits["reset-password"] == ["kb-318", "kb-101", "kb-777", "kb-240", "kb-102"]


def test_the_fusion_template_ranks_as_rrf_of_its_inputs_run_alone(copy: Path) -> None:
    fusion = copy / "fusion.yaml"
    fusion.write_text(fusion.read_text(encoding="utf-8").replace("depth: 20", "depth: 10"))
    alone = {"bm25": ranking(copy.parent / "tiny" / "retrieval-gate.yaml")}
    alone["dense"] = ranking(copy / "python.yaml")
    fused = ranking(fusion)
    assert fused.keys() == alone["bm25"].keys()
    for query, docs in fused.items():
        lists = {name: [Hit(doc) for doc in found[query]] for name, found in alone.items()}
        assert docs == [hit.doc_id for hit in fuse(lists, {}, 10)]


@pytest.mark.parametrize("path", CONFIG_FILES, ids=IDS)
def test_editors_accept_every_bundled_config_with_the_json_schema(path: Path) -> None:
    import jsonschema
    import yaml

    from retrieval_gate.config.schema import json_schema

    validator = jsonschema.Draft202012Validator(json_schema())
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [error.message for error in validator.iter_errors(document)] == []
