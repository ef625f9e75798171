"""Sub-handlers on the real control plane: declared, executed, retried, failed, and purged."""

from __future__ import annotations

import functools
import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import running, url, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.errors import PermanentError, TemporaryError
from anyop.handlers.registry import OperatorRegistry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


async def create_with_items(api: httpx.AsyncClient, namespace: str, name: str) -> str:
    body = {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"name": name},
        "spec": {"items": ["item1", "item2"]},
    }
    response = await api.post(url(namespace), json=body)
    response.raise_for_status()
    return url(namespace, name)


def progress_keys(body: dict[str, Any]) -> list[str]:
    """Every key anyop keeps about handler progress on the object (status or annotations)."""
    status = body.get("status") or {}
    stored = status.get("anyop") or {}
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    return list(stored.get("progress") or {}) + [k for k in annotations if "anyop.dev" in k]


async def test_declared_subhandlers_run_with_their_own_ids_and_results(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    seen: list[tuple[str, str]] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(spec: Any, **_: Any) -> None:  # sync: the decorator works in the thread
        for item in spec["items"]:

            @anyop.subhandler(id=item)
            def handle_item(item: str = item, *, name: str, **_: Any) -> str:
                seen.append((item, name))
                return f"done {item}"

    async with running(registry, anyop_namespace):
        path = await create_with_items(api, anyop_namespace, "sub1")
        body = await wait_for(api, path, lambda b: "create_fn/item2" in b.get("status", {}))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
    assert body["status"]["create_fn/item1"] == "done item1"
    assert body["status"]["create_fn/item2"] == "done item2"
    assert seen == [("item1", "sub1"), ("item2", "sub1")]
    assert "Handler 'create_fn/item1' succeeded." in caplog.messages
    assert "Handler 'create_fn' succeeded." in caplog.messages


async def test_executed_subhandlers_retry_alone_and_the_parent_waits_for_them(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    def handle_item(item: str, *, retry: int, **_: Any) -> None:
        calls.append(f"{item}#{retry}")
        if item == "item2" and retry == 0:
            raise TemporaryError("not yet", delay=0.3)

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(spec: Any, **_: Any) -> str:
        calls.append("parent")
        fns = {item: functools.partial(handle_item, item) for item in spec["items"]}
        await anyop.execute(fns=fns)
        return "all items done"

    async with running(registry, anyop_namespace):
        path = await create_with_items(api, anyop_namespace, "sub2")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        body = await wait_for(api, path, lambda b: not progress_keys(b))
    assert body["status"]["create_fn"] == "all items done"
    # The default lifecycle runs one due child per cycle; the parent runs again every cycle to
    # re-declare its children; a finished child is not run again.
    assert calls == ["parent", "item1#0", "parent", "item2#0", "parent", "item2#1"]
    assert "Handler 'create_fn/item2' failed temporarily: not yet" in caplog.messages
    assert "Handler 'create_fn' has unfinished sub-handlers. Will retry soon." in caplog.messages


async def test_a_subhandler_failing_for_good_fails_its_parent(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(spec: Any, **_: Any) -> None:
        @anyop.subhandler(id="broken")
        async def broken(**_: Any) -> None:
            raise PermanentError("cannot do it")

    async with running(registry, anyop_namespace):
        await create_with_items(api, anyop_namespace, "sub3")
        await wait_for_log(caplog, "Creation is processed: 0 succeeded; 1 failed.")
    assert "Handler 'create_fn/broken' failed permanently: cannot do it" in caplog.messages
    assert any(
        message.startswith("Handler 'create_fn' failed permanently: Sub-handlers failed")
        and "'create_fn/broken'" in message
        for message in caplog.messages
    )


async def test_a_lifecycle_given_to_execute_runs_all_children_in_one_cycle(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(spec: Any, **_: Any) -> None:
        calls.append("parent")
        fns = {
            item: functools.partial(lambda item, **_: calls.append(item), item)
            for item in spec["items"]
        }
        await anyop.execute(fns=fns, lifecycle=anyop.lifecycles.all_at_once)

    async with running(registry, anyop_namespace):
        await create_with_items(api, anyop_namespace, "sub4")
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
    assert calls == ["parent", "item1", "item2"]
