"""Test settings shared by every family: hypothesis profiles sized for the CI machine."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _device_checks_read():
    """Read pending device-side checks (nbx_core.runtime.checks) when each test ends, so that an error a
    test left unread fails that test rather than a later one in the same worker."""
    yield
    from nbx_core.runtime import checks

    checks.verify()


@pytest.fixture
def tuning_cache(tmp_path, monkeypatch):
    """An empty user tuning cache (``NBX_CACHE_DIR`` in ``tmp_path``), so that lookups read the
    shipped tables and rules only; the cache directory is returned."""
    from nbx_core.runtime import tuning

    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    tuning.reload()
    yield tmp_path
    tuning.reload()
