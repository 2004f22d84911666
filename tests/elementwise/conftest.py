"""Elementwise tests feed NaN, inf and overflowing values on purpose: numpy's RuntimeWarnings from
Triton's interpreter are expected there."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "elementwise" in str(item.fspath):
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning"))
