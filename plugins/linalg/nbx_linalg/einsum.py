"""aten::einsum: equations parsed here, evaluated as stride views plus GEMMs.

Each operand's repeated subscripts become a diagonal view (strides add up); a subscript that
appears in no other operand and not in the output is summed away first (a GEMM against a
stride-0 vector of ones); operands are then contracted pairwise, left to right or in the order
``path`` gives (opt_einsum's format: pairs of positions, the result appended to the list), each
contraction one batched GEMM whose batch, row, column and reduction dims are groups of subscripts.
The result is a view of the last product in the output's subscript order. Size-1 dims broadcast,
as in torch. An implicit output (no ``->``) is the ellipsis dims followed by the subscripts that
appear exactly once, in sorted order (upper case first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.creation import ones
from nbx_core.shape import contiguous_strides, numel, view_strides
from nbx_core.tensor import NBXTensor, check_device
from nbx_core.tensor.args import same_dtype, tensor_arg

from .matmul import gemm

OP = "aten::einsum"
Label = str | int  # a subscript letter, or the position of an ellipsis dim (right-aligned)


def _parse_term(term: str, where: str) -> tuple[list[str], bool, int]:
    """Letters of one subscript term, whether it has an ellipsis, and the ellipsis position."""
    letters: list[str] = []
    has_ellipsis, pos, i = False, 0, 0
    while i < len(term):
        ch = term[i]
        if ch == ".":
            if term[i : i + 3] != "..." or has_ellipsis:
                raise NbxValueError(f"{OP}: {where} has a '.' that is not part of one '...' ellipsis")
            has_ellipsis, pos = True, len(letters)
            i += 3
            continue
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z"):
            raise NbxValueError(f"{OP}: invalid subscript {ch!r} in {where}: subscripts are letters a-z, A-Z")
        letters.append(ch)
        i += 1
    return letters, has_ellipsis, pos


def _strided(t: NBXTensor, shape: Sequence[int], strides: Sequence[int], offset: int | None = None) -> NBXTensor:
    return NBXTensor(t.storage, tuple(shape), tuple(strides), t.storage_offset() if offset is None else offset, t.dtype)


def _grouped(t: NBXTensor, shape: tuple[int, ...]) -> NBXTensor:
    """``t`` reshaped to ``shape`` (dims merged in order): a view when strides allow, else a copy."""
    st = view_strides(t.shape, t.stride(), shape)
    if st is None:
        t = contiguous(t)
        st = view_strides(t.shape, t.stride(), shape)
    return _strided(t, shape, st)


class _Operand:
    """A tensor whose dims carry distinct labels."""

    def __init__(self, t: NBXTensor, labels: list[Label]) -> None:
        self.t, self.labels = t, labels

    def dims(self, order: Sequence[Label]) -> tuple[list[int], list[int]]:
        pos = {lab: i for i, lab in enumerate(self.labels)}
        return [self.t.shape[pos[lab]] for lab in order], [self.t.stride()[pos[lab]] for lab in order]


def _operands(
    terms: list[tuple[list[str], bool, int]], tensors: Sequence[NBXTensor], n_ellipsis: int
) -> tuple[list[_Operand], dict[Label, int]]:
    sizes: dict[Label, int] = {}
    found: list[tuple[NBXTensor, list[Label]]] = []
    for i, ((letters, has_e, pos), t) in enumerate(zip(terms, tensors, strict=True)):
        e = t.ndim - len(letters)
        if (not has_e and e != 0) or e < 0:
            raise ShapeError(
                f"{OP}: the number of subscripts in the equation ({len(letters)}) does not match the "
                f"number of dimensions ({t.ndim}) for operand {i}" + ("" if has_e else " and no ellipsis was given")
            )
        labels: list[Label] = [*letters[:pos], *range(n_ellipsis - e, n_ellipsis), *letters[pos:]]
        # Repeated subscripts take the diagonal: one dim whose stride is the sum of theirs.
        uniq: dict[Label, tuple[int, int]] = {}
        for lab, size, stride in zip(labels, t.shape, t.stride(), strict=True):
            if lab in uniq:
                if uniq[lab][0] != size:
                    raise ShapeError(
                        f"{OP}: subscript {lab} is repeated for operand {i} but the sizes don't "
                        f"match, {uniq[lab][0]} != {size}"
                    )
                uniq[lab] = (size, uniq[lab][1] + stride)
            else:
                uniq[lab] = (size, stride)
        for lab, (size, _) in uniq.items():
            seen = sizes.get(lab)
            if seen is None or seen == 1:
                sizes[lab] = size
            elif size not in (1, seen):
                name = f"subscript {lab}" if isinstance(lab, str) else "an ellipsis dim"
                raise ShapeError(
                    f"{OP}: {name} has size {size} for operand {i} which does not broadcast with "
                    f"previously seen size {seen}"
                )
        found.append((_strided(t, [s for s, _ in uniq.values()], [st for _, st in uniq.values()]), list(uniq)))
    ops = []
    for t, labels in found:
        # Size-1 dims broadcast: stride 0 at the common size.
        shape = [sizes[lab] for lab in labels]
        strides = [0 if t.shape[i] != shape[i] else t.stride()[i] for i in range(len(labels))]
        ops.append(_Operand(_strided(t, shape, strides), labels))
    return ops, sizes


def _reduce(op: _Operand, keep: set[Label]) -> _Operand:
    """Sum ``op`` over its labels outside ``keep``."""
    kept = [lab for lab in op.labels if lab in keep]
    summed = [lab for lab in op.labels if lab not in keep]
    if not summed:
        return op
    ks, kst = op.dims(kept)
    ss, sst = op.dims(summed)
    a = _grouped(_strided(op.t, [*ks, *ss], [*kst, *sst]), (1, numel(ks), numel(ss)))
    one = ones(1, dtype=op.t.dtype, device=op.t.device)
    b = _strided(one, (numel(ss), 1), (0, 0))
    out_dtype = D.int64 if op.t.dtype.is_integral else op.t.dtype  # torch sums integers and bool to int64
    res = gemm(OP, a, b, out_dtype=out_dtype)
    return _Operand(_strided(res, ks, contiguous_strides(ks)), kept)


def _contract(x: _Operand, y: _Operand, keep: set[Label], sizes: dict[Label, int]) -> _Operand:
    """The product of ``x`` and ``y`` summed over their shared labels outside ``keep``."""
    batch = [lab for lab in x.labels if lab in y.labels and lab in keep]
    rows = [lab for lab in x.labels if lab not in y.labels]
    cols = [lab for lab in y.labels if lab not in x.labels]
    inner = [lab for lab in x.labels if lab in y.labels and lab not in keep]
    bs = [sizes[lab] for lab in batch]
    m, n, k = (numel([sizes[lab] for lab in g]) for g in (rows, cols, inner))
    xs, xst = x.dims([*batch, *rows, *inner])
    ys, yst = y.dims([*batch, *inner, *cols])
    a = _grouped(_strided(x.t, xs, xst), (*bs, m, k))
    b = _grouped(_strided(y.t, ys, yst), (*bs, k, n))
    res = gemm(OP, a, b, out_dtype=D.promote_types(x.t.dtype, y.t.dtype))
    shape = [*bs, *(sizes[lab] for lab in rows), *(sizes[lab] for lab in cols)]
    return _Operand(_strided(res, shape, contiguous_strides(shape)), [*batch, *rows, *cols])


def _from_sublist(args: tuple[Any, ...]) -> tuple[str, list[NBXTensor]]:
    """einsum.sublist's (tensor, [dims], tensor, [dims], ..., [out dims]) as an equation."""

    def term(sub: Sequence[Any]) -> str:
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
            else:
                raise NbxValueError(f"{OP}: sublist subscripts are ints in [0, 52) or Ellipsis, got {s!r}")
        return "".join(out)

    tensors, terms = list(args[0::2]), [term(s) for s in args[1::2]]
    out = None
    if len(tensors) > len(terms):
        out = tensors.pop()
        out = term(out)
    return ",".join(terms) + ("" if out is None else "->" + out), tensors


def einsum(equation: Any, tensors: Any = None, *rest: Any, path: Sequence[int] | None = None) -> NBXTensor:
    """aten::einsum (and the sublist overload): Einstein summation over ``tensors``."""
    if isinstance(equation, NBXTensor):
        equation, tensors = _from_sublist((equation, tensors, *rest))
    if not isinstance(equation, str):
        raise NbxTypeError(f"{OP}: equation must be a str, got {type(equation).__name__}")
    tensors = list(tensors or [])
    named = [(f"operand {i}", tensor_arg(OP, t, f"operand {i}")) for i, t in enumerate(tensors)]
    if not tensors:
        raise NbxValueError(f"{OP}: must provide at least one operand")
    check_device(OP, *tensors)
    dtype = same_dtype(OP, *named)
    if dtype.is_complex or dtype.is_float8 or (dtype is D.bool_ and len(tensors) > 1):
        raise NbxTypeError(f"{OP}: products of {dtype} tensors are not supported: cast to a float or integer dtype")

    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    raw = lhs.split(",")
    if len(raw) != len(tensors):
        more = "fewer" if len(raw) > len(tensors) else "more"
        raise NbxValueError(
            f"{OP}: {more} operands were provided than specified in the equation "
            f"({len(raw)} terms, {len(tensors)} tensors)"
        )
    terms = [_parse_term(t, f"term {i} of {equation!r}") for i, t in enumerate(raw)]
    n_ellipsis = max(
        (t.ndim - len(letters) for (letters, has_e, _), t in zip(terms, tensors, strict=True) if has_e), default=0
    )
    ops, sizes = _operands(terms, tensors, n_ellipsis)

    if arrow:
        letters, has_e, pos = _parse_term(rhs, "the output")
        for lab in letters:
            if lab not in sizes:
                raise NbxValueError(
                    f"{OP}: output subscript {lab} does not appear in the equation for any input operand"
                )
            if letters.count(lab) > 1:
                raise NbxValueError(f"{OP}: output subscript {lab} appears more than once in the output")
        out_labels: list[Label] = [*letters[:pos], *(range(n_ellipsis) if has_e else ()), *letters[pos:]]
    else:
        counts = {ch: sum(term.count(ch) for term in raw) for ch in sizes if isinstance(ch, str)}
        out_labels = [*range(n_ellipsis), *sorted(ch for ch, c in counts.items() if c == 1)]

    order = _pairs(path, len(ops))
    # Labels used by no other operand and not in the output are summed before any product.
    for i, op in enumerate(ops):
        others = {lab for j, o in enumerate(ops) if j != i for lab in o.labels}
        ops[i] = _reduce(op, others | set(out_labels))
    for step in range(len(ops) - 1):
        # Left to right by default: the running product (appended last) with the next operand.
        i, j = order[step] if order is not None else ((0, 1) if step == 0 else (len(ops) - 1, 0))
        x, y = ops[i], ops[j]
        ops = [o for idx, o in enumerate(ops) if idx not in (i, j)]
        keep = {lab for o in ops for lab in o.labels} | set(out_labels)
        ops.append(_contract(x, y, keep, sizes))
    res = _reduce(ops[0], set(out_labels))
    shape, strides = res.dims(out_labels)
    return _strided(res.t, shape, strides)


def _pairs(path: Sequence[int] | None, n: int) -> list[tuple[int, int]] | None:
    """``path`` checked and split into pairs (None when no path is given)."""
    if path is None:
        return None
    flat = list(path)
    if len(flat) != 2 * (n - 1) or not all(isinstance(p, int) for p in flat):
        raise NbxValueError(f"{OP}: path must list {n - 1} pairs of operand positions ({2 * (n - 1)} ints), got {flat}")
    pairs = []
    left = n
    for a, b in zip(flat[0::2], flat[1::2], strict=True):
        if not (0 <= a < left and 0 <= b < left) or a == b:
            raise NbxValueError(f"{OP}: path pair ({a}, {b}) does not name two of the {left} remaining operands")
        pairs.append((a, b))
        left -= 1
    return pairs
