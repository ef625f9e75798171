"""The whole engine against the real control plane: serve(), handlers, one patch per cycle."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.errors import TemporaryError
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient
from anyop.settings import OperatorSettings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("on_cluster", "kopfexample_crd", "anyop_kubeconfig"),
]

DEADLINE = 30  # seconds; only reached when something is broken
NOOP = "Something has changed, but we are not interested (the essence is the same)."
MERGE = {"Content-Type": "application/merge-patch+json"}


def url(namespace: str, name: str | None = None) -> str:
    base = f"/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"
    return f"{base}/{name}" if name else base


@asynccontextmanager
async def running(
    registry: OperatorRegistry,
    namespace: str | None,
    settings: OperatorSettings | None = None,
    **options: Any,
) -> AsyncIterator[None]:
    """The operator, serving one namespace (or the cluster), from readiness to the block's end.

    ``options`` go to :func:`serve` and win over the arguments derived from ``namespace``.
    """
    stop, ready = anyio.Event(), anyio.Event()
    operator = functools.partial(
        serve,
        registry=registry,
        settings=settings,
        **{"namespaces": [namespace] if namespace else [], "clusterwide": namespace is None}
        | options,
        stop_event=stop,
        ready_event=ready,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(operator)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        yield
        stop.set()


async def create(api: httpx.AsyncClient, namespace: str, name: str) -> None:
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": name}}
    response = await api.post(url(namespace), json={**body, "spec": {"field": "value"}})
    response.raise_for_status()


async def delete_and_wait(api: httpx.AsyncClient, namespace: str, name: str) -> None:
    """Delete a KopfExample and wait until it is gone (its finalizers released)."""
    (await api.delete(url(namespace, name))).raise_for_status()
    with anyio.fail_after(DEADLINE):
        while (await api.get(url(namespace, name))).status_code != 404:
            await anyio.sleep(0.02)


async def wait_for(
    api: httpx.AsyncClient, path: str, predicate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Poll the object until the predicate holds for it (a 404 reads as ``{}``)."""
    with anyio.fail_after(DEADLINE):
        while True:
            response = await api.get(path)
            body: dict[str, Any] = response.json() if response.status_code != 404 else {}
            if predicate(body):
                return body
            await anyio.sleep(0.1)


async def wait_for_log(caplog: pytest.LogCaptureFixture, message: str) -> None:
    with anyio.fail_after(DEADLINE):
        while message not in caplog.messages:
            await anyio.sleep(0.05)


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


@pytest.fixture
def patches(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The subresource of every PATCH request the operator sends (``None`` for the main one)."""
    sent: list[str | None] = []
    original = KubeClient.patch

    async def counting(self: KubeClient, *args: Any, **kwargs: Any) -> Any:
        sent.append(kwargs.get("subresource"))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(KubeClient, "patch", counting)
    return sent


async def test_a_simple_creation_is_handled_with_one_status_patch(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
    patches: list[str | None],
) -> None:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> dict[str, str]:
        return {"message": "hello"}

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex1")
        path = url(anyop_namespace, "ex1")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        await wait_for_log(
            caplog, "Something has changed, but we are not interested (the essence is the same)."
        )
    assert body["status"]["create_fn"] == {"message": "hello"}
    assert "Handler 'create_fn' succeeded." in caplog.messages
    assert "Creation is processed: 1 succeeded; 0 failed." in caplog.messages
    assert patches == ["status"]


async def test_a_spec_change_written_while_the_create_handler_runs_calls_the_update_handler(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another client's write between our read and our write comes back inside our own echo."""
    registry = OperatorRegistry()
    updates: list[str] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, namespace: str, **_: Any) -> dict[str, str]:
        change = {"spec": {"field": "meanwhile"}}
        response = await api.patch(url(namespace, name), json=change, headers=MERGE)
        response.raise_for_status()
        return {"message": "hello"}

    @on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(new: Any, **_: Any) -> None:
        updates.append(new["spec"]["field"])

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex-meanwhile")
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    assert updates == ["meanwhile"]


async def test_a_spec_change_calls_the_update_handler_with_old_new_and_diff(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    updates: list[dict[str, Any]] = []
    on.create("kopfexamples", registry=registry)(lambda **_: None)

    @on.update("kopfexamples", registry=registry, id="update_fn")
    def update_fn(old: Any, new: Any, diff: Any, **_: Any) -> None:
        updates.append({"old": old, "new": new, "diff": list(diff)})

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex2")
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        path = url(anyop_namespace, "ex2")
        status = await api.patch(path + "/status", json={"status": {"x": 1}}, headers=MERGE)
        status.raise_for_status()
        spec = await api.patch(path, json={"spec": {"field": "changed"}}, headers=MERGE)
        spec.raise_for_status()
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    (update,) = updates
    assert update["old"]["spec"] == {"field": "value"}
    assert update["new"]["spec"] == {"field": "changed"}
    assert [tuple(item) for item in update["diff"]] == [
        ("change", ("spec", "field"), "value", "changed")
    ]


async def test_a_status_only_change_calls_no_update_handler(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    updates: list[Any] = []
    on.create("kopfexamples", registry=registry)(lambda **_: None)
    on.update("kopfexamples", registry=registry)(lambda **kw: updates.append(kw))

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex3")
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        caplog.clear()
        path = url(anyop_namespace, "ex3") + "/status"
        response = await api.patch(path, json={"status": {"x": 1}}, headers=MERGE)
        response.raise_for_status()
        await wait_for_log(
            caplog, "Something has changed, but we are not interested (the essence is the same)."
        )
    assert updates == []


async def test_a_deletion_runs_the_delete_handler_and_releases_the_finalizer(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    deleted: list[str] = []
    on.create("kopfexamples", registry=registry)(lambda **_: None)

    @on.delete("kopfexamples", registry=registry, id="delete_fn")
    async def delete_fn(name: str, **_: Any) -> None:
        deleted.append(name)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex4")
        path = url(anyop_namespace, "ex4")
        await wait_for(api, path, lambda b: bool(b.get("metadata", {}).get("finalizers")))
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
        (await api.delete(path)).raise_for_status()
        await wait_for(api, path, lambda b: b == {})
        await wait_for_log(caplog, "Deleted, really deleted, and we are notified.")
    assert deleted == ["ex4"]
    assert "Adding the finalizer, thus preventing the actual deletion." in caplog.messages
    assert "Removing the finalizer, thus allowing the actual deletion." in caplog.messages
    assert "Deletion is processed: 1 succeeded; 0 failed." in caplog.messages


async def test_a_temporary_error_is_retried_after_its_delay(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    retries: list[int] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(retry: int, **_: Any) -> str:
        retries.append(retry)
        if retry == 0:
            raise TemporaryError("not yet", delay=0.5)
        return "done"

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex5")
        path = url(anyop_namespace, "ex5")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert body["status"]["create_fn"] == "done"
    assert retries == [0, 1]
    assert "Handler 'create_fn' failed temporarily: not yet" in caplog.messages
    assert "Handler 'create_fn' succeeded." in caplog.messages


def test_the_kubeconfig_fixture_is_a_file(anyop_kubeconfig: Path) -> None:
    assert anyop_kubeconfig.exists()


PRUNING_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prunedexamples.kopf.dev
spec:
  scope: Namespaced
  group: kopf.dev
  names: {kind: PrunedExample, plural: prunedexamples, singular: prunedexample}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status:
              type: object
              properties:
                create_fn: {type: string}
"""


async def create_pruned(
    api: httpx.AsyncClient, namespace: str, name: str, *, field: str = "value"
) -> str:
    """A PrunedExample (see ``PRUNING_CRD``) with ``spec.field``; its path."""
    base = f"/apis/kopf.dev/v1/namespaces/{namespace}/prunedexamples"
    body = {"apiVersion": "kopf.dev/v1", "kind": "PrunedExample", "metadata": {"name": name}}
    (await api.post(base, json={**body, "spec": {"field": field}})).raise_for_status()
    return f"{base}/{name}"


async def test_a_pruning_status_schema_moves_the_state_to_annotations_without_rerunning(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    anyop_apply(PRUNING_CRD)
    registry = OperatorRegistry()
    calls: list[str] = []

    @on.create("prunedexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, patch: Any, **_: Any) -> str:
        calls.append(name)
        patch.status["extra"] = "dropped"  # not in the schema either
        return "done"

    async with running(registry, anyop_namespace):
        path = await create_pruned(api, anyop_namespace, "p1")
        key = "anyop.dev/last-handled-configuration"
        found = await wait_for(api, path, lambda b: key in b["metadata"].get("annotations", {}))
        await wait_for_log(caplog, NOOP)
    assert found["status"] == {"create_fn": "done"}
    assert calls == ["p1"]
    assert any("anyop keeps its state" in message for message in caplog.messages)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    inconsistent = [w for w in warnings if w.startswith("Patching failed with inconsistencies: ")]
    assert len(inconsistent) == 1  # the first write; the state moves to the annotations then
    assert "('remove', ('status', 'extra'), 'dropped', None)" in inconsistent[0]
    assert "('status', 'anyop')" in inconsistent[0]


async def test_event_handlers_see_objects_of_a_clusterwide_operator_filtered_by_labels(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()
    seen: list[tuple[Any, str]] = []
    labels = {"test": anyop_namespace}

    @on.event("kopfexamples", registry=registry, labels=labels)
    def event_fn(type: Any, name: str, **_: Any) -> None:
        seen.append((type, name))

    async with running(registry, None):
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample"}
        meta = {"name": "ev1", "labels": labels}
        (await api.post(url(anyop_namespace), json={**body, "metadata": meta})).raise_for_status()
        await create(api, anyop_namespace, "unlabelled")
        with anyio.fail_after(DEADLINE):
            while ("ADDED", "ev1") not in seen:
                await anyio.sleep(0.05)
    assert {name for _, name in seen} == {"ev1"}


async def test_stopping_cancels_a_stuck_handler_after_the_exit_timeout(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    entered, cancelled = anyio.Event(), anyio.Event()

    @on.create("kopfexamples", registry=registry, id="stuck_fn")
    async def stuck_fn(**_: Any) -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    settings = OperatorSettings.model_validate({"queueing": {"exit_timeout": 0.2}})
    with anyio.fail_after(DEADLINE):
        async with running(registry, anyop_namespace, settings):
            await create(api, anyop_namespace, "ex6")
            await entered.wait()
    assert cancelled.is_set()


async def test_a_restarted_operator_resumes_and_does_not_recreate(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
    patches: list[str | None],
) -> None:
    registry = OperatorRegistry()
    calls: list[str] = []
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: calls.append("create"))
    on.resume("kopfexamples", registry=registry, id="resume_fn")(lambda **_: calls.append("resume"))

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ex7")
        await wait_for_log(caplog, "Creation is processed: 1 succeeded; 0 failed.")
    async with running(registry, anyop_namespace):
        await wait_for_log(caplog, "Resuming is processed: 1 succeeded; 0 failed.")
    assert calls == ["create", "resume"]
    assert patches == ["status"]


async def test_a_write_that_the_schema_refuses_logs_the_servers_own_reason(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    anyop_apply(PRUNING_CRD)
    registry = OperatorRegistry()

    @on.create("prunedexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> int:
        return 5  # status.create_fn is a string in the schema

    async with running(registry, anyop_namespace):
        await create_pruned(api, anyop_namespace, "p2")
        with anyio.fail_after(DEADLINE):
            while not any(m.startswith("Throttling for") for m in caplog.messages):
                await anyio.sleep(0.05)
    throttling = next(m for m in caplog.messages if m.startswith("Throttling for"))
    assert "status.create_fn" in throttling
    assert "must be of type string" in throttling


async def test_a_framework_error_throttles_the_object_with_kopfs_lines(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    anyop_apply(PRUNING_CRD)
    registry = OperatorRegistry()
    calls: list[float] = []

    @on.create("prunedexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> Any:
        calls.append(anyio.current_time())
        return 5 if len(calls) == 1 else "fine"  # the schema refuses the first result

    settings = OperatorSettings()
    settings.queueing.error_delays = (2,)
    async with running(registry, anyop_namespace, settings):
        path = await create_pruned(api, anyop_namespace, "p3")
        await wait_for_log(caplog, "Throttling is over. Switching back to normal operations.")
        await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
        assert calls[1] - calls[0] >= 2
    assert len(calls) == 2
    assert any(m.startswith("Throttling for 2 seconds due to") for m in caplog.messages)


async def test_an_event_in_the_throttling_delay_is_handled_after_it(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
) -> None:
    anyop_apply(PRUNING_CRD)
    registry = OperatorRegistry()
    calls: list[tuple[float, str]] = []

    @on.create("prunedexamples", registry=registry, id="create_fn")
    async def create_fn(spec: Any, **_: Any) -> Any:
        calls.append((anyio.current_time(), spec["field"]))
        return 5 if len(calls) == 1 else "fine"

    settings = OperatorSettings()
    settings.queueing.error_delays = (2,)
    async with running(registry, anyop_namespace, settings):
        path = await create_pruned(api, anyop_namespace, "p4", field="first")
        with anyio.fail_after(DEADLINE):
            while not calls:
                await anyio.sleep(0.02)
        change = {"spec": {"field": "changed"}}
        (await api.patch(path, json=change, headers=MERGE)).raise_for_status()
        await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert [field for _, field in calls] == ["first", "changed"]  # the latest state, once
    assert calls[1][0] - calls[0][0] >= 2
