"""FakeCluster's direct changes from other threads: made in its event loop's thread, or refused."""

from __future__ import annotations

import json
import threading

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.inprocess_transport import api_request_of
from anyop.testing.fake.watches import WatchStream

pytestmark = pytest.mark.anyio

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}


async def test_a_change_from_a_worker_thread_wakes_the_watches() -> None:
    # As a test on the real control plane or the fake calls a blocking kubectl-like apply: in
    # a worker thread. The open watch must see the object at once, on both backends.
    fake = FakeCluster(controllers=False)
    fake.create(NAMESPACE)
    url = httpx.URL("/api/v1/namespaces/ns/configmaps?watch=true&timeoutSeconds=60")
    watch = await fake.respond(api_request_of("GET", url, content_type="", body=b""))
    assert isinstance(watch, WatchStream)
    lines: list[bytes] = []

    async def read() -> None:
        lines.append(await anext(watch))

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await anyio.lowlevel.checkpoint()
                await anyio.wait_all_tasks_blocked()  # the reader waits for a change
                made = await anyio.to_thread.run_sync(fake.apply, json.dumps(CM))
    finally:
        await watch.aclose()
    (line,) = lines
    event = json.loads(line)
    assert (event["type"], event["object"]["metadata"]["uid"]) == (
        "ADDED",
        made[0]["metadata"]["uid"],
    )


async def test_a_change_from_a_thread_without_an_event_loop_is_refused_by_name() -> None:
    fake = FakeCluster(controllers=False)
    fake.create(NAMESPACE)
    async with fake.client() as api:
        await api.get("/api/v1/namespaces")  # the fake now knows its event loop's thread
        errors: list[BaseException] = []

        def create() -> None:
            try:
                fake.create(CM)
            except BaseException as exc:  # the thread's outcome, for the test
                errors.append(exc)

        thread = threading.Thread(target=create)
        thread.start()
        await anyio.to_thread.run_sync(thread.join)
        listed = (await api.get("/api/v1/namespaces/ns/configmaps")).json()
    assert [type(e) for e in errors] == [RuntimeError]
    assert "FakeCluster.create() was called in a thread that is neither" in str(errors[0])
    assert listed["items"] == []  # nothing changed


def test_a_change_before_any_request_is_made_in_the_calling_thread() -> None:
    fake = FakeCluster(controllers=False)
    thread = threading.Thread(target=fake.create, args=(NAMESPACE,))
    thread.start()
    thread.join()
    assert fake.store.namespace("ns") is not None
