"""The reference side of the label-free checks under `check --against REF`: the retriever at
REF on the unlabelled sample, in a subprocess when it imports Python code (as `against.py`
records the labelled side)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.model import Document
from retrieval_gate.errors import GateError
from retrieval_gate.gate.modes.label_free import Lists


def lists_at(
    reference_label: str,
    config_at_ref: Path,
    head: GateConfig,
    runs: int,
    *,
    corpus: Mapping[str, Document] | None,
    progress: TextIO | None,
) -> list[Lists]:
    """`runs` uncached runs of the retriever of the config at REF (`config_at_ref`, in its
    worktree) on the working tree's unlabelled sample. Raises GateError naming REF."""
    from retrieval_gate.config.loader import load

    try:
        at_ref = load(config_at_ref, keep_secrets=True)
    except GateError as error:
        raise GateError(f"the config at {reference_label}: {error}") from None
    if not hasattr(at_ref.retriever, "target"):
        try:
            return _runs(head, at_ref, runs, corpus, progress)
        except GateError as error:
            raise GateError(f"the retriever at {reference_label}: {error}") from None
    return _in_subprocess(reference_label, head.path, config_at_ref, runs, progress)


def _runs(
    head: GateConfig,
    at_ref: GateConfig,
    runs: int,
    corpus: Mapping[str, Document] | None,
    progress: TextIO | None,
) -> list[Lists]:
    from retrieval_gate.pipeline.unlabelled import read_unlabelled, run_lists

    if head.unlabelled is None:
        raise GateError("the config has no unlabelled: block")
    config = head.model_copy(update={"retriever": at_ref.retriever})
    queries, _ = read_unlabelled(head, head.unlabelled)
    return [
        run_lists(config, queries, corpus=corpus, progress=progress, retriever_dir=at_ref.base_dir)[
            0
        ]
        for _ in range(runs)
    ]


def _in_subprocess(
    reference_label: str, config: Path, config_at_ref: Path, runs: int, progress: TextIO | None
) -> list[Lists]:
    from retrieval_gate.core.leftovers import owned_folder
    from retrieval_gate.pipeline.against import SCRATCH_PREFIX, TAIL_LINES, run_command

    with owned_folder(SCRATCH_PREFIX) as scratch:
        request, answer = scratch / "request.json", scratch / "answer.json"
        asked = {
            "config": str(config.resolve()),
            "config_at_ref": str(config_at_ref),
            "runs": runs,
            "answer": str(answer),
        }
        request.write_text(json.dumps(asked), encoding="utf-8")
        command = [sys.executable, "-m", "retrieval_gate.pipeline.unlabelled_at", str(request)]
        lines = run_command(command, progress)
        if not answer.is_file():
            raise GateError(
                f"the retriever at {reference_label} stopped without a result:\n"
                + "\n".join(lines[-TAIL_LINES:])
            )
        reply = parsed_json(answer.read_text(encoding="utf-8"))
    if "error" in reply:
        raise GateError(f"the retriever at {reference_label}: {reply['error']}")
    return [{query: tuple(ids) for query, ids in run.items()} for run in reply["runs"]]


def _worker(request_path: str) -> int:
    """The reference side in its own process: run the retriever at REF and answer."""
    from retrieval_gate.config.loader import load
    from retrieval_gate.core.files import write_text_atomic
    from retrieval_gate.core.redaction import redacted

    request = parsed_json(Path(request_path).read_text(encoding="utf-8"))
    reply: dict[str, Any]
    try:
        head = load(request["config"])
        at_ref = load(request["config_at_ref"], keep_secrets=True)
        runs = _runs(head, at_ref, int(request["runs"]), None, sys.stderr)
        reply = {"runs": [{query: list(ids) for query, ids in run.items()} for run in runs]}
    except GateError as error:
        reply = {"error": redacted(str(error))}
    write_text_atomic(Path(request["answer"]), json.dumps(reply))
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker(sys.argv[1]))
