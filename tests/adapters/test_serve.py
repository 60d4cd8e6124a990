"""The http adapter's `serve`: a real service started from the config's folder, then stopped."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from retrieval_gate.adapters import HttpConfig, Query, fingerprint
from retrieval_gate.adapters import serve as serve_module
from retrieval_gate.adapters.http import HttpRetriever
from retrieval_gate.config.loader import load
from retrieval_gate.errors import GateError, InputError
from tests.helpers.cli import run_cli
from tests.helpers.local_server import Answer, free_port, listening, serving
from tests.helpers.paths import REPO
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

TOKEN = "tok-93d1c7-SERVE"
KEY = "key-4e08aa-SERVE"
PASSWORD = "pw-6b2f91-SERVE"
QUERY = Query("q1", "reset my password")

# argv: MODE PORT [ignored...]. Each mode writes its pid to MODE.pid in its working folder.
SERVER = """
import json, os, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode, port = sys.argv[1], int(sys.argv[2])
with open(mode + ".pid", "w") as file:
    file.write(str(os.getpid()))
if mode == "exit":
    print("loading the index", flush=True)
    print("::error::forged \\x1b[31m token " + os.environ.get("API_TOKEN", "-"), flush=True)
    print("##[error]old syntax " + os.environ.get("INDEX_SECRET", "-"), flush=True)
    sys.exit(3)
if mode == "hang":
    print("never listening", flush=True)
    open("hang.printed", "w").close()
    time.sleep(600)
if mode == "spawn":
    # A child that ignores SIGTERM: only the group's SIGKILL ends it.
    child = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "open('child.pid', 'w').write(str(os.getpid())); time.sleep(600)"
    )
    subprocess.Popen([sys.executable, "-c", child])
    while not os.path.exists("child.pid") or not open("child.pid").read():
        time.sleep(0.02)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply(200 if self.path == "/health" else 404, {"ok": True})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        docs = ["kb-101", "kb-318", "kb-240"][: body["k"]]
        self.reply(200, {"hits": [{"id": d, "score": 1 / (i + 1)} for i, d in enumerate(docs)]})

    def reply(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie does not (a container's init may never reap it)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").is_file():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (FileNotFoundError, ProcessLookupError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid: int) -> bool:
    """Whether `pid` has stopped, waiting for a kill to land (no timing asserted)."""
    return wait_for(lambda: not alive(pid))


def pid_in(folder: Path, mode: str) -> int:
    return int((folder / f"{mode}.pid").read_text())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """tmp_path with the server script and the tiny labelled set."""
    (tmp_path / "server.py").write_text(SERVER)
    for name in ("queries.jsonl", "qrels.txt"):
        shutil.copy(REPO / "configs" / "tiny" / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def make(folder: Path) -> Iterator[Any]:
    """Builds HttpRetrievers serving `mode` from `folder`; closes them all afterwards."""
    built: list[HttpRetriever] = []

    def build(mode: str, port: int, *extra: str, **serve: Any) -> HttpRetriever:
        settings = {
            "command": [sys.executable, "server.py", mode, str(port), *extra],
            "ready": f"http://127.0.0.1:{port}/health",
            **serve,
        }
        config = HttpConfig(url=f"http://127.0.0.1:{port}/search", retries=0, serve=settings)
        retriever = HttpRetriever(config, base_dir=folder)
        built.append(retriever)
        return retriever

    yield build
    for retriever in built:
        retriever.close()


def write_config(folder: Path, port: int, mode: str, serve: str = "") -> Path:
    python = json.dumps(sys.executable)
    config = folder / "retrieval-gate.yaml"
    config.write_text(
        f"""\
version: 1
name: served
dataset: {{queries: queries.jsonl, qrels: qrels.txt}}
retriever:
  type: http
  url: http://127.0.0.1:{port}/search
  retries: 0
  serve:
    command: [{python}, server.py, {mode}, "{port}"]
    ready: http://127.0.0.1:{port}/health
{serve}k: 10
metrics:
  ndcg@10: {{}}
"""
    )
    return config


def test_run_starts_the_service_in_the_config_folder_and_stops_it(folder: Path) -> None:
    port = free_port()
    config = write_config(folder, port, "serve", "    timeout: 20\n")
    code, out, err = run_cli("run", "-c", str(config), "--no-cache")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["metric", "all"]
    assert "ndcg@10" in out
    pid = pid_in(folder, "serve")  # written in the config's folder: cwd = base_dir
    assert gone(pid)
    assert not listening(port)


def test_search_works_and_close_stops_the_service(make: Any, folder: Path) -> None:
    port = free_port()
    retriever = make("serve", port)
    assert [hit.doc_id for hit in retriever.search(QUERY, 2)] == ["kb-101", "kb-318"]
    pid = pid_in(folder, "serve")
    assert alive(pid)
    retriever.close()
    assert gone(pid)
    assert not listening(port)
    retriever.close()  # idempotent


def test_a_child_of_the_service_is_stopped_with_it(
    make: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve_module, "STOP_GRACE", 0.5)  # the child ignores SIGTERM
    port = free_port()
    retriever = make("spawn", port)
    assert retriever.search(QUERY, 1)
    child = pid_in(folder, "child")
    assert alive(child)
    retriever.close()
    assert gone(child)
    assert gone(pid_in(folder, "spawn"))
    assert not listening(port)


def test_a_service_that_exits_at_once_is_an_error_with_its_code_and_log(
    make: Any, folder: Path
) -> None:
    port = free_port()
    with pytest.raises(GateError) as raised:
        make("exit", port, env={"API_TOKEN": TOKEN})
    message = str(raised.value)
    assert "exited with code 3" in message
    assert "server.py exit" in message
    assert f"http://127.0.0.1:{port}/health" in message
    assert "loading the index" in message
    assert "forged" in message
    assert TOKEN not in message  # a credential-looking env name: its value is redacted
    assert "<redacted>" in message
    assert "\x1b" not in message
    assert "\\#[error]old syntax" in message  # GitHub's older command syntax, defused
    assert not [line for line in message.splitlines() if line.lstrip().startswith("::")]
    assert not (folder / "exit.pid").exists() or gone(pid_in(folder, "exit"))


def test_exit_log_through_the_cli_is_inert_and_redacted(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INDEX_SECRET", KEY)
    port = free_port()
    config = write_config(folder, port, "exit", "    env: {INDEX_SECRET: '${INDEX_SECRET}'}\n")
    code, out, err = run_cli("run", "-c", str(config), "--no-cache")
    assert code == 2
    assert "exited with code 3" in err
    assert "loading the index" in err
    assert KEY not in err + out  # a ${VAR} value: a secret whatever its name
    assert "\x1b" not in err
    assert not [line for line in err.splitlines() if line.lstrip().startswith("::")]


def test_a_service_never_ready_is_stopped_and_an_error_after_the_timeout(
    make: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The serve module's clock stands still until the service has printed its line: its
    # second runs out after that, however long a loaded machine takes to start Python.
    printed, real, frozen = folder / "hang.printed", time.monotonic, time.monotonic()
    clock = SimpleNamespace(
        monotonic=lambda: real() if printed.exists() else frozen, sleep=time.sleep
    )
    monkeypatch.setattr(serve_module, "time", clock)
    port = free_port()
    with pytest.raises(GateError) as raised:
        make(
            "hang",
            port,
            "--api-key",
            KEY,
            timeout=1,
            ready=f"http://probe:{PASSWORD}@127.0.0.1:{port}/health",
        )
    message = str(raised.value)
    assert f"was not ready at http://probe:<redacted>@127.0.0.1:{port}/health within 1s" in message
    assert "retriever.serve.timeout" in message
    assert "never listening" in message  # the log's tail
    assert PASSWORD not in message
    assert KEY not in message
    assert "--api-key <redacted>" in message
    assert gone(pid_in(folder, "hang"))


@pytest.mark.parametrize(
    ("program", "reason"),
    [("./no-such-program", "FileNotFoundError"), ("nul\x00byte", "ValueError")],
)
def test_a_command_that_cannot_start_is_an_error(program: str, reason: str) -> None:
    config = HttpConfig(
        url="http://127.0.0.1:9/search",
        serve={"command": [program], "ready": "http://127.0.0.1:9/health"},
    )
    with pytest.raises(GateError, match=f"could not start: {reason}") as raised:
        HttpRetriever(config, base_dir=Path.cwd())
    assert "\x00" not in str(raised.value)


def _ok(method: str, path: str, headers: Any, body: bytes) -> Answer:
    return 200, {"Content-Type": "text/plain"}, b"ok"


def test_something_already_answering_at_ready_is_refused(make: Any, folder: Path) -> None:
    with serving(_ok) as url:
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(
            GateError, match=r"answers \(HTTP 200\) before retriever\.serve\.command"
        ):
            make("serve", port)
    assert not (folder / "serve.pid").exists()  # nothing was started


def test_a_failure_after_the_start_stops_the_service(folder: Path) -> None:
    port = free_port()
    config = HttpConfig(
        url=f"http://127.0.0.1:{port}/search",
        version={"url": f"http://127.0.0.1:{port}/no-such-route"},  # read after the start
        serve={
            "command": [sys.executable, "server.py", "serve", str(port)],
            "ready": f"http://127.0.0.1:{port}/health",
        },
    )
    with pytest.raises(GateError, match=r"retriever\.version\.url: HTTP 404"):
        HttpRetriever(config, base_dir=folder)
    assert gone(pid_in(folder, "serve"))
    assert not listening(port)


def test_the_serve_command_is_part_of_the_description(make: Any) -> None:
    port = free_port()
    first = make("serve", port, "--token", KEY, env={"INDEX": "./index"})
    description = first.describe()
    first.close()
    assert description["serve"] == {
        "command": [sys.executable, "server.py", "serve", str(port), "--token", "<redacted>"],
        "env": ["INDEX"],
    }
    assert KEY not in json.dumps(description)
    second = make("serve", port, "--token", KEY, "--fast")
    assert fingerprint(second.describe()) != fingerprint(description)


@pytest.mark.parametrize(
    ("serve", "complaint"),
    [
        ({"command": [], "ready": "http://h/health"}, "at least 1 item"),
        ({"command": [""], "ready": "http://h/health"}, "name the program"),
        ({"command": ["s"], "ready": "ftp://h/health"}, "http:// or https://"),
        ({"command": ["s"], "ready": "http://h/", "timeout": 0}, "greater than 0"),
        ({"command": ["s"], "ready": "http://h/", "timeout": 601}, "less than or equal to 600"),
        ({"command": ["s"], "ready": "http://h/", "timeout": True}, "boolean"),
        ({"command": ["s"], "ready": "http://h/", "bogus": 1}, "bogus"),
    ],
)
def test_invalid_serve_settings_are_refused(serve: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        HttpConfig(url="http://h/search", serve=serve)


def test_an_unknown_serve_key_in_a_config_names_the_field(folder: Path) -> None:
    config = write_config(folder, 8765, "serve", "    bogus: 1\n")
    with pytest.raises(InputError, match=r"serve\.bogus: unknown key"):
        load(config)
