"""Metadata ops: new views of the same storage, by ATen's rules and with ATen's errors.

None of these moves data, except ``reshape``/``flatten``/``reshape_as`` when no view exists
(then they copy, as torch does) and ``contiguous`` on a non-contiguous input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import dtypes as D
from ..errors import IndexOutOfRangeError, NbxTypeError, NbxValueError, ShapeError
from ..shape import (
    as_shape,
    broadcast_shapes,
    check_shape,
    contiguous_strides,
    infer_size,
    view_strides,
    wrap_dim,
    wrap_dims,
)
from ..shape import (
    numel as _numel,
)
from ..tensor import NBXTensor
from ..tensor.args import tensor_arg
from .layout import format_name, is_contiguous_as


def _view(
    t: NBXTensor, shape: Sequence[int], strides: Sequence[int], offset: int | None = None, dtype: D.DType | None = None
) -> NBXTensor:
    return NBXTensor(t._storage, shape, strides, t._offset if offset is None else offset, dtype or t.dtype)


def alias(self: NBXTensor) -> NBXTensor:
    """A new tensor object viewing the same elements."""
    return _view(self, self._shape, self._strides)


def detach(self: NBXTensor) -> NBXTensor:
    """NBX keeps no autograd graph: detach is a plain alias."""
    return alias(self)


def lift_fresh(self: NBXTensor) -> NBXTensor:
    """torch.export's marker for a constant tensor lifted into the graph: the tensor itself."""
    return self


def view(self: NBXTensor, *size: Any) -> NBXTensor:
    """``view(shape)``; ``view(dtype)`` reinterprets the bytes when the element sizes allow."""
    tensor_arg("view", self)
    if len(size) == 1 and (isinstance(size[0], D.DType) or isinstance(size[0], str)):
        return view_dtype(self, D.as_dtype(size[0]))
    shape = infer_size("view", as_shape("view", size), self.numel())
    strides = view_strides(self._shape, self._strides, shape)
    if strides is None:
        raise ShapeError(
            f"view: size {shape} is not compatible with input of size {self._shape} and stride "
            f"{self._strides} (at least one dimension spans across two contiguous subspaces): "
            "use reshape instead"
        )
    return _view(self, shape, strides)


def view_dtype(self: NBXTensor, dtype: D.DType) -> NBXTensor:
    old, new = self.dtype.itemsize, dtype.itemsize
    if old == new:
        return _view(self, self._shape, self._strides, dtype=dtype)
    if self.ndim == 0:
        raise ShapeError(f"view: cannot view a 0-dim {self.dtype} tensor as {dtype}: element sizes differ")
    if self._strides[-1] != 1:
        raise ShapeError("view: viewing as a dtype of another size needs the last dim to have stride 1")
    if new > old:
        ratio = new // old
        if self._shape[-1] % ratio or self._offset % ratio or any(s % ratio for s in self._strides[:-1]):
            raise ShapeError(
                f"view: cannot view {self.dtype} {self._shape} as {dtype}: the last dim, the offset and "
                f"the other strides must be divisible by {ratio}"
            )
        shape = (*self._shape[:-1], self._shape[-1] // ratio)
        strides = (*(s // ratio for s in self._strides[:-1]), 1)
        return _view(self, shape, strides, self._offset // ratio, dtype)
    ratio = old // new
    shape = (*self._shape[:-1], self._shape[-1] * ratio)
    strides = (*(s * ratio for s in self._strides[:-1]), 1)
    return _view(self, shape, strides, self._offset * ratio, dtype)


def _unsafe_view(self: NBXTensor, size: Sequence[int]) -> NBXTensor:
    """torch.export emits this after a copy: a view (or, when strides forbid one, a reshape)."""
    return reshape(self, size)


def view_as(self: NBXTensor, other: NBXTensor) -> NBXTensor:
    return view(self, other.shape)


def reshape(self: NBXTensor, *shape: Any) -> NBXTensor:
    """A view when the strides allow one, else a contiguous copy (torch's rule)."""
    tensor_arg("reshape", self)
    target = infer_size("reshape", as_shape("reshape", shape), self.numel())
    strides = view_strides(self._shape, self._strides, target)
    if strides is not None:
        return _view(self, target, strides)
    flat = self.contiguous()  # aten::contiguous from the registry: ops.copy imports this module
    return _view(flat, target, contiguous_strides(target))


def reshape_as(self: NBXTensor, other: NBXTensor) -> NBXTensor:
    return reshape(self, other.shape)


def flatten(self: NBXTensor, start_dim: int = 0, end_dim: int = -1) -> NBXTensor:
    if self.ndim == 0:
        return reshape(self, (1,))
    s = wrap_dim("flatten", start_dim, self.ndim, "start_dim")
    e = wrap_dim("flatten", end_dim, self.ndim, "end_dim")
    if s > e:
        raise NbxValueError(f"flatten: start_dim ({start_dim}) cannot come after end_dim ({end_dim})")
    if s == e:
        return self
    shape = (*self._shape[:s], _numel(self._shape[s : e + 1]), *self._shape[e + 1 :])
    return reshape(self, shape)


def permute(self: NBXTensor, *dims: Any) -> NBXTensor:
    tensor_arg("permute", self)
    order = as_shape("permute", dims, "dims")
    if len(order) != self.ndim:
        raise ShapeError(f"permute: dims {order} must name each of the tensor's {self.ndim} dims once")
    order = wrap_dims("permute", order, self.ndim, "dims")
    return _view(self, [self._shape[d] for d in order], [self._strides[d] for d in order])


def transpose(self: NBXTensor, dim0: int, dim1: int) -> NBXTensor:
    if self.ndim == 0:
        wrap_dim("transpose", dim0, 0, "dim0")
        wrap_dim("transpose", dim1, 0, "dim1")
        return alias(self)
    a = wrap_dim("transpose", dim0, self.ndim, "dim0")
    b = wrap_dim("transpose", dim1, self.ndim, "dim1")
    shape, strides = list(self._shape), list(self._strides)
    shape[a], shape[b] = shape[b], shape[a]
    strides[a], strides[b] = strides[b], strides[a]
    return _view(self, shape, strides)


def t(self: NBXTensor) -> NBXTensor:
    if self.ndim > 2:
        raise ShapeError(f"t: expects a tensor of at most 2 dims, got {self.ndim}: use transpose or permute")
    return transpose(self, 0, 1) if self.ndim == 2 else alias(self)


def movedim(self: NBXTensor, source: int | Sequence[int], destination: int | Sequence[int]) -> NBXTensor:
    src = wrap_dims("movedim", source, self.ndim, "source")
    dst = wrap_dims("movedim", destination, self.ndim, "destination")
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {source} and destination {destination} must have the same length")
    order = [-1] * self.ndim
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(d for d in range(self.ndim) if d not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return permute(self, order)


def expand(self: NBXTensor, *size: Any, implicit: bool = False) -> NBXTensor:
    """Broadcast to ``size`` with stride 0 along stretched dims; -1 keeps a dim."""
    target = as_shape("expand", size)
    if len(target) < self.ndim:
        raise ShapeError(
            f"expand: the number of sizes ({len(target)}) must be at least the tensor's dims ({self.ndim})"
        )
    off = len(target) - self.ndim
    shape, strides = [], []
    for i, want in enumerate(target):
        j = i - off
        if j < 0:
            if want < 0:
                raise ShapeError(f"expand: -1 is not allowed in a new leading dimension (size {target})")
            shape.append(want)
            strides.append(0)
            continue
        have = self._shape[j]
        if want == -1:
            want = have
        if have == want:
            shape.append(have)
            strides.append(self._strides[j])
        elif have == 1:
            if want < 0:
                raise ShapeError(f"expand: invalid size {want} in {target}")
            shape.append(want)
            strides.append(0)
        else:
            raise ShapeError(
                f"expand: the expanded size of the tensor ({want}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}; target sizes {target}, tensor sizes {self._shape}"
            )
    return _view(self, shape, strides)


def expand_as(self: NBXTensor, other: NBXTensor) -> NBXTensor:
    return expand(self, other.shape)


def broadcast_to(self: NBXTensor, size: Sequence[int]) -> NBXTensor:
    return expand(self, size)


def broadcast_tensors(tensors: Sequence[NBXTensor]) -> list[NBXTensor]:
    shape = broadcast_shapes("broadcast_tensors", *(t.shape for t in tensors))
    return [expand(t, shape) for t in tensors]


def squeeze(self: NBXTensor, dim: int | Sequence[int] | None = None) -> NBXTensor:
    dims = set(wrap_dims("squeeze", dim, self.ndim)) if self.ndim else set()
    if self.ndim == 0 and dim is not None:
        wrap_dims("squeeze", dim, 0)
    keep = [i for i in range(self.ndim) if not (i in dims and self._shape[i] == 1)]
    return _view(self, [self._shape[i] for i in keep], [self._strides[i] for i in keep])


def unsqueeze(self: NBXTensor, dim: int) -> NBXTensor:
    d = wrap_dim("unsqueeze", dim, self.ndim + 1)
    stride = self._shape[d] * self._strides[d] if d < self.ndim else 1
    shape = (*self._shape[:d], 1, *self._shape[d:])
    strides = (*self._strides[:d], stride, *self._strides[d:])
    return _view(self, shape, strides)


def _sym_index(op: str, value: Any, arg: str) -> int:
    if hasattr(value, "__index__") and not isinstance(value, bool):
        return int(value.__index__())
    raise NbxTypeError(f"{op}: {arg} must be an int, got {type(value).__name__}")


def narrow(self: NBXTensor, dim: int, start: int, length: int) -> NBXTensor:
    if self.ndim == 0:
        raise ShapeError("narrow: cannot be applied to a 0-dim tensor")
    d = wrap_dim("narrow", dim, self.ndim)
    size = self._shape[d]
    start = _sym_index("narrow", start, "start")
    length = _sym_index("narrow", length, "length")
    if not -size <= start <= size:
        raise IndexOutOfRangeError(f"narrow: start ({start}) is out of range for dim {d} of size {size}")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise IndexOutOfRangeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size})")
    return _slice_view(self, d, start, length, 1)


def _slice_view(self: NBXTensor, d: int, start: int, length: int, step: int) -> NBXTensor:
    shape, strides = list(self._shape), list(self._strides)
    offset = self._offset + start * strides[d] if length else self._offset
    shape[d] = length
    strides[d] *= step
    return _view(self, shape, strides, offset)


def slice(self: NBXTensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> NBXTensor:
    """``x[start:end:step]`` along ``dim``: bounds clamp like Python slicing; step must be positive."""
    if self.ndim == 0:
        raise ShapeError("slice: cannot be applied to a 0-dim tensor")
    d = wrap_dim("slice", dim, self.ndim)
    step = _sym_index("slice", step, "step")
    if step <= 0:
        raise NbxValueError(f"slice: step must be positive, got {step} (flip the tensor for a reverse slice)")
    size = self._shape[d]
    s = 0 if start is None else _sym_index("slice", start, "start")
    e = size if end is None else _sym_index("slice", end, "end")
    if s < 0:
        s += size
    if e < 0:
        e += size
    s = min(max(s, 0), size)
    e = min(max(e, s), size)
    length = (e - s + step - 1) // step
    return _slice_view(self, d, s, length, step)


def select(self: NBXTensor, dim: int, index: int) -> NBXTensor:
    if self.ndim == 0:
        raise IndexOutOfRangeError("select: cannot be applied to a 0-dim tensor")
    d = wrap_dim("select", dim, self.ndim)
    size = self._shape[d]
    index = _sym_index("select", index, "index")
    if not -size <= index < size:
        raise IndexOutOfRangeError(f"select: index {index} is out of range for dim {d} of size {size}")
    index %= size
    shape = self._shape[:d] + self._shape[d + 1 :]
    strides = self._strides[:d] + self._strides[d + 1 :]
    return _view(self, shape, strides, self._offset + index * self._strides[d])


def as_strided(
    self: NBXTensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> NBXTensor:
    """A view with explicit geometry; it must lie inside the storage."""
    shape = check_shape("as_strided", as_shape("as_strided", size))
    strides = tuple(as_shape("as_strided", stride, "stride"))
    if len(strides) != len(shape):
        raise ShapeError(f"as_strided: size {shape} and stride {strides} must have the same length")
    if any(s < 0 for s in strides):
        raise ShapeError(f"as_strided: negative strides are not supported, got {strides}")
    offset = self._offset if storage_offset is None else _sym_index("as_strided", storage_offset, "storage_offset")
    if offset < 0:
        raise ShapeError(f"as_strided: storage_offset must be non-negative, got {offset}")
    if _numel(shape):
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
        capacity = self._storage.nbytes // self.dtype.itemsize
        if last >= capacity:
            raise ShapeError(
                f"as_strided: size {shape}, stride {strides} and offset {offset} reach element {last}, "
                f"out of bounds for a storage of {capacity} elements"
            )
    return _view(self, shape, strides, offset)


def unfold(self: NBXTensor, dimension: int, size: int, step: int) -> NBXTensor:
    d = wrap_dim("unfold", dimension, self.ndim, "dimension")
    have = self._shape[d] if self.ndim else 1
    if size > have:
        raise ShapeError(f"unfold: size ({size}) must not exceed the size of dim {d} ({have})")
    if step <= 0:
        raise NbxValueError(f"unfold: step must be positive, got {step}")
    if size < 0:
        raise NbxValueError(f"unfold: size must be non-negative, got {size}")
    if self.ndim == 0:
        return _view(self, (size,), (1,))
    shape, strides = list(self._shape), list(self._strides)
    shape[d] = (have - size) // step + 1
    strides[d] = self._strides[d] * step
    return _view(self, [*shape, size], [*strides, self._strides[d]])


def diagonal(self: NBXTensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> NBXTensor:
    if self.ndim < 2:
        raise ShapeError(f"diagonal: needs a tensor of at least 2 dims, got {self.ndim}")
    a = wrap_dim("diagonal", dim1, self.ndim, "dim1")
    b = wrap_dim("diagonal", dim2, self.ndim, "dim2")
    if a == b:
        raise ShapeError(f"diagonal: dim1 and dim2 cannot be the same dim ({dim1}, {dim2})")
    start = self._offset
    if offset >= 0:
        length = max(min(self._shape[a], self._shape[b] - offset), 0)
        start += offset * self._strides[b]
    else:
        length = max(min(self._shape[a] + offset, self._shape[b]), 0)
        start -= offset * self._strides[a]
    if length == 0:
        start = self._offset
    keep = [i for i in range(self.ndim) if i not in (a, b)]
    shape = [self._shape[i] for i in keep] + [length]
    strides = [self._strides[i] for i in keep] + [self._strides[a] + self._strides[b]]
    return _view(self, shape, strides, start)


def unbind(self: NBXTensor, dim: int = 0) -> tuple[NBXTensor, ...]:
    if self.ndim == 0:
        raise ShapeError("unbind: dimension specified as 0 but the tensor has no dimensions")
    d = wrap_dim("unbind", dim, self.ndim)
    return tuple(select(self, d, i) for i in range(self._shape[d]))


def split(self: NBXTensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[NBXTensor, ...]:
    """torch.split: an int makes pieces of that size (the last may be smaller); a list gives sizes."""
    if not isinstance(split_size, int):
        return split_with_sizes(self, split_size, dim)
    if self.ndim == 0:
        raise ShapeError("split: cannot split a 0-dim tensor")
    d = wrap_dim("split", dim, self.ndim)
    size = self._shape[d]
    if split_size < 0:
        raise NbxValueError(f"split: split_size must be non-negative, got {split_size}")
    if split_size == 0:
        if size != 0:
            raise NbxValueError(f"split: split_size can only be 0 if dim {d} has size 0, but it has {size}")
        return (alias(self),)
    pieces = max((size + split_size - 1) // split_size, 1)
    return tuple(_slice_view(self, d, i * split_size, min(split_size, size - i * split_size), 1) for i in range(pieces))


def split_with_sizes(self: NBXTensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[NBXTensor, ...]:
    if self.ndim == 0:
        raise ShapeError("split_with_sizes: cannot split a 0-dim tensor")
    d = wrap_dim("split_with_sizes", dim, self.ndim)
    sizes = [_sym_index("split_with_sizes", s, "split_sizes") for s in split_sizes]
    if any(s < 0 for s in sizes):
        raise NbxValueError(f"split_with_sizes: split_sizes {sizes} must be non-negative")
    if sum(sizes) != self._shape[d]:
        raise ShapeError(
            f"split_with_sizes: split_sizes {sizes} sum to {sum(sizes)}, but dim {d} has size {self._shape[d]}"
        )
    out, start = [], 0
    for s in sizes:
        out.append(_slice_view(self, d, start, s, 1))
        start += s
    return tuple(out)


def chunk(self: NBXTensor, chunks: int, dim: int = 0) -> tuple[NBXTensor, ...]:
    """torch.chunk: pieces of ceil(size / chunks); fewer than ``chunks`` pieces can come back."""
    if self.ndim == 0:
        raise ShapeError("chunk: cannot chunk a 0-dim tensor")
    if chunks <= 0:
        raise NbxValueError(f"chunk: chunks must be positive, got {chunks}")
    d = wrap_dim("chunk", dim, self.ndim)
    size = self._shape[d]
    piece = (size + chunks - 1) // chunks
    if piece == 0:
        return tuple(_slice_view(self, d, 0, 0, 1) for _ in range(chunks)) if size == 0 else ()
    return split(self, piece, d)


def tensor_split(self: NBXTensor, indices_or_sections: Any, dim: int = 0) -> tuple[NBXTensor, ...]:
    """torch.tensor_split: N sections (the first size % N get one extra) or split indices."""
    if self.ndim == 0:
        raise ShapeError("tensor_split: expected at least a 1-dimensional tensor, got a 0-dim tensor")
    d = wrap_dim("tensor_split", dim, self.ndim)
    size = self._shape[d]
    ios = indices_or_sections
    if isinstance(ios, NBXTensor):
        if ios.dtype.kind not in "iu" or ios.ndim > 1:
            raise NbxTypeError("tensor_split: a tensor indices_or_sections must be a 0-dim or 1-dim integer tensor")
        ios = int(ios) if ios.ndim == 0 else [int(v) for v in ios.numpy().tolist()]
    if isinstance(ios, int):
        if ios <= 0:
            raise NbxValueError(f"tensor_split: number of sections must be larger than 0, got {ios}")
        base, extra = divmod(size, ios)
        out, start = [], 0
        for i in range(ios):
            n = base + (1 if i < extra else 0)
            out.append(_slice_view(self, d, start, n, 1))
            start += n
        return tuple(out)
    bounds = [_sym_index("tensor_split", i, "indices") for i in ios]
    out, prev = [], 0
    for b in [*bounds, size]:
        s = min(max(prev if prev >= 0 else prev + size, 0), size)
        e = b if b >= 0 else b + size
        e = min(max(e, s), size)
        out.append(_slice_view(self, d, s, e - s, 1))
        prev = b
    return tuple(out)


def _atleast(op: str, one: Any, tensors: Any) -> NBXTensor | list[NBXTensor]:
    # ATen's ``.default`` takes one tensor, ``.Sequence`` a list, and returns a list.
    if isinstance(tensors, list | tuple):
        return [one(tensor_arg(op, t, f"tensors[{i}]")) for i, t in enumerate(tensors)]
    return one(tensor_arg(op, tensors))


def _at_least_1d(t: NBXTensor) -> NBXTensor:
    return reshape(t, (1,)) if t.ndim == 0 else t


def _at_least_2d(t: NBXTensor) -> NBXTensor:
    return reshape(t, (1, 1)) if t.ndim == 0 else unsqueeze(t, 0) if t.ndim == 1 else t


def _at_least_3d(t: NBXTensor) -> NBXTensor:
    # torch's rule: (N,) -> (1, N, 1) and (M, N) -> (M, N, 1).
    if t.ndim == 0:
        return reshape(t, (1, 1, 1))
    if t.ndim == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if t.ndim == 2 else t


def atleast_1d(self: Any) -> NBXTensor | list[NBXTensor]:
    """A tensor, or each tensor of a list, with at least 1 dim (0-dim becomes shape (1,))."""
    return _atleast("atleast_1d", _at_least_1d, self)


def atleast_2d(self: Any) -> NBXTensor | list[NBXTensor]:
    """A tensor, or each tensor of a list, with at least 2 dims (leading ones added)."""
    return _atleast("atleast_2d", _at_least_2d, self)


def atleast_3d(self: Any) -> NBXTensor | list[NBXTensor]:
    """A tensor, or each tensor of a list, with at least 3 dims, by torch's rule."""
    return _atleast("atleast_3d", _at_least_3d, self)


def view_as_real(self: NBXTensor) -> NBXTensor:
    if not self.dtype.is_complex:
        raise NbxTypeError(f"view_as_real: expects a complex tensor, got {self.dtype}")
    return _view(self, (*self._shape, 2), (*(s * 2 for s in self._strides), 1), self._offset * 2, D.float32)


def view_as_complex(self: NBXTensor) -> NBXTensor:
    if self.dtype is not D.float32:
        raise NbxTypeError(
            f"view_as_complex: expects a float32 tensor (NBX's only complex type is complex64), got {self.dtype}"
        )
    if self.ndim == 0 or self._shape[-1] != 2:
        raise ShapeError(f"view_as_complex: the last dim must have size 2, got shape {self._shape}")
    if self._strides[-1] != 1:
        raise ShapeError(f"view_as_complex: the last dim must have stride 1, got stride {self._strides}")
    if any(s % 2 for s in self._strides[:-1]) or self._offset % 2:
        raise ShapeError("view_as_complex: every stride but the last, and the offset, must be divisible by 2")
    return _view(self, self._shape[:-1], [s // 2 for s in self._strides[:-1]], self._offset // 2, D.complex64)


def real(self: NBXTensor) -> NBXTensor:
    return select(view_as_real(self), -1, 0) if self.dtype.is_complex else self


def imag(self: NBXTensor) -> NBXTensor:
    if not self.dtype.is_complex:
        raise NbxTypeError(f"imag: imag is not implemented for tensors with non-complex dtype {self.dtype}")
    return select(view_as_real(self), -1, 1)


def size(self: NBXTensor, dim: int | None = None):
    return self.size(dim)


def stride(self: NBXTensor, dim: int | None = None):
    return self.stride(dim)


def numel(self: NBXTensor) -> int:
    return self.numel()


def dim(self: NBXTensor) -> int:
    return self.ndim


def is_contiguous(self: NBXTensor, memory_format: Any = None) -> bool:
    """Whether ``self`` is contiguous in ``memory_format`` (default: row-major)."""
    return is_contiguous_as(self, format_name("is_contiguous", memory_format))
