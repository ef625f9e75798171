"""The ``idempotency_key`` kwarg, as a whole operator passes it (FakeCluster, virtual time):
the same for every retry of a handler for one change, another for the next change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, RunningOperator

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
KEYS: list[tuple[str, int, str]] = []


@pytest.fixture
def fake_cluster(kex_cluster: FakeCluster) -> FakeCluster:
    return kex_cluster  # with the KopfExample CRD (tests/unit/conftest.py)


@pytest.fixture
def anyop_registry() -> OperatorRegistry:
    registry = OperatorRegistry()
    KEYS.clear()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(idempotency_key: str, retry: int, **_: Any) -> str:
        KEYS.append(("create", retry, idempotency_key))
        if retry < 2:
            raise anyop.TemporaryError("not yet", delay=10)
        return "done"

    @anyop.on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(idempotency_key: str, retry: int, **_: Any) -> str:
        KEYS.append(("update", retry, idempotency_key))
        return "done"

    return registry


async def test_retries_share_the_key_and_a_change_of_labels_gets_another(
    fake_operator: RunningOperator,
) -> None:
    await fake_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"field": "one"}})
    await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["create_fn"])
    await fake_operator.patch(KEX, "kex", {"metadata": {"labels": {"change": "later"}}})
    await fake_operator.wait_for(KEX, "kex", lambda obj: obj["status"].get("update_fn"))
    await fake_operator.patch(KEX, "kex", {"metadata": {"labels": {"change": "again"}}})
    await fake_operator.wait_for(KEX, "kex", lambda obj: len(KEYS) == 5)
    assert [(what, retry) for what, retry, _ in KEYS] == [
        ("create", 0),
        ("create", 1),
        ("create", 2),
        ("update", 0),
        ("update", 0),
    ]
    creates = {key for what, _, key in KEYS if what == "create"}
    updates = [key for what, _, key in KEYS if what == "update"]
    assert len(creates) == 1  # every retry of the one change: one key
    assert len(set(updates)) == 2  # two changes of labels only, the same generation: two keys
    assert creates.isdisjoint(updates)
