"""docs/config-reference.md: generated from the config models, complete, and valid Markdown."""

from __future__ import annotations

import re

import pytest

from retrieval_gate.adapters import ADAPTERS, AdapterSettings
from retrieval_gate.config.reference import REGENERATE, config_reference, sections
from retrieval_gate.config.schema import GateConfig
from tests.helpers.cli import run_cli
from tests.helpers.paths import DOCS

REFERENCE = DOCS / "config-reference.md"


def test_the_docs_file_is_the_generators_output() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == config_reference(), (
        f"docs/config-reference.md is out of date with the config models; regenerate it: "
        f"{REGENERATE}"
    )


def test_the_command_prints_it() -> None:
    code, out, _ = run_cli("config", "reference")
    assert code == 0
    assert out == config_reference()


def test_every_key_is_documented_once_with_a_description() -> None:
    found = sections()
    for section in found:
        keys = [row.key for row in section.rows]
        assert len(keys) == len(set(keys)), section.title
        for row in section.rows:
            assert row.type, row.key
            assert row.default, row.key
            assert row.description, f"{row.key} has no description: add one to its Field"
    top = {row.key for row in found[0].rows}
    titled = {section.title for section in found}
    for name, field in GateConfig.model_fields.items():
        key = field.alias or name
        assert key in top or f"`{key}`" in titled, key
    by_title = {section.title: {row.key for row in section.rows} for section in found}
    assert by_title["`retriever`"] == {f"retriever.{name}" for name in AdapterSettings.model_fields}
    for kind, adapter in ADAPTERS.items():
        expected = set(adapter.config_class.model_fields) - set(AdapterSettings.model_fields)
        # A nested model's field is documented by its own dotted keys (retriever.serve.command).
        fields = {key.split(".")[1] for key in by_title[f"`retriever.type: {kind}`"]}
        assert fields == expected, kind


def test_nested_keys_are_dotted() -> None:
    keys = {row.key for section in sections() for row in section.rows}
    assert {
        "dataset.path",
        "metrics.<metric>.max_drop",
        "slices.query_length.bins",
        "slices.overrides.<slice>.<metric>.min",
        "gate.alpha",
        "report.json",
    } <= keys


def test_it_renders_as_tables_of_four_cells() -> None:
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(config_reference())
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    assert len(rows) == sum(len(section.rows) + 1 for section in sections())
    for row in rows:
        assert len(re.findall(r"<t[dh]>", row)) == 4, row
    assert "qrels/&lt;split&gt;.tsv" in html  # prose `<` is text, not an HTML tag
    assert "<code>str | null</code>" in html
