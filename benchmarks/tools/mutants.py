"""Mutants of a Python module, made on its syntax tree: one small wrong formula each.

Operators: comparisons flipped (the boundary moved, or negated), + and -, * and / swapped
(// and ** become *), numbers moved by one, min and max swapped (numpy's minimum and maximum
too), `not` added to or taken from a condition, and and or swapped, a numeric return value
negated. Annotations, docstrings, f-strings, raise and assert statements are left alone.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

PACKAGE = "retrieval_gate"


@dataclass(frozen=True)
class Site:
    """One mutation of one node, before its source is written."""

    path: str
    """The file, relative to the package."""
    index: int
    """The node's position in `ast.walk` order."""
    kind: str
    variant: int
    line: int
    function: str


@dataclass(frozen=True)
class Mutant:
    """A site, the text it changes (as shown), and the module's mutated source."""

    site: Site
    original: str
    mutated: str
    source: str
    line_text: str
    """The site's source line, stripped: tells apart equal changes within one function."""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What names this mutant across edits elsewhere in the module (not its line number)."""
        return (self.site.path, self.site.function, self.line_text, self.original, self.mutated)

    def describe(self) -> str:
        where = f"{PACKAGE}/{self.site.path}:{self.site.line}"
        return f"{where} ({self.site.function}): {self.original}  ->  {self.mutated}"


_COMPARE: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    # The boundary moved, then the comparison negated.
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
_ARITHMETIC: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Pow: ast.Mult,
}
_SWAPPED_NAMES = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum"}
_NUMERIC_RETURNS = ("float", "int", "FloatArray", "IntArray")


def _variants(node: ast.AST, numeric_return: bool) -> Iterator[tuple[str, int]]:
    """(kind, variant) of every mutation `node` allows."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for j in range(len(_COMPARE[type(op)])):
                yield "compare", i * 10 + j
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _ARITHMETIC:
        yield "arithmetic", 0
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        yield "constant", 1
        yield "constant", -1
    elif (isinstance(node, ast.Name) and node.id in ("min", "max")) or (
        isinstance(node, ast.Attribute) and node.attr in _SWAPPED_NAMES
    ):
        yield "min-max", 0
    elif isinstance(node, ast.BoolOp):
        yield "and-or", 0
    elif isinstance(node, ast.If | ast.While | ast.IfExp):
        yield "not", 0
    elif isinstance(node, ast.comprehension):
        for i in range(len(node.ifs)):
            yield "not", i
    elif (
        isinstance(node, ast.Return)
        and numeric_return
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        yield "negate-return", 0


def _target(node: Any, kind: str, variant: int) -> Any:
    """The node whose text the mutation changes: the condition of a `not`, the value of a
    negated return, else `node` itself."""
    if kind == "not":
        return node.ifs[variant] if isinstance(node, ast.comprehension) else node.test
    return node.value if kind == "negate-return" else node


def _mutate(node: Any, kind: str, variant: int) -> ast.AST:
    """Apply the mutation to `node` in place; the node that then holds the changed text."""
    if kind == "compare":
        i, j = divmod(variant, 10)
        node.ops[i] = _COMPARE[type(node.ops[i])][j]()
    elif kind == "arithmetic":
        node.op = _ARITHMETIC[type(node.op)]()
    elif kind == "constant":
        node.value += variant
    elif kind == "min-max" and isinstance(node, ast.Name):
        node.id = _SWAPPED_NAMES[node.id]
    elif kind == "min-max":
        node.attr = _SWAPPED_NAMES[node.attr]
    elif kind == "and-or":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "not":
        test = _target(node, kind, variant)
        removed = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        changed = test.operand if removed else ast.UnaryOp(op=ast.Not(), operand=test)
        if isinstance(node, ast.comprehension):
            node.ifs[variant] = changed
        else:
            node.test = changed
        return changed
    elif kind == "negate-return":
        node.value = ast.UnaryOp(op=ast.USub(), operand=node.value)
        return node.value
    return node


def _skipped(tree: ast.Module) -> set[int]:
    """Ids of nodes never mutated: annotations, docstrings, f-strings, raise and assert
    statements (messages and type narrowing), and TYPE_CHECKING blocks."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(inner) for inner in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign):
            skip(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            skip(node.returns)
        elif isinstance(node, ast.JoinedStr | ast.Raise | ast.Assert) or (
            isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            skip(node)
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skip(node)
    return skipped


def _functions(tree: ast.Module) -> tuple[dict[int, str], set[int]]:
    """Node id -> the qualified name of the function or class it is in ("<module>" outside),
    and the ids of Return nodes of functions annotated to return a number."""
    where: dict[int, str] = {}
    numeric: set[int] = set()

    def visit(node: ast.AST, name: str, returns: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner, inner_returns = name, returns
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = child.name if name == "<module>" else f"{name}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    text = ast.unparse(child.returns) if child.returns else ""
                    inner_returns = any(word in text for word in _NUMERIC_RETURNS) and not any(
                        word in text for word in ("bool", "tuple", "dict", "list", "str")
                    )
            where[id(child)] = inner
            if isinstance(child, ast.Return) and returns:
                numeric.add(id(child))
            visit(child, inner, inner_returns)

    visit(tree, "<module>", False)
    return where, numeric


def sites(path: str, text: str) -> list[Site]:
    """Every mutation of the module `path` (relative to the package) whose source is `text`."""
    tree = ast.parse(text)
    skipped = _skipped(tree)
    where, numeric = _functions(tree)
    found = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skipped:
            continue
        for kind, variant in _variants(node, id(node) in numeric):
            line = getattr(_target(node, kind, variant), "lineno", 0)
            found.append(Site(path, index, kind, variant, line, where.get(id(node), "<module>")))
    return found


def materialise(site: Site, text: str) -> Mutant:
    """The mutant of `site` in `text`: the mutated tree unparsed (comments and layout go,
    the code is the same), and the changed text, within its expression when a lone number
    or name would say little."""
    tree, changed = ast.parse(text), ast.parse(text)
    nodes, twins = list(ast.walk(tree)), list(ast.walk(changed))
    before = _target(nodes[site.index], site.kind, site.variant)
    after = _mutate(twins[site.index], site.kind, site.variant)
    if isinstance(before, ast.Constant | ast.Name | ast.Attribute):
        # Only a value or a name changed: every node keeps its place in the walk.
        parent = _parent_index(nodes, site.index)
        if parent is not None:
            before, after = nodes[parent], twins[parent]
    source = ast.unparse(changed)
    compile(source, site.path, "exec")  # a mutant that does not compile is a bug here
    line_text = text.splitlines()[site.line - 1].strip() if site.line else ""
    return Mutant(site, _one_line(before), _one_line(after), source, line_text)


def _one_line(node: ast.AST) -> str:
    return " ".join(ast.unparse(node).split())


def _parent_index(nodes: list[ast.AST], index: int) -> int | None:
    """The walk index of the expression or assignment holding node `index`, else None."""
    position = {id(node): i for i, node in enumerate(nodes)}
    parent_of = {id(child): node for node in nodes for child in ast.iter_child_nodes(node)}
    node = parent_of.get(id(nodes[index]))
    while isinstance(node, ast.keyword | ast.arguments | ast.comprehension):
        node = parent_of.get(id(node))  # a keyword argument: show the call
    held = isinstance(node, ast.expr | ast.Assign | ast.AnnAssign)  # `LIMIT = 4` reads well
    return position[id(node)] if held else None


def sample(found: Sequence[Site], count: int, seed: int, unit: str) -> list[Site]:
    """`count` sites drawn without replacement, the same for the same seed, unit and sites."""
    rng = random.Random(f"{seed}:{unit}")
    picked = list(found) if count <= 0 or count >= len(found) else rng.sample(list(found), count)
    return sorted(picked, key=lambda s: (s.path, s.line, s.index, s.variant))
