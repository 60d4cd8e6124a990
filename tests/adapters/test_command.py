"""The command adapter against real subprocesses speaking JSON lines."""

from __future__ import annotations

import shlex
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters import CommandConfig, Query, RetrieverError
from retrieval_gate.adapters.command import CommandRetriever
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import GateError
from tests.helpers.waiting import GUARD

SERVER = """
import json, os, sys

for line in sys.stdin:
    request = json.loads(line)
    text, k = request["text"], request["k"]
    if text == "crash":
        print("boom: index corrupted", file=sys.stderr, flush=True)
        sys.exit(3)
    if text == "fail":
        print(json.dumps({"id": request["id"], "error": "no index"}), flush=True)
        continue
    if text == "pid":
        results = [str(os.getpid())]
    elif text == "env":
        results = [os.environ["RG_INDEX"]]
    elif text == "noresults":
        print(json.dumps({"id": request["id"]}), flush=True)
        continue
    else:
        results = [{"id": f"{text}-{i}", "score": float(k - i)} for i in range(k)]
        results += ["one-too-many"]
    key = "hits" if request["metadata"].get("hits") else "results"
    print(json.dumps({"id": request["id"], key: results}))  # no flush: runs unbuffered
"""
GARBAGE = """
import sys
for line in sys.stdin:
    print("loading model... done", flush=True)
"""
DEEP = """
import sys
for line in sys.stdin:
    print("[" * 100_000 + "]" * 100_000, flush=True)
"""
HANG = """
import sys, time
for line in sys.stdin:
    time.sleep(60)
"""
WRONG_ID = """
import json, sys
for line in sys.stdin:
    print(json.dumps({"id": "other", "results": []}), flush=True)
"""


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    built: list[CommandRetriever] = []

    def build(script: str, **settings: Any) -> CommandRetriever:
        path = tmp_path / f"script{len(built)}.py"
        path.write_text(textwrap.dedent(script), encoding="utf-8")
        settings.setdefault("argv", [sys.executable, path.name])
        retriever = CommandRetriever(CommandConfig(**settings), base_dir=tmp_path)
        built.append(retriever)
        return retriever

    yield build
    for retriever in built:
        retriever.close()


def search(retriever: CommandRetriever, text: str, k: int = 2, **metadata: Any) -> list[Hit]:
    return retriever.search(Query(f"q-{text}", text, metadata), k)


def test_answers_with_one_long_lived_process(make: Any) -> None:
    retriever = make(SERVER)
    assert search(retriever, "cats") == [Hit("cats-0", 2.0), Hit("cats-1", 1.0)]
    assert len(search(retriever, "dogs", 5)) == 5  # the sixth result is cut
    assert search(retriever, "cats", hits=True) == [Hit("cats-0", 2.0), Hit("cats-1", 1.0)]
    assert search(retriever, "pid") == search(retriever, "pid")


def test_batches_write_all_lines_then_read_answers(make: Any) -> None:
    retriever = make(SERVER, batch_size=3)
    assert retriever.batch_size() == 3
    queries = [Query(f"q{i}", f"t{i}") for i in range(3)]
    results = retriever.search_batch(queries, 1)
    assert results == [[Hit("t0-0", 1.0)], [Hit("t1-0", 1.0)], [Hit("t2-0", 1.0)]]


def test_string_argv_shell_and_env(make: Any, tmp_path: Path) -> None:
    quoted = shlex.quote(sys.executable)
    as_string = make(SERVER, argv=f"{quoted} script0.py", env={"RG_INDEX": "v7"})
    assert search(as_string, "env") == [Hit("v7")]
    shell = make(SERVER, argv=f"{quoted} script1.py", shell=True, env={"RG_INDEX": "v8"})
    assert search(shell, "env") == [Hit("v8")]
    assert as_string.describe()["env"] == ["RG_INDEX"]  # names, never values


def test_error_answers_fail_one_query_only(make: Any) -> None:
    retriever = make(SERVER)
    before = search(retriever, "pid")
    with pytest.raises(RetrieverError, match="failed on query 'q-fail': no index") as caught:
        search(retriever, "fail")
    assert caught.value.retryable is False
    with pytest.raises(RetrieverError, match='has no "results"'):
        search(retriever, "noresults")
    assert search(retriever, "pid") == before  # same process


def test_crash_shows_stderr_and_restarts(make: Any) -> None:
    retriever = make(SERVER)
    before = search(retriever, "pid")
    with pytest.raises(RetrieverError, match="exited with code 3") as caught:
        search(retriever, "crash")
    assert "boom: index corrupted" in str(caught.value)
    assert caught.value.retryable is True
    after = search(retriever, "pid")
    assert after != before  # a new process
    assert search(retriever, "cats", 1) == [Hit("cats-0", 1.0)]


def test_garbage_output_is_not_retryable(make: Any) -> None:
    retriever = make(GARBAGE)
    with pytest.raises(RetrieverError, match=r"not JSON: 'loading model\.\.\. done'") as caught:
        search(retriever, "cats")
    assert caught.value.retryable is False


def test_output_nested_too_deeply_is_an_error_not_a_crash(make: Any) -> None:
    with pytest.raises(RetrieverError, match="printed a line nested too deeply") as caught:
        search(make(DEEP), "cats")
    assert caught.value.retryable is False
    assert len(str(caught.value)) < 500  # an excerpt of the line, not all 200,000 characters


def test_answer_to_another_query_is_an_error(make: Any) -> None:
    with pytest.raises(RetrieverError, match="answered query 'other' when asked for 'q-cats'"):
        search(make(WRONG_ID), "cats")


def test_hang_times_out_and_is_killed(make: Any) -> None:
    retriever = make(HANG, timeout=0.3)
    with pytest.raises(RetrieverError, match=r"did not answer within 0.3s") as caught:
        search(retriever, "cats")
    assert caught.value.retryable is True
    with pytest.raises(RetrieverError, match="did not answer"):
        search(retriever, "cats")  # a fresh process, hanging again


def test_missing_program_fails_at_build(tmp_path: Path) -> None:
    config = CommandConfig(argv=["rg-no-such-program", "--serve"])
    with pytest.raises(GateError, match=r"could not start retriever\.argv 'rg-no-such-program"):
        CommandRetriever(config, base_dir=tmp_path)
    with pytest.raises(GateError, match="argv is empty"):
        CommandRetriever(CommandConfig(argv=""), base_dir=tmp_path)


def test_threads_share_the_process_safely(make: Any) -> None:
    retriever = make(SERVER)
    answers: dict[str, list[Hit]] = {}

    def work(worker: int) -> None:
        for i in range(5):
            text = f"w{worker}-{i}"
            answers[text] = search(retriever, text, 1)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=GUARD)
    assert len(answers) == 20
    assert all(hits == [Hit(f"{text}-0", 1.0)] for text, hits in answers.items())
