"""The baseline file: round trip, stable bytes, atomic writes, read errors, comparability, git."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline import provenance
from retrieval_gate.gate.baseline.document import baseline_document
from retrieval_gate.gate.baseline.file import read_baseline, read_record, write_baseline
from retrieval_gate.gate.baseline.provenance import git_state
from retrieval_gate.gate.baseline.record import (
    SCHEMA_VERSION,
    Baseline,
    Fingerprints,
    comparability_problems,
    fingerprint_slices,
)
from retrieval_gate.gate.checks.slicing import slice_definition
from tests.helpers.baselines import FINGERPRINTS, NOW, make
from tests.helpers.git import git


def write_json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def test_make_baseline_stamps_utc_seconds_and_keeps_labelled_top_k_cut_to_k() -> None:
    baseline = make(now=datetime(2024, 5, 1, 14, 30, 15, tzinfo=timezone(timedelta(hours=2))))
    assert baseline.created_at == "2024-05-01T12:30:15Z"
    assert baseline.schema_version == SCHEMA_VERSION
    assert (baseline.git_commit, baseline.git_dirty) == (None, None)
    assert dict(baseline.top_k) == {"q1": ("d1",), "q3": ("d9", "d1", "d2")}
    assert list(baseline.scores) == ["ndcg@10", "recall@10"]
    assert baseline.scores["recall@10"].dtype == np.float64
    assert not baseline.scores["ndcg@10"].flags.writeable


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"query_ids": ("q2", "q1", "q3")}, "'q1' at position 1 is out of order"),
        ({"query_ids": ("q1", "q1", "q3")}, "'q1' at position 1 is a duplicate"),
        ({"scores": {"ndcg@10": np.zeros(3)}}, "scores has metrics"),
        ({"scores": {"ndcg@10": np.zeros(3), "recall@10": np.zeros(2)}}, "shape"),
    ],
)
def test_make_baseline_rejects_inconsistent_input(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**changes)


def test_round_trip_gives_equal_content(tmp_path: Path) -> None:
    baseline = make()
    path = tmp_path / "nested" / "dir" / "baseline.json"
    write_baseline(baseline, path)
    again = read_baseline(path)
    assert again == baseline
    assert again.fingerprints == baseline.fingerprints
    assert dict(again.retriever) == dict(baseline.retriever)
    for metric, values in baseline.scores.items():
        np.testing.assert_array_equal(again.scores[metric], values)
    assert again.scores["ndcg@10"][1] == 1 / 3
    assert again != dataclasses.replace(baseline, scores={**baseline.scores, "ndcg@10": np.ones(3)})


def test_output_is_byte_identical_for_identical_inputs_and_reads_well(tmp_path: Path) -> None:
    write_baseline(make(), tmp_path / "one.json")
    reordered = {"body": {"a": [2, 3], "z": 1}, "url": "http://search/q", "type": "http"}
    write_baseline(make(retriever=reordered), tmp_path / "two.json")
    one = (tmp_path / "one.json").read_bytes()
    assert one == (tmp_path / "two.json").read_bytes()
    text = one.decode("utf-8")
    assert text.endswith("}\n")
    document = json.loads(text)
    assert list(document) == [
        "schema_version",
        "tool_version",
        "created_at",
        "git_commit",
        "git_dirty",
        "fingerprints",
        "retriever",
        "slice_definition",
        "query_ids",
        "scores",
        "top_k",
    ]
    assert list(document["retriever"]) == ["body", "type", "url"]
    assert document["created_at"] == "2024-05-01T12:30:15Z"
    assert '    "ndcg@10": [\n      0.1,\n      0.3333333333333333,\n      1.0\n    ]' in text
    assert document["scores"]["recall@10"] == [0.0, 0.5, 1.0]


def test_document_without_clock_leaves_out_created_at_and_reads_back_as_a_record(
    tmp_path: Path,
) -> None:
    baseline = make()
    current = baseline_document(baseline, clock=False)
    assert "created_at" not in current
    assert current == baseline_document(make(now=NOW + timedelta(days=3)), clock=False)
    path = write_json(tmp_path / "result.json", {"status": "pass", "current": current})
    assert read_record(path) == dataclasses.replace(baseline, created_at="")
    write_baseline(baseline, tmp_path / "baseline.json")
    assert read_record(tmp_path / "baseline.json") == baseline


def test_atomic_write_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o640)
    write_baseline(make(), path)
    assert read_baseline(path) == make()
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]
    assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_new_file_gets_the_umask_permissions_not_a_temporary_files(
    tmp_path: Path, umask: int
) -> None:
    previous = os.umask(umask)
    try:
        write_baseline(make(), tmp_path / "baseline.json")
    finally:
        os.umask(previous)
    assert (tmp_path / "baseline.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_failed_serialisation_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(make(), path)
    before = path.read_bytes()
    broken = dataclasses.replace(
        make(), scores={"ndcg@10": np.array([0.1, np.nan, 1.0]), "recall@10": np.zeros(3)}
    )
    with pytest.raises(ValueError, match=r"scores\['ndcg@10'\] of query 'q2' is nan"):
        write_baseline(broken, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    assert str(caught.value) == (
        f"no baseline at {path}; create one with `retrieval-gate baseline -c CONFIG` "
        "on the main branch"
    )
    with pytest.raises(InputError, match=r"baseline -c gate\.yaml`"):
        read_baseline(path, config="gate.yaml")
    assert caught.value.exit_code == 2


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(make(), path)
    text = path.read_text(encoding="utf-8")
    cut = text[: text.index('"query_ids"') + len('"query_ids": [')]
    path.write_text(cut, encoding="utf-8")
    lines = cut.split("\n")
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    assert caught.value.source == str(path)
    assert caught.value.line == len(lines)
    assert f"line {len(lines)}, column {len(lines[-1]) + 1}" in str(caught.value)
    assert str(caught.value).startswith(f"{path}:{len(lines)}: not valid JSON: expecting value")


@pytest.mark.parametrize(("version", "age"), [(2, "newer"), (0, "older")])
def test_another_schema_version_says_recreate(tmp_path: Path, version: int, age: str) -> None:
    document = baseline_document(make()) | {"schema_version": version, "future": {}}
    path = write_json(tmp_path / "baseline.json", document)
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    assert str(caught.value) == (
        f"{path}: made by a {age} retrieval-gate (schema {version}; this one reads schema 1); "
        "recreate it with `retrieval-gate baseline --force`"
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.pop("fingerprints"), "fingerprints: Field required"),
        (lambda d: d["fingerprints"].update(k="10"), "fingerprints.k: Input should be a valid"),
        (lambda d: d["fingerprints"].update(k=0), "fingerprints.k: Input should be greater"),
        (lambda d: d["scores"]["ndcg@10"].__setitem__(1, "0.5"), "scores.ndcg@10[1]: Input"),
        (lambda d: d["scores"]["ndcg@10"].__setitem__(1, True), "scores.ndcg@10[1]: Input"),
        (lambda d: d.update(git_dirty="yes"), "git_dirty: Input should be a valid boolean"),
        (lambda d: d.update(query_ids="q1"), "query_ids: Input should be a valid list"),
        (lambda d: d.update(extra=1), "extra: Extra inputs are not permitted"),
        (lambda d: d.update(schema_version="1"), "schema_version: Input should be a valid int"),
    ],
)
def test_fields_of_the_wrong_type_are_named(tmp_path: Path, edit: Any, expected: str) -> None:
    document = baseline_document(make())
    edit(document)
    path = write_json(tmp_path / "baseline.json", document)
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: invalid baseline:\n  ")
    assert expected in message
    assert message.endswith("recreate it with `retrieval-gate baseline --force`")


def test_non_finite_scores_written_by_hand_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(make(), path)
    text = path.read_text(encoding="utf-8").replace("0.3333333333333333", "NaN")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"scores\.ndcg@10\[1\]: Input should be a finite number"):
        read_baseline(path)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["scores"]["recall@10"].pop(), "scores.recall@10: 2 values for 3 query_ids"),
        (lambda d: d["scores"].pop("recall@10"), "scores: no scores for recall@10"),
        (
            lambda d: d["scores"].update({"ap@10": [0, 0, 0]}),
            "scores.ap@10: not one of fingerprints.metrics",
        ),
        (lambda d: d.update(query_ids=["q1", "q3", "q2"]), "query_ids: 'q2' at position 2"),
        (lambda d: d["top_k"].update(q9=["d1"]), "top_k: 'q9' not in query_ids"),
        (lambda d: d["top_k"].update(q2=["a", "b", "c", "d"]), "top_k.q2: 4 doc ids, more than"),
        (lambda d: d["top_k"].update(q2=["a", "b", "a"]), "top_k.q2: lists 'a' twice"),
        (
            lambda d: d["fingerprints"].update(metrics=["ndcg@10", "recall@10", "ndcg@10"]),
            "fingerprints.metrics: ndcg@10 listed twice",
        ),
    ],
)
def test_hand_edits_that_break_consistency_are_named(
    tmp_path: Path, edit: Any, expected: str
) -> None:
    document = baseline_document(make())
    edit(document)
    path = write_json(tmp_path / "baseline.json", document)
    with pytest.raises(InputError) as caught:
        read_baseline(path)
    assert expected in str(caught.value)


@pytest.mark.parametrize("content", ["[]", '"baseline"', "null"])
def test_a_document_that_is_not_an_object_is_an_input_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="is not a baseline: expected a JSON object"):
        read_baseline(path)


def test_unreadable_bytes_are_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError, match="cannot read the file"):
        read_baseline(path)


def test_identical_fingerprints_are_comparable_and_the_retriever_may_change() -> None:
    assert comparability_problems(FINGERPRINTS, FINGERPRINTS) == []
    changed = dataclasses.replace(FINGERPRINTS, retriever="0123456789abcdef")
    assert comparability_problems(FINGERPRINTS, changed) == []
    reordered = dataclasses.replace(FINGERPRINTS, metrics=("recall@10", "ndcg@10"))
    assert comparability_problems(FINGERPRINTS, reordered) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"dataset": "0f9e8d7c6b5a" + "1" * 52},
            "the labelled set differs from the baseline's (a1b2c3d4e5f6 -> 0f9e8d7c6b5a): "
            "judgments or queries changed; recreate the baseline",
        ),
        ({"k": 20}, "k: baseline 3, now 20"),
        (
            {"metrics": ("ndcg@10", "recall@10", "recall@100")},
            "metrics: now also recall@100",
        ),
        ({"metrics": ("recall@10",)}, "metrics: no longer ndcg@10"),
        (
            {"metrics": ("recall@100", "recall@10")},
            "metrics: now also recall@100; no longer ndcg@10",
        ),
        (
            {"slices": fingerprint_slices(slice_definition(["intent"], [], [1, 3, 6], 30))},
            "the slice definition differs from the baseline's",
        ),
    ],
)
def test_each_difference_is_one_problem(changes: dict[str, Any], expected: str) -> None:
    problems = comparability_problems(FINGERPRINTS, dataclasses.replace(FINGERPRINTS, **changes))
    assert len(problems) == 1
    assert problems[0].startswith(expected)


def test_every_difference_is_listed() -> None:
    other = Fingerprints(
        dataset="f" * 64, k=5, metrics=("ap@10",), slices="e" * 64, retriever="d" * 16
    )
    assert len(comparability_problems(FINGERPRINTS, other)) == 4


def test_slice_fingerprint_is_a_stable_sha256_of_the_definition() -> None:
    one = fingerprint_slices({"by": ["a"], "min_size": 30})
    assert one == fingerprint_slices({"min_size": 30, "by": ["a"]})
    assert len(one) == 64
    assert one != fingerprint_slices({"by": ["a"], "min_size": 31})


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder git will not search above, with no user or system config in the way."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_git_state_of_a_real_repository(isolated_git: Path) -> None:
    repo = isolated_git
    git(repo, "init", "-q")
    assert git_state(repo) == (None, False)
    (repo / "eval.txt").write_text("one\n", encoding="utf-8")
    git(repo, "add", "eval.txt")
    git(repo, "commit", "-q", "-m", "first")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git_state(repo) == (head, False)
    (repo / "untracked.sqlite").write_text("cache", encoding="utf-8")
    assert git_state(repo) == (head, False)
    (repo / "eval.txt").write_text("two\n", encoding="utf-8")
    assert git_state(repo) == (head, True)
    sub = repo / "sub"
    sub.mkdir()
    assert git_state(sub) == (head, True)
    baseline = make(repo_dir=sub)
    assert (baseline.git_commit, baseline.git_dirty) == (head, True)


def test_git_state_outside_a_repository_or_folder(isolated_git: Path) -> None:
    assert git_state(isolated_git) == (None, None)
    assert git_state(isolated_git / "missing") == (None, None)


def test_git_state_without_git(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(isolated_git))
    assert git_state(isolated_git) == (None, None)


def test_git_state_of_a_git_that_hangs(isolated_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stalled git must not stall the baseline: past the bound, provenance is unknown.
    sleep = shutil.which("sleep")
    if sleep is None:
        pytest.skip("no sleep command to stand in for a hung git")
    fake = isolated_git / "git"
    fake.write_text(f"#!/bin/sh\nexec {sleep} 30\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(isolated_git))
    monkeypatch.setattr(provenance, "GIT_TIMEOUT", 0.2)
    started = time.monotonic()
    assert git_state(isolated_git) == (None, None)
    assert time.monotonic() - started < 10


def test_the_queries_fingerprint_is_written_beside_the_dataset_and_optional(
    tmp_path: Path,
) -> None:
    with_queries = dataclasses.replace(FINGERPRINTS, queries="9" * 64)
    baseline = make(fingerprints=with_queries)
    path = tmp_path / "baseline.json"
    write_baseline(baseline, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert list(document["fingerprints"]) == [
        "dataset",
        "queries",
        "k",
        "metrics",
        "slices",
        "retriever",
    ]
    assert read_baseline(path) == baseline
    assert read_baseline(path).fingerprints.queries == "9" * 64
    # Files made before the field existed (same schema_version) read with None.
    assert document["schema_version"] == SCHEMA_VERSION == 1
    del document["fingerprints"]["queries"]
    old = read_baseline(write_json(path, document))
    assert old.fingerprints.queries is None
    assert old == make()
    assert "queries" not in baseline_document(make())["fingerprints"]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("9" * 64, "9" * 64, "only the judgments changed; recreate the baseline"),
        ("9" * 64, "8" * 64, "the queries changed (ids, text or metadata); recreate the baseline"),
        (None, "9" * 64, "judgments or queries changed; recreate the baseline"),
    ],
)
def test_a_dataset_difference_says_what_changed_when_it_can(
    before: str | None, after: str, expected: str
) -> None:
    old = dataclasses.replace(FINGERPRINTS, queries=before)
    new = dataclasses.replace(FINGERPRINTS, dataset="0f9e8d7c6b5a" + "1" * 52, queries=after)
    (problem,) = comparability_problems(old, new)
    assert problem == (
        f"the labelled set differs from the baseline's (a1b2c3d4e5f6 -> 0f9e8d7c6b5a): {expected}"
    )
    # An old baseline without the field stays comparable with a run that has it.
    assert comparability_problems(dataclasses.replace(FINGERPRINTS, queries=None), old) == []


def many_queries(count: int) -> Baseline:
    ids = tuple(f"q{i:05d}" for i in range(count))
    return make(
        query_ids=ids,
        scores={"ndcg@10": np.linspace(0, 1, count), "recall@10": np.zeros(count)},
        top_k={q: [f"d{i}", "d\n::error::x", "é\u2028\x85"] for i, q in enumerate(ids)},
    )


def test_a_large_top_k_goes_to_a_side_file_read_on_first_use(tmp_path: Path) -> None:
    from retrieval_gate.gate.baseline.side_file import SideTopK

    path = tmp_path / "baseline.json"
    baseline = many_queries(1001)
    write_baseline(baseline, path)
    side = tmp_path / "baseline.top_k.jsonl"
    document = json.loads(path.read_text())
    assert document["top_k"]["file"] == "baseline.top_k.jsonl"
    assert document["top_k"]["queries"] == 1001
    lines = side.read_text().split("\n")
    # One line per query, inert: U+2028 stays as json writes it, NEL is escaped.
    assert lines[0] == '["q00000", ["d0", "d\\n::error::x", "é\u2028\\u0085"]]'
    again = read_baseline(path)
    assert isinstance(again.top_k, SideTopK)
    assert dict(again.top_k) == dict(baseline.top_k)
    # Byte-identical on rewrite: the same inputs give the same two files.
    before = path.read_bytes(), side.read_bytes()
    write_baseline(again, path)
    assert (path.read_bytes(), side.read_bytes()) == before


def test_a_small_top_k_stays_inline(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(make(), path)
    assert json.loads(path.read_text())["top_k"] == {"q1": ["d1"], "q3": ["d9", "d1", "d2"]}
    assert not (tmp_path / "baseline.top_k.jsonl").exists()
    # A thousand queries are still held inline; the side file starts at 1001 (above).
    write_baseline(many_queries(1000), path)
    assert len(json.loads(path.read_text())["top_k"]) == 1000
    assert not (tmp_path / "baseline.top_k.jsonl").exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("delete", "cannot read the top-k side file baseline.top_k.jsonl"),
        ("edit", "does not match"),
        ("swap", "does not match"),
    ],
)
def test_a_side_file_that_does_not_belong_is_refused(
    tmp_path: Path, damage: str, message: str
) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(many_queries(1001), path)
    side = tmp_path / "baseline.top_k.jsonl"
    if damage == "delete":
        side.unlink()
    elif damage == "edit":
        side.write_text(side.read_text().replace('"d7"', '"d8"', 1))
    else:  # another baseline's side file, its JSON not replaced
        other = tmp_path / "other" / "baseline.json"
        other.parent.mkdir()
        write_baseline(many_queries(1002), other)
        shutil.copy(other.parent / "baseline.top_k.jsonl", side)
    baseline = read_baseline(path)  # the JSON alone reads: the ids are read when used
    with pytest.raises(InputError, match=message) as caught:
        dict(baseline.top_k)
    assert "restore both from git" in str(caught.value)


def test_a_side_file_name_cannot_leave_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_baseline(many_queries(1001), path)
    document = json.loads(path.read_text())
    document["top_k"]["file"] = "../secret.top_k.jsonl"
    write_json(path, document)
    with pytest.raises(InputError, match=r"top_k\.side\.file: String should match pattern"):
        read_baseline(path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('["q00001", ["d1"]', "not valid JSON"),
        ('{"q00001": "d1"}', "expected [query id, [doc ids]]"),
        ('["q00001", [1, 2]]', "expected a list of doc ids"),
        ('["q00001", ["d1", "d1"]]', "top_k.q00001: lists 'd1' twice"),
        ('["q00001", ["d1"]], ["q00002", ["d2"]]', "not valid JSON: Extra data"),
        ('["q00001", ["d1\\u001b[31m::error::x"]]', None),  # escapes stay data
    ],
)
def test_a_hand_made_side_file_with_a_matching_sha256_is_still_checked(
    tmp_path: Path, line: str, message: str | None
) -> None:
    import hashlib

    path = tmp_path / "baseline.json"
    write_baseline(many_queries(1001), path)
    side = tmp_path / "baseline.top_k.jsonl"
    rows = side.read_text().split("\n")[:-1]
    rows[1] = line
    text = "\n".join(rows) + "\n"
    side.write_text(text)
    document = json.loads(path.read_text())
    document["top_k"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    write_json(path, document)
    baseline = read_baseline(path)
    if message is None:
        assert baseline.top_k["q00001"] == ("d1\x1b[31m::error::x",)
        return
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        dict(baseline.top_k)
    assert caught.value.line == 2


def test_a_baseline_nested_too_deeply_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_baseline(path)
