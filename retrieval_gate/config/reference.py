"""The Markdown reference of every `retrieval-gate.yaml` key, generated from the config models."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from retrieval_gate.adapters import ADAPTERS, AdapterSettings
from retrieval_gate.config.drops import Drop
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.core.wording import plural

REGENERATE = "retrieval-gate config reference > docs/config-reference.md"
# Names of the free keys of mappings, by the dotted key of the mapping.
PLACEHOLDERS = {"metrics": ("<metric>",), "slices.overrides": ("<slice>", "<metric>")}
# Models written as one scalar in the file.
SCALARS: dict[type[BaseModel], str] = {Drop: "drop"}
SCALAR_NAMES = {bool: "bool", int: "int", float: "float", str: "str", Path: "path"}
BOUNDS = {
    "ge": ">= {0}",
    "gt": "> {0}",
    "le": "<= {0}",
    "lt": "< {0}",
    "min_length": "at least {1}",
    "max_length": "at most {1}",
}

INTRO = f"""\
# `retrieval-gate.yaml` reference

<!-- Generated from the config models; do not edit by hand. Regenerate with
     {REGENERATE} -->

Every key of the gate's config file, generated from its schema by
`retrieval-gate config reference`. `retrieval-gate config validate` checks a file and the
labelled set it points to; `retrieval-gate config schema` prints the JSON Schema, for editor
completion.

- Unknown keys are errors (with a did-you-mean).
- Relative paths start at the config file's folder.
- Any string may read the environment: `${{VAR}}`, or `${{VAR:-default}}` when `VAR` may be
  unset (an unset `VAR` without a default is an error).
- A *drop* is `2pt` (points of the 0-1 scale), `0.02` (the same as a fraction) or `3%`
  (relative to the baseline's value).
- `<metric>` stands for a metric such as `ndcg@10` (`retrieval-gate metrics` lists them),
  `<slice>` for a slice such as `intent=billing`.
"""


@dataclass(frozen=True)
class Row:
    """One documented key: dotted key, type, default and description, as plain text."""

    key: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    """A heading, the paragraph under it and its keys."""

    title: str
    text: str
    rows: tuple[Row, ...]
    level: int = 2


def config_reference() -> str:
    """The Markdown reference of every config key (deterministic: the docs file's content)."""
    parts = [INTRO]
    for section in sections():
        parts.append(f"\n{'#' * section.level} {section.title}\n\n")
        if section.text:
            parts.append(f"{_escape(section.text)}\n\n")
        if section.rows:
            parts.append("| key | type | default | description |\n|---|---|---|---|\n")
            parts.extend(
                f"| `{row.key}` | {_code(row.type)} | {_code(row.default)} | "
                f"{_escape(row.description)} |\n"
                for row in section.rows
            )
    return "".join(parts)


def sections() -> list[Section]:
    """The reference's sections: top-level keys, then one per mapping of GateConfig."""
    top: list[Row] = []
    out: list[Section] = []
    for name, field in GateConfig.model_fields.items():
        key = field.alias or name
        if name == "retriever":
            out.extend(_retriever_sections(key, field))
        elif (model := _model(field.annotation)) is not None:
            text = _description(field) or _docstring(model)
            out.append(Section(f"`{key}`", text, tuple(_rows(model, key))))
        elif (mapped := _mapped_model(field.annotation)) is not None:
            text = _docstring(mapped[0])
            out.append(Section(f"`{key}`", text, tuple(_field_rows(key, field))))
        else:
            top.extend(_field_rows(key, field))
    return [Section("Top level", "", tuple(top)), *out]


def _retriever_sections(key: str, field: FieldInfo) -> Iterator[Section]:
    """The settings every retriever shares, then one subsection per `type` (the registry's)."""
    names = ", ".join(f"`{kind}`" for kind in ADAPTERS)
    text = _description(field) or (
        f"The retriever under test: `{key}.type` picks one of {names}. Every type takes the "
        f"runner settings below. {_docstring(AdapterSettings)}"
    )
    yield Section(f"`{key}`", text, tuple(_rows(AdapterSettings, key)))
    shared = set(AdapterSettings.model_fields)
    for kind, adapter in ADAPTERS.items():
        model = adapter.config_class
        rows = [
            Row(f"{key}.type", kind, "required", _described(model, "type")),
            *_rows(model, key, skip={*shared, "type"}),
        ]
        yield Section(f"`{key}.type: {kind}`", _docstring(model), tuple(rows), 3)


def _rows(model: type[BaseModel], prefix: str, skip: set[str] | None = None) -> Iterator[Row]:
    """Rows of `model`'s fields under `prefix`; nested models become dotted keys."""
    for name, field in model.model_fields.items():
        if skip and name in skip:
            continue
        yield from _field_rows(f"{prefix}.{field.alias or name}", field)


def _field_rows(key: str, field: FieldInfo) -> Iterator[Row]:
    """The row of one field, or the rows of the model (or mapping of models) it holds."""
    annotation = field.annotation
    nested = _model(annotation)
    if nested is not None:
        yield from _rows(nested, key)
        return
    yield Row(key, _type_text(annotation, field), _default(field), _description(field))
    mapped = _mapped_model(annotation)
    if mapped is not None:
        model, depth = mapped
        names = PLACEHOLDERS.get(key, ())
        free = [names[i] if i < len(names) else "<name>" for i in range(depth)]
        yield from _rows(model, ".".join([key, *free]))


def _model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds as a mapping (not a scalar-parsed one like Drop), if any."""
    annotation = _strip(annotation)
    args = [arg for arg in _union_args(annotation) if arg is not type(None)]
    if len(args) == 1:
        annotation = _strip(args[0])
    if (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and annotation not in SCALARS
    ):
        return annotation
    return None


def _mapped_model(annotation: Any) -> tuple[type[BaseModel], int] | None:
    """(model, depth) when `annotation` is dict[str, model] or dict[str, dict[str, model]]."""
    depth = 0
    annotation = _strip(annotation)
    while typing.get_origin(annotation) is dict:
        annotation = _strip(typing.get_args(annotation)[1])
        depth += 1
    model = _model(annotation) if depth else None
    return (model, depth) if model is not None else None


def _strip(annotation: Any) -> Any:
    """`annotation` without Annotated wrappers."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _union_args(annotation: Any) -> tuple[Any, ...]:
    """The members of a union, or the annotation alone."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _type_name(annotation: Any) -> str:
    """A short YAML-minded name of a type: str, list[int], auto | beir, drop | null."""
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None) or annotation is None:
        return "null"
    if annotation is Any:
        return "any"
    if origin is Literal:
        return " | ".join(_yaml(value) for value in args)
    if origin in (typing.Union, types.UnionType):
        # dict.fromkeys: a union of models (a retriever block of any kind) is one `mapping`.
        names = list(dict.fromkeys(_type_name(arg) for arg in args if arg is not type(None)))
        return " | ".join([*names, "null"] if type(None) in args else names)
    if origin is list:
        return f"list[{_type_name(args[0])}]"
    if origin is dict:
        return f"dict[{_type_name(args[0])}, {_type_name(args[1])}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return SCALARS.get(annotation, "mapping")
    if isinstance(annotation, type) and annotation in SCALAR_NAMES:
        return SCALAR_NAMES[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _type_text(annotation: Any, field: FieldInfo) -> str:
    """The type with the field's bounds: `int, >= 1, <= 100000`."""
    bounds = []
    for item in field.metadata:  # annotated_types constraints: Ge(ge=1), MinLen(...), ...
        for name, text in BOUNDS.items():
            value = getattr(item, name, None)
            if value is not None:
                bounds.append(text.format(value, plural(value, "item")))
    return ", ".join([_type_name(annotation), *bounds])


def _default(field: FieldInfo) -> str:
    """The default as YAML, or `required`."""
    if field.is_required():
        return "required"
    return _yaml(field.get_default(call_default_factory=True, validated_data={}))


def _yaml(value: Any) -> str:
    """`value` as one line of YAML flow style."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    text = yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()
    return text[1:-1]


def _description(field: FieldInfo) -> str:
    """The field's description on one line as a sentence: a plain first word capitalised
    (not a value such as `false:` or a file such as `corpus.jsonl`), a full stop at the end."""
    text = " ".join((field.description or "").split())
    if re.match(r"[a-z][a-z-]*( |$)", text):
        text = text[0].upper() + text[1:]
    return text if not text or text.endswith((".", "?", "!")) else f"{text}."


def _described(model: type[BaseModel], name: str) -> str:
    """The description of `model`'s field `name`."""
    return _description(model.model_fields[name])


def _docstring(model: type[BaseModel] | None) -> str:
    """The class docstring of `model` on one line."""
    return " ".join(inspect.cleandoc(model.__doc__ or "").split()) if model else ""


def _code(text: str) -> str:
    """`text` as inline code in a table cell."""
    return f"`{text.replace('|', chr(92) + '|')}`"


# Backslash, *, <, | and an _ at a word's edge (inside a word it never makes emphasis).
_SPECIAL = re.compile(r"([\\*<|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _escape(text: str) -> str:
    """Markdown-safe prose: specials escaped outside `code spans`, which are kept."""
    pieces = re.split(r"(`[^`]*`)", text)
    return "".join(
        piece.replace("|", "\\|")
        if piece.startswith("`")
        else _SPECIAL.sub(lambda m: "\\" + m[0], piece)
        for piece in pieces
    )
