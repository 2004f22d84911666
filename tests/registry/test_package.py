"""``nbx_core``'s own namespace: eager errors and hookimpl, lazy tensor-facing names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

import nbx_core
from nbx_core import errors


def test_every_error_class_is_exported():
    classes = {n for n, c in vars(errors).items() if isinstance(c, type) and issubclass(c, errors.NbxError)}
    assert classes <= set(nbx_core.__all__)
    assert all(getattr(nbx_core, n) is getattr(errors, n) for n in classes)


def test_hookimpl_is_the_nbx_marker():
    assert nbx_core.hookimpl.project_name == "nbx"


def test_version_matches_the_installed_distribution():
    try:
        installed = metadata.version("nbx-core")
    except metadata.PackageNotFoundError:
        pytest.skip("nbx-core is not installed (pip install --no-deps -e .)")
    assert nbx_core.__version__ == installed


def run(code: str) -> None:
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True)


def test_tensor_facing_names_are_forwarded_to_the_api_lazily():
    run("""
        import sys
        import nbx_core
        assert "nbx_core.api" not in sys.modules
        from nbx_core import api
        assert nbx_core.NBXTensor is api.NBXTensor and nbx_core.float32 is api.float32
        assert nbx_core.zeros is api.zeros and nbx_core.from_dlpack is api.from_dlpack
        try:
            nbx_core.no_such_name
        except AttributeError as exc:
            assert "has no attribute 'no_such_name'" in str(exc)
        else:
            raise AssertionError("no AttributeError")
    """)


def test_the_tensor_factory_is_not_shadowed_by_the_tensor_module():
    run("""
        import sys
        from nbx_core.tensor import NBXTensor   # binds the submodule first
        import nbx_core
        assert callable(nbx_core.tensor) and nbx_core.tensor is sys.modules["nbx_core.tensor"].tensor
        assert isinstance(nbx_core.tensor([1.0]), NBXTensor)
        from nbx_core import tensor
        assert tensor is nbx_core.tensor
    """)


def test_load_is_forwarded_to_the_graph_package():
    run("""
        import sys, types
        graph = types.ModuleType("nbx_core.graph")
        graph.load = lambda path: ("loaded", path)
        sys.modules["nbx_core.graph"] = graph
        import nbx_core
        assert nbx_core.load("m.nbx") == ("loaded", "m.nbx")
    """)
