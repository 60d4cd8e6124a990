"""Secrets never leave the process: values from the environment, header values and URL user
info are redacted in every sink, and redirects never carry headers to another origin."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.local_server import Answer, serving
from tests.helpers.paths import REPO

TOKEN = "tok-7f3a9c-SECRET"
KEY = "key-51be22-SECRET"
REPORTS = ("result.json", "report.md", "junit.xml", "report.html")


def tiny(tmp_path: Path, retriever: str) -> Path:
    folder = tmp_path / "tiny"
    shutil.copytree(REPO / "configs" / "tiny", folder, dirs_exist_ok=True)
    config = folder / "retrieval-gate.yaml"
    text = (REPO / "configs" / "tiny" / "retrieval-gate.yaml").read_text()
    config.write_text(text.replace("type: bm25", retriever.strip()))
    return config


def sinks(config: Path, tmp_path: Path, *argv: str) -> str:
    """Everything `check` wrote: console, every report; and the baseline when there is one."""
    reports = [item for name in REPORTS for item in (f"--{_flag(name)}", str(tmp_path / name))]
    code, out, err = run_cli("check", "-c", str(config), "--no-cache", *reports, *argv)
    assert code in (0, 1, 2), err
    written = [(tmp_path / name).read_text() for name in REPORTS if (tmp_path / name).exists()]
    baseline = config.parent / ".retrieval-gate" / "baseline.json"
    if baseline.exists():
        written.append(baseline.read_text())
    return "\n".join([out, err, *written])


def _flag(name: str) -> str:
    return {"result.json": "json", "report.md": "markdown", "junit.xml": "junit"}.get(name, "html")


def echoing(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
    """A failing service that echoes the request line and headers in its error body."""
    echoed = f"bad request {method} {path} " + json.dumps(dict(headers))
    return 500, {"Content-Type": "text/plain"}, echoed.encode()


def test_secrets_in_the_url_query_headers_and_echoed_errors_reach_no_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", TOKEN)
    with serving(echoing) as url:
        host = url.removeprefix("http://")
        config = tiny(
            tmp_path,
            f"""
type: http
  url: http://user:${{SEARCH_TOKEN}}@{host}/search?sig=${{SEARCH_TOKEN}}
  headers: {{X-Api-Key: {KEY}, Authorization: "Bearer ${{SEARCH_TOKEN}}"}}
  retries: 0
""",
        )
        everything = sinks(config, tmp_path)
    assert "HTTP 500" in everything  # the error is reported ...
    assert TOKEN not in everything  # ... without the secrets it echoed
    assert KEY not in everything
    assert "<redacted>" in everything


def test_a_command_retrievers_argv_secret_reaches_no_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", TOKEN)
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "leaky.py").write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    query = json.loads(line)\n"
        "    print(json.dumps({'id': query['id'], 'error': 'denied for ' + ' '.join(sys.argv)}),"
        " flush=True)\n"
    )
    config = tiny(
        tmp_path,
        f"""
type: command
  argv: ["{Path(__import__("sys").executable).as_posix()}", leaky.py, "--token=${{SEARCH_TOKEN}}"]
  retries: 0
""",
    )
    everything = sinks(config, tmp_path)
    assert "denied for" in everything
    assert TOKEN not in everything


def test_baselines_and_results_never_hold_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", TOKEN)

    def answer(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        return 200, {"Content-Type": "application/json"}, b'{"hits": [{"id": "kb-101"}]}'

    with serving(answer) as url:
        config = tiny(tmp_path, f"type: http\n  url: {url}/search?sig=${{SEARCH_TOKEN}}")
        code, _, err = run_cli("baseline", "-c", str(config), "--quiet", "--no-cache")
        assert code == 0, err
        everything = sinks(config, tmp_path)
    assert "sig=" in everything
    assert TOKEN not in everything


def test_redirects_are_not_followed_and_headers_never_cross_origins(tmp_path: Path) -> None:
    seen: list[Mapping[str, str]] = []

    def elsewhere(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        seen.append(headers)
        return 200, {"Content-Type": "application/json"}, b'{"hits": []}'

    with serving(elsewhere) as other:

        def moved(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
            return 307, {"Location": f"{other}/search"}, b""

        with serving(moved) as url:
            config = tiny(
                tmp_path, f"type: http\n  url: {url}/search\n  headers: {{X-Api-Key: {KEY}}}"
            )
            code, out, err = run_cli("check", "-c", str(config), "--no-cache", "--quiet")
    assert seen == []  # nothing, let alone the key, went to the other origin
    assert code == 2, out + err
    assert "redirects are not followed" in err
    assert KEY not in out + err
