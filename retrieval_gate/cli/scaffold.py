"""`retrieval-gate init`: a commented config and a pull-request workflow for a repository."""

from __future__ import annotations

import functools
import json
import re
import textwrap
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from retrieval_gate.config import DEFAULT_CONFIG
from retrieval_gate.core.names import NAME_RULE, valid_name
from retrieval_gate.core.version import __version__
from retrieval_gate.errors import GateError, InputError

if TYPE_CHECKING:
    import jinja2

    from retrieval_gate.core.model import Query

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
GITIGNORE = ".gitignore"
# A metadata field becomes a slice when it holds text on at least MIN_SHARE of the queries,
# with MIN_VALUES to MAX_VALUES distinct values: fewer is no split, more is an id or free text.
MIN_SHARE = 0.8
MIN_VALUES = 2
MAX_VALUES = 20
QUERY_LENGTH = "query_length"
# At most this many left-out fields are named in the config's comment.
SHOWN_LEFT_OUT = 15


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
    dataset = dataset_keys(options, directory)
    return {
        directory / DEFAULT_CONFIG: render_config(
            options, dataset, find_slices(dataset, directory)
        ),
        directory / WORKFLOW: render_workflow(options),
    }


@dataclass(frozen=True)
class Written:
    """What `write` wrote: the new files, and the lines it added to .gitignore (created
    when `gitignore_created`)."""

    paths: list[Path]
    gitignore: Path
    gitignore_added: list[str] = field(default_factory=list)
    gitignore_created: bool = False


def write(directory: Path, options: InitOptions, *, force: bool = False) -> Written:
    """Write the config and workflow, atomically, and add the generated reports and the
    cache to .gitignore; GateError if a file exists unless `force`, before anything is
    written."""
    from retrieval_gate.core.files import write_text_atomic

    if not directory.is_dir():
        raise InputError(f"--dir: {directory} is not a folder; create it or pass another")
    files = plan(directory, options)
    existing = [path for path in files if path.exists()]
    if existing and not force:
        names = " and ".join(str(path) for path in existing)
        which = "exists; edit it" if len(existing) == 1 else "exist; edit them"
        raise GateError(f"{names} already {which}, or pass --force to overwrite")
    gitignore = directory / GITIGNORE
    created = not gitignore.exists()
    text, added = gitignore_update(gitignore, ignored_paths(options.name))
    for path, content in files.items():
        write_text_atomic(path, content)
    if added:
        write_text_atomic(gitignore, text)
    return Written(list(files), gitignore, added, created and bool(added))


def ignored_paths(name: str) -> list[str]:
    """The .gitignore lines of a gate named `name` whose config sits in the repository's
    root: its generated reports and the cache; never the baseline, which is committed."""
    folder = f".retrieval-gate/{name}"
    return [
        "# retrieval-gate: generated reports and the cache (commit the baseline)",
        f"{folder}/result.json",
        f"{folder}/report.*",
        f"{folder}/junit.xml",
        ".retrieval-gate/cache.sqlite*",
    ]


def gitignore_update(path: Path, lines: Sequence[str]) -> tuple[str, list[str]]:
    """The text of the .gitignore at `path` (missing: empty) with those of `lines` it lacks
    appended, and the lines added; every other line is kept byte for byte."""
    try:
        old = path.read_bytes().decode("utf-8") if path.exists() else ""
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is not UTF-8; add these lines yourself: {', '.join(lines[1:])}"
        ) from None
    except OSError as error:
        raise GateError(f"{path}: cannot read: {error}") from None
    present = {line.strip() for line in old.splitlines()}
    added = [line for line in lines if line.strip() not in present]
    if not added or added == lines[:1]:  # a lone header would say nothing
        return old, []
    newline = "\r\n" if "\r\n" in old else "\n"
    head = old
    if head and not head.endswith(("\n", "\r")):
        head += newline
    if head.strip():
        head += newline  # a blank line before the block
    return head + "".join(line + newline for line in added), added


def next_steps(written: Written, options: InitOptions) -> str:
    """The report of what was written and what to do next."""
    config = next(path for path in written.paths if path.name == DEFAULT_CONFIG)
    workflow = next(path for path in written.paths if path.name != DEFAULT_CONFIG)
    flag = "" if config == Path(DEFAULT_CONFIG) else f" -c {config}"
    lines = [f"wrote {path}" for path in written.paths]
    ignored = [line for line in written.gitignore_added if not line.startswith("#")]
    if written.gitignore_created:
        lines.append(f"wrote {written.gitignore}: ignores the reports and the cache")
    elif ignored:
        count = f"{len(ignored)} line{'s' if len(ignored) > 1 else ''}"
        lines.append(f"added {count} to {written.gitignore}: {', '.join(ignored)}")
    lines.extend(["", "Next steps:"])
    steps = [
        f"Edit {config}: point `dataset` at your labelled set (now {options.dataset}) and "
        f"set up the {options.retriever} retriever: {HINTS[options.retriever]}.",
        f"Check it: retrieval-gate config validate{flag}",
        f"Look at the scores: retrieval-gate run{flag}",
        f"Record the baseline on your main branch: retrieval-gate baseline{flag}",
        f"Commit {config}, the baseline (.retrieval-gate/baseline.json), {workflow} and "
        f"{written.gitignore}, which keeps the reports (.retrieval-gate/{options.name}/) and "
        "the cache out of git.",
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


def render_config(
    options: InitOptions, dataset: Mapping[str, str], slices: SliceChoice | None = None
) -> str:
    """The commented `retrieval-gate.yaml`."""
    slices = slices or SliceChoice()
    template = _environment().get_template("retrieval-gate.yaml.j2")
    return template.render(
        name=options.name,
        retriever=options.retriever,
        dataset=dataset,
        slices_by=[*slices.fields, *([] if slices.length else [QUERY_LENGTH])],
        slices_notes=slices.notes(),
    )


@dataclass(frozen=True)
class SliceChoice:
    """The metadata fields `init` slices by, those it left out with why, where it looked
    (`source`) or why it could not (`problem`), and why query_length is left out (`length`;
    None: it is sliced by)."""

    fields: tuple[str, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()
    source: str | None = None
    queries: int = 0
    problem: str | None = None
    length: str | None = None

    def notes(self) -> list[str]:
        """The config's comment lines about the choice, each one line of plain text."""
        if self.problem is not None and self.length is not None:
            text = f"{self.problem}, and query_length is left out: {self.length}."
        elif self.problem is not None:
            text = f"{self.problem}, so the queries are sliced by length only."
        else:
            found = ", ".join(_shown(name) for name in self.fields) or "none"
            text = (
                f"Metadata fields found in {_shown(self.source or '')} ({self.queries} "
                f"queries) and sliced by: {found}."
            )
            shown = [f"{_shown(name)} ({why})" for name, why in self.left_out]
            more = len(shown) - SHOWN_LEFT_OUT
            shown = shown[:SHOWN_LEFT_OUT] + ([f"{more} more"] if more > 0 else [])
            text += f" Left out: {'; '.join(shown) or 'none'}."
            text += (
                f" A field is sliced by when it holds text on {MIN_SHARE:.0%} of the queries "
                f"or more, with {MIN_VALUES} to {MAX_VALUES} distinct values."
            )
            if self.length is not None:
                text += f" query_length is left out: {self.length}."
        return textwrap.wrap(text, width=88, break_long_words=True, break_on_hyphens=False)


def find_slices(dataset: Mapping[str, str], directory: Path) -> SliceChoice:
    """The metadata fields to slice by, read from the labelled set's queries (JSON Lines)."""
    queries = dataset.get("queries") or (
        f"{dataset['path']}/queries.jsonl" if "path" in dataset else None
    )
    if queries is None:
        return SliceChoice(problem="No queries file was found")
    path = Path(queries).expanduser()
    path = path if path.is_absolute() else directory / path
    if not path.is_file():
        return SliceChoice(problem=f"{_shown(queries)} does not exist yet")
    from retrieval_gate.readers.text import logical_name

    jsonl = logical_name(path).endswith(".jsonl")
    plain = f"{_shown(queries)} is not JSON Lines: it carries no metadata"
    try:
        read = _read_queries(path)
    except (GateError, OSError) as error:
        if not jsonl:  # `config validate` says what is wrong with it
            return SliceChoice(problem=plain)
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return SliceChoice(problem=f"Could not read the queries: {_shown(first)}")
    length = _one_length(read)
    if not jsonl:
        return SliceChoice(problem=plain, queries=len(read), length=length)
    fields, left_out = choose_fields([query.metadata for query in read])
    return SliceChoice(
        tuple(fields), tuple(left_out), source=queries, queries=len(read), length=length
    )


def _read_queries(path: Path) -> list[Query]:
    """The queries of `path` as `dataset.queries` reads them: JSON Lines, qid<TAB>text, or
    TREC topics (their titles)."""
    from retrieval_gate.datasets.files import read_json_queries, read_trec_topics, read_tsv_queries
    from retrieval_gate.readers.text import logical_name

    name = logical_name(path)
    if name.endswith(".jsonl"):
        return read_json_queries(path)
    if name.endswith((".tsv", ".txt")):
        try:
            return read_tsv_queries(path)
        except InputError:  # TREC topics in a .txt
            pass
    return read_trec_topics(path, "title")


def _one_length(queries: Sequence[Query]) -> str | None:
    """Why query_length makes no slice of `queries`: under the default bins all of them are
    of one length bucket, whose one slice would be the overall check again; None when the
    lengths split them."""
    from retrieval_gate.config.schema import QueryLengthBins
    from retrieval_gate.gate.checks.slicing import same_as_all, slice_queries

    again = same_as_all(slice_queries(queries, [QUERY_LENGTH], [], QueryLengthBins().bins))
    if not again:
        return None
    bucket = again[0].split("=", 1)[1]
    return (
        f"all {len(queries)} queries are {bucket} words long, so its one slice, {again[0]}, "
        "would repeat the overall check (each failure twice, a share of alpha for nothing)"
    )


def choose_fields(
    metadata: Sequence[Mapping[str, object]],
) -> tuple[list[str], list[tuple[str, str]]]:
    """The fields of the queries' `metadata` to slice by, in first-seen order, and those
    left out with the reason: not text, too rare, too few or too many values."""
    total = len(metadata)
    order: dict[str, None] = {}
    present: Counter[str] = Counter()
    values: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    for row in metadata:
        for name, value in row.items():
            order.setdefault(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            if not isinstance(value, str):
                kinds.setdefault(name, set()).add(type(value).__name__)
                continue
            present[name] += 1
            seen = values.setdefault(name, set())
            if len(seen) <= MAX_VALUES:  # enough to know there are too many
                seen.add(value)
            if not value.isprintable():
                kinds.setdefault(name, set()).add("control characters")
    chosen: list[str] = []
    left_out: list[tuple[str, str]] = []
    for name in order:
        why = _unsuitable(name, total, present[name], values.get(name, set()), kinds.get(name))
        if why is None:
            chosen.append(name)
        else:
            left_out.append((name, why))
    return chosen, left_out


def _unsuitable(
    name: str, total: int, present: int, values: set[str], kinds: set[str] | None
) -> str | None:
    """Why a metadata field makes no slice, or None when it does."""
    if name == QUERY_LENGTH:
        return "the built-in query_length slice wins over it"
    if not name.isprintable() or not name.strip() or len(name) > 64:
        return "its name is not a short printable one"
    if kinds:
        return "not only text: " + ", ".join(sorted(kinds))
    if present < MIN_SHARE * total:
        return f"on {present} of {total} queries"
    if len(values) < MIN_VALUES:
        return "one value"
    if len(values) > MAX_VALUES:
        return f"over {MAX_VALUES} distinct values"
    return None


def _shown(text: str, limit: int = 60) -> str:
    """`text` as plain ASCII for a one-line YAML comment: control, non-ASCII and line-break
    characters escaped, shortened to about `limit` characters."""
    escaped = json.dumps(text)[1:-1].replace('\\"', '"')
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."


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
        loader=jinja2.PackageLoader("retrieval_gate.cli", "templates"),
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
