"""The base model of everything a user writes: unknown keys are errors, values are frozen,
a boolean is not a number and a float is finite."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError


class StrictModel(BaseModel):
    """Unknown keys are errors; values are immutable once loaded; numbers are numbers: a
    boolean (true, yes, on) is not an int or a float, and a float must be finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool_for_numbers(cls, value, info)


class TakesBool:
    """`Annotated` metadata of a field whose own before-validator turns a boolean into a value
    (`sequential: true` for the defaults): a boolean there is not a number written as one."""


TAKES_BOOL = TakesBool()


def no_bool_for_numbers(model: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """`value`, unless it is a boolean (or holds one) where the field takes numbers: YAML
    reads true, yes and on as booleans, and pydantic would take them as 1."""
    field = model.model_fields[info.field_name] if info.field_name is not None else None
    if field is None or any(isinstance(m, TakesBool) for m in field.metadata):
        return value
    if _bool_where_not_allowed(field.annotation, value):
        raise PydanticCustomError(
            "bool_not_number",
            "expected a number, got a boolean (YAML reads true/false, yes/no and on/off "
            "as booleans); write a number",
        )
    return value


def _bool_where_not_allowed(annotation: Any, value: Any) -> bool:
    """Whether `value` holds a bool (itself, or an item of a list) where `annotation` takes none."""
    if isinstance(value, bool):
        return not _takes_bool(annotation)
    if isinstance(value, list) and value:
        item = _list_item(annotation)
        return item is not None and any(_bool_where_not_allowed(item, v) for v in value)
    return False


def _takes_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _takes_bool(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_bool(a) for a in args)
    if origin is Literal:
        return any(isinstance(a, bool) for a in args)
    return False


def _list_item(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _list_item(args[0])
    if origin in (typing.Union, types.UnionType):
        items = [i for i in (_list_item(a) for a in args) if i is not None]
        return items[0] if len(items) == 1 else None
    if origin is list and args:
        return args[0]
    return None
