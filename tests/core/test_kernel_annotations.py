"""Kernel parameter annotations are spelled ``tl.<name>``, the one spelling Triton reads whether the
module postpones annotations or not (docs/kernel-authoring.md, "Rules the kernels follow").

Under ``from __future__ import annotations`` an annotation is its source text. Triton (3.6 and 3.9,
compiled and interpreted) strips a ``tl.`` prefix from that text and matches what is left against
``constexpr`` and its dtype names; any other spelling (``triton.language.float64``, another alias
of the module, a variable holding ``tl.float64``) is then no type at all: a float parameter silently
compiles as float32, and a constexpr is not one on the interpreter.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import triton.language as tl

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted([*REPO.glob("nbx_core/**/*.py"), *REPO.glob("plugins/*/nbx_*/**/*.py")])


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("triton.jit", "jit")


def _annotated_kernel_parameters(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef, ast.arg]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list):
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                if arg.annotation is not None:
                    yield node, arg


def _read_by_triton(annotation: ast.expr) -> bool:
    """``tl.constexpr`` or ``tl.<dtype>``."""
    if not (
        isinstance(annotation, ast.Attribute) and isinstance(annotation.value, ast.Name) and annotation.value.id == "tl"
    ):
        return False
    return annotation.attr == "constexpr" or isinstance(getattr(tl, annotation.attr, None), tl.dtype)


def misspelt_annotations(source: str, where: str) -> list[str]:
    """Kernel parameters of ``source`` whose annotation Triton may not read, as ``where:line``."""
    tree = ast.parse(source)
    found = list(_annotated_kernel_parameters(tree))
    imports_tl = any(
        isinstance(n, ast.Import) and any(a.name == "triton.language" and a.asname == "tl" for a in n.names)
        for n in ast.walk(tree)
    )
    return [
        f"{where}:{arg.lineno} {kernel.name}({arg.arg}: {ast.unparse(arg.annotation)})"
        for kernel, arg in found
        if not (imports_tl and _read_by_triton(arg.annotation))
    ]


def test_kernel_parameter_annotations_are_spelled_tl_dot_name():
    bad = [m for path in SOURCES for m in misspelt_annotations(path.read_text(), str(path.relative_to(REPO)))]
    assert bad == []
    # What the scan covers: every kernel module of nbx-core and the plugins.
    assert sum(1 for p in SOURCES if "@triton.jit" in p.read_text()) > 50


def test_other_spellings_are_reported():
    source = """
from __future__ import annotations
import triton
import triton.language as tl
import triton.language as language
F64 = tl.float64

@triton.jit
def kernel(out_ptr, a: tl.float64, b: language.float64, c: F64, d: triton.language.constexpr, N: tl.constexpr,
           e: tl.int64, f: tl.tensor):
    pass
"""
    assert [m.split(" ", 1)[1] for m in misspelt_annotations(source, "m.py")] == [
        "kernel(b: language.float64)",
        "kernel(c: F64)",
        "kernel(d: triton.language.constexpr)",
        "kernel(f: tl.tensor)",
    ]
