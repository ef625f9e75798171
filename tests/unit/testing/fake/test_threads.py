"""FakeCluster's direct changes from other threads: made in its event loop's thread."""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.inprocess_transport import api_request_of
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.watches import WatchStream

pytestmark = pytest.mark.anyio

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}


@pytest.mark.parametrize("in_thread", ["anyio worker", "plain thread"])
async def test_a_change_from_another_thread_wakes_the_watches(in_thread: str) -> None:
    # A test that applies manifests as a blocking kubectl would (in a worker thread), or a sync
    # test beside an operator that runs in its own thread (OperatorRunner): the open watch must
    # see the object at once, on both backends.
    fake = FakeCluster(controllers=False)
    fake.create(NAMESPACE)
    url = httpx.URL("/api/v1/namespaces/ns/configmaps?watch=true&timeoutSeconds=60")
    watch = await fake.respond(api_request_of("GET", url, content_type="", body=b""))
    assert isinstance(watch, WatchStream)
    lines: list[bytes] = []
    made: list[dict[str, Any]] = []

    async def read() -> None:
        lines.append(await anext(watch))

    def apply() -> None:
        made.extend(fake.apply(json.dumps(CM)))

    def in_plain_thread() -> None:
        thread = threading.Thread(target=apply)
        thread.start()
        thread.join()

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.lowlevel.checkpoint()
                await anyio.wait_all_tasks_blocked()  # the reader waits for a change
                await anyio.to_thread.run_sync(
                    apply if in_thread == "anyio worker" else in_plain_thread
                )
    finally:
        await watch.aclose()
    (line,) = lines
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["uid"] == made[0]["metadata"]["uid"]


async def test_a_change_made_through_the_event_loop_raises_its_own_errors_in_the_caller() -> None:
    fake = FakeCluster(controllers=False)
    await fake.respond(api_request_of("GET", httpx.URL("/api/v1/namespaces"), content_type="",
                                      body=b""))  # fmt: skip
    elsewhere = {**CM, "metadata": {"name": "a", "namespace": "nowhere"}}
    with pytest.raises(StatusError, match='namespaces "nowhere" not found'):
        await anyio.to_thread.run_sync(fake.create, elsewhere)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_change_after_the_event_loop_ended_is_made_in_the_calling_thread(backend: str) -> None:
    fake = FakeCluster(controllers=False)

    async def main() -> None:
        await fake.respond(api_request_of("GET", httpx.URL("/api/v1/namespaces"), content_type="",
                                          body=b""))  # fmt: skip

    anyio.run(main, backend=backend)
    thread = threading.Thread(target=fake.create, args=(NAMESPACE,))
    thread.start()
    thread.join()
    assert fake.store.namespace("ns") is not None
