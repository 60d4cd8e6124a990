"""`datasets fetch`: a collection downloaded, verified, converted and installed as a BEIR folder.

The folder appears whole or not at all, with a marker file that records where it came from."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.version import __version__
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets.catalog import Collection, default_directory, lookup
from retrieval_gate.datasets.download import (
    Download,
    download_file,
    file_digest,
    resolve_url,
    say,
    unpack,
    verify_downloads,
    verify_unpacked,
)
from retrieval_gate.errors import GateError

MARKER = "retrieval-gate-fetch.json"
MARKER_VERSION = 1


@dataclass(frozen=True)
class Counts:
    """What a converted collection holds (judgments are the rows of qrels/test.tsv)."""

    documents: int
    queries: int
    judged_queries: int
    judgments: int
    positive: int

    def describe(self) -> str:
        """One line: `1400 documents, 225 queries (225 with test judgments), 1837 ...`."""
        return (
            f"{plural(self.documents, 'document')}, {plural(self.queries, 'query')} "
            f"({self.judged_queries} with test judgments), "
            f"{plural(self.judgments, 'judgment')} ({self.positive} positive)"
        )


@dataclass(frozen=True)
class FetchResult:
    """A fetched collection's folder; `kept` when a complete copy was already there."""

    name: str
    path: Path
    counts: Counts
    kept: bool


def fetch(
    name: str,
    directory: str | Path | None = None,
    *,
    force: bool = False,
    mirror: str | None = None,
    progress: TextIO | None = None,
) -> FetchResult:
    """Download, verify and convert collection `name` into a BEIR folder; return where it is.

    The folder (default `datasets/<name>`) appears complete or not at all: everything is built
    in a temporary folder beside it, then renamed. An existing complete folder is kept unless
    `force`. A non-empty folder without the marker (one this function did not make) is never
    replaced; an empty one is, and so is one with a damaged marker when `force`. `mirror`
    replaces every URL's address before the file name. Progress goes to `progress`; nothing
    else prints."""
    collection = lookup(name)
    target = Path(directory) if directory is not None else default_directory(collection.name)
    kept = _existing(target, collection.name, force)
    if kept is not None:
        return kept
    urls = tuple(resolve_url(url, mirror) for url in collection.urls)
    created = _missing_parents(target)
    work = target.parent / f".{target.name}.fetch-{secrets.token_hex(4)}"
    installed = False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        work.mkdir()
        downloads = [download_file(url, work / "download", progress, mirror) for url in urls]
        verify_downloads(collection, downloads)
        unpacked = work / "unpacked"
        for download in downloads:
            unpack(download, unpacked)
        verify_unpacked(collection, unpacked, downloads)
        out = work / "out"
        collection.convert(unpacked, out)
        counts = _counts(out)
        _write_marker(out, collection, downloads, counts)
        _install(out, target, work)
        installed = True
        say(progress, f"wrote {target}: {counts.describe()}")
    except OSError as error:
        raise GateError(f"cannot fetch {collection.name} into {target}: {error}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not installed:
            for folder in reversed(created):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only when still empty
    return FetchResult(collection.name, target, counts, kept=False)


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of a folder `fetch` made, None when there is none; a GateError if damaged."""
    path = folder / MARKER
    if not path.is_file():
        return None
    try:
        marker = parsed_json(path.read_text(encoding="utf-8"))
        Counts(**marker["counts"])
        files = marker["files"]
        if not isinstance(marker["name"], str) or not isinstance(files, dict):
            raise TypeError("bad fields")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise GateError(
            f"{path} is damaged ({error}); fetch again with --force to replace the folder"
        ) from None
    result: dict[str, Any] = marker
    return result


def _existing(target: Path, name: str, force: bool) -> FetchResult | None:
    """The kept folder when `target` is complete; None when it is to be (re)built."""
    if not target.exists() and not target.is_symlink():
        return None
    if not target.is_dir():
        raise GateError(f"{target} exists and is not a folder; choose another --dir")
    try:
        marker = read_marker(target)
    except GateError:
        if force:
            return None
        raise
    if marker is None:
        if not any(target.iterdir()):
            return None
        raise GateError(
            f"{target} exists and was not made by `retrieval-gate datasets fetch` (it has no "
            f"{MARKER}); it is left alone, even with --force: remove it or choose another --dir"
        )
    if force:
        return None
    if marker["name"] != name:
        raise GateError(
            f"{target} holds {marker['name']!r}, not {name!r}; choose another --dir, "
            "or pass --force to replace it"
        )
    missing = [file for file in marker["files"] if not (target / file).is_file()]
    if missing:
        raise GateError(
            f"{target} is incomplete ({missing[0]} is missing); fetch again with --force"
        )
    return FetchResult(name, target, Counts(**marker["counts"]), kept=True)


def _missing_parents(target: Path) -> list[Path]:
    """The ancestors of `target` that do not exist yet, outermost first."""
    missing = []
    parent = target.absolute().parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return list(reversed(missing))


def _write_marker(
    out: Path, collection: Collection, downloads: list[Download], counts: Counts
) -> None:
    files = {
        path.relative_to(out).as_posix(): file_digest(path, "sha256")
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }
    marker = {
        "marker_version": MARKER_VERSION,
        "name": collection.name,
        "description": collection.description,
        "tool": f"retrieval-gate {__version__}",
        "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "downloads": [
            {"url": d.url, "bytes": d.size, "md5": d.md5, "sha256": d.sha256} for d in downloads
        ],
        "verified": [
            {**asdict(checksum), "source": collection.checksum_source}
            for checksum in collection.checksums
        ],
        "notes": list(collection.notes),
        "counts": asdict(counts),
        "files": files,
    }
    (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def _install(out: Path, target: Path, work: Path) -> None:
    """Rename `out` to `target`; a replaced folder moves into `work` (deleted afterwards)."""
    if not target.exists() and not target.is_symlink():
        os.replace(out, target)
        return
    old = work / "replaced"
    os.replace(target, old)
    try:
        os.replace(out, target)
    except OSError:
        os.replace(old, target)
        raise


def _counts(out: Path) -> Counts:
    """What the BEIR folder `out` holds; its qrels are read by the reader `run` will use, so a
    file the gate cannot load is refused here rather than installed."""
    from retrieval_gate.readers.beir import read_beir_judgments

    qrels = read_beir_judgments(out / "qrels" / "test.tsv").qrels()
    return Counts(
        documents=_count_lines(out / "corpus.jsonl"),
        queries=_count_lines(out / "queries.jsonl"),
        judged_queries=len(qrels.query_ids),
        judgments=len(qrels),
        positive=int((qrels.grade > 0).sum()),
    )


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
