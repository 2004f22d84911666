"""PyTorch's OpInfo samples as a second conformance source, on the cpu backend.

Every entry of torch's ``op_db`` that names a registered ATen name runs its smallest and first
samples (``harness.samples``) in float32 and bfloat16, and in int64, int32, uint8 and bool where
the entry takes them; each registered ATen call a sample makes is compared with torch (see
``harness``). A failure fails the test unless ``allowlist.py`` lists it as a deliberate divergence.
Test ids start with the family that provides the entry's name.
"""

from __future__ import annotations

import nbx_core.runtime.launch  # noqa: F401  (picks the backend before torch's test utilities import Triton)

# isort: split
import pytest

from nbx_core.backend import current

if current() != "cpu":
    pytest.skip(
        "the OpInfo pass compares numbers on the cpu backend only (aot runs no kernel; the cuda pass "
        "runs the family tests)",
        allow_module_level=True,
    )

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from . import harness  # noqa: E402
from .allowlist import divergence  # noqa: E402

# Real gaps, not divergences: strict xfails, so that fixing one fails the test until it is removed here.
KNOWN_BUGS: dict[str, str] = {}

_OPS = {harness.key(op): op for op in op_db}
CASES = [
    pytest.param(
        e.key,
        dt,
        id=f"{e.family}-{e.key}-{str(dt).removeprefix('torch.')}",
        marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[e.key])] if e.key in KNOWN_BUGS else [],
    )
    for e in harness.entries(op_db)
    for dt in harness.dtypes(_OPS[e.key])
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("entry,dtype", CASES)
def test_opinfo_samples(entry, dtype):
    op = _OPS[entry]
    dt = str(dtype).removeprefix("torch.")
    unexpected, allowed, failed_allowed = [], set(), set()
    for i, sample in enumerate(harness.samples(op, dtype)):
        for call, failure in harness.run_sample(op, sample):
            known = divergence(entry, call, dt)
            if known is not None:
                allowed.add(call)
            if failure is None:
                continue
            if known is not None and known.covers(failure):
                failed_allowed.add(call)
            else:
                unexpected.append(f"sample {i}: {failure}")
    stale = sorted(allowed - failed_allowed)
    assert not unexpected, "\n".join(unexpected)
    assert not stale, f"allow-listed calls that now agree with torch (remove them from allowlist.py): {stale}"
