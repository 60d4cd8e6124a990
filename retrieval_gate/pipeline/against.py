"""The reference record from a run at another commit: REF in a git worktree, run in a subprocess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from retrieval_gate.core.git import git_output, run_git
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.leftovers import Owner, folder_owner, owned_folder, stale_folders
from retrieval_gate.errors import GateError, InputError

if TYPE_CHECKING:
    from retrieval_gate.config.schema import GateConfig
    from retrieval_gate.datasets import Dataset
    from retrieval_gate.datasets.anchors import Anchor
    from retrieval_gate.gate.baseline.record import Baseline
    from retrieval_gate.pipeline.execute import Looks

HOLDER_PREFIX = "retrieval-gate-against-"
"""The temporary folder holding the worktree (TREE inside) and its owner marker."""
SCRATCH_PREFIX = "retrieval-gate-ref-"
"""The temporary folder of the reference side's request and answer."""
TREE = "tree"
GIT_TIMEOUT = 120.0
"""Seconds a git command may take (a worktree of a large repository takes a while)."""
TAIL_LINES = 20
"""Lines of a failed reference run's output quoted in the error."""
# Sections of the config that come from the working tree on both sides; a change to them
# since REF is reported, not gated (the retriever section is what each side keeps).
_SHARED = ("dataset", "k", "metrics", "slices", "gate")


@dataclass(frozen=True)
class Reference:
    """The commit a check compares with, and how it was named."""

    ref: str
    commit: str
    """Full sha of the merge-base of HEAD and `ref`."""
    named: str
    """Full sha `ref` names (the merge-base when HEAD descends from it)."""

    @property
    def label(self) -> str:
        """`main (merge-base 0123456789ab)`, `HEAD~1 (0123456789ab)`, or the short sha."""
        short = self.commit[:12]
        if self.commit.startswith(self.ref):
            return short
        return f"{self.ref} ({'' if self.named == self.commit else 'merge-base '}{short})"


def repository_root(folder: Path) -> Path:
    """The top of the git work tree holding `folder`; InputError outside one."""
    found = _git(folder, "rev-parse", "--show-toplevel")
    if found is None:
        raise InputError(
            f"--against needs a git repository: {folder} is not inside one (run it in a "
            "checkout, or gate on a committed baseline without --against)"
        )
    return Path(found.strip())


def resolve_reference(repo: Path, ref: str) -> Reference:
    """The merge-base of HEAD and `ref` (the commit a pull request branched from; `ref` itself
    when HEAD descends from it). InputError when `ref` is unknown or shares no history."""
    if not ref or ref.startswith("-"):
        raise InputError(f"--against: {ref!r} is not a git ref; name a branch, tag or commit")
    named = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if named is None:
        raise InputError(
            f"--against {ref}: no such commit, branch or tag here; in CI, fetch it first "
            "(actions/checkout with fetch-depth: 0, or `git fetch origin BRANCH`)"
        )
    base = _git(repo, "merge-base", "HEAD", named.strip())
    if base is None:
        raise InputError(
            f"--against {ref}: it shares no history with HEAD (a shallow clone? fetch with "
            "fetch-depth: 0)"
        )
    return Reference(ref, base.strip(), named.strip())


@contextmanager
def worktree(repo: Path, commit: str) -> Iterator[Path]:
    """`commit` checked out (detached) in a temporary git worktree, removed afterwards.

    What a killed check left (`remove_leftovers`) goes first. The worktree is locked with
    its owner's name: `git worktree list` says whose it is, and its registration keeps the
    owner even if the temporary folder is deleted."""
    remove_leftovers(repo)
    with owned_folder(HOLDER_PREFIX) as holder:
        folder = holder / TREE
        done = _git_run(repo, "worktree", "add", "--detach", "--quiet", str(folder), commit)
        if done.returncode != 0:
            raise GateError(
                f"could not check out {commit[:12]} in a git worktree: {_tail(done.stderr)}"
            )
        try:
            owner = folder_owner(holder)
            if owner is not None:
                _git_run(repo, "worktree", "lock", "--reason", owner.describe(), str(folder))
            yield folder
        finally:
            _git_run(repo, "worktree", "remove", "--force", "--force", str(folder))


def remove_leftovers(repo: Path) -> None:
    """Remove the worktrees and temporary folders a killed `check --against` left: only
    ours (named HOLDER_PREFIX... or SCRATCH_PREFIX..., with a marker or lock naming their
    owner) and only when that process has ended on this machine. Nothing else is touched:
    not another worktree, not a folder of a check still running."""
    for tree, lock in _worktrees(repo):
        holder = tree.parent
        if tree.name != TREE or not holder.name.startswith(HOLDER_PREFIX):
            continue
        owner = folder_owner(holder) if holder.is_dir() else Owner.read(lock or "")
        if owner is not None and owner.gone:
            _git_run(repo, "worktree", "remove", "--force", "--force", str(tree))
            _remove(holder)
    for holder in [*stale_folders(HOLDER_PREFIX), *stale_folders(SCRATCH_PREFIX)]:
        tree = holder / TREE
        if (tree / ".git").is_file():  # registered in another repository: unregister it there
            _git_run(tree, "worktree", "remove", "--force", "--force", str(tree))
        _remove(holder)


def _worktrees(repo: Path) -> list[tuple[Path, str | None]]:
    """(path, lock reason or None) of each worktree registered in `repo`."""
    listed = _git(repo, "worktree", "list", "--porcelain") or ""
    found: list[tuple[Path, str | None]] = []
    for block in listed.split("\n\n"):
        lines = block.splitlines()
        paths = [line[len("worktree ") :] for line in lines if line.startswith("worktree ")]
        locks = [line[len("locked ") :] for line in lines if line.startswith("locked ")]
        if paths:
            found.append((Path(paths[0]), locks[0] if locks else None))
    return found


def record_at(
    reference: Reference,
    tree: Path,
    config: GateConfig,
    repo: Path,
    *,
    repeats: int,
    progress: TextIO | None,
) -> tuple[Baseline, tuple[str, ...]]:
    """The record of the retriever at `reference` (checked out at `tree`) on the working
    tree's labelled set, metrics and slices, and its warnings.

    The retriever section comes from the config at REF, its relative paths starting in the
    worktree. A retriever that imports Python code (python, langchain, llamaindex, haystack)
    runs in a subprocess of this Python: two versions of one module cannot share a process.
    Its output goes to `progress`; a failure is a GateError quoting its last lines."""
    from retrieval_gate.config.loader import load

    path = config_at(reference, tree, config, repo)
    try:
        at_ref = load(path, keep_secrets=True)
    except GateError as error:
        raise GateError(f"the config at {reference.label}: {error}") from None
    if not hasattr(at_ref.retriever, "target"):
        try:
            return reference_record(config, at_ref, tree, repeats=repeats, progress=progress)
        except GateError as error:
            raise GateError(f"the retriever at {reference.label}: {error}") from None
    return _record_in_subprocess(reference, config.path, path, tree, repeats, progress)


def config_at(reference: Reference, tree: Path, config: GateConfig, repo: Path) -> Path:
    """The config file at `reference` (checked out at `tree`); InputError when it was not."""
    relative = config.path.resolve().relative_to(repo.resolve())
    path = tree / relative
    if not path.is_file():
        raise InputError(
            f"--against {reference.label}: {relative.as_posix()} did not exist there, so "
            "there is no retriever to compare with; commit a baseline instead "
            "(`retrieval-gate baseline`) for this first change"
        )
    return path


def reference_record(
    head: GateConfig,
    at_ref: GateConfig,
    tree: Path,
    *,
    repeats: int,
    progress: TextIO | None,
    looks: Looks | None = None,
) -> tuple[Baseline, tuple[str, ...]]:
    """The reference side's record: `head` with `at_ref`'s retriever, uncached, and warnings
    naming what else changed since REF (both sides are scored with `head`'s). Its judged
    documents' hashes are of the corpus the retriever at REF searched (`_hashes_at_ref`), so
    a document changed since REF leaves its queries out as one changed since a baseline."""
    from retrieval_gate.pipeline.evaluator_scores import evaluators_at
    from retrieval_gate.pipeline.record import record_current

    evaluators = evaluators_at(head, at_ref)
    config = head.model_copy(update={"retriever": at_ref.retriever, "evaluators": evaluators})
    # The built-in bm25 indexes the labelled set's corpus: at REF, REF's (a chunker change is
    # then a change of what it searched, gated as any retriever's own index is).
    bm25 = at_ref.retriever.type == "bm25"
    read_at_ref = _labelled_at(at_ref) if bm25 else None
    searched = read_at_ref.corpus if read_at_ref is not None else None
    current = record_current(
        config,
        cache=False,
        repeats=repeats,
        progress=progress,
        repo_dir=tree,
        retriever_dir=at_ref.base_dir,
        looks=looks,
        index_corpus=searched,
    )
    new, old = head.model_dump(mode="json"), at_ref.model_dump(mode="json")
    changed = [name for name in _SHARED if new[name] != old[name]]
    own_index = not bm25 or searched is not None
    labelled_at_ref = (
        (read_at_ref if bm25 else _labelled_at(at_ref))
        if own_index or "dataset" not in changed
        else None
    )
    if "dataset" not in changed and (
        labelled_at_ref is None or labelled_at_ref.fingerprint != current.dataset.fingerprint
    ):
        changed.insert(0, "the labelled set")
    notes = list(current.warnings)
    if changed:
        notes.append(
            f"{', '.join(changed)} changed since the reference commit: both sides are scored "
            "with the working tree's"
        )
    record = current.record
    if own_index:
        record = dataclasses.replace(
            record,
            judged_documents=_hashes_at_ref(current.dataset, labelled_at_ref),
            chunk_anchors=_anchors_at_ref(current.dataset, labelled_at_ref, record.top_k),
        )
    return record, tuple(notes)


def _record_in_subprocess(
    reference: Reference,
    config_path: Path,
    config_at_ref: Path,
    tree: Path,
    repeats: int,
    progress: TextIO | None,
) -> tuple[Baseline, tuple[str, ...]]:
    with owned_folder(SCRATCH_PREFIX) as scratch:
        request, answer = worker_request(scratch, config_path, config_at_ref, tree, repeats)
        lines = _run_worker(request, progress)
        return answered(reference, answer, lines)


def worker_request(
    scratch: Path,
    config_path: Path,
    config_at_ref: Path,
    tree: Path,
    repeats: int,
    turns: int | None = None,
) -> tuple[Path, Path]:
    """The reference side's request, written in `scratch` for `_worker`, and the path it
    answers at. With `turns` the worker runs a turn of that many queries when told to."""
    request = scratch / "request.json"
    answer = scratch / "answer.json"
    asked: dict[str, Any] = {
        "config": str(config_path.resolve()),
        "config_at_ref": str(config_at_ref),
        "tree": str(tree),
        "repeats": repeats,
        "answer": str(answer),
    }
    if turns is not None:
        asked["turns"] = turns
    request.write_text(json.dumps(asked), encoding="utf-8")
    return request, answer


def worker_command(request: Path) -> list[str]:
    """The command that runs the reference side's worker on `request`."""
    return [sys.executable, "-m", "retrieval_gate.pipeline.against", str(request)]


def answered(
    reference: Reference, answer: Path, output: Iterable[str]
) -> tuple[Baseline, tuple[str, ...]]:
    """The record and warnings the worker answered at `answer`; when it left none, an error
    ending with the last TAIL_LINES of its `output`."""
    if not answer.is_file():
        raise GateError(
            f"the retriever at {reference.label} stopped without a result:\n"
            + "\n".join(list(output)[-TAIL_LINES:])
        )
    return read_reply(reference, parsed_json(answer.read_text(encoding="utf-8")))


def read_reply(reference: Reference, reply: Any) -> tuple[Baseline, tuple[str, ...]]:
    """The record and warnings the reference side's worker answered; its error re-raised."""
    from retrieval_gate.gate.baseline.document import record_of

    if "error" in reply:
        raise GateError(f"the retriever at {reference.label}: {reply['error']}")
    record = record_of(reply["record"], f"the run at {reference.label}")
    return record, tuple(reply["warnings"])


def _run_worker(request: Path, progress: TextIO | None) -> list[str]:
    """Run the reference side; its output (progress, anything the retriever prints) is
    relayed line by line to `progress` and kept for an error message."""
    return run_command(worker_command(request), progress)


def run_command(command: list[str], progress: TextIO | None) -> list[str]:
    """Run `command`, relaying its output line by line to `progress`; the lines it wrote."""
    lines: list[str] = []
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    ) as worker:
        assert worker.stdout is not None
        for line in worker.stdout:
            lines.append(line.rstrip("\n"))
            if progress is not None:
                progress.write(line)
                progress.flush()
    return lines


def _worker(request_path: str) -> int:
    """The reference side in its own process: record the retriever at REF and answer."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.redaction import redacted
    from retrieval_gate.gate.baseline.document import baseline_document

    request = parsed_json(Path(request_path).read_text(encoding="utf-8"))
    answer = Path(request["answer"])
    turns = request.get("turns")
    try:
        head = load(request["config"])
        at_ref = load(request["config_at_ref"], keep_secrets=True)
        record, notes = reference_record(
            head,
            at_ref,
            Path(request["tree"]),
            repeats=int(request["repeats"]),
            progress=sys.stderr if turns is None else None,  # one bar: the current side's
            looks=None if turns is None else _led_turns(int(turns)),
        )
        reply: dict[str, Any] = {"record": baseline_document(record), "warnings": list(notes)}
    except GateError as error:
        reply = {"error": redacted(str(error))}
    write_text_atomic(answer, json.dumps(reply))
    return 0


def _led_turns(size: int) -> Looks:
    """The reference side's queries `size` at a time, each turn when the checking process
    says `go N` on stdin; `done` on stdout after each. The protocol keeps stdout to itself:
    whatever the retriever prints goes to stderr, which the checking process relays."""
    import os

    from retrieval_gate.pipeline.execute import Looks

    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def before(turn: int) -> None:
        said = sys.stdin.readline()
        if said != f"go {turn}\n":
            raise GateError(f"the interleaved check stopped before turn {turn + 1}")

    def after(dataset: object, result: object) -> bool:
        protocol.write("done\n")
        protocol.flush()
        return False

    return Looks(order=lambda dataset: dataset.queries, batch=size, stop=after, before=before)


def _labelled_at(at_ref: GateConfig) -> Dataset | None:
    """The labelled set the config at REF names, read in its checkout; None when it cannot
    be read there."""
    from retrieval_gate.datasets import load as load_dataset

    try:
        keep = at_ref.gate.uses_llm_labels
        return load_dataset(at_ref.dataset, at_ref.base_dir, keep_unjudged=keep)
    except GateError:
        return None


def _anchors_at_ref(
    head: Dataset, at_ref: Dataset | None, top_k: Mapping[str, Sequence[str]]
) -> dict[str, Anchor] | None:
    """The anchors of the chunks at REF that the working tree's labels and REF's top k
    name: a re-chunk since REF is then gated as one since a baseline (`gate/baseline/rechunk`)."""
    from retrieval_gate.gate.baseline.rechunk import recorded_anchors

    if at_ref is None:
        return None
    return recorded_anchors(dataclasses.replace(head, anchors=at_ref.anchors), top_k)


def _hashes_at_ref(head: Dataset, at_ref: Dataset | None) -> dict[str, str] | None:
    """The working tree's judged documents as the corpus at REF holds them: what a retriever
    there with its own index was built over, as the built-in bm25 at REF indexed it."""
    from retrieval_gate.gate.baseline.corpus_changes import judged_document_hashes

    if at_ref is None or at_ref.corpus is None:
        return None
    return judged_document_hashes(dataclasses.replace(head, corpus=at_ref.corpus))


def _git(repo: Path, *args: str) -> str | None:
    return git_output(repo, *args, timeout=GIT_TIMEOUT)


def _git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_git(repo, *args, timeout=GIT_TIMEOUT)


def _tail(text: str) -> str:
    return " ".join(text.strip().splitlines()[-3:]) or "no message"


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1]))
