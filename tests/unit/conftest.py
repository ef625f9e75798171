"""Fake time for unit tests: ``@pytest.mark.fake_time`` runs a test on both backends with a clock
that stands still while anything can run, and jumps to the next deadline once every task waits.

On Trio that is ``trio.testing.MockClock(autojump_threshold=0)``; on asyncio,
:class:`anyop.testing.FakeTimeLoop` does the same (see ``tests/virtual.py``). A sleep of an hour
then costs no wall time, and a timeout fires exactly when due.

Caveats:
    Only for tests whose waits are all in the event loop: a real thread, subprocess or socket
    does not count as running, so the clock jumps past its deadlines while the OS works. Where
    a test's operator has sync handlers (threads), ``@pytest.mark.fake_time(autojump_threshold=
    0.05)`` lets the clock wait that long in real time before it jumps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.virtual import virtual_backend

from anyop.testing.fake import FakeCluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_time: run on an autojumping fake clock (Trio's MockClock, or asyncio's)"
    )


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends, as in ``tests/conftest.py``; on fake time for tests marked ``fake_time``."""
    marker = request.node.get_closest_marker("fake_time")
    if marker is None:
        return request.param
    return virtual_backend(request.param, monkeypatch, **marker.kwargs)


KEX_CRD = Path(__file__).parents[2] / "examples" / "crd.yaml"


@pytest.fixture
def kex_cluster(fake_cluster_seed: int) -> FakeCluster:
    """A FakeCluster (of the plugin's seed) with the examples' KopfExample CRD applied: a test
    that runs ``fake_operator`` on KopfExamples returns it from its ``fake_cluster``."""
    fake = FakeCluster(seed=fake_cluster_seed)
    fake.apply(KEX_CRD)
    return fake
