"""Every line the tool prints is inert: hostile retriever errors, query ids and query text reach
no sink as a GitHub workflow command or a terminal escape sequence (issue 14, item 3)."""

from __future__ import annotations

import json
import re
import sys
import xml.dom.minidom
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.fake_github import FakeGitHub

PAYLOAD = "down\n::add-mask::x\n::error title=PWN::forged\x1b[31m red\r::warning::cr"
FORGED_ID = "::error::forged-by-query-id"
ESC_ID = "esc\x1b[2Jid"
QUERIES = [
    (FORGED_ID, "what is \x1b]0;pwned\x07 an escape"),
    (ESC_ID, "clear the \x1b[2J screen"),
    *((f"q{i}", f"plain question number {i}") for i in range(8)),
]
RETRIEVER = """\
from pathlib import Path

FAIL = Path(__file__).with_name("fail-@NAME@")


def search(query, k, metadata):
    if FAIL.exists() and metadata["n"] < int(FAIL.read_text()):
        raise RuntimeError(@PAYLOAD@)
    return [f"d{metadata['n']}", "other"]
"""
CONFIG = """\
version: 1
name: hostile
dataset: {queries: queries.jsonl}
retriever: {type: python, target: "@NAME@:search"}
k: 10
metrics:
  ndcg@10: {max_drop: 2pt}
gate: {require_significance: false, error_budget: 0.2}
"""
# The lines the tool itself means to emit as workflow commands: its annotations and the
# stop-commands markers around free text.
OWN_COMMAND = re.compile(r"::(error|warning) title=retrieval-gate |::stop-commands::[0-9a-f]{32}$")


def make_gate(root: Path, name: str) -> Path:
    """A labelled set with hostile ids and text, and a retriever module that raises PAYLOAD
    for its first N queries once `fail-<name>` holds N."""
    with (root / "queries.jsonl").open("w") as handle:
        for n, (qid, text) in enumerate(QUERIES):
            row = {"id": qid, "text": text, "n": n, "qrels": {f"d{n}": 1}}
            handle.write(json.dumps(row) + "\n")
    code = RETRIEVER.replace("@PAYLOAD@", repr(PAYLOAD)).replace("@NAME@", name)
    (root / f"{name}.py").write_text(code)
    config = root / "retrieval-gate.yaml"
    config.write_text(CONFIG.replace("@NAME@", name))
    return config


def assert_console_inert(text: str, *, own: set[str] = frozenset()) -> None:
    """No ESC or other control byte; no line that the Actions runner would read as a command
    (it strips leading whitespace first) other than the ones the tool emits itself."""
    assert "\x1b" not in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)
    resumes = {f"::{token}::" for token in own}
    for line in text.split("\n"):
        if line.lstrip().startswith("::"):
            assert OWN_COMMAND.match(line) or line in resumes, line
        assert "##[" not in line, line


def stop_tokens(text: str) -> set[str]:
    return set(re.findall(r"^::stop-commands::([0-9a-f]{32})$", text, flags=re.M))


def assert_file_inert(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "\x1b" not in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), path


def test_console_text_shows_controls_and_defuses_every_line() -> None:
    from retrieval_gate.core.wording import console_text, one_line

    text = console_text("a\x1b[31mb\n  ::error::x\r::warning::y\n\t::z\x85::w ##[set-output]")
    assert "\x1b" not in text
    assert "\r" not in text
    assert "\x85" not in text
    assert "a?[31mb" in text
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::")
    assert "##[" not in text
    assert console_text(text) == text  # idempotent: a second pass changes nothing
    assert one_line("a\n::b\x1bc") == "a ::b?c"


def test_retriever_errors_within_the_budget_are_inert(tmp_path: Path) -> None:
    config = make_gate(tmp_path, "hostile_within")
    (tmp_path / "fail-hostile_within").write_text("2")  # 2 of 10 queries: within 20%
    code, out, err = run_cli("run", "-c", str(config), "--no-cache")
    assert code == 0, err
    assert "failed and score 0" in err
    assert "forged" in err  # the text is shown, defused
    assert_console_inert(out)
    assert_console_inert(err)


def test_retriever_errors_beyond_the_budget_are_inert_in_every_sink(tmp_path: Path) -> None:
    config = make_gate(tmp_path, "hostile_beyond")
    code, _, err = run_cli("baseline", "-c", str(config), "--no-cache")
    assert code == 0, err
    (tmp_path / "fail-hostile_beyond").write_text("5")  # 5 of 10: past the budget
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("json", "md", "html", "xml")}
    code, out, err = run_cli(
        "check", "-c", str(config), "--no-cache",
        "--json", str(reports["json"]), "--markdown", str(reports["md"]),
        "--html", str(reports["html"]), "--junit", str(reports["xml"]),
    )  # fmt: skip
    assert code == 2, err
    assert "error budget" in err
    assert "forged" in err
    assert_console_inert(out)
    assert_console_inert(err)
    for fmt in ("md", "html", "xml"):
        assert_file_inert(reports[fmt])
    xml.dom.minidom.parse(str(reports["xml"]))
    raw = reports["json"].read_text()
    assert "\x1b" not in raw
    assert "::error title=PWN::forged?[31m" in json.loads(raw)["error"]  # shown as `?`


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline from good hits and a saved run in which the hostile queries regressed."""
    config = make_gate(tmp_path, "hostile_saved")
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    lines_good, lines_bad = [], []
    for n, (qid, _) in enumerate(QUERIES):
        lines_good.append(f"{qid} Q0 d{n} 1 2.0 good\n")
        lines_bad.append(f"{qid} Q0 {'x' if n < 2 else 'd'}{n} 1 2.0 bad\n")
    good.write_text("".join(lines_good))
    bad.write_text("".join(lines_bad))
    code, _, err = run_cli("baseline", "-c", str(config), "--run", str(good))
    assert code == 0, err
    return config, bad


def test_hostile_query_ids_are_inert_in_the_summary_and_reports(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    config, bad = saved
    reports = {fmt: tmp_path / f"out.{fmt}" for fmt in ("json", "md", "html", "xml")}
    code, out, err = run_cli(
        "check", "-c", str(config), "--run", str(bad), "--quiet",
        "--json", str(reports["json"]), "--markdown", str(reports["md"]),
        "--html", str(reports["html"]), "--junit", str(reports["xml"]),
    )  # fmt: skip
    assert code == 1, err
    assert "forged-by-query-id" in out  # listed among the most regressed queries, defused
    assert_console_inert(out)
    assert_console_inert(err)
    for fmt in ("md", "html", "xml"):
        assert_file_inert(reports[fmt])
    xml.dom.minidom.parse(str(reports["xml"]))
    assert "esc?\\[2Jid" in reports["md"].read_text()
    raw = reports["json"].read_text()
    assert "\x1b" not in raw
    assert "\\u001b" in raw
    document = json.loads(raw)
    assert ESC_ID in [change["query_id"] for change in document["query_changes"]]
    assert FORGED_ID in [change["query_id"] for change in document["query_changes"]]


def test_the_comment_command_is_inert_on_every_sink(
    saved: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, bad = saved
    result = tmp_path / "result.json"
    code, _, err = run_cli("check", "-c", str(config), "--run", str(bad), "--json", str(result))
    assert code == 1, err
    summary = tmp_path / "summary.md"
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/app")
    with FakeGitHub(token="t0ken", repos={"octo/app": [7]}) as github:
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
        code, out, err = run_cli("comment", str(result))
        (comment,) = github.comments[("octo/app", 7)]
    assert code == 0, err
    assert "created the PR comment" in err
    assert out.startswith("::error title=retrieval-gate hostile::")
    tokens = stop_tokens(err)
    assert tokens  # the free text on stderr is fenced by stop-commands
    for token in tokens:
        assert err.count(f"::stop-commands::{token}\n") == err.count(f"::{token}::\n") == 1
    assert_console_inert(out)
    assert_console_inert(err, own=tokens)
    body = comment["body"]
    assert "forged-by-query-id" in body
    for text in (body, summary.read_text()):
        assert "\x1b" not in text
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)


def test_a_hostile_result_error_is_inert_in_annotations_and_comment(
    saved: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result of a run that could not decide carries the retriever's error text."""
    from retrieval_gate.gate.result import canonical_json, error_document

    result = tmp_path / "error.json"
    result.write_text(canonical_json(error_document("hostile", PAYLOAD)))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = run_cli("comment", str(result), "--no-pr-comment")
    assert code == 0, err
    (annotation,) = out.splitlines()
    assert annotation.startswith("::error title=retrieval-gate hostile::")
    assert_console_inert(out)
    assert_console_inert(err, own=stop_tokens(err))
    assert "\x1b" not in summary.read_text()


COMMAND_SERVER = """\
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    if request["metadata"]["n"] < 2:
        answer = {"id": request["id"], "error": "bad\\n::set-output name=verdict::pass\\x1b[2J"}
    else:
        answer = {"id": request["id"], "results": [f"d{request['metadata']['n']}"]}
    print(json.dumps(answer), flush=True)
"""


def test_a_command_retrievers_error_text_is_inert(tmp_path: Path) -> None:
    config = make_gate(tmp_path, "hostile_command")
    (tmp_path / "server.py").write_text(COMMAND_SERVER)
    text = config.read_text().replace(
        'retriever: {type: python, target: "hostile_command:search"}',
        f"retriever: {{type: command, argv: [{json.dumps(sys.executable)}, server.py]}}",
    )
    config.write_text(text)
    code, out, err = run_cli("run", "-c", str(config), "--no-cache")
    assert code == 0, err
    assert "set-output name=verdict::pass" in err  # shown, defused
    assert_console_inert(out)
    assert_console_inert(err)


def test_the_json_result_escapes_c0_and_c1_controls() -> None:
    from retrieval_gate.gate.result import canonical_json

    text = canonical_json({"query": "a\x1b[2Jb\x9b31mc\x85d é"})
    assert not any(("\x00" <= ch < " " and ch != "\n") or "\x80" <= ch <= "\x9f" for ch in text)
    assert "é" in text  # readable UTF-8 otherwise
    assert json.loads(text) == {"query": "a\x1b[2Jb\x9b31mc\x85d é"}


HOSTILE_DOCS = """\
def search(query, k, metadata):
    # Document ids a retriever controls: C0 and C1 controls and a workflow command.
    return [f"d{metadata['n']}", "::error::doc\\x1b[2J", "csi\\x9b31m\\x85nel"]
"""


def test_document_ids_from_a_retriever_are_escaped_in_every_json_file(tmp_path: Path) -> None:
    config = make_gate(tmp_path, "docs")
    (tmp_path / "docs.py").write_text(HOSTILE_DOCS)
    code, out, err = run_cli("baseline", "-c", str(config), "--quiet", "--no-cache")
    assert code == 0, err
    code, out, err = run_cli(
        "check", "-c", str(config), "--quiet", "--no-cache", "--json", str(tmp_path / "r.json")
    )
    assert code in (0, 1), err
    queue = tmp_path / "queue.jsonl"
    code, _, err = run_cli("label-queue", "-c", str(config), "-o", str(queue), "--quiet")
    assert code == 0, err
    baseline = tmp_path / ".retrieval-gate" / "baseline.json"
    for path in (baseline, tmp_path / "r.json", queue):
        text = path.read_text(encoding="utf-8")
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", text), path.name
        assert "csi\\u009b31m\\u0085nel" in text  # escaped, not lost
    assert_console_inert(out + err)
