"""`check --against REF`: the retriever at another commit, run in a git worktree, as reference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from retrieval_gate.errors import GateError
from retrieval_gate.pipeline.against import TAIL_LINES, Reference, answered
from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.local_server import free_port
from tests.helpers.paths import REPO

EXAMPLE = REPO / "configs"
WORSE = """  type: bm25
  stemmer: null
  fields: [title]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding the bundled example (no reports, a baseline path of its own)."""
    root = tmp_path / "repo"
    (root / "search").mkdir(parents=True)
    shutil.copytree(EXAMPLE / "example", root / "search" / "example")
    text = (EXAMPLE / "example.yaml").read_text()
    text = text[: text.index("\nreport:")] + "\n"
    text = text.replace(
        "baseline: .retrieval-gate/example/baseline.json", "baseline: baseline.json"
    )
    (root / "search" / "gate.yaml").write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the example")
    return root


def commit_config(repo: Path, old: str, new: str, message: str, *, toy: bool = False) -> None:
    """Commit the config with `old` replaced by `new`. A `toy` retriever (a few fixed
    documents for every query) leaves too little to lose for the test to ever fail a drop,
    which check refuses: its gate decides on the drop alone."""
    path = repo / "search" / "gate.yaml"
    text = path.read_text()
    assert old in text
    text = text.replace(old, new)
    if toy:
        text += "gate: {require_significance: false}\n"
    path.write_text(text)
    git(repo, "commit", "-qam", message)


def check(repo: Path, *args: str) -> tuple[int, str, str, dict]:
    result = repo / "result.json"
    code, out, err = run_cli(
        "check", "-c", str(repo / "search" / "gate.yaml"), "--quiet", "--json", str(result), *args
    )
    document = json.loads(result.read_text()) if result.exists() else {}
    return code, out, err, document


def failing(document: dict) -> list[tuple[str, str, str]]:
    return [(c["metric"], c["slice"], c["verdict"]) for c in document["failures"]]


def test_a_worse_retriever_fails_as_it_does_against_a_baseline_made_at_the_reference(
    repo: Path,
) -> None:
    code, _, err = run_cli("baseline", "-c", str(repo / "search" / "gate.yaml"), "--quiet")
    assert code == 0, err
    shutil.move(repo / "search" / "baseline.json", repo / "at-head-1.json")
    commit_config(repo, "  type: bm25\n", WORSE, "index titles only")
    code, out, err, against = check(repo, "--against", "HEAD~1")
    assert code == 1, err
    code_b, _, err_b, baseline = check(repo, "--baseline", str(repo / "at-head-1.json"))
    assert code_b == 1, err_b
    assert failing(against) == failing(baseline)
    assert failing(against)
    for ours, theirs in zip(against["comparisons"], baseline["comparisons"], strict=True):
        assert ours["p_value"] == theirs["p_value"]
        assert ours["delta"] == theirs["delta"]
    head_1 = git(repo, "rev-parse", "HEAD~1").strip()
    assert against["baseline"]["git_commit"] == head_1
    assert against["baseline"]["source"] == f"a run at HEAD~1 ({head_1[:12]})"
    assert "FAIL" in out
    assert not list((repo.parent).glob("retrieval-gate-against-*"))
    assert git(repo, "worktree", "list").strip().count("\n") == 0  # the worktree is gone


def test_a_commit_that_changes_nothing_passes_and_a_branch_is_taken_at_its_merge_base(
    repo: Path,
) -> None:
    git(repo, "checkout", "-qb", "feature")
    (repo / "notes.txt").write_text("unrelated\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "docs only")
    git(repo, "checkout", "-q", "main")
    commit_config(repo, "  type: bm25\n", WORSE, "main moves on with a worse retriever")
    git(repo, "checkout", "-q", "feature")
    code, out, err, document = check(repo, "--against", "main")
    assert code == 0, err
    base = git(repo, "merge-base", "HEAD", "main").strip()
    assert document["baseline"]["git_commit"] == base
    assert document["baseline"]["source"] == f"a run at main (merge-base {base[:12]})"
    assert all(c["delta"] == 0 for c in document["comparisons"])
    assert "PASS" in out
    # The console says what stood in for the baseline, not the reports alone.
    assert f"retrieval-gate: compared with a run at main (merge-base {base[:12]})\n" in err


def test_a_change_to_the_labelled_set_alone_scores_both_sides_with_the_new_one(
    repo: Path,
) -> None:
    qrels = repo / "search" / "example" / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    qrels.write_text("\n".join(lines[:-5]) + "\n")
    git(repo, "commit", "-qam", "drop five judgments")
    code, _, err, document = check(repo, "--against", "HEAD~1")
    assert code == 0, err
    assert all(c["delta"] == 0 for c in document["comparisons"])
    assert any("the labelled set changed since the reference" in w for w in document["warnings"])


def test_the_retriever_section_of_each_side_is_its_own(repo: Path) -> None:
    commit_config(repo, "  type: bm25\n", WORSE, "worse")
    commit_config(repo, WORSE, "  type: bm25\n", "back")
    code, _, err, document = check(repo, "--against", "HEAD~1")
    assert code == 0, err  # better than HEAD~1: improved, not failed
    assert any(c["verdict"] == "improved" for c in document["comparisons"])


def test_bad_references_are_exit_2_with_what_to_do(repo: Path, tmp_path: Path) -> None:
    code, _, err, _ = check(repo, "--against", "no-such-branch")
    assert code == 2
    assert "fetch-depth: 0" in err
    code, _, err, _ = check(repo, "--against", "--help")
    assert code == 2
    code, _, err, _ = check(repo, "--against", "HEAD", "--run", str(tmp_path / "x"))
    assert code == 2
    assert "neither --run nor --baseline" in err
    outside = tmp_path / "outside"
    shutil.copytree(repo / "search", outside)
    shutil.rmtree(repo / ".git")
    code, _, err = run_cli("check", "-c", str(outside / "gate.yaml"), "--against", "main")
    assert code == 2
    assert "needs a git repository" in err


def test_a_config_new_since_the_reference_is_refused(repo: Path) -> None:
    (repo / "search" / "gate.yaml").rename(repo / "search" / "renamed.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rename")
    code, _, err = run_cli(
        "check", "-c", str(repo / "search" / "renamed.yaml"), "--against", "HEAD~1"
    )
    assert code == 2
    assert "search/renamed.yaml did not exist there" in err


def test_a_reference_that_cannot_run_is_exit_2_naming_the_commit(repo: Path) -> None:
    commit_config(repo, "  type: bm25\n", "  type: bm25\n  stemmer: klingon\n", "broken")
    commit_config(repo, "  stemmer: klingon\n", "", "fixed")
    code, _, err, _ = check(repo, "--against", "HEAD~1")
    assert code == 2
    short = git(repo, "rev-parse", "HEAD~1").strip()[:12]
    assert f"the retriever at HEAD~1 ({short}): retriever.stemmer" in err
    assert "no stemmer for 'klingon'" in err


def test_python_retrievers_of_both_sides_import_their_own_module(repo: Path) -> None:
    module = repo / "search" / "my_search.py"
    module.write_text("def search(query, k):\n    return ['kb-1101', 'kb-1102']\n")
    git(repo, "add", "search/my_search.py")
    python = "  type: python\n  target: my_search:search\n"
    commit_config(repo, "  type: bm25\n", python, "python", toy=True)
    module.write_text("def search(query, k):\n    return []\n")
    git(repo, "commit", "-qam", "returns nothing")
    code, _, err, document = check(repo, "--against", "HEAD~1")
    overall = {c["metric"]: c for c in document["comparisons"] if c["slice"] == "all"}
    assert overall["recall@10"]["baseline_mean"] > 0  # HEAD~1's module, not the working tree's
    assert overall["recall@10"]["current_mean"] == 0
    assert code in (0, 1), err  # decided: both modules ran


def test_repeats_run_each_side_that_many_times(repo: Path) -> None:
    code, out, err, document = check(repo, "--against", "HEAD", "--repeats", "2")
    assert code == 0, err
    assert "(2 reference, 2 current runs)" in out
    assert document["noise"]["reference_runs"] == 2


def test_a_hostile_ref_name_is_refused_inertly(repo: Path) -> None:
    code, out, err, _ = check(repo, "--against", "main\n::error::forged\x1b[31m")
    assert code == 2
    lines = (out + err).splitlines()
    assert not any(line.startswith("::") for line in lines)
    assert "\x1b" not in out + err


SERVICE = """\
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ANSWER = @ANSWER@


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"hits": [{"id": doc, "score": 1.0} for doc in ANSWER]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def test_an_http_service_is_started_from_each_side_s_checkout(repo: Path) -> None:
    port = free_port()
    service = repo / "search" / "service.py"
    service.write_text(SERVICE.replace("@ANSWER@", repr(["kb-1101", "kb-1402", "kb-2603"])))
    git(repo, "add", "search/service.py")
    http = (
        "  type: http\n"
        f"  url: http://127.0.0.1:{port}/search\n"
        f"  serve: {{command: [python, service.py, '{port}'], ready: 'http://127.0.0.1:{port}/'}}\n"
    )
    commit_config(repo, "  type: bm25\n", http, "served", toy=True)
    service.write_text(SERVICE.replace("@ANSWER@", "[]"))
    git(repo, "commit", "-qam", "the service answers nothing")
    code, _, err, document = check(repo, "--against", "HEAD~1")
    assert code in (0, 1), err
    overall = {c["metric"]: c for c in document["comparisons"] if c["slice"] == "all"}
    assert overall["recall@10"]["baseline_mean"] > 0  # HEAD~1's service.py answered
    assert overall["recall@10"]["current_mean"] == 0
    assert document["baseline"]["retriever"]["serve"]["command"][1] == "service.py"


def test_the_reports_name_the_reference_run(repo: Path) -> None:
    markdown = repo / "report.md"
    code, _, err, _ = check(repo, "--against", "HEAD", "--markdown", str(markdown))
    assert code == 0, err
    short = git(repo, "rev-parse", "HEAD").strip()[:12]
    assert f"reference: a run at HEAD ({short})" in markdown.read_text()


def test_what_the_reference_side_prints_is_relayed_inert_and_redacted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "tok-ref-7f3a9c"
    monkeypatch.setenv("GATE_REF_TOKEN", secret)
    module = repo / "search" / "loud_search.py"
    module.write_text(
        "def search(query, k, token):\n"
        "    print(f'::error::forged {token} \\x1b[31m', flush=True)\n"
        "    return ['kb-1101']\n"
    )
    git(repo, "add", "search/loud_search.py")
    python = (
        "  type: python\n  target: loud_search:search\n"
        '  kwargs: {token: "${GATE_REF_TOKEN}"}\n  concurrency: 1\n'
    )
    commit_config(repo, "  type: bm25\n", python, "a retriever that prints", toy=True)
    module.write_text("def search(query, k, token):\n    return ['kb-1101']\n")
    git(repo, "commit", "-qam", "quiet again")
    result = repo / "result.json"
    code, out, err = run_cli(
        "check", "-c", str(repo / "search" / "gate.yaml"), "--against", "HEAD~1",
        "--json", str(result),
    )  # fmt: skip
    assert code in (0, 1), err
    assert "forged" in err  # relayed, as progress is
    for text in (out, err, result.read_text()):
        assert secret not in text
        assert "\x1b" not in text
        assert not any(line.lstrip().startswith("::") for line in text.splitlines())


def _rewrite_judged_document(repo: Path, doc_id: str) -> list[str]:
    """Commit `doc_id` with a new text; the queries judging it."""
    corpus = repo / "search" / "example" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    corpus.write_text(
        "".join(json.dumps({**r, "text": "new"} if r["_id"] == doc_id else r) + "\n" for r in rows)
    )
    git(repo, "commit", "-qam", f"rewrite {doc_id}")
    qrels = (repo / "search" / "example" / "qrels" / "test.tsv").read_text().splitlines()
    return sorted({line.split("\t")[0] for line in qrels[1:] if line.split("\t")[1] == doc_id})


def test_bm25_leaves_out_the_queries_of_a_document_rewritten_since_the_reference(
    repo: Path,
) -> None:
    """The built-in bm25 at REF indexed the corpus at REF: the queries judging a document
    rewritten since are not comparable, as for a retriever with an index of its own."""
    judging = _rewrite_judged_document(repo, "kb-1102")
    assert judging
    code, _, err, document = check(repo, "--against", "HEAD~1")
    assert code == 0, err
    assert document["corpus"]["not_comparable"] == [
        {"query_id": query, "reasons": ["doc kb-1102 text changed"]} for query in judging
    ]


def test_a_retriever_with_its_own_index_leaves_out_the_queries_of_a_rewritten_document(
    repo: Path,
) -> None:
    """A python retriever searched REF's corpus there: the queries judging a document
    rewritten since are not comparable, as against a baseline made at REF."""
    module = repo / "search" / "my_search.py"
    module.write_text("def search(query, k):\n    return ['kb-1101', 'kb-1102']\n")
    git(repo, "add", "search/my_search.py")
    python = "  type: python\n  target: my_search:search\n"
    commit_config(repo, "  type: bm25\n", python, "python", toy=True)
    judging = _rewrite_judged_document(repo, "kb-1102")
    code, _, err, document = check(repo, "--against", "HEAD~1")
    assert code == 0, err
    assert document["corpus"]["not_comparable"] == [
        {"query_id": query, "reasons": ["doc kb-1102 text changed"]} for query in judging
    ]
    overall = next(c for c in document["comparisons"] if c["slice"] == "all")
    assert overall["n"] == 131 - len(judging)


def test_a_worker_without_an_answer_is_named_with_the_end_of_its_output(tmp_path: Path) -> None:
    reference = Reference("abc123", "a" * 40, "a" * 40)
    output = [f"line {n}" for n in range(TAIL_LINES + 5)]
    with pytest.raises(GateError) as caught:
        answered(reference, tmp_path / "answer.json", output)
    message = str(caught.value)
    assert message.startswith(f"the retriever at {reference.label} stopped without a result:\n")
    assert message.splitlines()[1:] == output[-TAIL_LINES:]


def test_a_worker_that_answered_an_error_raises_it_naming_the_reference(tmp_path: Path) -> None:
    reference = Reference("abc123", "a" * 40, "a" * 40)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"error": "the index is missing"}), encoding="utf-8")
    with pytest.raises(GateError, match="the index is missing"):
        answered(reference, answer, ["ignored"])
