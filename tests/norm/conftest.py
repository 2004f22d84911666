"""Shared helpers for the nbx-norm conformance tests."""

from __future__ import annotations

import pytest

from nbx_core.testing import on_other_device


@pytest.fixture
def on_cuda():
    """Move an NBXTensor to a device the kernels do not run on (see nbx_core.testing.on_other_device)."""
    return on_other_device
