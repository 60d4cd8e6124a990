"""`baseline`, `check` and `compare` end to end on a generated labelled set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import retrieval_gate
from retrieval_gate.gate.baseline.file import read_baseline
from tests.helpers.cli import run_cli
from tests.helpers.generated_project import QUERIES, make_project, write_config
from tests.helpers.paths import REPO


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_the_same_retriever_passes_with_byte_identical_results(project: Path) -> None:
    config = project / "gate.yaml"
    first, second = project / "a.json", project / "b.json"
    assert run_cli("check", "-c", str(config), "--quiet", "--json", str(first))[0] == 0
    assert run_cli("check", "-c", str(config), "--quiet", "--json", str(second))[0] == 0
    assert first.read_bytes() == second.read_bytes()
    document = json.loads(first.read_text())
    assert document["status"] == "pass"
    assert document["failures"] == []


@pytest.mark.parametrize("inline", [1_000, 10])  # QUERIES is between: inline, then a side file
def test_the_compact_result_document_writes_the_plain_one_s_bytes(
    project: Path, monkeypatch: pytest.MonkeyPatch, inline: int
) -> None:
    from retrieval_gate.gate.baseline import side_file
    from retrieval_gate.gate.baseline.side_file import with_top_k_file
    from retrieval_gate.gate.result import canonical_json

    monkeypatch.setattr(side_file, "TOP_K_INLINE", inline)
    result = retrieval_gate.check(write_config(project, "worse_search"))
    plain = with_top_k_file(result.document(), project / "plain.json")
    compact = with_top_k_file(result.document(compact=True), project / "compact.json")
    assert canonical_json(compact) == canonical_json(plain).replace("plain.top_k", "compact.top_k")
    assert (project / "compact.top_k.jsonl").exists() == (inline == 10)
    if inline == 10:
        side = (project / "compact.top_k.jsonl").read_bytes()
        assert side == (project / "plain.top_k.jsonl").read_bytes()


def test_a_real_regression_on_one_slice_fails_with_every_failure_listed(project: Path) -> None:
    config = write_config(project, "worse_search")
    code, out, _ = run_cli("check", "-c", str(config), "--quiet", "--json", str(project / "r.json"))
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
    code, out, _ = run_cli("check", "-c", str(config), "--quiet")
    assert code == 0, out


def test_a_baseline_made_with_another_k_is_not_comparable(project: Path) -> None:
    config = write_config(project, "good_search", k=20, name="k20.yaml")
    code, _, err = run_cli("check", "-c", str(config), "--quiet", "--baseline",
                       str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 2
    assert "k: baseline 10, now 20" in err
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet",
                       "-o", str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 2
    assert "--force" in err
    code, _, _ = run_cli("baseline", "-c", str(config), "--quiet", "--force",
                     "-o", str(project / ".retrieval-gate" / "baseline.json"))  # fmt: skip
    assert code == 0


def test_a_hand_broken_baseline_is_exit_2_with_its_position(project: Path) -> None:
    baseline = project / ".retrieval-gate" / "baseline.json"
    text = baseline.read_text()
    baseline.write_text(text.replace('"k": 10', '"k": 10,,', 1))
    code, _, err = run_cli("check", "-c", str(project / "gate.yaml"), "--quiet")
    assert code == 2
    assert "baseline.json:" in err


def test_compare_re_decides_a_saved_result_under_other_thresholds(project: Path) -> None:
    result = project / "worse.json"
    config = write_config(project, "worse_search")
    assert run_cli("check", "-c", str(config), "--quiet", "--json", str(result))[0] == 1
    lenient = project / "lenient.yaml"
    lenient.write_text(config.read_text().replace("2pt", "60pt").replace("5pt", "60pt"))
    baseline = str(project / ".retrieval-gate" / "baseline.json")
    code, out, _ = run_cli("compare", baseline, str(result), "-c", str(lenient))
    assert code == 0, out
    code, _, _ = run_cli("compare", baseline, str(result), "-c", str(config))
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
    assert run_cli("run", "-c", str(worse), "--quiet", "-o", str(saved))[0] == 0
    code, out, _ = run_cli(
        "check", "-c", str(project / "gate.yaml"), "--quiet", "--run", str(saved)
    )
    assert code == 1
    assert "ndcg@10 fell 39.2 pt on intent=billing (p < 0.001)" in out


def test_check_writes_every_report_from_the_one_result(project: Path) -> None:
    from retrieval_gate.report import render

    config = write_config(project, "worse_search")
    formats = ("json", "markdown", "junit", "html")
    paths = {fmt: project / "out" / f"report.{fmt}" for fmt in formats}
    options = [item for fmt, path in paths.items() for item in (f"--{fmt}", str(path))]
    code, _, err = run_cli("check", "-c", str(config), *options)
    assert code == 1
    document = json.loads(paths["json"].read_text(encoding="utf-8"))
    for fmt in ("markdown", "junit", "html"):
        assert paths[fmt].read_text(encoding="utf-8") == render(document, fmt)  # type: ignore[arg-type]
        assert f"retrieval-gate: wrote {paths[fmt]}\n" in err
    assert "## ❌ FAIL · retrieval-gate · generated" in paths["markdown"].read_text()
    assert not (project / ".retrieval-gate" / "generated").exists()  # options replace defaults


DEFAULTS = ("result.json", "report.md", "report.html")


def test_check_and_compare_write_the_default_reports_beside_the_config(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a `report:` block: result.json, report.md and report.html in
    .retrieval-gate/<name>/ beside the config, wherever the command runs; no JUnit XML."""
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    folder = project / ".retrieval-gate" / "generated"
    code, _, err = run_cli("check", "-c", str(project / "gate.yaml"))
    assert code == 0
    assert sorted(path.name for path in folder.iterdir()) == sorted(DEFAULTS)
    assert [line for line in err.splitlines() if "wrote" in line] == [
        f"retrieval-gate: wrote {folder / name}" for name in DEFAULTS
    ]
    assert json.loads((folder / "result.json").read_text())["status"] == "pass"
    assert "## ✅ PASS · retrieval-gate · generated" in (folder / "report.md").read_text()
    assert list(Path.cwd().iterdir()) == []
    # compare re-decides the saved result and writes the same reports, --quiet without a word
    saved = project / "saved.json"
    saved.write_bytes((folder / "result.json").read_bytes())
    for path in folder.iterdir():
        path.unlink()
    baseline = str(project / ".retrieval-gate" / "baseline.json")
    code, out, err = run_cli(
        "compare", baseline, str(saved), "-c", str(project / "gate.yaml"), "--quiet"
    )
    assert (code, err) == (0, "")
    assert "PASS" in out
    assert sorted(path.name for path in folder.iterdir()) == sorted(DEFAULTS)


def test_quiet_prints_no_wrote_lines_but_the_summary_warnings_and_errors(project: Path) -> None:
    with (project / "queries.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "unjudged", "text": "plan", "intent": "billing"}) + "\n")
    code, out, err = run_cli("check", "-c", str(project / "gate.yaml"), "--quiet")
    assert code == 0
    assert out.startswith("retrieval-gate generated: PASS")
    assert err == "retrieval-gate: warning: 1 query with no judgments not run: unjudged\n"
    assert (project / ".retrieval-gate" / "generated" / "report.html").is_file()
    config = write_config(project, "good_search", k=20, name="k20.yaml")
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert (code, out) == (2, "")
    assert err.startswith("retrieval-gate: error: ")
    assert "wrote" not in err
    result = json.loads((project / ".retrieval-gate" / "generated" / "result.json").read_text())
    assert result["status"] == "error"  # the reports still say why, quietly


def test_no_reports_writes_only_the_reports_named_by_options(project: Path) -> None:
    config = project / "gate.yaml"
    code, _, err = run_cli("check", "-c", str(config), "--no-reports")
    assert code == 0
    assert "wrote" not in err
    assert not (project / ".retrieval-gate" / "generated").exists()
    config.write_text(config.read_text() + "report: {markdown: reports/gate.md}\n")
    code, _, err = run_cli(
        "check", "-c", str(config), "--no-reports", "--json", str(project / "r.json")
    )
    assert code == 0
    assert json.loads((project / "r.json").read_text())["status"] == "pass"
    assert not (project / "reports").exists()
    assert not (project / ".retrieval-gate" / "generated").exists()


def test_the_config_names_report_paths_relative_to_itself(project: Path) -> None:
    config = project / "gate.yaml"
    text = config.read_text() + "report: {markdown: reports/gate.md, json: reports/gate.json}\n"
    config.write_text(text)
    assert run_cli("check", "-c", str(config), "--quiet")[0] == 0
    assert json.loads((project / "reports" / "gate.json").read_text())["status"] == "pass"
    assert (
        "## ✅ PASS · retrieval-gate · generated" in (project / "reports" / "gate.md").read_text()
    )
    # a `report:` block says exactly what is written: no default reports beside it
    assert sorted(path.name for path in (project / "reports").iterdir()) == ["gate.json", "gate.md"]
    assert not (project / ".retrieval-gate" / "generated").exists()
    config.write_text(
        text.replace("report: {markdown: reports/gate.md, json: reports/gate.json}", "report: {}")
    )
    code, _, err = run_cli("check", "-c", str(config))
    assert code == 0
    assert "wrote" not in err
    assert not (project / ".retrieval-gate" / "generated").exists()


def test_a_check_that_cannot_decide_still_reports_why(project: Path) -> None:
    config = write_config(project, "good_search", k=20, name="k20.yaml")
    baseline = str(project / ".retrieval-gate" / "baseline.json")
    result, markdown, junit = project / "r.json", project / "r.md", project / "r.xml"
    reports = ["--json", str(result), "--markdown", str(markdown), "--junit", str(junit)]
    code, _, _ = run_cli("check", "-c", str(config), "--quiet", "--baseline", baseline, *reports)
    assert code == 2
    document = json.loads(result.read_text())
    assert document["status"] == "error"
    assert "k: baseline 10, now 20" in document["error"]
    assert "could not run" in markdown.read_text()
    assert 'errors="1"' in junit.read_text()


# --- re-scoring the baseline when only the judgments changed ------------------------------


SCORED_RETRIEVER = """\
def search(query, k, metadata):
    # Scores out of order and tied: the metrics rank by score, then doc id descending.
    i = int(metadata["n"])
    hits = [(f"d{(i + j) % @COUNT@}", float(j % 3)) for j in range(k)]
    return list(reversed(hits))
"""


def test_rescoring_a_record_reproduces_its_scores_exactly(project: Path) -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.gate.baseline.comparable import rescored_baseline
    from retrieval_gate.pipeline.record import record_current

    (project / "scored_search.py").write_text(SCORED_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    current = record_current(load(write_config(project, "scored_search")), cache=False)
    record = current.record
    again = rescored_baseline(record, current.dataset)
    for metric, values in record.scores.items():
        assert np.array_equal(again.scores[metric], values), metric
    # The stored top k is the ranking the metrics saw, not the order the hits came in.
    assert record.top_k["q000"][:3] == ("d8", "d5", "d2")


def test_rescoring_the_committed_example_baseline_reproduces_its_scores() -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.gate.baseline.comparable import rescored_baseline

    config = load(REPO / "configs" / "example.yaml")
    dataset = load_dataset(config.dataset, config.base_dir)
    baseline = read_baseline(config.resolve(config.baseline))
    assert baseline.fingerprints.queries == dataset.queries_fingerprint
    again = rescored_baseline(baseline, dataset)
    assert list(again.scores) == list(baseline.fingerprints.metrics)
    for metric, values in baseline.scores.items():
        assert np.array_equal(again.scores[metric], values), metric
    assert again == baseline


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    """configs/example/, example-regressed.yaml and the committed baseline, copied."""
    shutil.copytree(REPO / "configs" / "example", tmp_path / "example")
    shutil.copy(REPO / "configs" / "example-regressed.yaml", tmp_path)
    target = tmp_path / ".retrieval-gate" / "example"
    target.mkdir(parents=True)
    shutil.copy(REPO / "configs" / ".retrieval-gate" / "example" / "baseline.json", target)
    return tmp_path / "example-regressed.yaml"


def add_judgments(config: Path) -> list[tuple[str, str]]:
    """Judge relevant (grade 2) the first unjudged doc of the regressed top 10 of 20 queries."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.pipeline.record import record_current

    current = record_current(load(config), cache=False)
    qrels = current.dataset.qrels
    added = []
    for query_id, docs in current.record.top_k.items():
        judged = qrels.by_query[qrels.position[query_id]]
        fresh = [doc for doc in docs if doc not in judged]
        if fresh and len(added) < 20:
            added.append((query_id, fresh[0]))
    with (config.parent / "example" / "qrels" / "test.tsv").open("a") as handle:
        handle.writelines(f"{query}\t{doc}\t2\n" for query, doc in added)
    return added


def test_added_judgments_rescore_the_baseline_instead_of_refusing(example_copy: Path) -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.datasets import load as load_dataset
    from retrieval_gate.metrics import evaluate
    from retrieval_gate.readers import run_from_dict

    before = retrieval_gate.check(example_copy, cache=False)
    added = add_judgments(example_copy)
    assert len(added) == 20
    after = retrieval_gate.check(example_copy, cache=False)
    config = load(example_copy)
    dataset = load_dataset(config.dataset, config.base_dir)
    old, new = before.baseline.fingerprints.dataset, dataset.fingerprint
    assert old != new
    assert (
        f"the judgments changed since the baseline (dataset {old[:12]} -> {new[:12]}); the "
        "baseline's stored top-10 rankings were re-scored with the current judgments"
    ) in after.warnings
    assert not any("judgments changed" in warning for warning in before.warnings)
    metrics = list(config.metrics)
    for record in (after.baseline, after.current):
        run = run_from_dict({q: list(docs) for q, docs in record.top_k.items()})
        expected = evaluate(run, dataset.qrels, metrics)
        for metric in record.scores:
            assert np.array_equal(record.scores[metric], expected.values[metric]), metric
    assert after.current.top_k == before.current.top_k
    changed = {
        metric
        for metric in after.current.scores
        if not np.array_equal(after.current.scores[metric], before.current.scores[metric])
    }
    assert "recall@10" in changed
    overall = {c.metric: c for c in after.comparisons if c.slice == "all"}
    for metric, comparison in overall.items():
        assert comparison.current_mean == pytest.approx(after.current.scores[metric].mean())
        assert comparison.baseline_mean == pytest.approx(after.baseline.scores[metric].mean())
    assert after.unjudged.judged_after > before.unjudged.judged_after


def test_a_changed_query_text_still_is_not_comparable(example_copy: Path) -> None:
    from retrieval_gate.errors import NotComparableError

    queries = example_copy.parent / "example" / "queries.jsonl"
    queries.write_text(queries.read_text().replace('"refund"', '"a refund"', 1))
    with pytest.raises(NotComparableError, match="the queries changed"):
        retrieval_gate.check(example_copy, cache=False)


def test_a_baseline_without_a_queries_fingerprint_is_not_rescored(example_copy: Path) -> None:
    from retrieval_gate.errors import NotComparableError

    path = example_copy.parent / ".retrieval-gate" / "example" / "baseline.json"
    document = json.loads(path.read_text())
    del document["fingerprints"]["queries"]
    path.write_text(json.dumps(document))
    assert retrieval_gate.check(example_copy, cache=False).exit_code == 1  # still comparable
    add_judgments(example_copy)
    with pytest.raises(NotComparableError, match="judgments or queries changed"):
        retrieval_gate.check(example_copy, cache=False)


def test_baseline_replaces_a_baseline_whose_judgments_alone_changed(example_copy: Path) -> None:
    """The same rule as check: a baseline it can still compare with (re-scored) is replaced
    without --force; one made with other queries is kept unless --force says so."""
    path = example_copy.parent / ".retrieval-gate" / "example" / "baseline.json"
    add_judgments(example_copy)
    code, out, err = run_cli("baseline", "-c", str(example_copy), "--quiet", "--no-cache")
    assert code == 0, err
    assert f"wrote {path}" in out
    queries = example_copy.parent / "example" / "queries.jsonl"
    queries.write_text(queries.read_text().replace('"refund"', '"a refund"', 1))
    code, _, err = run_cli("baseline", "-c", str(example_copy), "--quiet", "--no-cache")
    assert code == 2
    assert f"{path} is kept: the baseline cannot be compared with this run" in err
    assert "the queries changed" in err


def test_a_large_top_k_leaves_the_json_result_and_compare_reads_it_back(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_gate.gate.baseline import side_file

    monkeypatch.setattr(side_file, "TOP_K_INLINE", 10)  # QUERIES is more
    config = write_config(project, "worse_search")
    result = project / "result.json"
    code, _, err = run_cli("check", "-c", str(config), "--quiet", "--json", str(result))
    assert code == 1, err
    document = json.loads(result.read_text())
    assert document["current"]["top_k"]["file"] == "result.top_k.jsonl"
    assert (project / "result.top_k.jsonl").is_file()
    # Re-deciding the saved result reads the side file: the same diagnostics, the same bytes.
    again = project / "again.json"
    baseline = project / ".retrieval-gate" / "baseline.json"
    args = ("-c", str(config), "--quiet", "--no-reports", "--json", str(again))
    assert run_cli("compare", str(baseline), str(result), *args)[0] == 1
    first, second = json.loads(result.read_text()), json.loads(again.read_text())
    for one in (first, second):
        del one["baseline"]["source"], one["current"]["top_k"]["file"]  # the paths given
    # The noise probe ran in check; compare calls no retriever, so it probes nothing.
    assert first["noise"].pop("probe") == {"queries": 10, "changed": [], "runs": 1}
    assert first == second
    assert (project / "again.top_k.jsonl").read_bytes() == (
        project / "result.top_k.jsonl"
    ).read_bytes()
    (project / "result.top_k.jsonl").unlink()
    code, _, err = run_cli("compare", str(baseline), str(result), *args)
    assert code == 2
    assert "cannot read the top-k side file result.top_k.jsonl" in err
