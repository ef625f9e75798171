"""A standby starts a Lease's clock when its read returns: a slow read may show a renewal that
landed after the read was sent, and its holder's fence counts from that renewal's start."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from anyop.engine.coordination.lease_keeper import LeaseKeeper
from anyop.engine.coordination.pause_gate import Gate
from anyop.settings import LeadershipSettings

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

SLOW_READ = 3.0
RENEWED_AT = 1.0  # the holder renews during the standby's first (slow) read


def lease(version: str) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "anyop-leader", "namespace": "ns", "resourceVersion": version},
        "spec": {"holderIdentity": "holder", "leaseDurationSeconds": 15, "leaseTransitions": 0},
    }  # fmt: skip


class Server:
    """The holder renews once (at ``RENEWED_AT``) and then dies; the first read is slow."""

    def __init__(self) -> None:
        self.started = anyio.current_time()
        self.reads = 0
        self.taken_at: float | None = None

    async def get(self, resource: Any, *, name: str, namespace: str) -> dict[str, Any]:
        self.reads += 1
        if self.reads == 1:
            await anyio.sleep(SLOW_READ)
        renewed = anyio.current_time() - self.started >= RENEWED_AT
        return lease("2" if renewed else "1")

    async def replace(self, resource: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.taken_at = anyio.current_time() - self.started
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "3"}}


async def test_a_renewal_seen_by_a_slow_read_is_timed_from_the_read_s_return() -> None:
    server = Server()
    settings = LeadershipSettings(enabled=True, identity="standby", lease_duration=15,
                                  renew_deadline=10, retry_period=1)  # fmt: skip
    keeper = LeaseKeeper(server, settings, "ns", gate=Gate())  # type: ignore[arg-type]
    with anyio.fail_after(60):
        while server.taken_at is None:
            await keeper.step()
            await anyio.sleep(settings.retry_period)
    holder_fence = RENEWED_AT + settings.renew_deadline  # at the latest
    assert server.taken_at >= SLOW_READ + settings.lease_duration  # not from the read's start
    assert server.taken_at > holder_fence
