"""Shape and stride arithmetic with ATen's rules: dim wrapping, broadcasting, view strides.

Pure Python on tuples; every function names the op in its errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import IndexOutOfRangeError, NbxTypeError, ShapeError

Shape = tuple[int, ...]


def wrap_dim(op: str, dim: int, ndim: int, arg: str = "dim") -> int:
    """``dim`` wrapped into ``[0, ndim)``; a 0-dim tensor accepts -1 and 0 like torch."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise NbxTypeError(f"{op}: {arg} must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexOutOfRangeError(f"{op}: {arg}={dim} is out of range: expected a value in {-n}..{n - 1}")
    return dim % n


def wrap_dims(op: str, dims: int | Sequence[int] | None, ndim: int, arg: str = "dim") -> tuple[int, ...]:
    """A list of dims wrapped and checked for repeats; None means every dim."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(wrap_dim(op, d, ndim, arg) for d in dims)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: {arg} {tuple(dims)} names a dim more than once")
    return out


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements (torch's: a size-0 or size-1 dim still gets its stride)."""
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's rule: size-1 dims are ignored, and an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


CHANNELS_LAST_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}
"""The dims of a channels-last (4-D) and channels-last-3d (5-D) tensor, innermost first."""


def strides_in_order(shape: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Dense strides of ``shape`` with the dims of ``order`` innermost first (sizes multiplied as
    they are, as torch does: a size-0 dim makes the outer strides 0)."""
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def is_contiguous_in(shape: Sequence[int], strides: Sequence[int], order: Sequence[int]) -> bool:
    """Whether the dims of ``order``, innermost first, are laid out densely (size-1 dims ignored)."""
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def non_overlapping_and_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's ``is_non_overlapping_and_dense``: some permutation of the dims is contiguous (an
    empty tensor counts when it is contiguous)."""
    if is_contiguous(shape, strides):
        return True
    expected = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def stride_order(shape: Sequence[int], *strides: Sequence[int]) -> list[int]:
    """The dims of ``shape`` innermost first, as torch orders them for operands with these
    (broadcast) strides: an insertion sort by stride, asking each operand in turn; a stride-0 dim
    says nothing for its operand, and of two dims with equal strides the smaller goes inside."""
    perm = list(range(len(shape) - 1, -1, -1))

    def should_swap(a: int, b: int) -> int:
        for st in strides:
            if st[a] == 0 or st[b] == 0:
                continue
            if st[a] != st[b]:
                return -1 if st[a] < st[b] else 1
            if shape[a] > shape[b]:
                return 1
        return 0

    for i in range(1, len(shape)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def result_strides(
    shape: Sequence[int], operands: Sequence[tuple[Sequence[int], Sequence[int]]], scalars: bool = False
) -> tuple[int, ...]:
    """Strides of a new elementwise result of ``shape`` computed from tensor ``operands`` (shape,
    strides), by torch's TensorIterator: the result is laid out as its operands are.

    When every operand has the result's shape (and no number takes part, ``scalars``): all
    contiguous gives contiguous, all channels-last gives channels-last, all dense with the same
    strides gives those strides. Otherwise the dims are ordered by :func:`stride_order` over the
    operands' broadcast strides, and the result is dense in that order.
    """
    shape = tuple(shape)
    if operands and not scalars and all(tuple(s) == shape for s, _ in operands):
        if all(is_contiguous(s, st) for s, st in operands):
            return contiguous_strides(shape)
        order = CHANNELS_LAST_ORDER.get(len(shape))
        if order and all(is_contiguous_in(s, st, order) for s, st in operands):
            return strides_in_order(shape, order)
        first = tuple(operands[0][1])
        if all(non_overlapping_and_dense(s, st) and tuple(st) == first for s, st in operands):
            return first
    perm = stride_order(shape, *(broadcast_strides(s, st, shape) for s, st in operands))
    if perm == list(range(len(shape) - 1, -1, -1)):
        return contiguous_strides(shape)
    return strides_in_order(shape, perm)


def check_shape(op: str, shape: Sequence[int], arg: str = "size") -> Shape:
    """A concrete shape: non-negative ints."""
    out = []
    for s in shape:
        if not isinstance(s, int) or isinstance(s, bool):
            raise NbxTypeError(f"{op}: {arg} must hold ints, got {s!r}")
        if s < 0:
            raise ShapeError(f"{op}: {arg} {tuple(shape)} has a negative dimension {s}")
        out.append(s)
    return tuple(out)


def as_shape(op: str, size: object, arg: str = "size") -> tuple[int, ...]:
    """Accept ``f(2, 3)``-style varargs already packed, a list, a tuple or a single int."""
    if isinstance(size, int) and not isinstance(size, bool):
        return (size,)
    if isinstance(size, Sequence) and not isinstance(size, str):
        if len(size) == 1 and isinstance(size[0], Sequence) and not isinstance(size[0], str):
            size = size[0]
        return tuple(int(s) if hasattr(s, "__index__") else s for s in size)
    raise NbxTypeError(f"{op}: {arg} must be a sequence of ints, got {type(size).__name__}")


def infer_size(op: str, shape: Sequence[int], n: int) -> Shape:
    """Resolve one ``-1`` in ``shape`` so it holds ``n`` elements (ATen's infer_size)."""
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise ShapeError(f"{op}: only one dimension can be inferred, got shape {tuple(shape)}")
            infer = i
        elif s < 0:
            raise ShapeError(f"{op}: invalid shape dimension {s} in {tuple(shape)}")
        else:
            known *= s
    out = list(shape)
    if infer is not None:
        if known == 0:
            raise ShapeError(
                f"{op}: cannot reshape a tensor of {n} elements into shape {tuple(shape)}: the -1 is "
                "ambiguous when another dimension is 0"
            )
        if n % known:
            raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
        out[infer] = n // known
    elif known != n:
        raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
    return tuple(out)


def view_strides(old_shape: Sequence[int], old_strides: Sequence[int], new_shape: Sequence[int]):
    """Strides that view ``old`` as ``new_shape`` without copying, or None (ATen's computeStride)."""
    if not old_shape:
        return (1,) * len(new_shape)  # a 0-dim tensor's one element: any all-ones shape views it
    if numel(old_shape) == 0:
        return contiguous_strides(new_shape) if tuple(old_shape) != tuple(new_shape) else tuple(old_strides)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1 and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> Shape:
    """The shape ``shapes`` broadcast to, right-aligned; an error names the op and the shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, size in enumerate(s):
            cur = out[off + i]
            if size == cur or size == 1:
                continue
            if cur == 1:
                out[off + i] = size
            else:
                raise ShapeError(
                    f"{op}: shapes {', '.join(str(tuple(x)) for x in shapes)} do not broadcast "
                    f"(dim {off + i - ndim}: {cur} vs {size})"
                )
    return tuple(out)


def broadcast_strides(shape: Sequence[int], strides: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """Strides of a tensor of ``shape`` expanded to ``target`` (stride 0 along broadcast dims)."""
    off = len(target) - len(shape)
    out = [0] * len(target)
    for i in range(len(shape)):
        out[off + i] = 0 if (shape[i] == 1 and target[off + i] != 1) else strides[i]
    return tuple(out)


def coalesce_in_memory_order(shape: Sequence[int], *strides: Sequence[int]) -> tuple[Shape, list[tuple[int, ...]]]:
    """:func:`coalesce` after putting the dims in the order the first operand lays them out in
    memory (outermost first; the other operands break ties), so that operands sharing any dense
    layout (channels-last, transposed) walk as one dim. For elementwise work, which may visit
    elements in any order."""
    order = stride_order(shape, *strides)[::-1]
    return coalesce(tuple(shape[d] for d in order), *(tuple(st[d] for d in order) for st in strides))


def coalesce(shape: Sequence[int], *strides: Sequence[int]) -> tuple[Shape, list[tuple[int, ...]]]:
    """Merge adjacent dims that every operand walks contiguously; drop size-1 dims.

    Returns the shortest (shape, strides per operand) that visits the same elements in the same
    order, so kernels index with as few divisions as possible.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (1,), [(0,) for _ in strides]
    out_shape = [shape[dims[0]]]
    out_strides = [[st[dims[0]]] for st in strides]
    for d in dims[1:]:
        size = shape[d]
        if all(st[-1] == size * s[d] for st, s in zip(out_strides, strides, strict=True)):
            out_shape[-1] *= size
            for st, s in zip(out_strides, strides, strict=True):
                st[-1] = s[d]
        else:
            out_shape.append(size)
            for st, s in zip(out_strides, strides, strict=True):
                st.append(s[d])
    return tuple(out_shape), [tuple(st) for st in out_strides]
