"""A kernel's Triton cache key, under which a bundle stores its binary, does not depend on what
the process compiled before (Triton 3.6 left out a helper's constexpr globals from the key of a
kernel computed before the helper's own key; nbx_core.runtime.prebuilt computes callees first)."""

from __future__ import annotations

import os
import subprocess
import sys

_KEYS = """
import sys
import nbx_core.runtime.launch  # noqa: F401  (configures Triton as every NBX process does)
from nbx_core.runtime.kernels import copy, fill
first, second = (copy.cast_to, fill._range_kernel) if sys.argv[1] == "helper" else (fill._range_kernel, copy.cast_to)
first.cache_key
print(fill._range_kernel.cache_key)
"""


def _key(first: str) -> str:
    env = dict(os.environ, NBX_BACKEND="aot")
    done = subprocess.run([sys.executable, "-c", _KEYS, first], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_kernels_cache_key_does_not_depend_on_what_was_keyed_before():
    # _range_kernel calls cast_to, a jit helper of another module.
    assert _key("helper") == _key("kernel")
