"""Symbolic integers: the dims and sizes a dynamic-shape export leaves in a graph.

An expression is a string over symbol names (``"seq"``, ``"2*seq"``, ``"(seq + 1)//2"``,
``"max(1, batch)"``) in a small grammar: integers, names, ``+ - * // % **``, unary ``-``,
parentheses, ``max(...)`` and ``min(...)``. It is parsed once (Python's ``ast``, whitelisted: no
``eval``) and evaluated against the dims bound from the actual inputs.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import GraphFormatError

_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_CALLS: dict[str, Callable[..., int]] = {"max": max, "min": min}

Dims = Mapping[str, int]


@dataclass(frozen=True)
class Expr:
    """A parsed symbolic integer expression."""

    text: str
    symbols: frozenset[str]
    _fn: Callable[[Dims], int]

    def __call__(self, dims: Dims) -> int:
        return self._fn(dims)

    @property
    def symbol(self) -> str | None:
        """The symbol when the expression is a bare name (a dim that binds it), else None."""
        return self.text if self.symbols == {self.text} else None


def _compile(node: ast.AST, names: set[str], text: str) -> Callable[[Dims], int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
        return lambda dims: value
    if isinstance(node, ast.Name):
        name = node.id
        names.add(name)
        return lambda dims: dims[name]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _compile(node.operand, names, text)
        return lambda dims: -inner(dims)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        fn, lhs, rhs = _BINARY[type(node.op)], _compile(node.left, names, text), _compile(node.right, names, text)
        return lambda dims: fn(lhs(dims), rhs(dims))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS
            and node.args and not node.keywords):
        fn, parts = _CALLS[node.func.id], [_compile(a, names, text) for a in node.args]
        return lambda dims: fn(p(dims) for p in parts)
    raise ValueError(f"{ast.dump(node)[:60]} is outside the grammar")


def parse(text: object, where: str) -> Expr:
    """Parse a symbolic expression; a malformed one is a GraphFormatError prefixed by ``where``."""
    if not isinstance(text, str):
        raise GraphFormatError(f"{where}: symbolic int {text!r} is not a string expression")
    try:
        tree = ast.parse(text, mode="eval")
        names: set[str] = set()
        fn = _compile(tree.body, names, text)
    except (SyntaxError, ValueError) as exc:
        raise GraphFormatError(
            f"{where}: {text!r} is not a symbolic int expression (names, integers, + - * // % **, "
            f"max, min): {exc}"
        ) from None
    return Expr(text, frozenset(names), fn)
