"""`datasets fetch`: download, verify and convert public collections into BEIR folders."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
import secrets
import shutil
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, TextIO
from urllib.parse import urlsplit

from retrieval_gate.core.version import __version__
from retrieval_gate.core.wording import plural
from retrieval_gate.errors import GateError, InputError

MIRROR_ENV = "RETRIEVAL_GATE_DATASETS_URL"
"""Replaces everything before a download's file name, e.g. `http://mirror.local/ir` fetches
`http://mirror.local/ir/cran.tar.gz` and `http://mirror.local/ir/scifact.zip`."""

MARKER = "retrieval-gate-fetch.json"
MARKER_VERSION = 1
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
CHUNK = 1 << 20
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 120.0


@dataclass(frozen=True)
class Checksum:
    """The pinned digest of one file: a download (named as in its URL) or a file inside it."""

    file: str
    algorithm: Literal["md5", "sha256"]
    expected: str
    strip_cr: bool = False  # the digest of the content with every carriage return removed

    def label(self) -> str:
        """How the digest is taken, e.g. `sha256 (carriage returns removed)`."""
        return self.algorithm + (" (carriage returns removed)" if self.strip_cr else "")


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


Converter = Callable[[Path, Path], None]
"""(folder the downloads were unpacked into, output folder to create as a BEIR folder)."""


@dataclass(frozen=True)
class Collection:
    """A public collection: its downloads, their pinned checksums, and its converter."""

    name: str
    urls: tuple[str, ...]
    checksums: tuple[Checksum, ...]
    convert: Converter
    description: str
    checksum_source: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Download:
    """One downloaded file: where it came from, its size and its digests."""

    url: str
    path: Path
    size: int
    md5: str
    sha256: str


@dataclass(frozen=True)
class FetchResult:
    """A fetched collection's folder; `kept` when a complete copy was already there."""

    name: str
    path: Path
    counts: Counts
    kept: bool


# --- the registry ------------------------------------------------------------------------------


def _cranfield_collection() -> Collection:
    # ir_datasets pins the archive itself (md5 1730f7be572d95a5a4b56c59a7b900a5, 506,960 bytes;
    # allenai/ir_datasets ir_datasets/etc/downloads.json, "cranfield"), but no sha256 of it is
    # published and a repacked archive with the same files would fail it. The files that are
    # used are pinned instead: sha256 of their content with carriage returns removed (upstream
    # has CRLF line endings), taken from a copy of the distributed files
    # (github.com/noramtboraas/information-retrieval, commit 9e359c7), which agrees with two
    # other copies once whitespace is normalised (each of those has its own corruption). The
    # archive's own md5 and sha256 are recorded in the marker file.
    return Collection(
        name="cranfield",
        urls=("http://ir.dcs.gla.ac.uk/resources/test_collections/cran/cran.tar.gz",),
        checksums=(
            Checksum(
                "cran.all.1400",
                "sha256",
                "b234544b6ceccd131520df4a3cb6d42aee6576eb577933d047e722bbfe7b0b09",
                strip_cr=True,
            ),
            Checksum(
                "cran.qry",
                "sha256",
                "dd9b1419f678874daf66d5239ca372193722d74f5ea749f3b0f46a6b37cd9274",
                strip_cr=True,
            ),
            Checksum(
                "cranqrel",
                "sha256",
                "92e54b58dac0b980152178f350d892fae66c8a239b8a11715b835fb8d2f6bc0e",
                strip_cr=True,
            ),
        ),
        convert=convert_cranfield,
        description="Cranfield 1400: 1,400 aeronautics abstracts, 225 queries (0.5 MB)",
        checksum_source="sha256 of the Glasgow files, carriage returns removed",
        notes=(
            "query ids are positions in cran.qry (1-225), as cranqrel numbers them",
            "grade = 5 - Cleverdon code (code 1 'complete answer' -> 4, code 4 -> 1)",
            "code -1 rows (the query's source paper) are kept as grade 0: judged, not relevant",
        ),
    )


BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{}.zip"
# md5 of each zip as BEIR publishes it (beir-cellar/beir README.md, "Available Datasets"); the
# same values are pinned by allenai/ir_datasets in ir_datasets/etc/downloads.json ("beir").
# BEIR publishes md5 only, so md5 is what is checked; the sha256 is recorded in the marker.
# Left out: cqadupstack (twelve sub-collections, not one BEIR folder), and the sets BEIR does
# not host (bioasq, signal1m, trec-news, robust04).
BEIR_MD5 = {
    "msmarco": ("444067daf65d982533ea17ebd59501e4", "8.8M passages, 43 test queries (1.1 GB)"),
    "trec-covid": ("ce62140cb23feb9becf6270d0d1fe6d1", "171K articles, 50 queries (74 MB)"),
    "nfcorpus": ("a89dba18a62ef92f7d323ec890a0d38d", "3.6K documents, 323 queries (2.4 MB)"),
    "nq": ("d4d3d2e48787a744b6f6e691ff534307", "2.7M passages, 3,452 queries (498 MB)"),
    "hotpotqa": ("f412724f78b0d91183a0e86805e16114", "5.2M passages, 7,405 queries (654 MB)"),
    "fiqa": ("17918ed23cd04fb15047f73e6c3bd9d9", "57K posts, 648 queries (18 MB)"),
    "arguana": ("8ad3e3c2a5867cdced806d6503f29b99", "8.7K arguments, 1,406 queries (3.8 MB)"),
    "webis-touche2020": (
        "46f650ba5a527fc69e0a6521c5a23563",
        "382K arguments, 49 queries (227 MB)",
    ),
    "quora": ("18fb154900ba42a600f84b839c173167", "523K questions, 10,000 queries (16 MB)"),
    "dbpedia-entity": ("c2a39eb420a3164af735795df012ac2c", "4.6M entities, 400 queries (639 MB)"),
    "scidocs": ("38121350fc3a4d2f48850f6aff52e4a9", "25K papers, 1,000 queries (142 MB)"),
    "fever": ("5a818580227bfb4b35bb6fa46d9b6c03", "5.4M passages, 6,666 queries (1.2 GB)"),
    "climate-fever": (
        "8b66f0a9126c521bae2bde127b4dc99d",
        "5.4M passages, 1,535 queries (1.2 GB)",
    ),
    "scifact": ("5f7d1de60b170fc8027bb7898e2efca1", "5K abstracts, 300 queries (2.8 MB)"),
}


def beir_collection(name: str, md5: str, description: str) -> Collection:
    """The Collection of BEIR set `name`: one zip holding a `{name}/` BEIR folder."""
    return Collection(
        name=f"beir/{name}",
        urls=(BEIR_URL.format(name),),
        checksums=(Checksum(f"{name}.zip", "md5", md5),),
        convert=lambda unpacked, out: convert_beir(unpacked / name, out),
        description=f"BEIR {name}: {description}",
        checksum_source="md5 published by BEIR (beir-cellar/beir README.md)",
    )


def lookup(name: str) -> Collection:
    """The registered collection `name`; a GateError listing the known ones otherwise."""
    if name in COLLECTIONS:
        return COLLECTIONS[name]
    known = sorted(COLLECTIONS)
    tails = {known_name.rsplit("/", 1)[-1]: known_name for known_name in known}
    tail = name.rsplit("/", 1)[-1].lower()
    close = [tails[match] for match in difflib.get_close_matches(tail, tails, n=3, cutoff=0.75)]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise GateError(f"unknown dataset {name!r}{hint}\nknown datasets: {', '.join(known)}")


def default_directory(name: str) -> Path:
    """Where `name` goes by default: `datasets/<name>` under the working directory."""
    return Path("datasets", *name.split("/"))


def resolve_url(url: str, mirror: str | None) -> str:
    """`url`, or with a mirror its file name appended to the mirror's address."""
    if not mirror:
        return url
    try:
        parts = urlsplit(mirror)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise GateError(
            f"{MIRROR_ENV}={mirror!r} must start with http:// or https:// and name a host"
        )
    return f"{mirror.rstrip('/')}/{_file_name(url)}"


# --- fetching ----------------------------------------------------------------------------------


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
        downloads = [_download(url, work / "download", progress, mirror) for url in urls]
        _verify_downloads(collection, downloads)
        unpacked = work / "unpacked"
        for download in downloads:
            _unpack(download, unpacked)
        _verify_unpacked(collection, unpacked, downloads)
        out = work / "out"
        collection.convert(unpacked, out)
        counts = _counts(out)
        _write_marker(out, collection, downloads, counts)
        _install(out, target, work)
        installed = True
        _say(progress, f"wrote {target}: {counts.describe()}")
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
        marker = json.loads(path.read_text(encoding="utf-8"))
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


def _download(url: str, folder: Path, progress: TextIO | None, mirror: str | None) -> Download:
    """Stream `url` into `folder`, hashing as it goes."""
    import httpx

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _file_name(url)
    md5 = hashlib.md5(usedforsecurity=False)
    sha256 = hashlib.sha256()
    size = 0
    where = f" (set by {MIRROR_ENV})" if mirror else ""
    _say(progress, f"downloading {url}")
    try:
        with (
            httpx.Client(
                follow_redirects=True,
                timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
                headers={
                    "Accept-Encoding": "identity",
                    "User-Agent": f"retrieval-gate/{__version__}",
                },
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code >= 400:
                raise GateError(
                    f"cannot download {url}{where}: HTTP {response.status_code} "
                    f"{response.reason_phrase}; nothing was written. Check the address, or try "
                    "again later"
                )
            total = int(response.headers.get("Content-Length") or 0) or None
            with path.open("wb") as file, _Meter(progress, path.name, total) as meter:
                # Raw bytes: a server that labels a .tar.gz `Content-Encoding: gzip` must not
                # have it unpacked on the way.
                for chunk in response.iter_raw(CHUNK):
                    file.write(chunk)
                    md5.update(chunk)
                    sha256.update(chunk)
                    size += len(chunk)
                    meter.advance(len(chunk))
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        raise GateError(
            f"cannot download {url}{where}: {type(error).__name__}: {error or 'no details'}; "
            "nothing was written. Check the network connection (or set "
            f"{MIRROR_ENV} to a mirror) and run the command again"
        ) from None
    return Download(url, path, size, md5.hexdigest(), sha256.hexdigest())


class _Meter:
    """Download progress: a tqdm bar on a terminal, a line per 10% elsewhere (CI logs)."""

    def __init__(self, stream: TextIO | None, name: str, total: int | None) -> None:
        self._stream = stream
        self._name = name
        self._total = total
        self._done = 0
        self._shown = 0
        self._started = time.monotonic()
        self._bar: Any = None
        if stream is not None and _is_terminal(stream):
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                file=stream,
                desc=name,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                dynamic_ncols=True,
            )

    def __enter__(self) -> _Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
        elif exc[0] is None:
            _say(
                self._stream,
                f"downloaded {self._name}: {self._done:,} bytes in "
                f"{time.monotonic() - self._started:.1f}s",
            )

    def advance(self, n: int) -> None:
        """Count `n` more bytes."""
        self._done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._total:
            tenth = min(10, self._done * 10 // self._total)
            if tenth > self._shown and tenth < 10:
                self._shown = tenth
                _say(self._stream, f"{self._name}: {tenth * 10}%")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _verify_downloads(collection: Collection, downloads: list[Download]) -> None:
    by_name = {download.path.name: download for download in downloads}
    for checksum in collection.checksums:
        download = by_name.get(checksum.file)
        if download is None:
            continue
        actual = download.md5 if checksum.algorithm == "md5" else download.sha256
        _compare(checksum, actual, download.url)


def _verify_unpacked(collection: Collection, unpacked: Path, downloads: list[Download]) -> None:
    names = {download.path.name for download in downloads}
    origin = ", ".join(download.url for download in downloads)
    for checksum in collection.checksums:
        if checksum.file in names:
            continue
        path = unpacked / checksum.file
        if not path.is_file():
            raise GateError(
                f"{origin} has no {checksum.file}; the download is not the expected archive "
                "(check the address, or the mirror's copy)"
            )
        _compare(
            checksum, file_digest(path, checksum.algorithm, strip_cr=checksum.strip_cr), origin
        )


def _compare(checksum: Checksum, actual: str, origin: str) -> None:
    if actual.lower() == checksum.expected.lower():
        return
    raise GateError(
        f"checksum mismatch for {checksum.file} (from {origin}):\n"
        f"  expected {checksum.label()} {checksum.expected}\n"
        f"  got      {checksum.label()} {actual}\n"
        "The download is damaged or the upstream file has changed; nothing was written. Run "
        "the command again; if the mismatch persists, compare the file with its source and "
        "report it (the pinned checksums are in retrieval_gate/datasets/fetch.py)"
    )


def file_digest(path: Path, algorithm: str, *, strip_cr: bool = False) -> str:
    """The hex digest of the file at `path`, of its content without `\\r` when `strip_cr`."""
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk.replace(b"\r", b"") if strip_cr else chunk)
    return digest.hexdigest()


def _unpack(download: Download, folder: Path) -> None:
    """Extract the regular files of a zip or tar archive under `folder`, refusing unsafe
    names (absolute, `..`)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = download.path.name
    try:
        if name.endswith(".zip"):
            with zipfile.ZipFile(download.path) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        with archive.open(info) as source:
                            _extract(source, folder, info.filename, download.url)
        else:
            with tarfile.open(download.path, "r:*") as archive:
                for member in archive:
                    extracted = archive.extractfile(member) if member.isfile() else None
                    if extracted is not None:
                        with extracted as source:
                            _extract(source, folder, member.name, download.url)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
        raise GateError(
            f"cannot unpack {name} from {download.url}: {error}; the download is damaged or "
            "not an archive. Run the command again"
        ) from None


def _extract(source: IO[bytes], folder: Path, member: str, origin: str) -> None:
    parts = PurePosixPath(member.replace("\\", "/")).parts
    if not parts or parts[0] == "__MACOSX" or parts[-1].startswith("._"):
        return
    if member.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise GateError(f"{origin} holds an unsafe path {member!r}; nothing was written")
    path = folder.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as target:
        shutil.copyfileobj(source, target, CHUNK)


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


def _say(stream: TextIO | None, message: str) -> None:
    if stream is not None:
        stream.write(f"retrieval-gate: {message}\n")
        stream.flush()


def _file_name(url: str) -> str:
    name = PurePosixPath(urlsplit(url).path).name
    if not name:
        raise GateError(f"{url} does not name a file")
    return name


# --- converters --------------------------------------------------------------------------------


def convert_beir(folder: Path, out: Path) -> None:
    """Move a BEIR folder (as in BEIR's zips) to `out` unchanged."""
    missing = [file for file in BEIR_FILES if not (folder / file).is_file()]
    if missing:
        raise GateError(f"the archive has no {folder.name}/{missing[0]}; it is not a BEIR folder")
    os.replace(folder, out)


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


_SMART_ID = re.compile(r"\.I\s+(\S+)\s*$")
_SMART_TAGS = {".T": "title", ".A": "author", ".B": "source", ".W": "text"}


@dataclass(frozen=True)
class SmartRecord:
    """One record of a SMART tagged file: its `.I` id, the line it starts on, its fields."""

    id: str
    line: int
    fields: dict[str, str]


def read_smart(path: Path) -> list[SmartRecord]:
    """The records of a SMART file (`.I id`, then `.T`/`.A`/`.B`/`.W` tag lines each followed
    by their text); a field's lines are joined with single spaces, carriage returns ignored."""
    starts: list[tuple[str, int]] = []
    fields: list[dict[str, list[str]]] = []
    field: list[str] | None = None
    for number, line in enumerate(_read_text(path).split("\n"), 1):
        tag = line.strip()
        if match := _SMART_ID.match(line):
            starts.append((match[1], number))
            fields.append({})
            field = None
        elif tag in _SMART_TAGS and fields:
            field = fields[-1].setdefault(_SMART_TAGS[tag], [])
        elif field is not None:
            field.append(line)
        elif tag:
            raise InputError(
                "text outside a field; expected a .I, .T, .A, .B or .W line",
                source=str(path),
                line=number,
            )
    return [
        SmartRecord(key, line, {name: " ".join(" ".join(text).split()) for name, text in f.items()})
        for (key, line), f in zip(starts, fields, strict=True)
    ]


def _read_text(path: Path) -> str:
    """The file's text without carriage returns; an InputError unless it is UTF-8."""
    try:
        return path.read_bytes().replace(b"\r", b"").decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"not UTF-8 text ({error})", source=str(path)) from None


def convert_cranfield(unpacked: Path, out: Path) -> None:
    """Write Cranfield's SMART files (`cran.all.1400`, `cran.qry`, `cranqrel`) as BEIR.

    Documents keep their `.I` numbers, title from `.T`, text from `.W`. Queries are numbered by
    their position in cran.qry (1-225), which is how cranqrel refers to them: the `.I` numbers
    run 001-365 with gaps. cranqrel's Cleverdon codes rank 1 (complete answer) above 4
    (minimum interest), so grade = 5 - code. Each query has one `-1` row, undocumented, which
    is the query's source paper (query 1's is document 486; see the notes on the collection
    shipped with the reference data): those rows are kept with grade 0, judged not relevant.
    For nDCG, AP, recall and precision that is the same as leaving them out; bpref and
    judged@k count them as judged."""
    docs = read_smart(unpacked / "cran.all.1400")
    queries = read_smart(unpacked / "cran.qry")
    doc_ids: dict[str, None] = {}
    for record in docs:
        if not record.id.isdigit() or str(int(record.id)) in doc_ids:
            raise InputError(
                f"bad or repeated document id {record.id!r}",
                source=str(unpacked / "cran.all.1400"),
                line=record.line,
            )
        doc_ids[str(int(record.id))] = None
    rows = list(_cranfield_qrels(unpacked / "cranqrel", len(queries), doc_ids))
    out.mkdir(parents=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for record, doc in zip(docs, doc_ids, strict=True):
            title, text = record.fields.get("title", ""), record.fields.get("text", "")
            handle.write(json.dumps({"_id": doc, "title": title, "text": text}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for position, record in enumerate(queries, 1):
            text = record.fields.get("text", "")
            handle.write(json.dumps({"_id": str(position), "text": text}) + "\n")
    (out / "qrels").mkdir()
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(QRELS_HEADER)
        handle.writelines(f"{query}\t{doc}\t{grade}\n" for query, doc, grade in rows)


def _cranfield_qrels(
    path: Path, queries: int, docs: dict[str, None]
) -> Iterator[tuple[str, str, int]]:
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(_read_text(path).split("\n"), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            query, doc, code = (int(field) for field in fields)
        except ValueError:
            raise InputError(
                "expected 'query_no doc_id code' (three integers)", source=str(path), line=number
            ) from None
        if not 1 <= query <= queries or str(doc) not in docs or code not in (-1, 1, 2, 3, 4):
            raise InputError(
                f"query {query} (of {queries}), document {doc} or code {code} (1-4 or -1) "
                "is out of range",
                source=str(path),
                line=number,
            )
        pair = (str(query), str(doc))
        if pair in seen:
            raise InputError(
                f"query {query}, document {doc} judged twice", source=str(path), line=number
            )
        seen.add(pair)
        yield pair[0], pair[1], 5 - code if code > 0 else 0


# Built last: the converters above must exist.
COLLECTIONS: dict[str, Collection] = {
    "cranfield": _cranfield_collection(),
    **{
        f"beir/{name}": beir_collection(name, md5, description)
        for name, (md5, description) in BEIR_MD5.items()
    },
}
