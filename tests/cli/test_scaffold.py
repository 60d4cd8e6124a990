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

from retrieval_gate.cli import scaffold as init
from retrieval_gate.config.loader import load
from tests.helpers.cli import Terminal, run_cli
from tests.helpers.paths import REPO

TINY = REPO / "configs" / "tiny"
WORKFLOW = Path(".github/workflows/retrieval-gate.yml")


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
    ours = read_workflow(REPO / WORKFLOW)
    gate = ours["jobs"]["gate"]["steps"][1]
    assert gate["uses"] == "./"
    gate["uses"] = init.DEFAULT_ACTION
    gate["with"]["config"] = "retrieval-gate.yaml"
    assert written == ours
    assert written["permissions"] == {"contents": "read", "pull-requests": "write"}
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
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


# Slices: the metadata fields the queries carry.


def write_queries(folder: Path, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    qrels = "".join(f"{row['_id']} 0 d1 1\n" for row in rows)
    (folder / "qrels.txt").write_text(qrels, encoding="utf-8")


def slices_comment(text: str) -> str:
    """The comment lines above `slices:` that say what init found, joined."""
    block = text.split("# Per-slice gating")[1].split("\nslices:")[0]
    return " ".join(line.removeprefix("# ") for line in block.splitlines()[1:])


def test_slices_are_the_metadata_fields_the_queries_carry(labelled: Path) -> None:
    assert run_cli("init", "--dir", str(labelled))[0] == 0
    path = labelled / "retrieval-gate.yaml"
    assert load(path, environ={}).slices.by == ["intent", "segment", "query_length"]
    comment = slices_comment(path.read_text(encoding="utf-8"))
    assert "found in eval/queries.jsonl (6 queries) and sliced by: intent, segment." in comment
    assert "Left out: none." in comment
    code, out, _ = run_cli("config", "validate", "-c", str(path))
    assert code == 0, out


HOSTILE_NAMES = ["evil\nreport: {json: /etc/passwd}", "line\u2028break", "x" * 100]


def hostile_rows(count: int = 40) -> list[dict[str, Any]]:
    rows = []
    for i in range(count):
        row: dict[str, Any] = {
            "_id": f"q{i}",
            "text": f"query {i}",
            "intent": ["billing", "how-to", "account"][i % 3],
            "segment": ["free", "business"][i % 2] if i else " ",  # one blank: still most
            "user_id": f"u{i}",  # one value per query: an id, not a slice
            "n": i % 3,
            "tags": ["a", "b"][: i % 2 + 1],
            "nested": {"k": i % 2},
            "flag": bool(i % 2),
            "lang": "en",
            "ansi": ["\x1b[31mred", "plain"][i % 2],
            "mixed": ["a", "b"][i % 2] if i else 7,
            "query_length": ["short", "long"][i % 2],
            **{name: ["p", "q"][i % 2] for name in HOSTILE_NAMES},
        }
        if i < 5:
            row["rare"] = ["x", "y"][i % 2]
        rows.append(row)
    return rows


def test_hostile_metadata_is_left_out_with_the_reason(tmp_path: Path) -> None:
    write_queries(tmp_path / "eval", hostile_rows())
    code, _, err = run_cli("init", "--dir", str(tmp_path))
    assert (code, err) == (0, "")
    path = tmp_path / "retrieval-gate.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.isascii()
    assert all(line.isprintable() for line in text.splitlines())
    data = yaml.safe_load(text)
    assert "report" not in data  # a field's name never reaches the YAML outside a comment
    config = load(path, environ={})
    # Every query is two words long: query_length's one slice would repeat the overall check.
    assert config.slices.by == ["intent", "segment"]
    comment = slices_comment(text)
    for reason in (
        "query_length is left out: all 40 queries are 1-2 words long",
        "user_id (over 20 distinct values)",
        "n (not only text: int)",
        "tags (not only text: list)",
        "nested (not only text: dict)",
        "flag (not only text: bool)",
        "lang (one value)",
        "ansi (not only text: control characters)",
        "mixed (not only text: int)",
        "query_length (the built-in query_length slice wins over it)",
        "evil\\nreport: {json: /etc/passwd} (its name is not a short printable one)",
        "line\\u2028break (its name",
        "rare (on 5 of 40 queries)",
    ):
        assert reason in comment, reason
    assert "red" not in comment  # values are never shown


def test_very_many_distinct_values_are_counted_without_keeping_them() -> None:
    rows = [{"id": f"v{i}", "free": "two"} for i in range(50_000)]
    rows[0]["free"] = "one"
    chosen, left_out = init.choose_fields(rows)
    assert (chosen, left_out) == (["free"], [("id", "over 20 distinct values")])
    assert init.choose_fields([]) == ([], [])


def test_many_left_out_fields_are_summed_up(tmp_path: Path) -> None:
    rows = [{"_id": f"q{i}", "text": "t", **{f"f{j}": j for j in range(50)}} for i in range(3)]
    write_queries(tmp_path / "eval", rows)
    assert run_cli("init", "--dir", str(tmp_path))[0] == 0
    comment = slices_comment((tmp_path / "retrieval-gate.yaml").read_text(encoding="utf-8"))
    assert "f14 (not only text: int); 35 more." in comment
    assert "f15" not in comment


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({}, "eval/queries.jsonl does not exist yet"),
        (
            # Two lengths: one would make query_length a slice of every query (left out).
            {"queries.tsv": "q1\tfirst\nq2\tthe second one\n", "qrels.txt": "q1 0 d1 1\n"},
            "is not JSON Lines",
        ),
        (
            {"queries.jsonl": '{"_id": "q1", "text": "\x1b[2J"}\n{bad\n', "qrels.txt": ""},
            "Could not read the queries: ",
        ),
    ],
)
def test_without_readable_metadata_the_queries_are_sliced_by_length(
    tmp_path: Path, files: dict[str, str], problem: str
) -> None:
    for name, text in files.items():
        (tmp_path / "eval").mkdir(exist_ok=True)
        (tmp_path / "eval" / name).write_text(text, encoding="utf-8")
    code, _, err = run_cli("init", "--dir", str(tmp_path))
    assert (code, err) == (0, "")
    text = (tmp_path / "retrieval-gate.yaml").read_text(encoding="utf-8")
    assert problem in slices_comment(text)
    assert "sliced by length only" in slices_comment(text)
    assert all(line.isprintable() for line in text.splitlines())
    assert load(tmp_path / "retrieval-gate.yaml", environ={}).slices.by == ["query_length"]


# .gitignore: the reports and the cache, never the baseline.

IGNORED = [
    "# retrieval-gate: generated reports and the cache (commit the baseline)",
    ".retrieval-gate/retrieval-gate/result.json",
    ".retrieval-gate/retrieval-gate/report.*",
    ".retrieval-gate/retrieval-gate/junit.xml",
    ".retrieval-gate/cache.sqlite*",
]


def ignores(patterns: list[str], path: str) -> bool:
    """Whether gitignore `patterns` (anchored, no negation, as init writes them) ignore `path`."""
    import fnmatch

    return any(
        fnmatch.fnmatchcase(path, pattern)
        for pattern in patterns
        if pattern and not pattern.startswith("#")
    )


def test_a_missing_gitignore_is_created_with_the_reports_and_the_cache(tmp_path: Path) -> None:
    code, out, _ = run_cli("init", "--dir", str(tmp_path))
    assert code == 0
    gitignore = tmp_path / ".gitignore"
    assert f"wrote {gitignore}: ignores the reports and the cache\n" in out
    lines = gitignore.read_text(encoding="utf-8").splitlines()
    assert lines == IGNORED
    for report in ("result.json", "report.md", "report.html", "junit.xml"):
        assert ignores(lines, f".retrieval-gate/retrieval-gate/{report}")
    for cache in ("cache.sqlite", "cache.sqlite-wal", "cache.sqlite-shm"):
        assert ignores(lines, f".retrieval-gate/{cache}")
    assert not ignores(lines, ".retrieval-gate/baseline.json")
    assert not ignores(lines, "retrieval-gate.yaml")


def test_an_existing_gitignore_gains_only_the_missing_lines(tmp_path: Path) -> None:
    gitignore = tmp_path / ".gitignore"
    mine = b"# mine\r\n.retrieval-gate/cache.sqlite*\r\n  node_modules/  \r\n!keep.txt"
    gitignore.write_bytes(mine)
    gitignore.chmod(0o640)
    code, out, _ = run_cli("init", "--dir", str(tmp_path))
    assert code == 0
    assert f"added 3 lines to {gitignore}: .retrieval-gate/retrieval-gate/result.json" in out
    data = gitignore.read_bytes()
    assert data.startswith(mine + b"\r\n\r\n")  # every line kept, byte for byte
    added = data[len(mine) :].decode("utf-8").split("\r\n")
    assert added == ["", "", *IGNORED[:4], ""]  # CRLF kept; the cache line not repeated
    assert gitignore.stat().st_mode & 0o777 == 0o640
    # again, and for a second gate: no line twice
    assert run_cli("init", "--dir", str(tmp_path), "--force")[0] == 0
    assert gitignore.read_bytes() == data
    code, out, _ = run_cli("init", "--dir", str(tmp_path), "--force", "--name", "search")
    assert code == 0
    lines = gitignore.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if line] == [
        "# mine", ".retrieval-gate/cache.sqlite*", "  node_modules/  ", "!keep.txt",
        *IGNORED[:4],
        ".retrieval-gate/search/result.json",
        ".retrieval-gate/search/report.*",
        ".retrieval-gate/search/junit.xml",
    ]  # fmt: skip


def test_the_gitignore_is_written_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_gate.core import files

    written: list[Path] = []
    real = files.write_text_atomic

    def spy(path: Path, text: str) -> None:
        written.append(path)
        real(path, text)

    monkeypatch.setattr(files, "write_text_atomic", spy)
    (tmp_path / ".gitignore").write_text("dist/\n", encoding="utf-8")
    assert run_cli("init", "--dir", str(tmp_path))[0] == 0
    assert written[-1] == tmp_path / ".gitignore"
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")] == []


def test_the_gitignore_is_untouched_when_init_writes_nothing(tmp_path: Path) -> None:
    gitignore = tmp_path / ".gitignore"
    gitignore.write_text("dist/\n", encoding="utf-8")
    (tmp_path / "retrieval-gate.yaml").write_text("mine\n", encoding="utf-8")
    assert run_cli("init", "--dir", str(tmp_path))[0] == 2
    assert gitignore.read_text(encoding="utf-8") == "dist/\n"
    gitignore.write_bytes(b"caf\xe9\n")  # Latin-1, not UTF-8
    code, out, err = run_cli("init", "--dir", str(tmp_path), "--force")
    assert (code, out) == (2, "")
    assert "is not UTF-8; add these lines yourself: .retrieval-gate/retrieval-gate/" in err
    assert gitignore.read_bytes() == b"caf\xe9\n"
    assert (tmp_path / "retrieval-gate.yaml").read_text(encoding="utf-8") == "mine\n"
