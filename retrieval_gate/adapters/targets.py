"""Importing the object a `module:attribute` target names, and calling user code safely."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError, RetrieverError


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
    as_path = _path_hint(module_name, attribute, search_dir)
    if as_path is not None and ("/" in module_name or "\\" in module_name):
        # Never a module name: importing it fails, or (./svc) reads as a relative import.
        raise GateError(_path_message(target, module_name, as_path))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        missing_itself = isinstance(error, ModuleNotFoundError) and error.name == module_name
        if as_path is not None and isinstance(error, ModuleNotFoundError):
            raise GateError(_path_message(target, module_name, as_path)) from error
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


def _path_message(target: str, module_name: str, hint: str) -> str:
    return (
        f"could not import retriever.target {target!r}: {module_name!r} is a file path, but "
        f"a target names a module; {hint}"
    )


def _path_hint(module_name: str, attribute: str, search_dir: Path | None) -> str | None:
    """What to write instead of a file path (`svc/search.py`, `svc\\search`), or None when
    `module_name` does not look like one: its dotted module name, `svc.search`, which imports
    when the folder the path starts from (the config's) is importable."""
    if not ("/" in module_name or "\\" in module_name or module_name.endswith(".py")):
        return None
    written = module_name.replace("\\", "/")
    path = Path(written[:-3] if written.endswith(".py") else written)
    if path.is_absolute() and search_dir is not None:
        with suppress(ValueError):
            path = path.relative_to(search_dir.resolve())
    parts = [
        piece
        for part in path.parts
        if part not in ("", ".")
        for piece in ([part] if part == ".." else part.split("."))
    ]
    if path.is_absolute() or not parts or ".." in parts:
        return (
            "write its dotted name from an importable folder: the config's folder, or one on "
            "PYTHONPATH (svc/search.py beside the config is 'svc.search:search')"
        )
    where = "the config's folder" if search_dir is not None else "the working folder"
    names = [_python_name(part) for part in parts]
    suggestion = repr(".".join(names) + ":" + attribute)
    if names != parts:
        return (
            f"rename {excerpt('/'.join(parts), 80)} so each part is a Python name (letters, "
            f"digits, _), then write {suggestion} ({where} is importable)"
        )
    return f"write {suggestion} ({'/'.join(parts)}.py under {where}, which is importable)"


def _python_name(part: str) -> str:
    """`part` as an identifier: other characters made _, and a leading digit prefixed by _."""
    name = re.sub(r"\W", "_", part)
    return name if name.isidentifier() else f"_{name}"


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
