"""The noise probe: a sample of the queries run again finds a retriever's own noise."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import NoiseProbeConfig
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.pipeline.noise_probe import probe_changes, probed_run
from retrieval_gate.pipeline.record import record_current
from tests.helpers.builders import CONFIGS, copy_example
from tests.helpers.cli import run_cli
from tests.helpers.generated_project import NOISY_RETRIEVER, QUERIES, make_project

# Every call is one line in $COUNTED_CALLS: what the probe costs, counted. (The module stays
# imported across tests, so the file is named by each test's environment, not the module.)
COUNTING_RETRIEVER = """\
import os


def search(query, k, metadata):
    with open(os.environ["COUNTED_CALLS"], "a") as handle:
        handle.write(str(metadata["n"]) + "\\n")
    i = int(metadata["n"])
    docs = [f"d{(i + j) % @COUNT@}" for j in range(1, k)]
    docs.insert(0, f"d{i}")
    return docs[:k]
"""


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The generated project searched by a deterministic retriever that counts its calls."""
    project = make_project(tmp_path)
    monkeypatch.setenv("COUNTED_CALLS", str(project / "calls.txt"))
    (project / "counted.py").write_text(COUNTING_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    text = (project / "gate.yaml").read_text().replace('"good_search:search"', "counted:search")
    (project / "gate.yaml").write_text(text)
    return project


@pytest.fixture
def noisy(tmp_path: Path) -> Path:
    """The generated project searched by a retriever whose runs differ, with its baseline."""
    project = make_project(tmp_path)
    (project / "noisy_search.py").write_text(NOISY_RETRIEVER.replace("@COUNT@", str(QUERIES)))
    text = (project / "gate.yaml").read_text().replace('"good_search:search"', "noisy_search:Noisy")
    (project / "noisy.yaml").write_text(text)
    return project


def calls(project: Path) -> list[str]:
    path = project / "calls.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    return lines


def test_a_deterministic_retriever_pays_the_sample_alone_and_says_so(counted: Path) -> None:
    config = counted / "gate.yaml"
    assert run_cli("baseline", "-c", config, "--quiet", "--force").ret == 0
    calls(counted)
    json_path = counted / "result.json"
    done = run_cli("check", "-c", config, "--quiet", "--json", json_path)
    assert done.ret == 0, done.err
    made = calls(counted)
    # 4% of 240 is 9.6: ten queries, once more each.
    assert len(made) == QUERIES + 10
    assert len(set(made[QUERIES:])) == 10
    line = (
        f"retriever noise: none found (noise probe: 10 of {QUERIES} queries run again, every "
        "top k identical): treated as deterministic, one run of each side"
    )
    assert line in done.out
    noise = json.loads(json_path.read_text())["noise"]
    assert noise["probe"] == {"queries": 10, "changed": [], "runs": 1}
    assert (noise["reference_runs"], noise["current_runs"]) == (1, 1)
    assert "unprobed" not in noise
    # The same sample in every check of the config: gate.seed seeds it.
    assert run_cli("check", "-c", config, "--quiet").ret == 0
    assert sorted(calls(counted)[QUERIES:]) == sorted(made[QUERIES:])


def test_the_probe_is_off_with_the_flag_or_the_key_and_the_line_is_as_before(
    counted: Path,
) -> None:
    config = counted / "gate.yaml"
    assert run_cli("baseline", "-c", config, "--quiet", "--force", "--no-noise-probe").ret == 0
    assert len(calls(counted)) == QUERIES
    json_path = counted / "result.json"
    done = run_cli("check", "-c", config, "--quiet", "--no-noise-probe", "--json", json_path)
    assert done.ret == 0, done.err
    assert len(calls(counted)) == QUERIES
    assert "retriever noise: not measured (one run of each side):" in done.out
    noise = json.loads(json_path.read_text())["noise"]
    assert "probe" not in noise
    assert "unprobed" not in noise
    off = counted / "off.yaml"
    off.write_text(
        config.read_text().replace(
            "gate: {resamples: 2000}", "gate: {resamples: 2000, noise_probe: false}"
        )
    )
    assert run_cli("check", "-c", off, "--quiet").ret == 0
    assert len(calls(counted)) == QUERIES
    # Repeats measure the noise themselves: no probe beside them.
    assert run_cli("check", "-c", config, "--quiet", "--repeats", "2").ret == 0
    assert len(calls(counted)) == 2 * QUERIES


def test_a_saved_run_is_not_probed_and_the_line_says_why(counted: Path) -> None:
    config = counted / "gate.yaml"
    assert run_cli("baseline", "-c", config, "--quiet", "--force").ret == 0
    calls(counted)
    run = counted / "run.txt"
    run.write_text("".join(f"q{i:03d} Q0 d{i} 1 1.0 x\n" for i in range(QUERIES)))
    json_path = counted / "result.json"
    done = run_cli("check", "-c", config, "--quiet", "--run", run, "--json", json_path)
    assert done.ret in (0, 1), done.err
    assert calls(counted) == []
    assert (
        "retriever noise: not measured (one run of each side; a saved run cannot be run "
        "again: its noise was not probed)"
    ) in done.out
    noise = json.loads(json_path.read_text())["noise"]
    assert noise["unprobed"] == "a saved run cannot be run again: its noise was not probed"
    assert "probe" not in noise


def test_a_noisy_retriever_is_found_out_and_run_three_times(noisy: Path) -> None:
    config = noisy / "noisy.yaml"
    done = run_cli("baseline", "-c", config, "--quiet", "--force")
    assert done.ret == 0, done.err
    assert re.search(r"mean of 3 runs \(the noise probe: \d+ of 10 queries run again", done.out)
    stored = read_baseline(noisy / ".retrieval-gate" / "baseline.json")
    assert stored.repeats is not None
    assert len(stored.repeats.runs) == 3
    json_path = noisy / "result.json"
    done = run_cli("check", "-c", config, "--quiet", "--json", json_path)
    assert done.ret in (0, 1), done.err
    assert re.search(
        r"retriever noise: not deterministic \(noise probe: \d+ of 10 queries run again "
        r"changed their top k\), so each side ran 3 times and the test allows for the noise; "
        rf"\d+ of {QUERIES} queries vary between identical runs \(3 reference, 3 current runs\)",
        done.out,
    )
    result = json.loads(json_path.read_text())
    probe = result["noise"]["probe"]
    assert (probe["queries"], probe["runs"]) == (10, 3)
    assert probe["changed"]
    assert result["noise"]["current_runs"] == 3
    overall = [c for c in result["comparisons"] if c["slice"] == "all"]
    assert all(c["run_sd"] for c in overall)


def test_against_a_one_run_baseline_the_line_says_a_probed_baseline_narrows_it(
    noisy: Path,
) -> None:
    config = noisy / "noisy.yaml"
    assert run_cli("baseline", "-c", config, "--quiet", "--force", "--no-noise-probe").ret == 0
    done = run_cli("check", "-c", config, "--quiet")
    assert done.ret in (0, 1), done.err
    assert "so the current side ran 3 times and the test allows for the noise; " in done.out
    assert "`baseline --repeats 3` narrows it" in done.out
    assert "(1 reference, 3 current runs)" in done.out


def test_the_probe_bypasses_the_answer_cache(tmp_path: Path) -> None:
    # bm25 is cached. With every cached ranking reversed, the second check's run reads them
    # all, and only a probe that calls the retriever itself sees rankings that differ.
    import sqlite3

    example = copy_example(tmp_path / "example")
    config = example / "example.yaml"
    assert run_cli("check", "-c", config, "--quiet").ret == 0
    (cache,) = example.rglob("*.sqlite")
    with sqlite3.connect(cache) as connection:
        rows = connection.execute("SELECT rowid, hits FROM answers").fetchall()
        for rowid, hits in rows:
            found = json.loads(hits)  # [[doc, score], ...], best first: scores swapped end to end
            scores = [hit[1] for hit in found][::-1]
            turned = json.dumps([[hit[0], score] for hit, score in zip(found, scores, strict=True)])
            connection.execute("UPDATE answers SET hits = ? WHERE rowid = ?", (turned, rowid))
    done = run_cli("check", "-c", config)
    assert re.search(r"(\d+)/\1 queries \(0 failed, \1 cached\)", done.err)
    assert "retriever noise: not deterministic (noise probe: " in done.out


def test_the_probe_compares_rankings_not_scores_and_skips_failed_queries(counted: Path) -> None:
    config = load(counted / "gate.yaml")
    first = record_current(config, cache=False)
    settings = NoiseProbeConfig(share=0.5, min_queries=1)
    rerun, changed = probe_changes(config, first, settings)
    assert (rerun, changed) == (QUERIES // 2, ())
    # A query the first run failed is not counted: a failure is no ranking to compare.
    failed = first.record.query_ids[0]
    broken = type(first)(
        first.record, first.dataset, first.warnings, (failed,), first.unrun, first.unscored
    )
    everything = NoiseProbeConfig(share=1.0)
    rerun, changed = probe_changes(config, broken, everything)
    assert (rerun, changed) == (QUERIES - 1, ())
    # Another ranking of the same query in the first run is a change.
    moved = first.record.query_ids[5]
    top_k = {**first.record.top_k, moved: tuple(reversed(first.record.top_k[moved]))}
    other = dataclasses.replace(first, record=dataclasses.replace(first.record, top_k=top_k))
    current, probe = probed_run(config, other, everything)
    assert (probe.changed, probe.runs) == ((moved,), 3)
    assert current.record.repeats is not None
    assert len(current.record.repeats.runs) == 3


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("{share: .nan}", "gate.noise_probe.share"),
        ("{share: 0}", "gate.noise_probe.share"),
        ("{min_queries: 10000000000}", "gate.noise_probe.min_queries"),
        ("{repeats: 1}", "gate.noise_probe.repeats"),
        ("{share: {a: {b: [1]}}}", "gate.noise_probe.share"),
        ('{"::error::x": 1}', "gate.noise_probe"),
        ('"\\x1b[31mtrue"', "gate.noise_probe"),
    ],
)
def test_a_bad_noise_probe_key_names_the_field_and_exits_2(
    tmp_path: Path, value: str, field: str
) -> None:
    shutil.copytree(CONFIGS / "tiny", tmp_path / "tiny")
    config = tmp_path / "tiny" / "retrieval-gate.yaml"
    config.write_text(config.read_text() + f"  noise_probe: {value}\n")
    done = run_cli("check", "-c", config, "--quiet")
    assert done.ret == 2
    assert field in done.err
    assert "\x1b" not in done.err
    assert not re.search(r"^::error::", done.err, re.MULTILINE)


def test_a_hostile_probe_in_a_result_file_is_read_safely_and_rendered_as_counts() -> None:
    from retrieval_gate.errors import InputError
    from retrieval_gate.report import FORMATS, render, validate_result
    from tests.helpers.report import GOLDEN

    document = json.loads((GOLDEN / "regressed.json").read_text())
    hostile = "q\x1b[31m\n::error::boom"
    document["noise"]["probe"] = {"queries": 2, "changed": [hostile], "runs": 3}
    document["noise"]["current_runs"] = 3
    document["noise"]["unprobed"] = "::error::x\x07"
    record = validate_result(document)
    for fmt in FORMATS:
        shown = render(record, fmt)
        assert "\x1b" not in shown
        if fmt != "json":  # the JSON keeps the ids, escaped; the reports count them
            assert "boom" not in shown
        assert not re.search(r"^::error::", shown, re.MULTILINE)
    assert "noise probe: 1 of 2 queries run again changed their top k" in render(record, "markdown")
    for bad in (
        {"queries": -1, "changed": [], "runs": 1},
        {"queries": 1, "changed": [], "runs": 0},
    ):
        document["noise"]["probe"] = bad
        with pytest.raises(InputError, match=r"noise\.probe"):
            validate_result(document)
    document["noise"]["probe"] = {"queries": 1, "changed": [[[["deep"]]]], "runs": 1}
    with pytest.raises(InputError, match=r"noise\.probe\.changed"):
        validate_result(document)


def test_against_a_noisy_retriever_runs_both_sides_three_times(tmp_path: Path) -> None:
    from tests.helpers.git import git

    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(CONFIGS / "example", root / "example")
    shutil.copy(CONFIGS / "noisy_bm25.py", root / "noisy_bm25.py")
    shutil.copy(CONFIGS / "example-noisy.yaml", root / "gate.yaml")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the noisy example")
    json_path = tmp_path / "result.json"
    done = run_cli(
        "check", "-c", root / "gate.yaml", "--quiet", "--against", "HEAD", "--json", json_path
    )
    assert done.ret in (0, 1), done.err
    assert "so each side ran 3 times and the test allows for the noise" in done.out
    noise = json.loads(json_path.read_text())["noise"]
    assert (noise["reference_runs"], noise["current_runs"]) == (3, 3)
    assert noise["probe"]["runs"] == 3


def test_a_two_stage_retriever_s_first_stage_candidates_are_compared_too(
    tmp_path: Path,
) -> None:
    copy_example(tmp_path)
    shutil.copy(CONFIGS / "example-two-stage.yaml", tmp_path / "two-stage.yaml")
    shutil.copy(CONFIGS / "two_stage_rerank.py", tmp_path / "two_stage_rerank.py")
    config = load(tmp_path / "two-stage.yaml")
    first = record_current(config, cache=False)
    assert first.record.candidates is not None
    everything = NoiseProbeConfig(share=1.0)
    assert probe_changes(config, first, everything)[1] == ()
    # The same top k, other candidates beneath it: the first stage is not deterministic.
    moved = first.record.query_ids[3]
    deeper = {**first.record.candidates, moved: tuple(reversed(first.record.candidates[moved]))}
    other = dataclasses.replace(first, record=dataclasses.replace(first.record, candidates=deeper))
    assert probe_changes(config, other, everything)[1] == (moved,)
