"""A collection's downloads: streamed and hashed, checked against pinned checksums, unpacked."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, TextIO
from urllib.parse import urlsplit

from retrieval_gate.core.version import __version__
from retrieval_gate.datasets.catalog import Checksum, Collection
from retrieval_gate.errors import GateError

MIRROR_ENV = "RETRIEVAL_GATE_DATASETS_URL"
"""Replaces everything before a download's file name, e.g. `http://mirror.local/ir` fetches
`http://mirror.local/ir/cran.tar.gz` and `http://mirror.local/ir/scifact.zip`."""

CHUNK = 1 << 20
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 120.0


@dataclass(frozen=True)
class Download:
    """One downloaded file: where it came from, its size and its digests."""

    url: str
    path: Path
    size: int
    md5: str
    sha256: str


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


def download_file(url: str, folder: Path, progress: TextIO | None, mirror: str | None) -> Download:
    """Stream `url` into `folder`, hashing as it goes."""
    import httpx

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / _file_name(url)
    md5 = hashlib.md5(usedforsecurity=False)
    sha256 = hashlib.sha256()
    size = 0
    where = f" (set by {MIRROR_ENV})" if mirror else ""
    say(progress, f"downloading {url}")
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
            say(
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
                say(self._stream, f"{self._name}: {tenth * 10}%")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def verify_downloads(collection: Collection, downloads: list[Download]) -> None:
    """Each download with a pinned checksum checked against it; a GateError on a mismatch."""
    by_name = {download.path.name: download for download in downloads}
    for checksum in collection.checksums:
        download = by_name.get(checksum.file)
        if download is None:
            continue
        actual = download.md5 if checksum.algorithm == "md5" else download.sha256
        _compare(checksum, actual, download.url)


def verify_unpacked(collection: Collection, unpacked: Path, downloads: list[Download]) -> None:
    """Each pinned file inside the downloads checked; a GateError if one is missing or differs."""
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
        "report it (the pinned checksums are in retrieval_gate/datasets/catalog.py)"
    )


def file_digest(path: Path, algorithm: str, *, strip_cr: bool = False) -> str:
    """The hex digest of the file at `path`, of its content without `\\r` when `strip_cr`."""
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk.replace(b"\r", b"") if strip_cr else chunk)
    return digest.hexdigest()


def unpack(download: Download, folder: Path) -> None:
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


def say(stream: TextIO | None, message: str) -> None:
    """One `retrieval-gate: ` progress line on `stream`, when there is one."""
    if stream is not None:
        stream.write(f"retrieval-gate: {message}\n")
        stream.flush()


def _file_name(url: str) -> str:
    name = PurePosixPath(urlsplit(url).path).name
    if not name:
        raise GateError(f"{url} does not name a file")
    return name
