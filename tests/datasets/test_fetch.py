"""`datasets fetch` against a real HTTP server on 127.0.0.1 serving Cranfield and BEIR archives."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import socket
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.datasets.catalog import COLLECTIONS, beir_collection
from retrieval_gate.datasets.download import MIRROR_ENV
from retrieval_gate.datasets.fetch import MARKER, FetchResult, fetch
from tests.helpers.cli import Terminal, run_cli
from tests.helpers.paths import CONFIGS

CRANFIELD_FILES = ("cran.all.1400", "cran.qry", "cranqrel", "cranqrel.readme")


@dataclass
class Site:
    """What the server serves (path -> bytes) and the paths it was asked for."""

    url: str
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)


class Handler(BaseHTTPRequestHandler):
    site: Site

    def do_GET(self) -> None:
        self.site.requests.append(self.path)
        data = self.site.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet


@contextmanager
def serve(files: dict[str, bytes]) -> Iterator[Site]:
    """An HTTP server on a free port of 127.0.0.1, shut down and closed on exit."""
    site = Site("", dict(files))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("Bound", (Handler,), {"site": site}))
    site.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield site
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def cran_tar_gz(folder: Path, changes: dict[str, bytes] | None = None) -> bytes:
    """cran.tar.gz as upstream lays it out: the four files at the root, CRLF line endings."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in CRANFIELD_FILES:
            data = (changes or {}).get(name, (folder / name).read_bytes())
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def beir_zip(name: str, members: dict[str, str] | None = None) -> bytes:
    """A tiny BEIR zip: `{name}/corpus.jsonl`, queries.jsonl, qrels/test.tsv and train.tsv."""
    files = members or {
        f"{name}/corpus.jsonl": '{"_id": "d1", "title": "Red", "text": "red shoes"}\n'
        '{"_id": "d2", "title": "Blue", "text": "blue hats"}\n',
        f"{name}/queries.jsonl": '{"_id": "q1", "text": "red shoes"}\n'
        '{"_id": "q2", "text": "blue hats"}\n{"_id": "q3", "text": "train only"}\n',
        f"{name}/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td1\t0\n",
        f"{name}/qrels/train.tsv": "query-id\tcorpus-id\tscore\nq3\td1\t1\n",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def qrels(path: Path) -> dict[tuple[str, str], int]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    rows = [line.split("\t") for line in lines[1:]]
    return {(query, doc): int(grade) for query, doc, grade in rows}


@pytest.fixture(scope="module")
def cran_archive(shared_data: Path) -> bytes:
    return cran_tar_gz(shared_data / "cranfield")


@pytest.fixture(scope="module")
def cranfield(cran_archive: bytes, tmp_path_factory: pytest.TempPathFactory) -> FetchResult:
    """Cranfield fetched once (through the library) for the conversion checks."""
    folder = tmp_path_factory.mktemp("fetched") / "cranfield"
    with serve({"cran.tar.gz": cran_archive}) as site:
        return fetch("cranfield", folder, mirror=site.url)


@pytest.fixture
def site(cran_archive: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Site]:
    """The server, named by RETRIEVAL_GATE_DATASETS_URL; the working directory is tmp_path."""
    monkeypatch.chdir(tmp_path)
    with serve({"cran.tar.gz": cran_archive}) as served:
        monkeypatch.setenv(MIRROR_ENV, served.url)
        yield served


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


# --- Cranfield conversion ----------------------------------------------------------------------


def test_cranfield_counts(cranfield: FetchResult) -> None:
    folder = cranfield.path
    docs = jsonl(folder / "corpus.jsonl")
    queries = jsonl(folder / "queries.jsonl")
    judged = qrels(folder / "qrels" / "test.tsv")
    assert [doc["_id"] for doc in docs] == [str(n) for n in range(1, 1401)]
    assert [query["_id"] for query in queries] == [str(n) for n in range(1, 226)]
    assert len(judged) == 1837
    assert sum(grade >= 1 for grade in judged.values()) == 1612
    assert {query for query, _ in judged} == {str(n) for n in range(1, 226)}
    assert (cranfield.counts.documents, cranfield.counts.queries) == (1400, 225)
    assert (cranfield.counts.judgments, cranfield.counts.positive) == (1837, 1612)
    assert set(docs[0]) == {"_id", "title", "text"}
    assert set(queries[0]) == {"_id", "text"}
    assert (
        docs[0]["title"]
        == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    )
    assert docs[0]["text"].startswith("experimental investigation of the aerodynamics of a wing")
    assert docs[470]["_id"] == "471"
    assert docs[470]["text"] == ""
    assert not any("\r" in doc["text"] or "\n" in doc["text"] for doc in docs)


def test_cranfield_grades_are_five_minus_code(cranfield: FetchResult) -> None:
    judged = qrels(cranfield.path / "qrels" / "test.tsv")
    assert judged["2", "12"] == 4  # code 1: complete answer
    assert judged["1", "184"] == 3  # code 2
    assert judged["1", "12"] == 2  # code 3
    assert judged["1", "13"] == 1  # code 4: minimum interest
    assert judged["1", "486"] == 0  # code -1: the query's source paper, judged not relevant
    assert sorted(set(judged.values())) == [0, 1, 2, 3, 4]
    assert sum(grade == 0 for grade in judged.values()) == 225


def test_cranfield_queries_are_numbered_by_position(
    cranfield: FetchResult, shared_data: Path
) -> None:
    queries = {query["_id"]: query["text"] for query in jsonl(cranfield.path / "queries.jsonl")}
    lines = (shared_data / "cranfield" / "cran.qry").read_text().split("\n")
    first = " ".join(" ".join(lines[2 : lines.index(".I 002")]).split())
    assert queries["1"] == first
    assert queries["1"].startswith("what similarity laws must be obeyed")
    # The third query is `.I 004`: ids follow positions, not the `.I` numbers.
    assert queries["3"].startswith("what problems of heat conduction in composite slabs")
    assert "4" in queries
    assert "365" not in queries


def test_marker_records_source_and_checksums(cranfield: FetchResult) -> None:
    marker = json.loads((cranfield.path / MARKER).read_text())
    assert marker["name"] == "cranfield"
    assert marker["downloads"][0]["url"].endswith("/cran.tar.gz")
    assert len(marker["downloads"][0]["sha256"]) == 64
    assert {item["file"] for item in marker["verified"]} == {
        "cran.all.1400",
        "cran.qry",
        "cranqrel",
    }
    assert set(marker["files"]) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv"}
    digest = hashlib.sha256((cranfield.path / "qrels" / "test.tsv").read_bytes()).hexdigest()
    assert marker["files"]["qrels/test.tsv"] == digest


def test_bm25_on_cranfield_config(cranfield: FetchResult, tmp_path: Path) -> None:
    """configs/cranfield.yaml over the fetched folder: measured NDCG@10 0.3587,
    Recall@100 0.7354 (bm25s, English stemmer and stopwords, title + text)."""
    from retrieval_gate.pipeline.execute import execute

    (tmp_path / "configs").mkdir()
    shutil.copy(CONFIGS / "cranfield.yaml", tmp_path / "configs" / "cranfield.yaml")
    shutil.copytree(cranfield.path, tmp_path / "datasets" / "cranfield")
    result = execute(tmp_path / "configs" / "cranfield.yaml", cache=False)
    means = result.scores.mean()
    assert len(result.dataset.queries) == 225
    assert 0.355 <= means["ndcg@10"] <= 0.363
    assert 0.73 <= means["recall@100"] <= 0.74


# --- the command: idempotence, errors, atomicity -----------------------------------------------


def test_fetch_writes_default_folder_then_keeps_it(site: Site, tmp_path: Path) -> None:
    code, out, err = run_cli("datasets", "fetch", "cranfield")
    assert code == 0, err
    folder = tmp_path / "datasets" / "cranfield"
    assert "1400 documents, 225 queries" in out
    assert "1612 positive" in out
    assert f"downloading {site.url}/cran.tar.gz" in err
    assert leftovers(tmp_path / "datasets") == ["cranfield"]
    assert site.requests == ["/cran.tar.gz"]

    code, out, _ = run_cli("datasets", "fetch", "cranfield")
    assert code == 0
    assert "already complete, kept" in out
    assert site.requests == ["/cran.tar.gz"]  # nothing downloaded

    (folder / "corpus.jsonl").write_text("stale\n")
    code, _, err = run_cli("datasets", "fetch", "cranfield", "--force", "--quiet")
    assert code == 0
    assert err == ""
    assert len(site.requests) == 2
    assert len(jsonl(folder / "corpus.jsonl")) == 1400
    assert leftovers(tmp_path / "datasets") == ["cranfield"]


def test_incomplete_folder_needs_force(site: Site, tmp_path: Path) -> None:
    assert run_cli("datasets", "fetch", "cranfield", "--dir", "out", "--quiet")[0] == 0
    (tmp_path / "out" / "queries.jsonl").unlink()
    code, _, err = run_cli("datasets", "fetch", "cranfield", "--dir", "out")
    assert code == 2
    assert "queries.jsonl is missing" in err
    assert "--force" in err
    assert run_cli("datasets", "fetch", "cranfield", "--dir", "out", "--force", "--quiet")[0] == 0
    assert (tmp_path / "out" / "queries.jsonl").is_file()


def test_foreign_folder_is_never_replaced(site: Site, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    code, _, err = run_cli("datasets", "fetch", "cranfield", "--dir", "mine", "--force")
    assert code == 2
    assert "was not made by" in err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert site.requests == []


def test_corrupted_file_is_a_checksum_error(site: Site, shared_data: Path, tmp_path: Path) -> None:
    qrel = (shared_data / "cranfield" / "cranqrel").read_bytes()
    damaged = qrel.replace(b"1 184 2", b"1 184 1", 1)
    site.files["cran.tar.gz"] = cran_tar_gz(shared_data / "cranfield", {"cranqrel": damaged})
    code, out, err = run_cli("datasets", "fetch", "cranfield")
    assert code == 2
    assert out == ""
    assert "checksum mismatch for cranqrel" in err
    assert "92e54b58dac0b980152178f350d892fae66c8a239b8a11715b835fb8d2f6bc0e" in err
    assert hashlib.sha256(damaged).hexdigest() in err
    assert "nothing was written" in err
    assert "Run the command again" in err
    assert not (tmp_path / "datasets").exists()  # no partial folder, no created parents


def test_missing_file_in_archive(site: Site, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("cran.qry")
        tar.addfile(info, io.BytesIO(b""))
    site.files["cran.tar.gz"] = buffer.getvalue()
    code, _, err = run_cli("datasets", "fetch", "cranfield", "--dir", "x/cran")
    assert code == 2
    assert "has no cran.all.1400" in err
    assert not (tmp_path / "x").exists()


def test_http_404_names_the_url(site: Site, tmp_path: Path) -> None:
    del site.files["cran.tar.gz"]
    code, _, err = run_cli("datasets", "fetch", "cranfield")
    assert code == 2
    assert f"cannot download {site.url}/cran.tar.gz" in err
    assert "HTTP 404" in err
    assert MIRROR_ENV in err
    assert not (tmp_path / "datasets").exists()


def test_connection_error_names_the_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{port}/mirror/")
    code, _, err = run_cli("datasets", "fetch", "cranfield", "--quiet")
    assert code == 2
    assert f"cannot download http://127.0.0.1:{port}/mirror/cran.tar.gz" in err
    assert "ConnectError" in err
    assert "network" in err
    assert leftovers(tmp_path) == []


def test_mirror_must_be_http(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(MIRROR_ENV, "ftp://mirror")
    code, _, err = run_cli("datasets", "fetch", "cranfield")
    assert code == 2
    assert f"{MIRROR_ENV}='ftp://mirror' must start with http" in err


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("beir/scifac", "beir/scifact"), ("scifact", "beir/scifact"), ("cranfeld", "cranfield")],
)
def test_unknown_name_suggests(name: str, suggestion: str) -> None:
    code, _, err = run_cli("datasets", "fetch", name)
    assert code == 2
    assert f"unknown dataset {name!r}; did you mean {suggestion}" in err
    assert "known datasets: beir/arguana, " in err
    assert "cranfield" in err


def test_registry_pins_published_beir_md5() -> None:
    assert COLLECTIONS["beir/scifact"].checksums[0].expected == "5f7d1de60b170fc8027bb7898e2efca1"
    assert COLLECTIONS["beir/scifact"].urls == (
        "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip",
    )
    assert all(len(c.checksums) >= 1 for c in COLLECTIONS.values())


# --- BEIR zips ---------------------------------------------------------------------------------


def test_beir_zip_is_moved_as_is(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = beir_zip("tiny")
    md5 = hashlib.md5(data).hexdigest()
    monkeypatch.setitem(COLLECTIONS, "beir/tiny", beir_collection("tiny", md5, "a test set"))
    site.files["tiny.zip"] = data
    code, out, err = run_cli("datasets", "fetch", "beir/tiny")
    assert code == 0, err
    folder = tmp_path / "datasets" / "beir" / "tiny"
    assert "2 documents, 3 queries (2 with test judgments), 3 judgments (2 positive)" in out
    assert (folder / "qrels" / "test.tsv").read_text() == (
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td1\t0\n"
    )
    assert (folder / "qrels" / "train.tsv").is_file()
    marker = json.loads((folder / MARKER).read_text())
    assert marker["downloads"][0]["md5"] == md5
    assert marker["downloads"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    assert leftovers(tmp_path / "datasets" / "beir") == ["tiny"]
    code, out, _ = run_cli("datasets", "fetch", "beir/tiny")
    assert code == 0
    assert "kept" in out


def test_beir_checksum_mismatch(site: Site, tmp_path: Path) -> None:
    data = beir_zip("scifact")
    site.files["scifact.zip"] = data
    code, _, err = run_cli("datasets", "fetch", "beir/scifact")
    assert code == 2
    assert f"checksum mismatch for scifact.zip (from {site.url}/scifact.zip)" in err
    assert "expected md5 5f7d1de60b170fc8027bb7898e2efca1" in err
    assert f"got      md5 {hashlib.md5(data).hexdigest()}" in err
    assert not (tmp_path / "datasets").exists()


def test_beir_zip_without_test_qrels(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = beir_zip("tiny", {"tiny/corpus.jsonl": "{}\n", "tiny/queries.jsonl": "{}\n"})
    md5 = hashlib.md5(data).hexdigest()
    monkeypatch.setitem(COLLECTIONS, "beir/tiny", beir_collection("tiny", md5, "a test set"))
    site.files["tiny.zip"] = data
    code, _, err = run_cli("datasets", "fetch", "beir/tiny")
    assert code == 2
    assert "no tiny/qrels/test.tsv" in err
    assert not (tmp_path / "datasets").exists()


def test_unsafe_zip_member_is_refused(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = beir_zip("tiny", {"tiny/../../evil.txt": "x"})
    md5 = hashlib.md5(data).hexdigest()
    monkeypatch.setitem(COLLECTIONS, "beir/tiny", beir_collection("tiny", md5, "a test set"))
    site.files["tiny.zip"] = data
    code, _, err = run_cli("datasets", "fetch", "beir/tiny")
    assert code == 2
    assert "unsafe path" in err
    assert leftovers(tmp_path) == []


def test_terminal_progress_is_a_tqdm_bar(cran_archive: bytes, tmp_path: Path) -> None:
    stream = Terminal()
    with serve({"cran.tar.gz": cran_archive}) as served:
        result = fetch("cranfield", tmp_path / "cran", mirror=served.url, progress=stream)
    assert result.counts.documents == 1400
    assert "cran.tar.gz: 100%" in stream.getvalue()
