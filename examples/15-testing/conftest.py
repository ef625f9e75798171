"""Shared fixtures. anyop's own fixtures (``anyop_controlplane``, ``anyop_namespace``...) come
from its pytest plugin, which is active wherever anyop is installed."""

from pathlib import Path

import pytest

from anyop.testing.pytest_plugin import Apply

CRD = Path(__file__).parent.parent / "crd.yaml"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every ``@pytest.mark.anyio`` test on asyncio and on Trio."""
    return str(request.param)


@pytest.fixture
def kopfexamples(anyop_apply: Apply) -> None:
    """The CRD of the operator's resource (applying it again is harmless)."""
    anyop_apply(CRD)
