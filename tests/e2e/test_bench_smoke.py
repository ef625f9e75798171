"""The benchmarks' smoke mode: small N, so the harness does not rot (no timing is asserted)."""

from __future__ import annotations

import pytest
from bench.bulk_create import run

from anyop.testing.controlplane import LocalControlPlane


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_bulk_create_handles_every_object_with_one_write_each(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str, backend: str
) -> None:
    result = run(anyop_controlplane, 20, backend)
    assert result["writes_per_object"] == 1.0
    assert result["rss_mib"] > 0
