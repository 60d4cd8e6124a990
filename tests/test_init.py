"""`retrieval-gate init`: the files it writes load, match the recommended workflow, and are
never overwritten without --force."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate import init
from retrieval_gate.cli import main
from retrieval_gate.config import load

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "tiny"
WORKFLOW = Path(".github/workflows/retrieval-gate.yml")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def read_workflow(path: Path) -> dict[str, Any]:
    """A workflow as GitHub reads it: YAML 1.1 turns the `on` key into True; undo that."""
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:
        data["on"] = data.pop(True)
    return data


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """A repository folder holding the tiny labelled set (flat files) under eval/."""
    shutil.copytree(TINY, tmp_path / "eval", ignore=shutil.ignore_patterns("*.yaml", "run.txt"))
    return tmp_path


def test_defaults_write_a_config_and_a_workflow(tmp_path: Path) -> None:
    code, out, err = run_cli("init", "--dir", str(tmp_path))
    assert (code, err) == (0, "")
    config_path = tmp_path / "retrieval-gate.yaml"
    assert f"wrote {config_path}\nwrote {tmp_path / WORKFLOW}\n" in out
    for step in ("config validate -c", "retrieval-gate baseline -c", "Commit", "pinned release"):
        assert step in out
    config = load(config_path, environ={})
    assert config.retriever.type == "bm25"
    assert config.dataset.path == "eval"
    assert config.name == "retrieval-gate"
    assert [str(metric) for metric in config.metrics] == ["ndcg@10", "recall@10", "mrr(rel=1)@10"]


@pytest.mark.parametrize("retriever", init.RETRIEVERS)
def test_every_retriever_type_writes_a_valid_config(tmp_path: Path, retriever: str) -> None:
    code, _, err = run_cli("init", "--dir", str(tmp_path), "--retriever", retriever)
    assert (code, err) == (0, "")
    config = load(tmp_path / "retrieval-gate.yaml", environ={})
    assert config.retriever.type == retriever
    workflow = read_workflow(tmp_path / WORKFLOW)
    assert workflow["jobs"]["gate"]["steps"][1]["uses"] == init.DEFAULT_ACTION


def test_the_written_config_validates_against_a_real_labelled_set(labelled: Path) -> None:
    assert run_cli("init", "--dir", str(labelled))[0] == 0
    text = (labelled / "retrieval-gate.yaml").read_text(encoding="utf-8")
    assert "queries: eval/queries.jsonl\n" in text
    assert "qrels: eval/qrels.txt\n" in text
    assert "corpus: eval/corpus.jsonl\n" in text
    code, out, _ = run_cli("config", "validate", "-c", str(labelled / "retrieval-gate.yaml"))
    assert code == 0
    assert "5 labelled queries, 16 judgments, 19 documents; retriever bm25" in out


def test_a_beir_folder_is_written_as_dataset_path(tmp_path: Path) -> None:
    (tmp_path / "data" / "qrels").mkdir(parents=True)
    keys = init.dataset_keys(init.InitOptions(dataset="data/"), tmp_path)
    assert keys == {"folder": "data", "path": "data"}
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "queries.tsv").write_text("q1\ttext\n", encoding="utf-8")
    (tmp_path / "flat" / "qrels.tsv.gz").write_bytes(b"")
    flat = init.dataset_keys(init.InitOptions(retriever="http", dataset="flat"), tmp_path)
    assert flat == {"folder": "flat", "queries": "flat/queries.tsv", "qrels": "flat/qrels.tsv.gz"}


def test_a_dataset_that_is_a_file_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("", encoding="utf-8")
    code, _, err = run_cli("init", "--dir", str(tmp_path), "--dataset", "qrels.txt")
    assert code == 2
    assert "--dataset: qrels.txt is a file" in err


def test_existing_files_are_kept_without_force(tmp_path: Path) -> None:
    workflow = tmp_path / WORKFLOW
    workflow.parent.mkdir(parents=True)
    workflow.write_text("mine\n", encoding="utf-8")
    code, out, err = run_cli("init", "--dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert f"{workflow} already exists" in err
    assert "--force" in err
    assert workflow.read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "retrieval-gate.yaml").exists()  # nothing is written half-way
    assert run_cli("init", "--dir", str(tmp_path), "--force")[0] == 0
    assert workflow.read_text(encoding="utf-8").startswith("# retrieval-gate on every")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--retriever", "solr"], "--retriever: unknown type 'solr'; choose one of bm25, http"),
        (["--action", "retrieval-gate"], "--action: 'retrieval-gate' is not OWNER/REPO@REF"),
        (["--name", " "], "--name: ' ' is not a gate name"),
        (["--name", "../x"], "--name: '../x' is not a gate name"),
        (["--dir", "missing"], "is not a folder"),
    ],
)
def test_bad_options_are_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    if "--dir" in argv:
        argv = ["--dir", str(tmp_path / "missing")]
    code, _, err = run_cli("init", "--dir", str(tmp_path), *argv)
    assert code == 2
    assert message in err


def test_names_and_action_are_written_as_given(tmp_path: Path) -> None:
    name = "search-prod_1.v2"
    action = "acme/retrieval-gate@0123456789abcdef0123456789abcdef01234567"
    code, out, _ = run_cli("init", "--dir", str(tmp_path), "--name", name, "--action", action)
    assert code == 0
    assert "pinned release" not in out  # the action reference given is taken as pinned
    assert load(tmp_path / "retrieval-gate.yaml", environ={}).name == name
    assert read_workflow(tmp_path / WORKFLOW)["jobs"]["gate"]["steps"][1]["uses"] == action


def test_the_workflow_is_the_recommended_one_with_the_action_reference(tmp_path: Path) -> None:
    """The repository's own PR workflow dogfoods the action (`uses: ./`) on configs/example.yaml;
    the template is the same workflow for the user's repository."""
    assert run_cli("init", "--dir", str(tmp_path))[0] == 0
    written = read_workflow(tmp_path / WORKFLOW)
    ours = read_workflow(ROOT / WORKFLOW)
    gate = ours["jobs"]["gate"]["steps"][1]
    assert gate["uses"] == "./"
    gate["uses"] = init.DEFAULT_ACTION
    gate["with"]["config"] = "retrieval-gate.yaml"
    assert written == ours
    assert written["permissions"] == {"contents": "read", "pull-requests": "write"}
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert set(gate["with"]) <= set(action["inputs"])


@pytest.mark.parametrize("retriever", init.RETRIEVERS)
def test_the_workflow_matches_githubs_schema(tmp_path: Path, retriever: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("check_jsonschema")
    from importlib.resources import files

    vendor = files("check_jsonschema") / "builtin_schemas" / "vendor" / "github-workflows.json"
    schema = json.loads(vendor.read_text(encoding="utf-8"))
    assert run_cli("init", "--dir", str(tmp_path), "--retriever", retriever)[0] == 0
    jsonschema.validate(read_workflow(tmp_path / WORKFLOW), schema)
    assert init.ACTION.fullmatch(init.DEFAULT_ACTION)


def test_ask_repeats_a_bad_answer_and_keeps_defaults_on_empty_input() -> None:
    shown = io.StringIO()
    answers = io.StringIO("solr\npython\n\n")
    options = init.ask(init.InitOptions(), set(), answers, shown)
    assert (options.retriever, options.dataset) == ("python", "eval")
    assert shown.getvalue() == (
        "Retriever type (bm25, http, python, run_file) [bm25]: "
        "  'solr' is not one of bm25, http, python, run_file\n"
        "Retriever type (bm25, http, python, run_file) [bm25]: "
        "Labelled set folder (queries and qrels) [eval]: "
    )
    ended = init.ask(init.InitOptions(dataset="data"), set(), io.StringIO(""), io.StringIO())
    assert (ended.retriever, ended.dataset) == ("bm25", "data")


def test_ask_skips_what_the_command_line_gave() -> None:
    shown = io.StringIO()
    options = init.InitOptions(retriever="http")
    answered = init.ask(options, {"retriever"}, io.StringIO("golden\n"), shown)
    assert (answered.retriever, answered.dataset) == ("http", "golden")
    assert "Retriever type" not in shown.getvalue()
    assert init.ask(options, {"retriever", "dataset"}, io.StringIO(), shown) == options


class Terminal(io.StringIO):
    """Typed answers, as a terminal would give them."""

    def isatty(self) -> bool:
        return True


def test_a_terminal_is_asked_and_a_pipe_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("run_file\nlabels\n"))
    code, out, _ = run_cli("init", "--dir", str(tmp_path))
    assert code == 0
    assert out.startswith("Retriever type (bm25, http, python, run_file) [bm25]: Labelled")
    config = load(tmp_path / "retrieval-gate.yaml", environ={})
    assert (config.retriever.type, config.dataset.path) == ("run_file", "labels")
    monkeypatch.setattr(sys, "stdin", io.StringIO("http\n"))
    code, out, _ = run_cli("init", "--dir", str(tmp_path), "--force")
    assert code == 0
    assert "Retriever type" not in out
    assert load(tmp_path / "retrieval-gate.yaml", environ={}).retriever.type == "bm25"
