"""A sharded replica that is stopping still hands its objects over by the rules.

Its watch stops at once, but its running handlers finish (``queueing.exit_timeout``): until they
have, the replica must not acknowledge a view that gives those objects to another replica. Two
real operators on one FakeCluster, on virtual time: the first is stopped while its handlers run
and, at the same moment, the second joins the group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.replicas import sharded_settings
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import FakeCluster

pytestmark = pytest.mark.anyio

CRD = Path(__file__).parents[3] / "examples" / "crd.yaml"
KEXES = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
HANDLING = 20.0  # virtual seconds each handler takes
OBJECTS = 12
WAIT = 600.0  # virtual seconds; reached only if something is broken


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    return virtual_backend(request.param, monkeypatch, autojump_threshold=0.005)


def replica(
    identity: str, runs: list[list[Any]]
) -> tuple[OperatorRegistry, anyop.OperatorSettings]:
    """A replica's registry (a slow create handler noting its runs) and settings."""
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", id="create_fn", registry=registry)
    async def create_fn(name: str, **_: Any) -> str:
        run = [identity, name, anyio.current_time(), None]
        runs.append(run)
        await anyio.sleep(HANDLING)
        run[3] = anyio.current_time()
        return identity

    settings = sharded_settings(identity, namespace="ns", group="kex-shards")
    settings.queueing.exit_timeout = 10 * HANDLING  # a stop lets the running handlers finish
    return registry, settings


async def test_a_stopping_replica_hands_over_only_what_it_has_finished() -> None:
    fake = FakeCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    runs: list[list[Any]] = []
    stop_a, stop_b, ready_a, ready_b = (anyio.Event() for _ in range(4))
    with fake.routed(), anyio.fail_after(WAIT):
        vault = await fake.vault()
        async with fake.client(timeout=30) as api, anyio.create_task_group() as tg:

            async def serve(identity: str, stop: anyio.Event, ready: anyio.Event) -> None:
                registry, settings = replica(identity, runs)
                await anyop.serve(
                    registry=registry, settings=settings, vault=vault, namespaces=["ns"],
                    stop_event=stop, ready_event=ready,
                )  # fmt: skip

            tg.start_soon(serve, "a", stop_a, ready_a)
            await ready_a.wait()
            for i in range(OBJECTS):
                body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
                        "metadata": {"name": f"kex-{i}"}}  # fmt: skip
                (await api.post(KEXES, json=body)).raise_for_status()
            while len({run[1] for run in runs}) < OBJECTS:  # "a" handles them all, slowly
                await anyio.sleep(0.1)
            stop_a.set()  # its handlers go on: they finish within the exit timeout
            tg.start_soon(serve, "b", stop_b, ready_b)
            while not all(run[3] is not None for run in runs) or len(runs) < OBJECTS:
                await anyio.sleep(1)
            await anyio.sleep(5 * HANDLING)  # anything "b" would start again would show by then
            stop_b.set()
    by_object: dict[str, list[list[Any]]] = {}
    for run in runs:
        by_object.setdefault(run[1], []).append(run)
    twice = {name: found for name, found in by_object.items() if len(found) > 1}
    assert not twice, f"handled by two replicas: {twice}"
    assert sorted(by_object) == sorted(f"kex-{i}" for i in range(OBJECTS))
