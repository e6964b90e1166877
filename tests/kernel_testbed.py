"""Whether the kernel testbed's tests can run here: they need root, network namespaces and TUN
devices. Without them those tests skip, unless ``MPSCHED_REQUIRE_TESTBED=1`` (set by
``.ci/run``, which runs as root): then their absence is an error, so that CI cannot pass by
skipping them."""

from __future__ import annotations

import os

import pytest

from mpsched.testbed import missing_capabilities

#: Why the testbed (TCP) cannot run here, or ``None``.
MISSING = missing_capabilities("tcp")

if MISSING is not None and os.environ.get("MPSCHED_REQUIRE_TESTBED") == "1":
    raise RuntimeError(
        f"MPSCHED_REQUIRE_TESTBED=1 but the kernel testbed is unavailable: {MISSING}"
    )
needs_testbed = pytest.mark.skipif(
    MISSING is not None, reason=f"kernel testbed unavailable: {MISSING}"
)
