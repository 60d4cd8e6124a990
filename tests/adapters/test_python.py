"""The python adapter against real functions, classes and objects in a module on sys.path."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters import PythonConfig, Query, RetrieverError, fingerprint
from retrieval_gate.adapters.hits import SHAPES
from retrieval_gate.adapters.python import PythonRetriever
from retrieval_gate.core import redaction
from retrieval_gate.core.model import Hit
from retrieval_gate.core.wording import console_text
from retrieval_gate.errors import GateError
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

MODULE = "rg_python_helpers"
HELPERS = textwrap.dedent(
    """
    import asyncio

    closed = []

    def plain(query, k):
        return [f"{query}-{i}" for i in range(10)]

    def with_metadata(query, k, metadata):
        return [f"{metadata['intent']}:{query}"]

    def by_keyword(*, query, k):
        return [(f"kw{i}", 1.0 - i / 10) for i in range(k)]

    def aliased(*, query, top_k):
        return [f"{query}-{i}" for i in range(top_k)]

    def scoped(query, k, *, index):
        return [f"{index}:{query}"]

    async def async_search(query, k):
        await asyncio.sleep(0)
        return [{"id": "a1", "score": 2.0}, {"doc_id": "a2", "score": 1}, {"_id": 3}]

    def batch(queries, k):
        return [[f"{text}-{i}" for i in range(k)] for text in queries]

    def batch_other_name(texts_in, k):
        return [[text] for text in texts_in]

    def batch_wrong_length(queries, k):
        return [[]]

    class Item:
        def __init__(self, doc_id, score=None):
            self.doc_id = doc_id
            self.score = score

    def shapes(query, k):
        return ["s1", ("s2", 0.5), ["s3", 2], {"id": "s4"}, Item("s5", 1.5), 6, "s1"]

    def mapping(query, k):
        return {"m1": 0.5, "m2": 0.9}

    class Searcher:
        def __init__(self, prefix="s"):
            self.prefix = prefix

        def search(self, query, k):
            return [Item(f"{self.prefix}{i}", float(-i)) for i in range(k)]

        def close(self):
            closed.append(self.prefix)

    class Retrieving:
        def retrieve(self, query, k, metadata):
            return [metadata.get("segment", "none")]

    class BatchSearcher:
        def search(self, query, k):
            return ["single"]

        def search_batch(self, queries, k):
            return [["batched"] for _ in queries]

    instance = Searcher(prefix="inst")

    def raises(query, k):
        raise ValueError("index not loaded")

    def times_out(query, k):
        raise TimeoutError("backend slow")

    def returns_none(query, k):
        return None

    def bad_item(query, k):
        return ["ok", 1.5]

    def needs_four(a, b, c, d):
        return []

    def parallel(query, k):
        return {"ids": ["kb-1", "kb-2"], "scores": [0.9, 0.8]}

    def chroma(query, k):
        return {"ids": [["kb-1"]], "distances": [[0.1]], "documents": [["text"]], "uris": None}

    def wrapped(query, k):
        return {"hits": [{"id": "kb-1"}], "total": 1}

    def no_id(query, k):
        return [{"doc": "kb-1101", "score": ["kb-1101"]}]

    def bad_score(query, k):
        return [{"id": "kb-1101", "score": ["kb-1101"]}]

    HOSTILE = "\\x1b[2J\\n::error::owned sk-secret-123 " + "x" * 500

    def hostile_item(query, k):
        return [{HOSTILE: HOSTILE}]

    def hostile_dict(query, k):
        return {"ids": [HOSTILE], "scores": [HOSTILE], HOSTILE: 1}

    not_callable = 42
    """
)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / f"{MODULE}.py").write_text(HELPERS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield MODULE
    sys.modules.pop(MODULE, None)


def build(target: str, **settings: Any) -> PythonRetriever:
    return PythonRetriever(PythonConfig(target=f"{MODULE}:{target}", **settings))


QUERY = Query("q1", "cats", {"intent": "nav", "segment": "pro"})


def ids(hits: list[Hit]) -> list[str]:
    return [hit.doc_id for hit in hits]


def test_function_results_are_truncated_to_k(module: str) -> None:
    retriever = build("plain")
    assert ids(retriever.search(QUERY, 3)) == ["cats-0", "cats-1", "cats-2"]
    assert retriever.batch_size() == 1


def test_function_with_metadata(module: str) -> None:
    assert ids(build("with_metadata").search(QUERY, 5)) == ["nav:cats"]


def test_keyword_only_query_and_k(module: str) -> None:
    hits = build("by_keyword").search(QUERY, 2)
    assert hits == [Hit("kw0", 1.0), Hit("kw1", 0.9)]


def test_keyword_aliases(module: str) -> None:
    assert ids(build("aliased").search(QUERY, 2)) == ["cats-0", "cats-1"]


def test_kwargs_are_passed_to_functions_on_every_call(module: str) -> None:
    assert ids(build("scoped", kwargs={"index": "v2"}).search(QUERY, 5)) == ["v2:cats"]


def test_async_function_and_dict_items(module: str) -> None:
    hits = build("async_search").search(QUERY, 10)
    assert hits == [Hit("a1", 2.0), Hit("a2", 1.0), Hit("3")]


def test_every_item_shape_and_duplicates_keep_their_first_place(module: str) -> None:
    hits = build("shapes").search(QUERY, 10)
    assert hits == [
        Hit("s1"),
        Hit("s2", 0.5),
        Hit("s3", 2.0),
        Hit("s4"),
        Hit("s5", 1.5),
        Hit("6"),
    ]


def test_mapping_of_doc_to_score(module: str) -> None:
    assert build("mapping").search(QUERY, 10) == [Hit("m1", 0.5), Hit("m2", 0.9)]


def test_batch_function_detected_by_its_parameter_name(module: str) -> None:
    retriever = build("batch", batch_size=4)
    assert retriever.batch_size() == 4
    results = retriever.search_batch([QUERY, Query("q2", "dogs")], 2)
    assert [ids(hits) for hits in results] == [["cats-0", "cats-1"], ["dogs-0", "dogs-1"]]
    assert ids(retriever.search(QUERY, 1)) == ["cats-0"]
    assert retriever.describe()["mode"] == "batch"


def test_batch_mode_named_explicitly(module: str) -> None:
    retriever = build("batch_other_name", mode="batch", batch_size=2)
    assert [ids(h) for h in retriever.search_batch([QUERY, Query("q2", "x")], 5)] == [
        ["cats"],
        ["x"],
    ]


def test_batch_with_the_wrong_number_of_lists(module: str) -> None:
    with pytest.raises(RetrieverError, match="returned 1 result lists for 2 queries"):
        build("batch_wrong_length", batch_size=2).search_batch([QUERY, QUERY], 3)


def test_class_is_instantiated_with_kwargs_and_closed(module: str) -> None:
    retriever = build("Searcher", kwargs={"prefix": "p"})
    assert retriever.search(QUERY, 2) == [Hit("p0", 0.0), Hit("p1", -1.0)]
    retriever.close()
    assert sys.modules[MODULE].closed == ["p"]


def test_object_with_search_method(module: str) -> None:
    assert ids(build("instance").search(QUERY, 1)) == ["inst0"]


def test_class_with_retrieve_method_gets_metadata(module: str) -> None:
    assert ids(build("Retrieving").search(QUERY, 1)) == ["pro"]


def test_object_batch_method_used_when_batching(module: str) -> None:
    assert ids(build("BatchSearcher").search(QUERY, 1)) == ["single"]
    batched = build("BatchSearcher", batch_size=8)
    assert batched.batch_size() == 8
    assert [ids(h) for h in batched.search_batch([QUERY, QUERY], 1)] == [["batched"]] * 2


def test_exception_from_user_code_is_not_retryable(module: str) -> None:
    with pytest.raises(RetrieverError, match="raised ValueError: index not loaded") as caught:
        build("raises").search(QUERY, 3)
    assert caught.value.retryable is False


def test_timeout_from_user_code_is_retryable(module: str) -> None:
    with pytest.raises(RetrieverError, match="TimeoutError") as caught:
        build("times_out").search(QUERY, 3)
    assert caught.value.retryable is True


def test_none_and_bad_items_are_clear_errors(module: str) -> None:
    with pytest.raises(RetrieverError, match="returned None; expected a list"):
        build("returns_none").search(QUERY, 3)
    with pytest.raises(RetrieverError) as caught:
        build("bad_item").search(QUERY, 3)
    assert str(caught.value) == (
        "retriever.target 'rg_python_helpers:bad_item': result 2 is a float 1.5: it has no id, "
        f"doc_id or _id attribute; each result must be {SHAPES}"
    )


def message_of(target: str) -> str:
    with pytest.raises(RetrieverError) as caught:
        build(target).search(QUERY, 3)
    return str(caught.value)


def test_another_key_layout_names_what_came_back_and_the_shapes(module: str) -> None:
    where = "retriever.target 'rg_python_helpers:"
    assert message_of("no_id") == (
        f"{where}no_id': result 1 is a dict {{'doc': 'kb-1101', 'score': ['kb-1101']}}: it "
        "has no 'id', 'doc_id' or '_id' key (its keys: 'doc', 'score'); if 'doc' is the doc "
        f"id, name it 'id'; each result must be {SHAPES}"
    )
    assert message_of("bad_score") == (
        f"{where}bad_score': result 1 is a dict {{'id': 'kb-1101', 'score': ['kb-1101']}}: "
        f"score ['kb-1101'] is not a number; each result must be {SHAPES}"
    )


def test_a_dict_of_parallel_lists_says_how_to_convert_it(module: str) -> None:
    assert message_of("parallel") == (
        "retriever.target 'rg_python_helpers:parallel' returned a dict {'ids': ['kb-1', "
        "'kb-2'], 'scores': [0.9, 0.8]}, parallel lists rather than a list of results; convert "
        'it: return list(zip(result["ids"], result["scores"])); '
        f"each result must be {SHAPES}"
    )
    # Chroma: one list per query text, and distances, smaller for a better match.
    assert (
        'return [(doc, -distance) for doc, distance in zip(result["ids"][0], '
        'result["distances"][0])]' in message_of("chroma")
    )
    assert 'return the list inside it: return result["hits"]' in message_of("wrapped")


def test_what_came_back_is_quoted_inert_short_and_redacted(module: str) -> None:
    redaction.register("sk-secret-123")
    try:
        messages = [message_of("hostile_item"), message_of("hostile_dict")]
    finally:
        redaction.forget()
    for message in messages:
        assert message.isprintable()  # no escape sequence, no newline: no line to start with ::
        assert console_text(message) == message
        assert "sk-secret-123" not in message
        assert "<redacted>" in message
        assert len(message) < 1000  # quoted in short, not 500 characters at a time


def test_missing_module_names_the_target() -> None:
    config = PythonConfig(target="rg_no_such_module:search")
    with pytest.raises(GateError) as caught:
        PythonRetriever(config)
    assert str(caught.value).startswith(
        "could not import module 'rg_no_such_module' for retriever.target "
        "'rg_no_such_module:search': No module named 'rg_no_such_module'"
    )


MODULE_NAME = (
    "write 'svc.search:search' (svc/search.py under the config's folder, which is importable)"
)


@pytest.mark.parametrize(
    ("written", "suggested"),
    [
        ("svc/search.py", MODULE_NAME),
        ("svc/search", MODULE_NAME),
        ("./svc/search.py", MODULE_NAME),
        ("svc\\search.py", MODULE_NAME),
        ("svc.search.py", MODULE_NAME),
        (
            "my-svc/search.py",
            "rename my-svc/search so each part is a Python name (letters, digits, _), then "
            "write 'my_svc.search:search' (the config's folder is importable)",
        ),
    ],
)
def test_a_file_path_target_suggests_the_module_name(
    tmp_path: Path, written: str, suggested: str
) -> None:
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "search.py").write_text("def search(query, k):\n    return ['a']\n")
    with pytest.raises(GateError) as caught:
        PythonRetriever(PythonConfig(target=f"{written}:search"), base_dir=tmp_path)
    assert str(caught.value) == (
        f"could not import retriever.target {written + ':search'!r}: {written!r} is a file "
        f"path, but a target names a module; {suggested}"
    )


def test_the_suggested_module_name_imports(tmp_path: Path) -> None:
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "search.py").write_text("def search(query, k):\n    return ['a']\n")
    try:
        retriever = PythonRetriever(PythonConfig(target="svc.search:search"), base_dir=tmp_path)
        assert ids(retriever.search(QUERY, 3)) == ["a"]
    finally:
        sys.modules.pop("svc.search", None)
        sys.modules.pop("svc", None)


def test_an_absolute_path_inside_the_config_folder_is_made_relative(tmp_path: Path) -> None:
    with pytest.raises(GateError, match=r"write 'svc\.search:search'"):
        PythonRetriever(PythonConfig(target=f"{tmp_path}/svc/search.py:search"), base_dir=tmp_path)
    with pytest.raises(GateError, match="write its dotted name from an importable folder"):
        PythonRetriever(PythonConfig(target="../other/search.py:search"), base_dir=tmp_path)


def test_a_hostile_path_target_stays_inert(tmp_path: Path) -> None:
    # The module part cannot hold a colon (the first one ends it); the attribute can.
    target = "x\x1b[2J\n\x9b31m/search.py:\n::error::owned"
    with pytest.raises(GateError) as caught:
        PythonRetriever(PythonConfig(target=target), base_dir=tmp_path)
    message = str(caught.value)
    assert "is a file path, but a target names a module; rename x?[2J ?31m/search so" in message
    assert message.isprintable()  # no escape sequence, no newline: no line starts with ::
    assert console_text(message) == message


def test_missing_attribute_and_wrong_kinds(module: str) -> None:
    with pytest.raises(GateError, match=r"module 'rg_python_helpers' has no attribute 'nope'"):
        build("nope")
    with pytest.raises(GateError, match="is a int; expected a function"):
        build("not_callable")
    with pytest.raises(GateError, match=r"also requires d"):
        build("needs_four")
    with pytest.raises(GateError, match="must look like 'module:attribute'"):
        PythonRetriever(PythonConfig(target="no_colon"))


def test_description_redacts_secret_kwargs(module: str) -> None:
    secret = build("scoped", kwargs={"index": "v2", "api_key": "sk-live-123"})
    described = secret.describe()
    assert "sk-live-123" not in str(described)
    assert described["kwargs"] == {"index": "v2", "api_key": "<redacted>"}
    assert fingerprint(described) != fingerprint(build("plain").describe())


EXITING = {
    "exits_on_import": "import sys\nsys.exit(5)\n\ndef search(query, k):\n    return []\n",
    "exits_in_search": "import sys\n\ndef search(query, k):\n    sys.exit(5)\n",
    "exits_in_init": (
        "import sys\n\nclass Searcher:\n    def __init__(self):\n        sys.exit('no index')\n"
        "    def search(self, query, k):\n        return []\n"
    ),
    "base_in_search": (
        "class Stop(BaseException):\n    pass\n\ndef search(query, k):\n"
        "    raise Stop('giving up')\n"
    ),
    "interrupted_on_import": "raise KeyboardInterrupt\n",
}


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The bundled tiny gate with the EXITING modules beside it; runs `run` with a target."""
    import shutil

    folder = tmp_path / "tiny"
    shutil.copytree(CONFIGS / "tiny", folder)
    for name, text in EXITING.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    template = (folder / "retrieval-gate.yaml").read_text(encoding="utf-8")

    def run(target: str) -> tuple[int, str]:
        config = folder / "python.yaml"
        config.write_text(template.replace("type: bm25", f"type: python\n  target: {target}"))
        code, _, err = run_cli("run", "-c", str(config), "--quiet", "--no-cache")
        return code, err

    yield run
    for name in EXITING:
        sys.modules.pop(name, None)


def test_sys_exit_while_importing_is_exit_2_naming_the_retriever(gate: Any) -> None:
    code, err = gate("exits_on_import:search")
    assert code == 2, err
    assert (
        "retriever python (target exits_on_import:search): the module called sys.exit(5) "
        "while importing; " in err
    )


def test_sys_exit_while_creating_the_class_is_exit_2(gate: Any) -> None:
    code, err = gate("exits_in_init:Searcher")
    assert code == 2, err
    assert (
        "retriever python (target exits_in_init:Searcher): the class called "
        "sys.exit('no index') while creating it with retriever.kwargs" in err
    )


def test_sys_exit_or_a_base_exception_in_search_is_exit_2_naming_the_retriever(
    gate: Any,
) -> None:
    code, err = gate("exits_in_search:search")
    assert code == 2, err
    assert (
        "reset-password: retriever python (target exits_in_search:search): the retriever "
        "called sys.exit(5) while searching" in err
    )
    code, err = gate("base_in_search:search")
    assert code == 2, err
    assert "the retriever raised Stop: giving up while searching, which is a BaseException" in err


def test_a_real_keyboard_interrupt_is_still_an_interrupt(gate: Any) -> None:
    code, err = gate("interrupted_on_import:search")
    assert code == 130, err
    assert "interrupted" in err


def test_framework_adapters_name_the_retriever_when_user_code_exits(gate: Any) -> None:
    from retrieval_gate.adapters import LangchainConfig
    from retrieval_gate.adapters.frameworks import LangchainRetriever

    with pytest.raises(GateError, match=r"^retriever langchain \(target exits_on_import:search\)"):
        LangchainRetriever(LangchainConfig(target="exits_on_import:search"), base_dir=Path.cwd())


def test_a_hit_dict_or_object_may_carry_its_text() -> None:
    from types import SimpleNamespace

    from retrieval_gate.adapters.hits import to_hit

    assert to_hit({"id": "d1", "score": 2, "text": "the passage"}) == Hit("d1", 2.0, "the passage")
    assert to_hit(SimpleNamespace(id="d2", score=None, text="object text")).text == "object text"
    assert to_hit({"id": "d3", "text": {"nested": 1}}) == Hit("d3")  # not a string: no text
    assert to_hit(("d4", 1.0)).text is None
