"""Symbolic integers: the dims and sizes a dynamic-shape export leaves in a graph.

An expression is a string over symbol names (``"seq"``, ``"2*seq"``, ``"(seq + 1)//2"``,
``"max(1, batch)"``) in this grammar, parsed here (no ``eval``, no ``ast``)::

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "//" | "%") unary)*
    unary := "-"* power
    power := atom ("**" INT)?
    atom  := INT | NAME | ("max" | "min") "(" expr ("," expr)+ ")" | "(" expr ")"

``INT`` is a decimal literal (no leading zeros), ``NAME`` an identifier, and only spaces and tabs
separate tokens: every expression is also a Python expression, with Python's meaning (``//`` and
``%`` round toward negative infinity, ``-a**2`` is ``-(a**2)``).

Hostile text cannot make parsing or evaluation slow or large: an expression has at most
:data:`MAX_LENGTH` characters and :data:`MAX_DEPTH` nested parentheses or calls; an exponent is an
integer literal up to :data:`MAX_EXPONENT`; every value, literal or intermediate, is an int of
magnitude at most :data:`LIMIT`. Parsing compiles to a postfix program (constant parts folded, so
``seq//(2-2)`` fails when the graph loads); evaluating it is a loop over that program, with no
recursion. A value that does not exist for the bound dims (division by zero, a result beyond
:data:`LIMIT`, an unbound symbol) is a :class:`~nbx_core.errors.GraphSymbolError` naming the file
and the place (input, output or node argument) given at parse time.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import GraphFormatError, GraphSymbolError

MAX_LENGTH = 4096
MAX_DEPTH = 64
MAX_EXPONENT = 64
LIMIT = 2**62

Dims = Mapping[str, int]

# Spaces, tabs and decimal literals as Python writes them: an expression reads as it would in Python.
_TOKEN = re.compile(r"[ \t]*(?:(?P<int>0(?![0-9])|[1-9][0-9]*)|(?P<name>[^\W\d]\w*)|(?P<punct>\*\*|//|[-+*%(),]))")
_CALLS = ("max", "min")


class _Undefined(Exception):
    """The operation has no integer value in range; the message says why."""


class _Syntax(Exception):
    """The text is outside the grammar or its bounds; the message says where."""


def _checked(value: int) -> int:
    if -LIMIT <= value <= LIMIT:
        return value
    raise _Undefined(f"the result {value if abs(value) < 10**30 else '(huge)'} is beyond ±2**62")


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise _Undefined("division by zero")
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise _Undefined("modulo by zero")
    return a % b


def _power(base: int, exponent: int) -> int:
    # |base| >= 2 with exponent >= 63 is beyond LIMIT: refuse before computing a huge int.
    if abs(base) >= 2 and exponent >= 63:
        raise _Undefined("the result exceeds 2**62")
    return base**exponent


_BINARY: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": _floordiv,
    "%": _mod,
}


@dataclass(frozen=True)
class _Op:
    """One postfix instruction: push a constant or a symbol's value, or apply an operator."""

    code: str  # "const", "load", "neg", "**", "max", "min", or a key of _BINARY
    arg: int | str | None
    span: str  # the source text of the subexpression this instruction computes


def _apply(op: _Op, stack: list[int]) -> None:
    if op.code in _BINARY:
        b = stack.pop()
        stack.append(_checked(_BINARY[op.code](stack.pop(), b)))
    elif op.code == "neg":
        stack.append(-stack.pop())
    elif op.code == "**":
        stack.append(_checked(_power(stack.pop(), op.arg)))  # type: ignore[arg-type]
    else:  # max / min over the top ``arg`` values
        count: int = op.arg  # type: ignore[assignment]
        values = stack[-count:]
        del stack[-count:]
        stack.append(max(values) if op.code == "max" else min(values))


@dataclass(frozen=True)
class Expr:
    """A parsed symbolic integer expression; call it with the bound dims to get its value."""

    text: str
    symbols: frozenset[str]
    where: str = field(compare=False)
    _code: tuple[_Op, ...] = field(compare=False, repr=False)

    def __call__(self, dims: Dims) -> int:
        """The value for ``dims`` (symbol -> size); a GraphSymbolError when it has none."""
        stack: list[int] = []
        for op in self._code:
            if op.code == "const":
                stack.append(op.arg)  # type: ignore[arg-type]
                continue
            if op.code == "load":
                if op.arg not in dims:
                    raise GraphSymbolError(
                        f"{self.where}: {_shown(self.text)} uses symbol {op.arg}, which no input "
                        "dim binds; re-export so that an input has that dim"
                    )
                stack.append(dims[op.arg])  # type: ignore[index]
                continue
            try:
                _apply(op, stack)
            except _Undefined as exc:
                bound = ", ".join(f"{s}={dims[s]}" for s in sorted(self.symbols))
                raise GraphSymbolError(
                    f"{self.where}: {_shown(self.text)} has no value for {bound}: {exc} in "
                    f"{_shown(op.span)}; the graph's shape arithmetic is wrong for these inputs: "
                    "re-export it, or run it on inputs in the exported range"
                ) from None
        return stack[0]

    @property
    def symbol(self) -> str | None:
        """The symbol when the expression is a bare name (a dim that binds it), else None."""
        only = self._code[0] if len(self._code) == 1 else None
        return only.arg if only is not None and only.code == "load" else None  # type: ignore[return-value]


def _shown(text: str) -> str:
    """``repr`` of an expression, cut to a readable length."""
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


class _Parser:
    """Recursive descent over the token list; nesting is bounded by MAX_DEPTH."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int, int]] = []  # (kind, token, start, end)
        pos, end = 0, len(text.rstrip(" \t"))
        while pos < end:
            match = _TOKEN.match(text, pos)
            if match is None:
                rest = text[pos:].lstrip(" \t")
                raise _Syntax(f"unexpected {rest[:3]!r} at character {len(text) - len(rest)}")
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind), match.start(kind), match.end()))  # type: ignore[arg-type]
            pos = match.end()
        self.i = 0
        self.depth = 0
        self.symbols: set[str] = set()

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str, int, int]:
        if self.i >= len(self.tokens):
            raise _Syntax("unexpected end" + (f", expected {expected!r}" if expected else ""))
        token = self.tokens[self.i]
        if expected is not None and token[1] != expected:
            raise _Syntax(f"expected {expected!r}, got {token[1]!r}")
        self.i += 1
        return token

    def span(self, start: int) -> str:
        return self.text[self.tokens[start][2] : self.tokens[self.i - 1][3]]

    def emit(self, code: list[_Op], op: _Op, operands: int) -> None:
        """Append ``op``; when its operands are all constants, fold it (an error then is a load error)."""
        if operands and len(code) >= operands and all(o.code == "const" for o in code[-operands:]):
            stack = [o.arg for o in code[-operands:]]
            try:
                _apply(op, stack)  # type: ignore[arg-type]
            except _Undefined as exc:
                raise _Syntax(f"{exc} in {_shown(op.span)}") from None
            del code[-operands:]
            code.append(_Op("const", stack[0], op.span))
        else:
            code.append(op)

    def expr(self) -> list[_Op]:
        start = self.i
        code = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            code += self.term()
            self.emit(code, _Op(op, None, self.span(start)), 2)
        return code

    def term(self) -> list[_Op]:
        start = self.i
        code = self.unary()
        while self.peek() in ("*", "//", "%"):
            op = self.take()[1]
            right = self.unary()
            if op != "*" and right == [_Op("const", 0, right[0].span)]:
                raise _Syntax(f"{'division' if op == '//' else 'modulo'} by zero in {_shown(self.span(start))}")
            code += right
            self.emit(code, _Op(op, None, self.span(start)), 2)
        return code

    def unary(self) -> list[_Op]:
        start = self.i
        negations = 0
        while self.peek() == "-":
            self.take()
            negations += 1
        code = self.power()
        if negations % 2:
            self.emit(code, _Op("neg", None, self.span(start)), 1)
        return code

    def power(self) -> list[_Op]:
        start = self.i
        code = self.atom()
        if self.peek() == "**":
            self.take()
            kind, token, _, _ = self.take()
            if kind != "int" or int(token) > MAX_EXPONENT:
                raise _Syntax(f"the exponent of ** must be an integer literal in 0..{MAX_EXPONENT}, got {token!r}")
            self.emit(code, _Op("**", int(token), self.span(start)), 1)
        return code

    def atom(self) -> list[_Op]:
        start = self.i
        kind, token, _, _ = self.take()
        if kind == "int":
            if len(token) > 19 or int(token) > LIMIT:
                raise _Syntax(f"the literal {token} exceeds 2**62")
            return [_Op("const", int(token), token)]
        if kind == "name" and self.peek() == "(" and token in _CALLS:
            self.take("(")
            code = self.nested()
            count = 1
            while self.peek() == ",":
                self.take()
                code += self.nested()
                count += 1
            if count < 2:
                raise _Syntax(f"{token}() takes two or more arguments")
            self.take(")")
            self.emit(code, _Op(token, count, self.span(start)), count)
            return code
        if kind == "name":
            self.symbols.add(token)
            return [_Op("load", token, token)]
        if token == "(":
            code = self.nested()
            self.take(")")
            return code
        raise _Syntax(f"unexpected {token!r}")

    def nested(self) -> list[_Op]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Syntax(f"more than {MAX_DEPTH} nested parentheses or calls")
        code = self.expr()
        self.depth -= 1
        return code


def parse(text: object, where: str) -> Expr:
    """Parse a symbolic expression; a malformed one is a GraphFormatError prefixed by ``where``.

    ``where`` (file and input, output or node argument) also prefixes the errors of evaluation.
    """
    if not isinstance(text, str):
        raise GraphFormatError(f"{where}: symbolic int {text!r:.80} is not a string expression")
    try:
        if len(text) > MAX_LENGTH:
            raise _Syntax(f"longer than {MAX_LENGTH} characters")
        parser = _Parser(text)
        code = parser.expr()
        if parser.peek() is not None:
            raise _Syntax(f"unexpected {parser.peek()!r}")
    except _Syntax as exc:
        raise GraphFormatError(
            f"{where}: {_shown(text)} is not a symbolic int expression (integers, names, + - * // %, ** with a literal "
            f"exponent, unary -, parentheses, max, min): {exc}"
        ) from None
    return Expr(text, frozenset(parser.symbols), where, tuple(code))
