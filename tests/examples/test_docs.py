"""docs/*.md stays true: every console and report sample is what the tool prints, every config
a user would copy is valid, every command parses, and the pages are the site's navigation.

The README's samples are checked the same way by tests/examples/test_readme.py
(tests/helpers/doc_samples.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate.cli.main import build_parser
from retrieval_gate.config.loader import load
from retrieval_gate.config.schema import GateConfig
from tests.helpers.doc_samples import (
    DOCS,
    README,
    Block,
    blocks,
    check_console,
    check_report,
    copy_configs,
    run,
)
from tests.helpers.paths import REPO

ALL_BLOCKS = [block for path in [README, *DOCS] for block in blocks(path)]
DOC_BLOCKS = [block for path in DOCS for block in blocks(path)]
LANGUAGES = {"console", "markdown", "yaml", "bash", "python", "text"}
ENVIRON = {"SEARCH_URL": "http://127.0.0.1:9", "SEARCH_TOKEN": "t"}
"""The environment a docs config is loaded with: the variables the samples read."""


def of(lang: str, among: list[Block] = DOC_BLOCKS) -> list[Block]:
    return [block for block in among if block.lang == lang]


def ids(found: list[Block]) -> list[str]:
    return [block.where for block in found]


def test_every_block_is_a_kind_the_tests_check() -> None:
    for block in ALL_BLOCKS:
        assert block.lang in LANGUAGES, f"{block.where}: a ```{block.lang} block; name its kind"
        if block.lang != "console":
            # A command with its output belongs in a console block, where it is run.
            shown = [line for line in block.body.splitlines() if line.startswith("$ ")]
            assert not shown, f"{block.where}: `$ ` lines outside a console block: {shown}"


def test_the_site_navigation_lists_every_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = [next(iter(entry.values())) for entry in config["nav"]]
    assert sorted(pages) == sorted(path.name for path in DOCS)
    assert pages[0] == "index.md"


# --- console sessions -------------------------------------------------------------------------

CONSOLE = of("console")


@pytest.mark.parametrize("block", CONSOLE, ids=ids(CONSOLE))
def test_every_docs_console_command_prints_what_the_docs_show(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    with sandbox(block, tmp_path, monkeypatch, request) as cwd:
        check_console(block, cwd, monkeypatch)


@contextlib.contextmanager
def sandbox(
    block: Block, root: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """Where `block` runs: a copy of configs/, or what its `<!-- sandbox: NAME -->` names."""
    name = (block.marker or "").removeprefix("sandbox: ") if block.marker else None
    if name is None:
        yield copy_configs(root)
    elif name == "drift":
        yield drifted_history(root / "support-search", monkeypatch)
    elif name == "cranfield":
        with cranfield_mirror(request.getfixturevalue("shared_data"), monkeypatch):
            yield copy_configs(root)
    elif name == "edited-articles":
        from tests.helpers.judged_chunks import edited_articles

        root = copy_configs(root)
        edited_articles(root / "configs")
        yield root
    elif name == "judged-chunks":
        from tests.helpers.judged_chunks import judged_chunks

        yield judged_chunks(root / "project").root
    elif name == "pull-request":
        from tests.helpers.judged_example import pull_request_sandbox

        with pull_request_sandbox(root, monkeypatch) as cwd:
            yield cwd
    else:
        raise AssertionError(f"{block.where}: unknown sandbox {name!r}")


@contextlib.contextmanager
def cranfield_mirror(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`datasets fetch cranfield` served from ../shared/data on 127.0.0.1."""
    from retrieval_gate.datasets.download import MIRROR_ENV
    from tests.helpers.local_server import serving

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in ("cran.all.1400", "cran.qry", "cranqrel", "cranqrel.readme"):
            archive.add(shared_data / "cranfield" / name, arcname=name)
    served = buffer.getvalue()

    def respond(method: str, path: str, *_: object) -> tuple[int, dict[str, str], bytes]:
        return (200, {}, served) if path == "/cran.tar.gz" else (404, {}, b"")

    with serving(respond) as url:
        monkeypatch.setenv(MIRROR_ENV, url)
        yield


DRIFT_QUERIES = 300
DRIFT_RETRIEVER = """\
def search(query, k, metadata, broken=0):
    # Query n judges d<n> 2, d<n+7> and d<n+20> 1. The first `broken` queries of a fixed
    # permutation rank d<n> 7th instead of 1st, and half of them lose d<n+7> too.
    n = int(metadata["n"])
    docs = [f"d{(n + j) % @N@}" for j in range(1, k)]
    worse = (n * 7919) % @N@ < broken
    if worse and n % 2:
        docs[6] = f"d{(n + 10) % @N@}"
    docs.insert(6 if worse else 0, f"d{n}")
    return docs[:k]
"""
DRIFT_CONFIG = """\
version: 1
name: support-search
dataset: {{queries: queries.jsonl}}
retriever: {{type: python, target: "support_search:search", kwargs: {{broken: {broken}}}}}
metrics:
  ndcg@10: {{max_drop: 2pt}}
  recall@10: {{max_drop: 5pt}}
gate:
  drift: {{reference: v2.3, max_drop: 3pt}}
"""
DRIFT_MERGES = {41: 7, 44: 5, 45: -1, 47: 5, 48: 4, 52: 4}
"""Pull request -> how many more queries it breaks (a negative count mends some)."""


def drifted_history(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository tagged v2.3, six merges each a little worse, and the history the Action
    records on main: one `check` result per merge, appended to retrieval-gate-history."""
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Docs")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "docs@example.com")
        monkeypatch.setenv(f"GIT_{role}_DATE", "2025-01-01T00:00:00Z")
    work.mkdir()
    monkeypatch.chdir(work)
    with (work / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for n in range(DRIFT_QUERIES):
            judged = {f"d{(n + j) % DRIFT_QUERIES}": 1 for j in (7, 20)}
            row = {"id": f"q{n:03d}", "text": f"query {n}", "n": n, "qrels": {f"d{n}": 2, **judged}}
            handle.write(json.dumps(row) + "\n")
    (work / "support_search.py").write_text(
        DRIFT_RETRIEVER.replace("@N@", str(DRIFT_QUERIES)), encoding="utf-8"
    )
    (work / ".gitignore").write_text(".retrieval-gate/\n__pycache__/\n", encoding="utf-8")
    config = work / "retrieval-gate.yaml"
    config.write_text(DRIFT_CONFIG.format(broken=0), encoding="utf-8")
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "The search service"], check=True)
    subprocess.run([*git, "tag", "v2.3"], check=True)
    assert run("retrieval-gate baseline --quiet")[0] == 0
    result = work.parent / "result.json"

    def record() -> None:
        code, printed = run(
            f"retrieval-gate check --quiet --no-reports --json {shlex.quote(str(result))}"
        )
        assert code in (0, 1), printed
        code, printed = run(f"retrieval-gate history append --result {shlex.quote(str(result))}")
        assert code == 0, printed

    record()
    broken = 0
    for number, more in DRIFT_MERGES.items():
        broken += more
        config.write_text(DRIFT_CONFIG.format(broken=broken), encoding="utf-8")
        message = f"Merge pull request #{number} from dev/{number}"
        subprocess.run([*git, "commit", "-qam", message], check=True)
        record()
    return work


# --- report samples ---------------------------------------------------------------------------

REPORTS = of("markdown")


@pytest.mark.parametrize("block", REPORTS, ids=ids(REPORTS))
def test_every_report_sample_is_the_real_report(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_report(block, copy_configs(tmp_path), monkeypatch)


# --- configs and workflows a user copies ------------------------------------------------------

YAML = of("yaml", ALL_BLOCKS)
CONFIG_KEYS = {field.alias or name for name, field in GateConfig.model_fields.items()}


@pytest.mark.parametrize("block", YAML, ids=ids(YAML))
def test_every_yaml_sample_is_valid_where_it_goes(block: Block, tmp_path: Path) -> None:
    data = yaml.safe_load(block.body)
    if isinstance(data, dict) and "version" in data:
        check_config(block.body, copy_configs(tmp_path) / "retrieval-gate.yaml")
    elif isinstance(data, dict) and set(data) <= CONFIG_KEYS:
        check_config_fragment(block, data, copy_configs(tmp_path))
    elif isinstance(data, dict) and ({"jobs", "steps"} & set(data)):
        check_workflow(block, data)
    elif isinstance(data, list) and all("hooks" in entry for entry in data):
        check_precommit(block, data)
    else:
        raise AssertionError(
            f"{block.where}: a yaml sample tests/examples/test_docs.py cannot check"
        )


def check_config(text: str, path: Path) -> GateConfig:
    path.write_text(text, encoding="utf-8")
    return load(path, environ=ENVIRON)


def check_config_fragment(block: Block, fragment: dict[str, Any], configs: Path) -> None:
    """A config's sections: valid in the adapter template of its retriever type (whose keys
    and values it must show as they are there), else in configs/tiny's config."""
    kind = fragment.get("retriever", {}).get("type")
    # `<!-- retriever of configs/adapters/NAME.yaml -->` names a recipe of another type's.
    named = re.fullmatch(r"retriever of configs/adapters/([\w-]+\.yaml)", block.marker or "")
    template = configs / "configs" / "adapters" / (named[1] if named else f"{kind}.yaml")
    if template.exists():
        config = yaml.safe_load(template.read_text(encoding="utf-8"))
        shown = {key: config["retriever"].get(key) for key in fragment["retriever"]}
        assert shown == fragment["retriever"], f"{block.where} differs from {template.name}"
    else:
        template = configs / "configs" / "tiny" / "retrieval-gate.yaml"
        config = yaml.safe_load(template.read_text(encoding="utf-8"))
    for key, value in fragment.items():
        merge = isinstance(value, dict) and key != "retriever"
        config[key] = {**config.get(key, {}), **value} if merge else value
    check_config(yaml.safe_dump(config), template.parent / "sample.yaml")


def action_inputs() -> dict[str, str]:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    return {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}


def check_workflow(block: Block, workflow: dict[str, Any]) -> None:
    """Every use of the action passes only inputs action.yml declares."""
    steps = workflow.get("steps") or [
        step for job in workflow["jobs"].values() for step in job["steps"]
    ]
    ours = [step for step in steps if "/retrieval-gate@" in step.get("uses", "")]
    assert ours, f"{block.where}: a workflow that does not use the action"
    for step in ours:
        assert set(step.get("with", {})) <= set(action_inputs()), block.where


def check_precommit(block: Block, repos: list[dict[str, Any]]) -> None:
    """Every hook id is one .pre-commit-hooks.yaml declares."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    declared = {hook["id"] for hook in hooks}
    for repo in repos:
        assert {hook["id"] for hook in repo["hooks"]} <= declared, block.where


def test_the_config_a_user_would_write_is_valid(tmp_path: Path) -> None:
    text = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    example = re.findall(r"would write it:\n\n```yaml\n(.+?)\n```", text, flags=re.S)[0]
    config = check_config(example, tmp_path / "retrieval-gate.yaml")
    assert config.retriever.type == "http"
    assert [str(m) for m in config.metrics] == ["ndcg@10", "recall@10", "mrr@10"]


def test_the_action_page_lists_its_inputs_with_their_defaults_and_every_output() -> None:
    text = (REPO / "docs" / "github-action.md").read_text(encoding="utf-8")
    table = text.split("## Inputs", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \|([^|]*)\|", table, flags=re.M)
    assert {name: default.strip().strip("`") for name, default in rows} == action_inputs()
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    outputs = text.split("## Outputs", 1)[1].split("\n## ", 1)[0]
    for name in action["outputs"]:
        assert f"`{name}`" in outputs, name


# --- commands and code --------------------------------------------------------------------------

BASH = of("bash", ALL_BLOCKS)
COMMAND = re.compile(r"(?:^|&&|<\()\s*(retrieval-gate\s[^)>|;&#\n]*)")
"""`retrieval-gate ...` run by a shell line, up to a redirection, pipe or comment."""


@pytest.mark.parametrize("block", BASH, ids=ids(BASH))
def test_every_retrieval_gate_command_shown_parses(block: Block) -> None:
    for line in block.body.splitlines():
        for command in COMMAND.findall(line):
            words = shlex.split(command)[1:]
            try:
                build_parser().parse_args(words)
            except SystemExit:
                pytest.fail(f"{block.where}: `{command.strip()}` does not parse")
            for word in words:
                if word.startswith("configs/"):
                    assert (REPO / word).exists(), f"{block.where}: {word} does not exist"


PYTHON = of("python", ALL_BLOCKS)


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_every_python_sample_runs_beside_the_tiny_sample(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(copy_configs(tmp_path) / "configs" / "tiny")
    exec(compile(block.body, block.where, "exec"), {"__name__": "__doc_sample__"})


PATH = re.compile(r"`((?:configs|benchmarks|tests|retrieval_gate|docs|\.github|\.ci)/[^`\s<>*]*)`")
WRITTEN = re.compile(r"configs/\.retrieval-gate/[^/]+/(report|result|junit)")
"""Files `check` writes: named in the docs, not in the repository."""


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda path: path.name)
def test_every_repository_path_named_exists(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = {found for found in PATH.findall(text) if not WRITTEN.match(found)}
    missing = sorted(found for found in named if not (REPO / found).exists())
    assert missing == [], f"{path.name} names files the repository does not have"


def test_every_relative_link_of_the_readme_exists() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert links
    assert [link for link in links if not (REPO / link).exists()] == []
