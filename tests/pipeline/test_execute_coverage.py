"""A saved run (`--run FILE`, the run_file retriever) must be made for the labelled set: one
whose query ids do not match it, or that answers too little of it, is bad input (exit 2), not
a regression and not a pass."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import REPO

LABELLED = ["api-rate-limit", "cancel-plan", "export-invoices", "reset-password", "sso-okta"]


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled tiny gate with a baseline, and `good.trec`: a run of its own retriever."""
    folder = tmp_path / "tiny"
    shutil.copytree(REPO / "configs" / "tiny", folder)
    config = folder / "retrieval-gate.yaml"
    # The bundled sample lowers the bar for its own run.txt; these tests use the default.
    config.write_text(config.read_text().replace("  min_coverage: 0.8\n", ""))
    monkeypatch.chdir(folder)
    code, _, err = run_cli("baseline", "--quiet", "--no-cache")
    assert code == 0, err
    code, _, err = run_cli("run", "--quiet", "--no-cache", "-o", "good.trec")
    assert code == 0, err
    return folder


def rewrite(folder: Path, name: str, keep: list[str], rename: dict[str, str] | None = None) -> str:
    """A copy of good.trec with only the `keep` queries, ids renamed by `rename`."""
    rows = []
    for line in (folder / "good.trec").read_text().splitlines():
        query, rest = line.split(" ", 1)
        if query in keep:
            rows.append(f"{(rename or {}).get(query, query)} {rest}\n")
    (folder / name).write_text("".join(rows))
    return name


def check(run: str, *extra: str) -> tuple[int, str]:
    code, _, err = run_cli(
        "check", "--quiet", "--no-cache", "--run", run, "--json", "out.json", *extra
    )
    return code, err


def test_a_complete_saved_run_still_passes(tiny: Path) -> None:
    code, err = check("good.trec")
    assert code == 0, err


def test_numbered_query_ids_are_exit_2_not_a_regression_on_every_slice(tiny: Path) -> None:
    numbers = {query: str(number) for number, query in enumerate(LABELLED, 1)}
    run = rewrite(tiny, "numbers.trec", LABELLED, numbers)
    for argv in (["check", "--json", "out.json"], ["baseline", "--force"]):
        code, _, err = run_cli(*argv, "--quiet", "--no-cache", "--run", run)
        assert code == 2, (argv, err)
        assert "--run numbers.trec: shares no query id with the labelled set (5 queries)" in err
        assert "labelled queries it does not answer: 'api-rate-limit', 'cancel-plan'" in err
        assert "query ids in the file that are not labelled: '1', '2', '3'" in err
        assert "numbers ('1') where the labelled set's are names ('api-rate-limit')" in err
        assert "regressed" not in err


def test_a_run_answering_too_few_queries_is_exit_2_with_the_counts(tiny: Path) -> None:
    code, err = check(rewrite(tiny, "one.trec", ["reset-password"]))
    assert code == 2, err
    assert (
        "--run one.trec: answers 1 of 5 labelled queries (20%), below gate.min_coverage 90%" in err
    )
    assert "labelled queries it does not answer: 'api-rate-limit', 'cancel-plan'" in err
    assert "query ids in the file that are not labelled: none" in err
    code, err = check(rewrite(tiny, "four.trec", LABELLED[1:]))
    assert code == 2, err
    assert "answers 4 of 5 labelled queries (80%), below gate.min_coverage 90%" in err


def test_an_empty_run_file_is_exit_2(tiny: Path) -> None:
    (tiny / "empty.trec").write_text("")
    code, err = check("empty.trec")
    assert code == 2, err
    assert "--run empty.trec: shares no query id with the labelled set" in err
    assert "the file has no result rows" in err


def test_gate_min_coverage_sets_the_bar(tiny: Path) -> None:
    config = tiny / "retrieval-gate.yaml"
    config.write_text(config.read_text().replace("gate:\n", "gate:\n  min_coverage: 0.2\n"))
    code, err = check(rewrite(tiny, "one.trec", ["reset-password"]))
    assert code in (0, 1), err  # judged: 4 queries score 0
    assert "min_coverage" not in err
    code, err = check(rewrite(tiny, "other.trec", ["reset-password"], {"reset-password": "x"}))
    assert code == 2, err  # no shared id at all is never enough


def test_the_run_file_retriever_type_is_checked_and_named_by_its_field(tiny: Path) -> None:
    rewrite(tiny, "one.trec", ["reset-password"])
    config = tiny / "run-file.yaml"
    text = (tiny / "retrieval-gate.yaml").read_text()
    config.write_text(text.replace("type: bm25", "type: run_file\n  path: one.trec"))
    code, _, err = run_cli("run", "-c", str(config), "--quiet", "--no-cache")
    assert code == 2, err
    assert "retriever.path one.trec: answers 1 of 5 labelled queries (20%)" in err


def test_a_live_retriever_answering_nothing_has_covered_the_query(tiny: Path) -> None:
    (tiny / "nothing.py").write_text("def search(query, k):\n    return []\n")
    config = tiny / "nothing.yaml"
    text = (tiny / "retrieval-gate.yaml").read_text()
    config.write_text(text.replace("type: bm25", "type: python\n  target: nothing:search"))
    code, _, err = run_cli("check", "-c", str(config), "--quiet", "--no-cache", "--json", "o.json")
    assert code == 1, err  # every query scores 0: a regression, not bad input
    assert "min_coverage" not in err


def test_a_missing_run_file_names_the_option_the_user_wrote(tiny: Path) -> None:
    for command in ("check", "baseline"):
        code, _, err = run_cli(command, "--quiet", "--no-cache", "--run", "missing.trec")
        assert code == 2, err
        assert "error: --run missing.trec: no such file" in err
        assert "retriever.path" not in err


def test_hostile_unmatched_ids_are_inert_in_the_error_and_its_reports(tiny: Path) -> None:
    hostile = {q: f"::error::{q}\x1b[2J\x9b" for q in LABELLED}
    rewrite(tiny, "hostile.trec", LABELLED, hostile)
    code, out, err = run_cli(
        "check", "--quiet", "--no-cache", "--run", "hostile.trec",
        "--json", "r.json", "--markdown", "r.md", "--junit", "r.xml", "--html", "r.html",
    )  # fmt: skip
    assert code == 2, err
    assert "shares no query id with the labelled set" in err
    assert not any(line.lstrip().startswith("::") for line in (out + err).splitlines())
    for text in (out, err, *((tiny / name).read_text() for name in ("r.json", "r.md", "r.xml"))):
        assert "\x1b" not in text
        assert "\x9b" not in text
    assert "\x1b" not in (tiny / "r.html").read_text()
