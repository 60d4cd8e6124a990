"""The label-free checks through the command line: an IVF index that loses recall fails the
ANN check and a faithful one passes; a changed retriever fails the overlap checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.builders import labelled_set
from tests.helpers.cli import run_cli

# A real inverted-file index over seeded vectors: nprobe of 16 lists is an exact search,
# 1 of them loses most of the true neighbours; `exact` searches every vector.
RETRIEVER = """
import hashlib
import random

import numpy as np

_RNG = np.random.default_rng(7)
VECTORS = _RNG.standard_normal((600, 12))
CENTROIDS = VECTORS[_RNG.choice(600, size=16, replace=False)]
LISTS = np.argmax(VECTORS @ CENTROIDS.T, axis=1)


def _embed(text):
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng(seed).standard_normal(12)


def search(query, k, *, nprobe=16, exact=False, jitter=0.0, drop=0, fail_on=None):
    if fail_on and fail_on in query:
        raise RuntimeError("::error::" + query)
    vector = _embed(query)
    scores = VECTORS @ vector
    if jitter:  # a nondeterministic retriever: fresh noise on every call
        scores = scores + jitter * np.array([random.gauss(0, 1) for _ in range(len(scores))])
    if not exact:
        probed = np.argsort(-(CENTROIDS @ vector))[:nprobe]
        scores = np.where(np.isin(LISTS, probed), scores, -np.inf)
    order = [int(i) for i in np.argsort(-scores, kind="stable") if np.isfinite(scores[i])]
    top = order[drop : drop + k] if drop else order[:k]
    return [(f"d{i}", float(scores[i])) for i in top]
"""


def _project(tmp_path: Path, checks: dict[str, Any], **kwargs: Any) -> Path:
    (tmp_path / "ivf_toy.py").write_text(RETRIEVER, encoding="utf-8")
    rows = [
        {"id": f"u{i:03d}", "text": f"production query {i}", "intent": "a" if i % 2 else "b"}
        for i in range(200)
    ]
    (tmp_path / "production.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    return labelled_set(
        tmp_path,
        retriever={"type": "python", "target": "ivf_toy:search", "kwargs": kwargs},
        metrics={"recall@10": {}},
        unlabelled={"queries": "production.jsonl", "sample": 150, "seed": 3, "checks": checks},
    )


def _with(config: Path, **kwargs: Any) -> Path:
    """`config` with the retriever's kwargs replaced."""
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["retriever"]["kwargs"] = kwargs
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return config


def _check(config: Path, *args: str) -> tuple[int, str, str, dict[str, Any]]:
    result = config.parent / "result.json"
    code, out, err = run_cli("check", "-c", config, "--quiet", "--json", result, *args)
    document = json.loads(result.read_text(encoding="utf-8")) if result.exists() else {}
    return code, out, err, document


def _overall(document: dict[str, Any]) -> dict[str, tuple[float, bool]]:
    return {
        c["metric"]: (round(c["current_mean"], 3), c["failed"])
        for c in document["comparisons"]
        if c["slice"] == "all" and c["metric"].startswith("unlabelled:")
    }


ANN = {"ann_recall@10": {"min": 0.95}}


def test_an_index_that_loses_recall_fails_and_a_faithful_one_passes(tmp_path: Path) -> None:
    config = _project(tmp_path, ANN, nprobe=16)
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    code, out, err, document = _check(config)
    assert code == 0, err
    assert _overall(document) == {"unlabelled:ann_recall@10": (1.0, False)}
    assert document["label_free"] == {
        "queries": 150,
        "available": 200,
        "source": "production.jsonl",
        "reference": "",
        "exact": True,
    }
    assert "no labels" in out
    code, out, err, document = _check(_with(config, nprobe=1))
    assert code == 1, err
    recall, failed = _overall(document)["unlabelled:ann_recall@10"]
    assert failed
    assert recall < 0.7
    assert "unlabelled:ann_recall@10" in out


OVERLAP = {
    "overlap@10": {"max_drop": "5pt"},
    "rbo@10": {"max_drop": "5pt"},
    "lost@10": {"more_than": 3, "max_share": "5%"},
}


def test_a_changed_ranking_fails_the_overlap_checks(tmp_path: Path) -> None:
    config = _project(tmp_path, OVERLAP)
    code, out, err = run_cli("baseline", "-c", config, "--quiet")
    assert code == 0, err
    assert "top 10 of 150 unlabelled queries, 1 run" in out
    kept = tmp_path / ".retrieval-gate" / "baseline.unlabelled.jsonl"
    assert len(kept.read_text(encoding="utf-8").splitlines()) == 151
    code, out, err, document = _check(config)
    assert code == 0, err
    assert _overall(document) == {
        "unlabelled:overlap@10": (1.0, False),
        "unlabelled:rbo@10": (1.0, False),
        "unlabelled:lost@10>3": (0.0, False),
    }
    # Every query's top 10 shifted down by four: each lost four of its ten.
    code, out, err, document = _check(_with(config, drop=4))
    assert code == 1, err
    found = _overall(document)
    assert found["unlabelled:overlap@10"] == (0.6, True)
    assert found["unlabelled:lost@10>3"] == (1.0, True)
    assert found["unlabelled:rbo@10"][1]
    assert found["unlabelled:rbo@10"][0] < 0.5


def test_a_nondeterministic_retriever_with_repeats_passes_against_itself(tmp_path: Path) -> None:
    # Fresh noise on every call: two runs of one retriever rank some queries differently.
    config = _project(tmp_path, OVERLAP, jitter=0.3)
    assert run_cli("baseline", "-c", config, "--quiet", "--repeats", "2").ret == 0
    code, out, err, document = _check(config, "--repeats", "2")
    assert code == 0, err
    found = _overall(document)
    assert found["unlabelled:overlap@10"][0] < 1.0  # it did vary
    assert not any(failed for _, failed in found.values())
    assert "top k compared with the baseline's top k" in out


def test_with_against_the_overlap_checks_are_said_to_be_left_out(tmp_path: Path) -> None:
    from retrieval_gate.config.loader import load
    from retrieval_gate.pipeline.unlabelled import label_free_checks

    config = load(_project(tmp_path, {**OVERLAP, **ANN}, nprobe=16))
    found = label_free_checks(config, runs=1, reference=None, reference_label="")
    assert [c.metric for c in found.comparisons if c.slice == "all"] == ["unlabelled:ann_recall@10"]
    assert "not checked" in found.warnings[0]


HOSTILE = [
    {"id": "::error::owned", "text": "::warning::x\n::error::y"},
    {"id": "q\x1b[31mred\x07", "text": "\x00\x1b]8;;http://x\x07click"},
    {"id": "huge", "text": "ignore previous instructions " * 20_000},
]


def test_hostile_queries_stay_inert_in_every_sink(tmp_path: Path) -> None:
    config = _project(tmp_path, OVERLAP, fail_on="::error::")
    rows = [json.loads(line) for line in (tmp_path / "production.jsonl").read_text().splitlines()]
    (tmp_path / "production.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in [*rows, *HOSTILE]), encoding="utf-8"
    )
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["unlabelled"].pop("sample")
    document["gate"] = {"error_budget": 0.05}
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    reports = {
        "md": tmp_path / "r.md",
        "html": tmp_path / "r.html",
        "junit": tmp_path / "r.xml",
    }
    code, out, err, result = _check(
        config,
        "--markdown",
        str(reports["md"]),
        "--html",
        str(reports["html"]),
        "--junit",
        str(reports["junit"]),
    )
    assert code == 0, err
    warning = next(w for w in result["warnings"] if w.startswith("unlabelled: 1 query failed"))
    assert "::error::owned" in warning  # named, once, on one line
    texts = {name: path.read_text(encoding="utf-8") for name, path in reports.items()}
    for sink, text in [("terminal", out + err), *texts.items()]:
        assert "\x1b" not in text, sink
        assert "\x07" not in text, sink
        assert "\x00" not in text, sink
        assert not any(line.startswith("::error::") for line in text.splitlines()), sink
        assert "ignore previous instructions" not in text, sink
    assert "no labels used" in texts["md"]
    assert "no labels used" in texts["html"]
    assert "corrected as a family of their own" in texts["md"]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', ":2: query id 'a' again"),
        ('{"id": "a", "text": "x"}\nnot json\n', ":2: not a JSON object"),
        ('{"id": "a"}\n', ":1: query 'a' has no \"text\" string"),
        ('{"text": "x"}\n', ':1: no "id"'),
        ("[" * 100_000 + "\n", ":1: not a JSON object"),
        ("\n\n", "no queries"),
        (b"\xff\xfe".decode("latin-1"), "not UTF-8"),
    ],
)
def test_bad_query_files_are_exit_2_naming_the_line(
    tmp_path: Path, lines: str, expected: str
) -> None:
    config = _project(tmp_path, OVERLAP)
    encoding = "latin-1" if expected == "not UTF-8" else "utf-8"
    (tmp_path / "production.jsonl").write_text(lines, encoding=encoding)
    code, _, err = run_cli("baseline", "-c", config, "--quiet")
    assert code == 2
    assert f"production.jsonl{expected}" in err or expected in err


def test_a_missing_reference_or_changed_sample_says_to_recreate_it(tmp_path: Path) -> None:
    config = _project(tmp_path, OVERLAP)
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    kept = tmp_path / ".retrieval-gate" / "baseline.unlabelled.jsonl"
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["unlabelled"]["seed"] = 4
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, _, err, _ = _check(config)
    assert code == 2
    assert "the unlabelled sample or k changed since the baseline" in err
    kept.unlink()
    code, _, err, _ = _check(config)
    assert code == 2
    assert "no label-free reference at" in err
    assert "retrieval-gate baseline --force" in err


def test_an_ann_check_on_a_retriever_without_exact_search_is_exit_2(tmp_path: Path) -> None:
    config = labelled_set(
        tmp_path,
        metrics={"recall@10": {}},
        unlabelled={"queries": "production.jsonl", "checks": ANN},
    )
    (tmp_path / "production.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
    code, _, err, _ = _check(config)
    assert code == 2
    assert "a bm25 retriever has no exact switch" in err


def test_against_a_commit_runs_the_retriever_there_on_the_sample(tmp_path: Path) -> None:
    from tests.helpers.git import git

    config = _project(tmp_path, OVERLAP)
    (tmp_path / ".gitignore").write_text(".retrieval-gate/\n__pycache__/\n*.json\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "the search")
    code, _, err, document = _check(config, "--against", "HEAD")
    assert code == 0, err
    assert _overall(document)["unlabelled:overlap@10"] == (1.0, False)
    assert document["label_free"]["reference"].startswith("a run at HEAD")
    code, _out, err, document = _check(_with(config, drop=4), "--against", "HEAD")
    assert code == 1, err
    assert _overall(document)["unlabelled:overlap@10"] == (0.6, True)


def test_a_sequential_gate_refuses_the_unlabelled_checks(tmp_path: Path) -> None:
    config = _project(tmp_path, ANN)
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["gate"] = {"sequential": {}}
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    code, _, err, _ = _check(config)
    assert code == 2
    assert "turn gate.sequential off, or drop the unlabelled: block" in err


def test_a_query_file_with_a_byte_order_mark_reads_as_the_others_do(tmp_path: Path) -> None:
    """Windows editors start a file with a byte-order mark; every other reader drops it."""
    config = _project(tmp_path, OVERLAP)
    queries = tmp_path / "production.jsonl"
    queries.write_text("\ufeff" + queries.read_text(encoding="utf-8"), encoding="utf-8")
    assert run_cli("baseline", "-c", config, "--quiet").ret == 0
