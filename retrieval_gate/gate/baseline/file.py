"""Reading and writing baseline files: atomic, stable JSON, and every problem an exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval_gate.core.files import write_text_atomic
from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.wording import json_file_pieces
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.document import baseline_document, from_document, record_of
from retrieval_gate.gate.baseline.record import RECREATE, Baseline
from retrieval_gate.gate.baseline.side_file import with_top_k_file


def write_baseline(baseline: Baseline, path: Path) -> None:
    """Write `baseline` to `path` atomically (a temporary file beside it, then a rename).

    The JSON is indented and key-ordered so its git diff reads well, and equal baselines give
    equal bytes. Serialisation happens first: a ValueError (non-finite score) leaves any
    existing file untouched.
    """
    path = Path(path)
    document = with_top_k_file(baseline_document(baseline), path)
    write_text_atomic(path, json_file_pieces(document))


def read_baseline(path: Path, *, config: str | Path | None = None) -> Baseline:
    """The baseline at `path`; every problem is an InputError (exit 2) saying what to do.

    `config` names the config file in the hint shown when the baseline does not exist.
    """
    path = Path(path)
    command = f"retrieval-gate baseline -c {config or 'CONFIG'}"
    data = _read_json(
        path, f"no baseline at {path}; create one with `{command}` on the main branch"
    )
    return from_document(data, str(path), "", clock=True)


def read_record(path: Path) -> Baseline:
    """The current record inside a `check` JSON result (its `current` part), or a baseline."""
    path = Path(path)
    return record_of(_read_json(path, f"no result or baseline file at {path}"), str(path))


def _read_json(path: Path, missing: str) -> Any:
    source = str(path)
    try:
        text = regular_file(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(missing) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the file: {error}", source=source) from None
    try:
        return parsed_json(text)
    except json.JSONDecodeError as error:
        # json's messages read "Expecting value", "Unterminated string starting at": the
        # position completes the sentence.
        what = error.msg.removesuffix(" at")
        raise InputError(
            f"not valid JSON: {what[:1].lower()}{what[1:]} at line {error.lineno}, "
            f"column {error.colno}; "
            f"the file was cut short or edited by hand: restore it from git or {RECREATE}",
            source=source,
            line=error.lineno,
        ) from None
    except RecursionError:
        raise InputError(
            f"nested too deeply to be a baseline or a result; {RECREATE}", source=source
        ) from None
