"""A graceful exit releases the Lease even when the last record the keeper saw is stale."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from anyop.engine.coordination.lease_keeper import LeaseKeeper
from anyop.engine.coordination.pause_gate import Gate
from anyop.errors import ConflictError
from anyop.leadership import LeaseRecord
from anyop.settings import LeadershipSettings

pytestmark = pytest.mark.anyio


def lease(version: str, holder: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "anyop-leader", "namespace": "ns", "resourceVersion": version},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": 0},
    }  # fmt: skip


class Server:
    """The Lease on the server: a PUT with another resourceVersion than the stored is a 409."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.puts: list[dict[str, Any]] = []

    async def get(self, resource: Any, *, name: str, namespace: str) -> dict[str, Any]:
        return self.stored

    async def replace(self, resource: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.puts.append(body)
        if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
            raise ConflictError("the object has been modified", status=409)
        self.stored = {**body, "metadata": {**body["metadata"], "resourceVersion": "99"}}
        return self.stored


def keeper(server: Server, seen: dict[str, Any]) -> LeaseKeeper:
    settings = LeadershipSettings(enabled=True, identity="me")
    result = LeaseKeeper(server, settings, "ns", gate=Gate())  # type: ignore[arg-type]
    result.last = LeaseRecord.from_body(seen)
    result.leading = True
    return result


async def test_a_stale_record_is_read_again_and_the_lease_released(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server(lease("7", "me"))  # a renewal landed after the keeper's last record ("5")
    caplog.set_level(logging.INFO, logger="anyop")
    await keeper(server, lease("5", "me")).release()
    assert [put["metadata"]["resourceVersion"] for put in server.puts] == ["5", "7"]
    assert server.stored["spec"]["holderIdentity"] is None
    assert "Released the Lease ns/anyop-leader." in caplog.messages


async def test_a_lease_taken_meanwhile_by_another_is_left_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server(lease("8", "other"))
    caplog.set_level(logging.INFO, logger="anyop")
    await keeper(server, lease("5", "me")).release()
    assert len(server.puts) == 1
    assert server.stored["spec"]["holderIdentity"] == "other"
    assert "The Lease ns/anyop-leader is not ours any more: nothing to release." in caplog.messages
