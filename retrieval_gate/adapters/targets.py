"""Importing the object a `module:attribute` target names, and calling user code safely."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrieval_gate.adapters.base import RetrieverError
from retrieval_gate.errors import GateError


def load_target(target: str, expected: str, *, search_dir: Path | None = None) -> Any:
    """The object `target` names: `package.module:name` or `package.module:name.attribute`.
    `expected` describes what the target should be, for error messages. `search_dir` (the
    config file's folder) is put on sys.path first: the console script does not put the
    working folder there, and users expect `my_search:search` beside their config to import."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise GateError(
            f"retriever.target {target!r} must look like 'module:attribute' "
            f"(e.g. 'my_search:search'); expected {expected}"
        )
    if search_dir is not None and str(search_dir) not in sys.path:
        sys.path.insert(0, str(search_dir))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        missing_itself = isinstance(error, ModuleNotFoundError) and error.name == module_name
        hint = " (is it in the config's folder or installed?)" if missing_itself else ""
        raise GateError(
            f"could not import module {module_name!r} for retriever.target {target!r}: "
            f"{error}{hint}"
        ) from error
    except Exception as error:  # the user's module failed while importing
        raise GateError(
            f"importing module {module_name!r} for retriever.target {target!r} failed: "
            f"{type(error).__name__}: {error}"
        ) from error
    value: Any = module
    where = f"module {module_name!r}"
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise GateError(
                f"{where} has no attribute {part!r} (retriever.target {target!r}); "
                f"expected {expected}"
            ) from None
        where = f"{type(value).__name__} {part!r}"
    return value


@contextmanager
def user_errors(where: str) -> Iterator[None]:
    """Turns an exception from user code into a RetrieverError, retryable when it is a
    timeout or a connection error."""
    try:
        yield
    except RetrieverError:
        raise
    except Exception as error:
        retryable = isinstance(error, (TimeoutError, ConnectionError))
        raise RetrieverError(
            f"{where} raised {type(error).__name__}: {error}", retryable=retryable
        ) from error
