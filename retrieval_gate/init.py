"""`retrieval-gate init`: a commented config and a pull-request workflow for a repository."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from retrieval_gate import DEFAULT_CONFIG, __version__
from retrieval_gate.errors import GateError, InputError
from retrieval_gate.names import NAME_RULE, valid_name

if TYPE_CHECKING:
    import jinja2

WORKFLOW = PurePosixPath(".github/workflows/retrieval-gate.yml")
DEFAULT_DATASET = "eval"
DEFAULT_NAME = "retrieval-gate"
DEFAULT_ACTION = f"your-org/retrieval-gate@v{__version__}"
# owner/repo[/path]@ref: what a workflow's `uses:` accepts for an action in a repository.
ACTION = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+")
# Files a labelled set's folder may hold when it is not a BEIR folder (with qrels/).
QUERIES = ("queries.jsonl", "queries.tsv", "topics.txt", "queries.txt")
QRELS = ("qrels.txt", "qrels.tsv", "qrels.jsonl", "qrels.json", "qrels")
CORPUS = ("corpus.jsonl",)
HINTS = {
    "bm25": "bm25 indexes the corpus.jsonl of the labelled set",
    "http": "point retriever.url at your search service, or set SEARCH_URL",
    "python": "write my_search.py with search(query, k) beside the config, or point "
    "retriever.target at your function",
    "run_file": "write runs/current.trec before each run",
}
RETRIEVERS = tuple(HINTS)


@dataclass(frozen=True)
class InitOptions:
    """What `init` writes: the retriever type, the labelled set's folder, the gate's name
    and the action reference of the workflow."""

    retriever: str = "bm25"
    dataset: str = DEFAULT_DATASET
    name: str = DEFAULT_NAME
    action: str = DEFAULT_ACTION


def ask(options: InitOptions, given: Collection[str], stdin: TextIO, stdout: TextIO) -> InitOptions:
    """`options` with the retriever type and dataset folder asked unless in `given`; an
    empty answer or the end of `stdin` keeps the default shown."""
    retriever = options.retriever
    if "retriever" not in given:
        choices = ", ".join(RETRIEVERS)
        while True:
            answer = _answer(f"Retriever type ({choices})", retriever, stdin, stdout)
            if answer in RETRIEVERS:
                retriever = answer
                break
            stdout.write(f"  {answer!r} is not one of {choices}\n")
    dataset = options.dataset
    if "dataset" not in given:
        dataset = _answer("Labelled set folder (queries and qrels)", dataset, stdin, stdout)
    return replace(options, retriever=retriever, dataset=dataset)


def plan(directory: Path, options: InitOptions) -> dict[Path, str]:
    """The files `init` writes into `directory`, by path, with their text."""
    _check(options)
    return {
        directory / DEFAULT_CONFIG: render_config(options, dataset_keys(options, directory)),
        directory / WORKFLOW: render_workflow(options),
    }


def write(directory: Path, options: InitOptions, *, force: bool = False) -> list[Path]:
    """The paths written (config, workflow), atomically; GateError if one exists unless
    `force`, before anything is written."""
    from retrieval_gate.files import write_text_atomic

    if not directory.is_dir():
        raise InputError(f"--dir: {directory} is not a folder; create it or pass another")
    files = plan(directory, options)
    existing = [path for path in files if path.exists()]
    if existing and not force:
        names = " and ".join(str(path) for path in existing)
        which = "exists; edit it" if len(existing) == 1 else "exist; edit them"
        raise GateError(f"{names} already {which}, or pass --force to overwrite")
    for path, text in files.items():
        write_text_atomic(path, text)
    return list(files)


def next_steps(written: Sequence[Path], options: InitOptions) -> str:
    """The report of what was written and what to do next."""
    config = next(path for path in written if path.name == DEFAULT_CONFIG)
    workflow = next(path for path in written if path.name != DEFAULT_CONFIG)
    flag = "" if config == Path(DEFAULT_CONFIG) else f" -c {config}"
    lines = [*(f"wrote {path}" for path in written), "", "Next steps:"]
    steps = [
        f"Edit {config}: point `dataset` at your labelled set (now {options.dataset}) and "
        f"set up the {options.retriever} retriever: {HINTS[options.retriever]}.",
        f"Check it: retrieval-gate config validate{flag}",
        f"Look at the scores: retrieval-gate run{flag}",
        f"Record the baseline on your main branch: retrieval-gate baseline{flag}",
        f"Commit {config}, the baseline (.retrieval-gate/baseline.json) and {workflow}; "
        "keep .retrieval-gate/cache.sqlite out of git.",
    ]
    if options.action == DEFAULT_ACTION:
        steps.append(f"In {workflow}, replace `uses: {DEFAULT_ACTION}` with a pinned release.")
    lines.extend(f"  {number}. {step}" for number, step in enumerate(steps, 1))
    return "\n".join(lines) + "\n"


def dataset_keys(options: InitOptions, directory: Path) -> dict[str, str]:
    """The config's dataset keys for the labelled set's folder: `path` for a BEIR folder (or
    one not made yet), else the `queries`, `qrels` and `corpus` files found in it."""
    written = options.dataset.rstrip("/\\") or options.dataset
    folder = Path(written).expanduser()
    folder = folder if folder.is_absolute() else directory / folder
    keys = {"folder": Path(written).as_posix()}
    if folder.is_file():
        raise InputError(
            f"--dataset: {options.dataset} is a file; give the folder that holds the queries "
            "and the qrels"
        )
    if not folder.is_dir() or (folder / "qrels").is_dir():
        return {**keys, "path": keys["folder"]}
    found = {
        key: _first(folder, names)
        for key, names in (("queries", QUERIES), ("qrels", QRELS), ("corpus", CORPUS))
    }
    if found["queries"] is None or found["qrels"] is None:
        return {**keys, "path": keys["folder"]}
    if found["corpus"] is None and options.retriever == "bm25":
        found["corpus"] = CORPUS[0]
    return {
        **keys,
        **{key: f"{keys['folder']}/{name}" for key, name in found.items() if name is not None},
    }


def render_config(options: InitOptions, dataset: Mapping[str, str]) -> str:
    """The commented `retrieval-gate.yaml`."""
    template = _environment().get_template("retrieval-gate.yaml.j2")
    return template.render(name=options.name, retriever=options.retriever, dataset=dataset)


def render_workflow(options: InitOptions) -> str:
    """The pull-request workflow that runs the gate with the retrieval-gate action."""
    template = _environment().get_template("workflow.yml.j2")
    return template.render(
        retriever=options.retriever, action=options.action, config=DEFAULT_CONFIG
    )


def _check(options: InitOptions) -> None:
    """InputError naming the option when one cannot be written into the files."""
    if options.retriever not in RETRIEVERS:
        raise InputError(
            f"--retriever: unknown type {options.retriever!r}; choose one of "
            f"{', '.join(RETRIEVERS)} (for the others, start from one of these and see "
            "`retrieval-gate config reference`)"
        )
    if not options.dataset.strip():
        raise InputError("--dataset: give the folder of the labelled set, e.g. eval")
    if not valid_name(options.name):
        raise InputError(f"--name: {options.name!r} is not a gate name: {NAME_RULE}, e.g. search")
    if not ACTION.fullmatch(options.action):
        raise InputError(
            f"--action: {options.action!r} is not OWNER/REPO@REF, e.g. {DEFAULT_ACTION}"
        )


def _answer(question: str, default: str, stdin: TextIO, stdout: TextIO) -> str:
    """One answer read from `stdin`; `default` when it is empty or input has ended."""
    stdout.write(f"{question} [{default}]: ")
    stdout.flush()
    return stdin.readline().strip() or default


def _first(folder: Path, names: Sequence[str]) -> str | None:
    """The first of `names` (or its .gz) that is a file in `folder`."""
    for name in names:
        for candidate in (name, f"{name}.gz"):
            if (folder / candidate).is_file():
                return candidate
    return None


def _yaml(value: Any) -> str:
    """`value` as one YAML flow scalar, quoted only when it must be."""
    return yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()[1:-1]


@functools.cache
def _environment() -> jinja2.Environment:
    """Templates with delimiters that YAML and `${{ }}` workflow expressions never use."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("retrieval_gate", "init_templates"),
        block_start_string="<%",
        block_end_string="%>",
        variable_start_string="<<",
        variable_end_string=">>",
        comment_start_string="<#",
        comment_end_string="#>",
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    environment.filters["yaml"] = _yaml
    return environment
