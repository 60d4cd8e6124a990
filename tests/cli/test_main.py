"""`retrieval-gate` command line: output formats, exit codes, and trec_eval's printed values."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.metrics import MetricSpec, parse_metric
from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

TINY_QRELS = str(REPO / "configs" / "tiny" / "qrels.txt")
TINY_RUN = str(REPO / "configs" / "tiny" / "run.txt")


def test_table_lists_metrics_in_the_order_asked() -> None:
    code, out, err = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "rr@10", "NDCG@10")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "all"]
    assert [line.split()[0] for line in lines[1:3]] == ["rr@10", "ndcg@10"]
    assert "api-rate-limit" in err
    assert "pricing-page" in err


def test_json_has_full_precision_and_every_labelled_query() -> None:
    code, out, _ = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "ap", "P@5", "-f", "json")
    assert code == 0
    document = json.loads(out)
    assert document["metrics"] == ["ap", "precision@5"]
    assert list(document["per_query"]) == sorted(document["per_query"])
    assert len(document["per_query"]) == document["num_queries"] == 5
    assert document["per_query"]["api-rate-limit"] == {"ap": 0.0, "precision@5": 0.0}
    assert document["missing_queries"] == ["api-rate-limit"]
    assert document["ignored_queries"] == ["pricing-page"]
    assert document["per_query"]["reset-password"]["precision@5"] == 0.6


def test_bad_metrics_are_all_reported_with_exit_2() -> None:
    code, out, err = run_cli("evaluate", TINY_QRELS, TINY_RUN, "-m", "ndgc@10", "precision")
    assert code == 2
    assert out == ""
    assert "did you mean 'ndcg'" in err
    assert "precision needs a cutoff" in err


def test_bad_input_file_is_exit_2_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "qrels.txt"
    bad.write_text("q1 0 d1 1\nq1 0 d2\n")
    code, _, err = run_cli("evaluate", str(bad), TINY_RUN)
    assert code == 2
    assert f"{bad}:2:" in err


def test_usage_error_is_exit_2() -> None:
    code, _, err = run_cli("evaluate", TINY_QRELS)
    assert code == 2
    assert "usage" in err


def test_metrics_command_lists_every_metric() -> None:
    code, out, _ = run_cli("metrics")
    assert code == 0
    for name in ("ndcg", "ap", "rr", "precision", "recall", "bpref", "err", "rbp", "judged"):
        assert f"\n{name}  (" in "\n" + out


def test_console_script_runs_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "retrieval_gate", "evaluate", TINY_QRELS, TINY_RUN, "-f", "trec"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("ndcg@10")


def test_check_of_a_saved_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    # No retriever client, no framework, no scipy: a saved run needs the readers, the
    # statistics and the reports.
    shutil.copytree(REPO / "configs" / "tiny", tmp_path / "tiny")
    config, run = tmp_path / "tiny" / "retrieval-gate.yaml", tmp_path / "tiny" / "run.txt"
    unused = ("scipy", "httpx", "bm25s", "Stemmer", "tqdm", "langchain_core", "llama_index",
              "haystack", "ir_datasets", "pyarrow", "pandas", "asyncio", "dask")  # fmt: skip
    script = (
        "import sys\n"
        "from retrieval_gate.cli.main import main\n"
        f"code = main(['check', '-c', {str(config)!r}, '--run', {str(run)!r}, '--quiet'])\n"
        f"print(code, sorted(m for m in {unused!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.stderr.strip().splitlines()[-1] in ("0 []", "1 []"), done.stderr


@pytest.mark.parametrize("argv", [["--help"], ["power", "--help"]])
def test_help_imports_no_heavy_module(argv: list[str]) -> None:
    script = (
        "import sys\n"
        "from retrieval_gate.cli.main import main\n"
        f"code = main({argv!r})\n"
        "heavy = sorted(m for m in ('numpy', 'jinja2', 'pydantic', 'scipy', 'yaml', "
        "'retrieval_gate.cli.completion', 'dask', 'distributed', 'pyarrow') "
        "if m in sys.modules)\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "0 []"
    assert "usage: retrieval-gate" in done.stdout
    if argv[0] == "power":
        assert "--baseline" in done.stdout
        assert "80% power" in " ".join(done.stdout.split())


# trec_eval measure -> our metric, for the measures `evaluate -f trec` is compared on.
TREC_EVAL_NAMES = {
    "map": "ap",
    "map_cut_100": "ap@100",
    "P_5": "precision@5",
    "P_1000": "precision@1000",
    "recall_100": "recall@100",
    "ndcg": "ndcg(gain=linear)",
    "ndcg_cut_10": "ndcg(gain=linear)@10",
    "Rprec": "r_precision",
    "bpref": "bpref",
    "recip_rank": "rr",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
}


def with_rel(metric: str, rel: int) -> str:
    """`metric` with its binary relevance threshold set to `rel` (if it has one)."""
    spec = parse_metric(metric)
    params = tuple((name, rel if name == "rel" else value) for name, value in spec.params)
    return str(MetricSpec(spec.name, params, spec.k))


@pytest.mark.parametrize(
    ("qrels", "run", "expected", "rel"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1),
        ("qrels.test", "results.trunc", "out.test.aqc", 1),
        ("qrels.rel_level", "results.test", "out.test.aql", 2),
    ],
)
def test_trec_format_prints_trec_eval_values(
    trec_eval_test: Path, qrels: str, run: str, expected: str, rel: int
) -> None:
    metrics = [with_rel(metric, rel) for metric in TREC_EVAL_NAMES.values()]
    code, out, _ = run_cli(
        "evaluate",
        str(trec_eval_test / qrels),
        str(trec_eval_test / run),
        "-q",
        "-f",
        "trec",
        "-m",
        *metrics,
    )
    assert code == 0
    printed = {}
    for line in out.splitlines():
        name, qid, value = (field.strip() for field in line.split("\t"))
        printed[name, qid] = value
    by_trec_name = dict(zip(TREC_EVAL_NAMES, metrics, strict=True))
    compared = 0
    for line in (trec_eval_test / expected).read_text().splitlines():
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if measure in by_trec_name:
            assert printed[by_trec_name[measure], qid] == value, (measure, qid)
            compared += 1
    assert compared == len(TREC_EVAL_NAMES) * 4


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A JSON result of the tiny sample and a pull_request event of PR 7 of octo/app."""
    result = tmp_path / "result.json"
    config = REPO / "configs" / "tiny" / "retrieval-gate.yaml"
    code, _, err = run_cli(
        "check", "-c", str(config), "--run", TINY_RUN, "--no-cache", "--quiet",
        "--no-reports", "--json", str(result),
    )  # fmt: skip
    assert code in (0, 1), err
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 7}}))
    for name in ("GITHUB_API_URL", "GITHUB_TOKEN", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/app")
    return result


def test_comment_keeps_one_sticky_comment_and_appends_the_summary(
    published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.fake_github import FakeGitHub

    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with FakeGitHub(token="s3cret-t0ken", repos={"octo/app": [7]}) as github:
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        monkeypatch.setenv("GITHUB_TOKEN", "s3cret-t0ken")
        github.add_comment("octo/app", 7, "an unrelated review comment")
        code, out, err = run_cli("comment", str(published))
        assert code == 0, err
        assert "created the PR comment" in err
        code, out, err = run_cli("comment", str(published))
        assert code == 0, err
        assert "updated the PR comment" in err
        comments = github.comments[("octo/app", 7)]
    assert len(comments) == 2
    assert comments[1]["body"].startswith("<!-- retrieval-gate: tiny -->\n## ")
    assert "s3cret-t0ken" not in out + err
    assert summary.read_text().startswith("earlier step\n## ")
    assert summary.read_text().count("retrieval-gate · tiny") == 2


def test_comment_on_a_fork_warns_once_and_exits_0(
    published: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.fake_github import FakeGitHub

    with FakeGitHub(token="t0ken", repos={"octo/app": [7]}, read_only=True) as github:
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
        code, out, err = run_cli("comment", str(published), "--no-annotations")
        assert github.comments.get(("octo/app", 7), []) == []
    assert code == 0, err
    (warning,) = out.splitlines()
    assert warning.startswith("::warning title=retrieval-gate tiny::")
    assert "fork" in warning


def test_comment_prints_an_error_annotation_per_failure(published: Path, tmp_path: Path) -> None:
    document = json.loads(published.read_text())
    row = {**document["comparisons"][0], "current_mean": 0.5, "delta": -0.4, "p_adjusted": 0.001}
    failing = {
        **document,
        "status": "fail",
        "failures": [{**row, "verdict": "regressed", "failed": True}],
    }
    path = tmp_path / "failing.json"
    path.write_text(json.dumps(failing))
    code, out, _ = run_cli("comment", str(path), "--no-pr-comment", "--no-summary")
    assert code == 0
    # The tiny gate needs no significance (5 queries cannot show any), so nothing else is
    # inconclusive: the one failure is the one annotation.
    assert out.splitlines() == [
        "::error title=retrieval-gate tiny::ndcg@10 fell 40.0 pt (p = 0.001): regressed"
    ]


def test_comment_on_a_missing_or_foreign_result_is_exit_2(tmp_path: Path) -> None:
    code, _, err = run_cli("comment", str(tmp_path / "nope.json"))
    assert code == 2
    assert "no such result file" in err
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"hello": 1}')
    code, _, err = run_cli("comment", str(foreign))
    assert code == 2
    assert "foreign.json: not a retrieval-gate result" in err
    code, _, err = run_cli("comment", str(foreign), "--pr", "seven")
    assert code == 2
    assert "expected a pull request number" in err


@pytest.mark.parametrize(
    ("argv", "given", "expected"),
    [
        (["evaluate", TINY_QRELS, TINY_RUN], None, "1"),
        (["evaluate", TINY_QRELS, TINY_RUN], "2", "2"),  # the user's setting stands
        (["check", "-c", "{config}", "--run", "{run}", "--quiet"], None, "1"),
        (["check", "-c", "{config}", "--quiet"], None, None),  # its retriever may use BLAS
    ],
)
def test_blas_stays_on_one_thread_unless_a_retriever_runs_here(
    tmp_path: Path, argv: list[str], given: str | None, expected: str | None
) -> None:
    shutil.copytree(REPO / "configs" / "tiny", tmp_path / "tiny")
    paths = {
        "config": tmp_path / "tiny" / "retrieval-gate.yaml",
        "run": tmp_path / "tiny" / "run.txt",
    }
    argv = [part.format(**paths) for part in argv]
    script = (
        "import os, sys\n"
        "from retrieval_gate.cli.main import main\n"
        f"code = main({argv!r})\n"
        "import numpy\n"
        "print(code, os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env
    )
    code, threads = done.stderr.strip().splitlines()[-1].split()
    assert code in ("0", "1"), done.stderr
    assert threads == str(expected)
