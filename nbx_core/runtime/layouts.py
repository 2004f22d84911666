"""Whether new results are being laid out for a Program's run, which chooses its values' layouts.

Outside a Program, an op's result has the strides torch gives it (torch's TensorIterator rule for
elementwise results: :func:`nbx_core.shape.result_strides`). Inside one, a value's layout is the
runtime's choice, as it is torch.compile's: a Program runs its nodes within :func:`program_layouts`,
and :mod:`nbx_core.runtime.pointwise` then makes a result row-major unless torch's rule makes it
channels-last (which the convolutions after it want). A transposed operand, such as Whisper's
permuted convolution output feeding its residual stream, would otherwise lay out every later
residual add, and the matrix products and layer norms around them, transposed. nbx-attention's
``scaled_dot_product_attention`` writes each position's heads side by side, as torch's CUDA
kernels do, so merging the heads back after attention is a view. This module imports no Triton,
so that loading a graph does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_in_program: ContextVar[bool] = ContextVar("nbx_in_program", default=False)


def in_program() -> bool:
    """Whether the current op runs as a node of a Program (within :func:`program_layouts`)."""
    return _in_program.get()


@contextmanager
def program_layouts() -> Iterator[None]:
    """Run the ops within as a Program's nodes: see the module docstring."""
    token = _in_program.set(True)
    try:
        yield
    finally:
        _in_program.reset(token)
