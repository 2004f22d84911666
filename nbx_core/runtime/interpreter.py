"""Triton's interpreter as the cpu backend drives it, whatever was imported first and from any thread.

- ``@triton.jit`` makes a function interpreted or compiled when it is decorated, by
  ``TRITON_INTERPRET`` at that moment. ``import nbx_core`` sets it, but a process may have imported
  Triton before (``torch.export`` does): Triton's own helpers (``tl.sum``, ``tl.cdiv`` …) are then
  compiled-mode functions, which an interpreted kernel cannot call. :func:`configure` switches
  Triton to its interpreter and rebuilds those helpers as interpreted ones.
- During a launch the interpreter patches ``triton.language`` and holds the grid in module state,
  so launches from several threads would corrupt each other: :func:`launch` runs one at a time.
- The interpreter patches the language through the ``triton.language`` module it finds in a jit
  function's globals and refuses a function whose module does not import it: :func:`launch` gives
  such modules a name for it, and turns the interpreter's failure on functions imported by name
  from the language (``from triton.language import load``) into an error saying what to write.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
import triton
import triton.language as tl
from triton.runtime import interpreter as interpreter_module
from triton.runtime.errors import InterpreterError
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from ..errors import BackendError

_lock = threading.RLock()
_language_visible: set[Any] = set()  # kernels whose jit functions all see triton.language
_LANGUAGE_NAME = "_nbx_triton_language"


def launch(kernel: Any, grid: Sequence[int], args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """``kernel[grid](*args, **kwargs)`` under the interpreter, one launch at a time in the process."""
    with _lock:
        if kernel not in _language_visible:
            make_language_visible(kernel)
            _language_visible.add(kernel)
        try:
            kernel[grid](*args, **kwargs)
        except InterpreterError as e:
            problem = _language_problem(kernel, str(e))
            if problem is None:
                raise
            fn = _python_function(kernel)
            raise BackendError(f"{fn.__module__}.{fn.__qualname__}: {problem}") from e


def _language_problem(kernel: Any, error: str) -> str | None:
    """What in the kernel's modules made the interpreter fail with ``error``, if it is a known trap."""
    if "triton.language must be visible" in error:
        return (
            "a @triton.jit function it calls is defined in a module that does not import triton.language, "
            "which Triton's interpreter (the cpu backend) needs there: add `import triton.language as tl` "
            "to that module"
        )
    if "_semantic" in error:
        imported = sorted(
            {
                f"{ns['__name__']}.{name}"
                for ns in _namespaces(kernel)
                for name, v in ns.items()
                if tl.core.is_builtin(v) and getattr(tl, name, None) is v
            }
        )
        if imported:
            return (
                f"Triton's interpreter (the cpu backend) cannot run functions imported by name from "
                f"triton.language ({', '.join(imported)}): call them through the module, as tl.load(...) "
                "after `import triton.language as tl`"
            )
    return None


def configure() -> None:
    """Interpret every jit function decorated from now on, rebuild Triton's language helpers that
    were decorated compiled (Triton imported before ``TRITON_INTERPRET`` was set) as interpreted, and
    make float32 to bfloat16 casts round as a GPU's do."""
    triton.knobs.runtime.interpret = True
    _round_bfloat16_to_nearest_even()
    rebuilt: dict[int, tuple[JITFunction, InterpretedFunction]] = {}  # one per helper: identity matters
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "triton.language" or name.startswith("triton.language.")):
            continue
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == name]
        for owner in (module, *classes):  # classes: tensor methods such as x.sum() are the helpers too
            for attr, value in list(vars(owner).items()):
                if type(value) is JITFunction:
                    if id(value) not in rebuilt:
                        rebuilt[id(value)] = (value, _interpreted(value))
                    helper = rebuilt[id(value)][1]
                    setattr(owner, attr, helper if owner is module else _method(helper))


def _round_bfloat16_to_nearest_even() -> None:
    """The interpreter casts float32 to bfloat16 by dropping the low bits; GPUs, and torch, round to
    nearest even. Every kernel's bfloat16 results on the cpu backend would otherwise sit up to an ulp
    toward zero from the GPU's, and tests of bfloat16 models would measure the interpreter."""
    builder = interpreter_module.InterpreterBuilder
    if getattr(builder, "_nbx_rounds_bf16", False):
        return
    original_cast, original_fp_to_fp = builder.cast_impl, builder.create_fp_to_fp

    def rounded(src: Any, dst_type: Any) -> Any:
        bits = np.asarray(src.data, dtype=np.float32).view(np.uint32)
        near = ((bits.astype(np.uint64) + ((bits >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)
        nan = (bits & 0x7FFFFFFF) > 0x7F800000
        out = np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), near)
        return interpreter_module.TensorHandle(out, dst_type.scalar)

    def is_bf16_narrowing(src: Any, dst_type: Any) -> bool:
        return src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16

    def cast(self: Any, src: Any, dst_type: Any) -> Any:
        return rounded(src, dst_type) if is_bf16_narrowing(src, dst_type) else original_cast(self, src, dst_type)

    def fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        if is_bf16_narrowing(src, dst_type):
            return rounded(src, dst_type)
        return original_fp_to_fp(self, src, dst_type, rounding_mode)

    builder.cast_impl, builder.create_fp_to_fp = cast, fp_to_fp
    builder._nbx_rounds_bf16 = True


def _method(helper: InterpretedFunction) -> Any:
    """``helper`` as a method (x.sum()): an interpreted function binds no ``self``, a plain function does."""

    def method(*args: Any, **kwargs: Any) -> Any:
        return helper(*args, **kwargs)

    method.__name__ = method.__qualname__ = helper.__name__
    return method


def _interpreted(fn: JITFunction) -> InterpretedFunction:
    return InterpretedFunction(
        fn.fn,
        version=fn.version,
        do_not_specialize=fn.do_not_specialize,
        do_not_specialize_on_alignment=fn.do_not_specialize_on_alignment,
        debug=fn.debug,
        noinline=fn.noinline,
        repr=fn._repr,
        launch_metadata=fn.launch_metadata,
    )


def make_language_visible(kernel: Any) -> None:
    """Bind ``triton.language`` in every module of :func:`_namespaces` that does not import it."""
    for namespace in _namespaces(kernel):
        if not any(v is tl or v is tl.core for v in namespace.values()):
            namespace[_LANGUAGE_NAME] = tl


def _namespaces(kernel: Any) -> list[dict[str, Any]]:
    """The globals of ``kernel``'s module and of the modules of the jit functions they hold, transitively."""
    found: dict[int, dict[str, Any]] = {}
    stack = [_python_function(kernel)]
    while stack:
        namespace = stack.pop().__globals__
        if id(namespace) not in found:
            found[id(namespace)] = namespace
            stack.extend(v.fn for v in list(namespace.values()) if isinstance(v, InterpretedFunction))
    return list(found.values())


def _python_function(kernel: Any) -> types.FunctionType:
    """The Python function under a jit function and any autotuner or heuristics wrapping it."""
    fn = kernel
    while not isinstance(fn, types.FunctionType):
        fn = fn.fn
    return fn
