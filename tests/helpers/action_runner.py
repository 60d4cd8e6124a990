"""action.yml run as a GitHub runner would: its expressions, its steps in order, its files."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.git import git
from tests.helpers.paths import REPO

ACTION: dict[str, Any] = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
STEP_IDS = {step["id"] for step in STEPS if "id" in step}
# What the runner below understands; anything else in a step (continue-on-error, ...) fails.
STEP_KEYS = {"name", "id", "if", "uses", "with", "run", "shell", "env", "working-directory"}
TOKEN = "t0ken"
SLUG = "octo/app"
PR = 7
SETUP_PYTHON = "actions/setup-python@v5"

CONFIG = "configs/tiny/retrieval-gate.yaml"

# ---------------------------------------------------------------------------------------------
# Expressions: exactly what action.yml uses; anything else raises, so a new construct in the
# action fails the action's tests until the evaluator (and the reader of the action) understands it.

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


INSTALL_STEP = "Install retrieval-gate"
_INSTALLED: set[tuple[Path, Path]] = set()
"""(venv, action checkout) pairs the install step has run in, in this process."""


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
            installs = name == INSTALL_STEP and not context.inputs["extra-packages"].strip()
            if installs and (self.python_bin, self.action_path) in _INSTALLED:
                # This very step installed this checkout into this venv already: running it
                # again would rebuild the same package (2 s of pip a run, 40% of the suite).
                runs.append(StepRun(name, "provided"))
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
            if installs and done.returncode == 0:
                _INSTALLED.add((self.python_bin, self.action_path))
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
            # --no-warn-conflicts (pip reads a negative option inverted, as below): its check
            # of every installed distribution, a few on a runner's fresh Python, took half of
            # each install's time here, where the venv sees the whole test environment.
            "PIP_NO_WARN_CONFLICTS": "0",
            # --no-compile: pip compiled every module of each install (a run installs again,
            # so the bytecode is stale at the next), where the steps import a part of them.
            "PIP_NO_COMPILE": "0",
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


def make_worse(workspace: Path) -> None:
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


class HistoryRunner(Runner):
    """A Runner whose event names the default branch, as GitHub's push payload does."""

    ref: str = "refs/heads/main"

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        event: dict[str, Any] = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text("utf-8"))
        event["repository"]["default_branch"] = "main"
        Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event), encoding="utf-8")
        return env | {"GITHUB_REF": self.ref}


def tiny_repository(
    root: Path, message: str, write_baseline: Callable[[Path], None] | None = None
) -> tuple[Path, Path]:
    """configs/tiny in a git repository `root/workspace`, committed with `message` and pushed
    to a bare remote `root/remote.git`; its baseline is the bundled one unless
    `write_baseline(workspace)` writes another. (workspace, remote)."""
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    workspace = root / "workspace"
    tiny = workspace / "configs" / "tiny"
    tiny.mkdir(parents=True)
    for name in ("corpus.jsonl", "qrels.txt", "queries.jsonl", "retrieval-gate.yaml"):
        (tiny / name).write_bytes((REPO / "configs" / "tiny" / name).read_bytes())
    baseline = tiny / ".retrieval-gate" / "baseline.json"
    baseline.parent.mkdir()
    if write_baseline is None:
        bundled = REPO / "configs" / "tiny" / ".retrieval-gate" / "baseline.json"
        baseline.write_bytes(bundled.read_bytes())
    else:
        write_baseline(workspace)
    (workspace / ".gitignore").write_text("cache.sqlite*\n", encoding="utf-8")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", message)
    git(workspace, "remote", "add", "origin", str(remote))
    git(workspace, "push", "-q", "origin", "main")
    return workspace, remote
