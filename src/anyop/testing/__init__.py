"""anyop's test kit: a real local control plane, a fake one, and operators run for tests.

Importing this package is cheap; the control plane's dependencies load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anyop.testing.controlplane import LocalControlPlane
    from anyop.testing.embedded import run_operator
    from anyop.testing.fake.cluster import FakeCluster
    from anyop.testing.fake.faults import Fault
    from anyop.testing.fake_time import FakeTimeLoop, virtual_time
    from anyop.testing.handle import RunningOperator
    from anyop.testing.runner import KopfRunner, OperatorRunner

__all__ = [
    "FakeCluster",
    "FakeTimeLoop",
    "Fault",
    "KopfRunner",
    "LocalControlPlane",
    "OperatorRunner",
    "RunningOperator",
    "run_operator",
    "virtual_time",
]


def __getattr__(name: str) -> Any:
    if name == "FakeCluster":
        from anyop.testing.fake.cluster import FakeCluster

        return FakeCluster
    if name == "Fault":
        from anyop.testing.fake.faults import Fault

        return Fault
    if name in ("FakeTimeLoop", "virtual_time"):
        from anyop.testing import fake_time

        return getattr(fake_time, name)
    if name == "LocalControlPlane":
        from anyop.testing.controlplane import LocalControlPlane

        return LocalControlPlane
    if name in ("OperatorRunner", "KopfRunner"):
        from anyop.testing import runner

        return getattr(runner, name)
    if name == "RunningOperator":
        from anyop.testing.handle import RunningOperator

        return RunningOperator
    if name == "run_operator":
        from anyop.testing.embedded import run_operator

        return run_operator
    raise AttributeError(f"module 'anyop.testing' has no attribute {name!r}")
