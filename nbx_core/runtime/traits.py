"""What the backend's kernels can and cannot do: the one place kernels ask about the interpreter.

A kernel that takes another path on Triton's interpreter than on a GPU asks :data:`TRAITS` for the
capability it depends on, never the backend's name, so that the reason for each difference is
written once, here. Tuning (tile sizes, warps, splits, program counts) is not a trait: it is
chosen per backend by the kernel's configuration.

Kernels read a trait as a constexpr, so that the branch not taken is never compiled::

    _LIBDEVICE = tl.constexpr(TRAITS.has_libdevice)

This module imports no Triton: importing it chooses the backend as :mod:`nbx_core.runtime.launch` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import backend as _backend


@dataclass(frozen=True)
class BackendTraits:
    """The capabilities of one backend's kernels (see the module docstring)."""

    name: str
    """``"cpu"``, ``"cuda"`` or ``"aot"``."""
    interpreted: bool
    """Kernels run under Triton's interpreter: one program at a time, in Python, on host memory.
    Paths that only pay off on a GPU (warp specialization) stay off there unless a test asks."""
    runs_kernels: bool
    """Launches compute something; false on aot, whose launches only compile, so a value read back
    from a result says nothing."""
    has_libdevice: bool
    """CUDA's libdevice (libm-accurate exp, log, pow, fmod) can be called; the interpreter has none,
    and numpy's functions are accurate there already."""
    has_inline_asm: bool
    """``tl.inline_asm_elementwise`` (PTX) can be used."""
    widens_bf16_dot: bool
    """``tl.dot`` reads bfloat16 operands' bits as integers (the interpreter does), so operands are
    widened to float32 first (exact)."""
    tiles_on_chip: bool
    """A program's tiles live in a GPU's registers and shared memory, which bound them: a product
    without tensor cores holds a BLOCK_M x BLOCK_N x BLOCK_K broadcast in registers, so such paths
    cap their tiles whatever their configuration asks (larger ones spill, or fail to launch). The
    interpreter holds tiles in host arrays of any size."""


def traits(name: str) -> BackendTraits:
    """The traits of backend ``name`` (``"cpu"``, ``"cuda"`` or ``"aot"``)."""
    interpreted = name == "cpu"
    return BackendTraits(
        name=name,
        interpreted=interpreted,
        runs_kernels=name != "aot",
        has_libdevice=not interpreted,
        has_inline_asm=not interpreted,
        widens_bf16_dot=interpreted,
        tiles_on_chip=not interpreted,
    )


TRAITS: BackendTraits = traits(_backend.current())
"""The traits of this process's backend."""
