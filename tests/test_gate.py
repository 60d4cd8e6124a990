"""`baseline`, `check` and `compare` end to end on a generated labelled set."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

import retrieval_gate
from retrieval_gate.cli import main

QUERIES = 240

RETRIEVER = """\
import zlib

COUNT, RANK, BROKEN, WHERE = @COUNT@, @RANK@, @BROKEN@, "@WHERE@"


def search(query, k, metadata):
    # The relevant doc of query i is d<i>; a share of WHERE's queries ranks it at RANK.
    i = int(metadata["n"])
    docs = [f"d{(i + j) % COUNT}" for j in range(1, k)]
    broken = zlib.crc32(query.encode()) % 100 < BROKEN and metadata["intent"] == WHERE
    docs.insert(RANK if broken else 0, f"d{i}")
    return docs[:k]
"""


def make_set(root: Path) -> None:
    rnd = random.Random(0)
    intents = ["billing", "how-to", "troubleshooting"]
    with (root / "queries.jsonl").open("w") as handle:
        for i in range(QUERIES):
            row = {
                "id": f"q{i:03d}",
                "text": " ".join(
                    rnd.choice(["reset", "invoice", "sso", "api", "plan"]) for _ in range(1 + i % 5)
                ),
                "intent": intents[i % 3],
                "n": i,
                "qrels": {f"d{i}": 2, f"d{(i + 7) % QUERIES}": 1},
            }
            handle.write(json.dumps(row) + "\n")


def write_retriever(root: Path, name: str, broken: int, rank: int = 6) -> None:
    code = RETRIEVER.replace("@COUNT@", str(QUERIES)).replace("@RANK@", str(rank))
    code = code.replace("@BROKEN@", str(broken)).replace("@WHERE@", "billing")
    (root / f"{name}.py").write_text(code)


CONFIG = """\
version: 1
name: generated
dataset: {{queries: queries.jsonl}}
retriever: {{type: python, target: "{target}:search"}}
k: {k}
metrics:
  ndcg@10: {{max_drop: 2pt}}
  recall@10: {{max_drop: 5pt}}
slices:
  by: [intent, query_length]
  min_size: 30
gate: {{resamples: 2000}}
"""


def write_config(root: Path, target: str, k: int = 10, name: str = "gate.yaml") -> Path:
    path = root / name
    path.write_text(CONFIG.format(target=target, k=k))
    return path


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    make_set(tmp_path)
    write_retriever(tmp_path, "good_search", broken=0)
    write_retriever(tmp_path, "worse_search", broken=60)
    write_retriever(tmp_path, "slightly_search", broken=3)
    config = write_config(tmp_path, "good_search")
    code, out, err = cli("baseline", "-c", str(config), "--quiet")
    assert code == 0, err
    assert "wrote" in out
    return tmp_path


def test_the_same_retriever_passes_with_byte_identical_results(project: Path) -> None:
    config = project / "gate.yaml"
    first, second = project / "a.json", project / "b.json"
    assert cli("check", "-c", str(config), "--quiet", "--json", str(first))[0] == 0
    assert cli("check", "-c", str(config), "--quiet", "--json", str(second))[0] == 0
    assert first.read_bytes() == second.read_bytes()
    document = json.loads(first.read_text())
    assert document["status"] == "pass"
    assert document["failures"] == []


def test_a_real_regression_on_one_slice_fails_with_every_failure_listed(project: Path) -> None:
    config = write_config(project, "worse_search")
    code, out, _ = cli("check", "-c", str(config), "--quiet", "--json", str(project / "r.json"))
    assert code == 1
    assert "FAIL" in out.splitlines()[0]
    failures = json.loads((project / "r.json").read_text())["failures"]
    failed = {(f["metric"], f["slice"]) for f in failures}
    assert ("ndcg@10", "intent=billing") in failed
    assert all(f["slice"] != "intent=how-to" for f in failures)
    assert all(f["verdict"] in ("regressed", "below_floor") for f in failures)
    assert "most regressed queries (ndcg@10)" in out
    assert "rank 1 -> rank 7" in out


def test_a_small_drop_inside_the_threshold_passes(project: Path) -> None:
    config = write_config(project, "slightly_search")
    code, out, _ = cli("check", "-c", str(config), "--quiet")
    assert code == 0, out


def test_a_baseline_made_with_another_k_is_not_comparable(project: Path) -> None:
    config = write_config(project, "good_search", k=20, name="k20.yaml")
    code, _, err = cli("check", "-c", str(config), "--quiet", "--baseline",
                       str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 2
    assert "k: baseline 10, now 20" in err
    code, _, err = cli("baseline", "-c", str(config), "--quiet",
                       "-o", str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 2
    assert "--force" in err
    code, _, _ = cli("baseline", "-c", str(config), "--quiet", "--force",
                     "-o", str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 0


def test_a_hand_broken_baseline_is_exit_2_with_its_position(project: Path) -> None:
    baseline = project / ".retrieval-gate" / "baseline.json"
    text = baseline.read_text()
    baseline.write_text(text.replace('"k": 10', '"k": 10,,', 1))
    code, _, err = cli("check", "-c", str(project / "gate.yaml"), "--quiet")
    assert code == 2
    assert "baseline.json:" in err


def test_compare_re_decides_a_saved_result_under_other_thresholds(project: Path) -> None:
    result = project / "worse.json"
    config = write_config(project, "worse_search")
    assert cli("check", "-c", str(config), "--quiet", "--json", str(result))[0] == 1
    lenient = project / "lenient.yaml"
    lenient.write_text(config.read_text().replace("2pt", "60pt").replace("5pt", "60pt"))
    baseline = str(project / ".retrieval-gate" / "baseline.json")
    code, out, _ = cli("compare", baseline, str(result), "-c", str(lenient))
    assert code == 0, out
    code, _, _ = cli("compare", baseline, str(result), "-c", str(config))
    assert code == 1


def test_python_api_returns_a_result_and_prints_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = retrieval_gate.check(project / "gate.yaml")
    assert result.exit_code == 0
    assert {c.slice for c in result.comparisons} >= {"all", "intent=billing"}
    assert capsys.readouterr() == ("", "")


def test_check_scores_a_saved_run_file_instead_of_calling_the_retriever(project: Path) -> None:
    saved = project / "worse.trec"
    worse = write_config(project, "worse_search", name="worse.yaml")
    assert cli("run", "-c", str(worse), "--quiet", "-o", str(saved))[0] == 0
    code, out, _ = cli("check", "-c", str(project / "gate.yaml"), "--quiet", "--run", str(saved))
    assert code == 1
    assert "ndcg@10 fell 39.2 pt on intent=billing (p = 0.006)" in out


def test_check_writes_every_report_from_the_one_result(project: Path) -> None:
    from retrieval_gate.report import render

    config = write_config(project, "worse_search")
    formats = ("json", "markdown", "junit", "html")
    paths = {fmt: project / "out" / f"report.{fmt}" for fmt in formats}
    options = [item for fmt, path in paths.items() for item in (f"--{fmt}", str(path))]
    code, _, err = cli("check", "-c", str(config), "--quiet", *options)
    assert code == 1
    document = json.loads(paths["json"].read_text(encoding="utf-8"))
    for fmt in ("markdown", "junit", "html"):
        assert paths[fmt].read_text(encoding="utf-8") == render(document, fmt)  # type: ignore[arg-type]
        assert f"wrote {paths[fmt]}" in err
    assert "❌ retrieval-gate · generated: regression" in paths["markdown"].read_text()


def test_the_config_names_report_paths_relative_to_itself(project: Path) -> None:
    config = project / "gate.yaml"
    text = config.read_text() + "report: {markdown: reports/gate.md, json: reports/gate.json}\n"
    config.write_text(text)
    assert cli("check", "-c", str(config), "--quiet")[0] == 0
    assert json.loads((project / "reports" / "gate.json").read_text())["status"] == "pass"
    assert "✅ retrieval-gate · generated: pass" in (project / "reports" / "gate.md").read_text()


def test_a_check_that_cannot_decide_still_reports_why(project: Path) -> None:
    config = write_config(project, "good_search", k=20, name="k20.yaml")
    baseline = str(project / ".retrieval-gate" / "baseline.json")
    result, markdown, junit = project / "r.json", project / "r.md", project / "r.xml"
    reports = ["--json", str(result), "--markdown", str(markdown), "--junit", str(junit)]
    code, _, _ = cli("check", "-c", str(config), "--quiet", "--baseline", baseline, *reports)
    assert code == 2
    document = json.loads(result.read_text())
    assert document["status"] == "error"
    assert "k: baseline 10, now 20" in document["error"]
    assert "could not run" in markdown.read_text()
    assert 'errors="1"' in junit.read_text()
