"""A CRD created after the operator started is served without a restart."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, running, wait_for, wait_for_log

import anyop
import anyop.on as on
from anyop.engine.operator.health import Health, current_health
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.linestream import LineStream
from anyop.kube.watch import QUIET_404S, Watcher
from anyop.settings import OperatorSettings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("anyop_kubeconfig")]

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.late.anyop.dev
spec:
  scope: Namespaced
  group: late.anyop.dev
  names: {{kind: {kind}, plural: {plural}, singular: {singular}}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"""


async def test_a_crd_applied_after_the_start_is_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")  # a failure shows what the watches did
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    registry = OperatorRegistry()
    created: list[str] = []

    @on.create(f"{plural}.late.anyop.dev", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        created.append(name)
        return "seen"

    async with running(registry, anyop_namespace):
        assert any(m.startswith("Unresolved resources") for m in caplog.messages)
        manifest = CRD.format(kind=kind, plural=plural, singular=singular)
        await anyio.to_thread.run_sync(anyop_apply, manifest)
        message = f"Serving resources created after the start: {plural}.v1.late.anyop.dev."
        await wait_for_log(caplog, message)
        base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": "l1"}}
        (await api.post(base, json=body)).raise_for_status()
        found = await wait_for(api, f"{base}/l1", lambda b: "create_fn" in b.get("status", {}))
    assert found["status"]["create_fn"] == "seen"
    assert created == ["l1"]


async def test_with_scanning_disabled_a_crd_applied_after_the_start_is_not_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    registry = OperatorRegistry()
    created: list[str] = []
    on.create(f"{plural}.late.anyop.dev", registry=registry, id="create_fn")(
        lambda name, **_: created.append(name)
    )
    settings = OperatorSettings()
    settings.scanning.disabled = True

    async with running(registry, anyop_namespace, settings):
        manifest = CRD.format(kind=kind, plural=plural, singular=singular)
        await anyio.to_thread.run_sync(anyop_apply, manifest)
        base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": "l1"}}
        (await api.post(base, json=body)).raise_for_status()
        await anyio.sleep(3)  # with scanning, it is served within a second (the test above)
    assert created == []
    assert not any("created after the start" in m for m in caplog.messages)


TWO_VERSIONS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  scope: Namespaced
  group: {group}
  names: {{kind: {kind}, plural: {plural}, singular: {singular}}}
  conversion: {{strategy: None}}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {{status: {{}}}}
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
    - name: v2
      served: {v2_served}
      storage: false
      subresources: {{status: {{}}}}
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


async def test_a_crd_missing_from_its_groups_preferred_version_is_handled_in_its_own(
    on_cluster: str,
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another CRD of the group serves v2, so the group prefers v2. CRDs that serve v1 only,
    one applied before the start and one after, are served in v1 (as kubectl takes them), and
    their objects reach the handlers whose selectors name no version."""
    caplog.set_level(logging.DEBUG, logger="anyop")
    group = f"g{uuid.uuid4().hex[:8]}.late.anyop.dev"

    def crd(plural: str, *, v2_served: bool) -> str:
        names = {"kind": plural.capitalize()[:-1], "plural": plural, "singular": plural[:-1]}
        served = "true" if v2_served else "false"
        return TWO_VERSIONS.format(group=group, **names, v2_served=served)

    async def apply(manifest: str) -> None:
        if on_cluster == "fake":
            anyop_apply(manifest)  # FakeCluster is changed in its event loop's thread only
        else:
            await anyio.to_thread.run_sync(anyop_apply, manifest)  # kubectl, then a wait

    await apply(crd("others", v2_served=True))
    await apply(crd("befores", v2_served=False))
    registry = OperatorRegistry()
    created: list[tuple[str, str]] = []
    for plural in ("befores", "afters"):

        @on.create(f"{plural}.{group}", registry=registry, id="create_fn")
        async def create_fn(name: str, resource: anyop.Resource, **_: Any) -> str:
            created.append((str(resource), name))
            return "seen"

    async def create(plural: str, name: str) -> None:
        base = f"/apis/{group}/v1/namespaces/{anyop_namespace}/{plural}"
        body = {"apiVersion": f"{group}/v1", "kind": plural.capitalize()[:-1],
                "metadata": {"name": name}}  # fmt: skip
        (await api.post(base, json=body)).raise_for_status()
        await wait_for(api, f"{base}/{name}", lambda b: "create_fn" in b.get("status", {}))

    async with running(registry, anyop_namespace):
        await create("befores", "b1")
        await apply(crd("afters", v2_served=False))
        await wait_for_log(caplog, f"Serving resources created after the start: afters.v1.{group}.")
        await create("afters", "a1")
    assert sorted(created) == [(f"afters.v1.{group}", "a1"), (f"befores.v1.{group}", "b1")]


@pytest.mark.usefixtures("kopfexample_crd")
async def test_with_scanning_disabled_namespace_patterns_are_ignored_with_a_warning(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.e2e.test_engine_e2e import create, url

    caplog.set_level(logging.DEBUG, logger="anyop")  # a failure shows what the watches did
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "seen")
    settings = OperatorSettings()
    settings.scanning.disabled = True
    namespaces = [anyop_namespace, "nothing-*"]
    async with running(registry, None, settings, namespaces=namespaces, clusterwide=False):
        await create(api, anyop_namespace, "exact")
        path = url(anyop_namespace, "exact")
        await wait_for(api, path, lambda b: b.get("status", {}).get("create_fn") == "seen")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("the namespace patterns ['nothing-*'] are ignored" in w for w in warnings)


async def test_a_deleted_crd_stops_its_watches_after_its_objects_and_a_new_one_is_served(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deleting a CRD deletes its objects first: their deletion is handled (the finalizer holds
    the CRD's deletion until then); then the resource's watches stop, with no error loop while
    it is gone, and the same CRD applied again is served again."""
    caplog.set_level(logging.DEBUG, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    crd_name, resource = f"{plural}.late.anyop.dev", f"{plural}.v1.late.anyop.dev"
    manifest = CRD.format(kind=kind, plural=plural, singular=singular)
    await anyio.to_thread.run_sync(anyop_apply, manifest)
    registry = OperatorRegistry()
    created: list[str] = []
    deleted: list[str] = []
    pinged: set[str] = set()

    @on.create(crd_name, registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        created.append(name)
        return "seen"

    @on.delete(crd_name, registry=registry, id="delete_fn")
    async def delete_fn(name: str, **_: Any) -> None:
        deleted.append(name)

    @anyop.daemon(crd_name, registry=registry, id="pinger")
    async def pinger(name: str, stopped: anyop.DaemonStopped, **_: Any) -> None:
        pinged.add(name)
        await stopped.wait()

    base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"

    async def create(name: str) -> None:
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": name}}
        (await api.post(base, json=body)).raise_for_status()
        await wait_for(api, f"{base}/{name}", lambda b: "create_fn" in b.get("status", {}))

    async with running(registry, anyop_namespace):
        await create("before")
        (await api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}"))
        await wait_for_log(caplog, f"Stopped serving resources whose CRD is deleted or changed: "
                                   f"{resource}.")  # fmt: skip
        assert deleted == ["before"]  # handled before the CRD could go
        since = len(caplog.records)
        await anyio.sleep(3)  # the backoff of a failing watch would have logged by now
        later = caplog.records[since:]
        warnings = [r.getMessage() for r in later if r.levelno >= logging.WARNING]
        assert all(w.startswith("Unresolved resources cannot be served") for w in warnings)
        assert len(warnings) <= 1  # said once, not at every change of any CRD
        assert not [r.getMessage() for r in later if "Watch-stream" in r.getMessage()]

        await anyio.to_thread.run_sync(anyop_apply, manifest)
        await wait_for_log(caplog, f"Serving resources created after the start: {resource}.")
        await create("after")
    assert created == ["before", "after"]
    assert pinged == {"before", "after"}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors


@pytest.fixture
def watch_requests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, str]]:
    """When each watch request of the operator was made, and of which resource."""
    sent: list[tuple[float, str]] = []
    original = Watcher._stream

    def counting(self: Watcher, *, initial: bool = False) -> LineStream:
        sent.append((time.monotonic(), str(self.resource)))
        return original(self, initial=initial)

    monkeypatch.setattr(Watcher, "_stream", counting)
    return sent


async def test_row24_a_version_no_longer_served_is_withdrawn_and_the_others_are_unaffected(
    api: httpx.AsyncClient,
    anyop_namespace: str,
    anyop_apply: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
    watch_requests: list[tuple[float, str]],
) -> None:
    """A CRD serves v1 (storage) and v2 (no conversion: the same schema); the operator handles
    both. The CRD is changed to serve v2 no more: v2's watch is withdrawn with one line and no
    retries (no error loop while it is gone); v1's watch goes on (the same watcher), and an
    object created after is handled once by v1's handler, never by v2's. Both backends: the
    withdrawal stops one resource's task while the other's runs on.

    Both versions' watches see an object created before (their event handlers say so), but its
    creation may be handled in one version only: the versions share the object's state (its
    last handled configuration, as in Kopf), and the version that sees the object after the
    other's handling finds nothing new."""
    caplog.set_level(logging.DEBUG, logger="anyop")
    suffix = uuid.uuid4().hex[:8]
    kind, plural, singular = f"Late{suffix}", f"late{suffix}s", f"late{suffix}"
    names = {"kind": kind, "plural": plural, "singular": singular, "group": "late.anyop.dev"}
    v1, v2 = f"{plural}.v1.late.anyop.dev", f"{plural}.v2.late.anyop.dev"
    await anyio.to_thread.run_sync(anyop_apply, TWO_VERSIONS.format(**names, v2_served="true"))
    registry = OperatorRegistry()
    calls: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    health: list[Health | None] = []
    for version in ("v1", "v2"):

        @on.create("late.anyop.dev", version, plural, registry=registry, id=f"create_{version}")
        async def create_fn(name: str, resource: anyop.Resource, **_: Any) -> str:
            calls.append((f"create_{resource.version}", name))
            return "seen"

        @on.event("late.anyop.dev", version, plural, registry=registry, id=f"seen_{version}")
        async def seen_fn(name: str, resource: anyop.Resource, **_: Any) -> None:
            seen.add((resource.version, name))
            health.append(current_health.get())

    base = f"/apis/late.anyop.dev/v1/namespaces/{anyop_namespace}/{plural}"

    async def create(name: str, *versions: str) -> None:
        """Create it; wait until the given versions' watches saw it and its creation was
        handled."""
        body = {"apiVersion": "late.anyop.dev/v1", "kind": kind, "metadata": {"name": name}}
        (await api.post(base, json=body)).raise_for_status()
        handled = lambda b: any(h.startswith("create_") for h in b.get("status", {}))  # noqa: E731
        await wait_for(api, f"{base}/{name}", handled)
        with anyio.fail_after(DEADLINE):
            while not all((version, name) in seen for version in versions):
                await anyio.sleep(0.05)

    def watcher(resource: str) -> Any:
        watchers = health[0].watchers.values() if health[0] else ()
        return next((w.watcher for w in watchers if str(w.resource) == resource), None)

    async with running(registry, anyop_namespace):
        await create("before", "v1", "v2")
        v1_watcher, since = watcher(v1), len(caplog.records)
        changed = time.monotonic()
        await anyio.to_thread.run_sync(anyop_apply, TWO_VERSIONS.format(**names, v2_served="false"))
        await wait_for_log(
            caplog, f"Stopped serving resources whose CRD is deleted or changed: {v2}."
        )
        withdrawn = time.monotonic()
        await anyio.sleep(5)  # a failing watch's backoff would have retried by now, and logged
        await create("after", "v1")
        await anyio.sleep(1)  # v2's handler, if it were still served, would have run by now
        assert watcher(v2) is None
        assert watcher(v1) is v1_watcher  # v1's serving went on: the same watcher
        v1_state = v1_watcher.state
    later = [r for r in caplog.records[since:] if v2 in r.getMessage()]
    warned = [r.getMessage() for r in caplog.records[since:] if r.levelno >= logging.WARNING]
    v2_watches = [moment for moment, resource in watch_requests if resource == v2]
    print(f"\nrow 24: withdrawn {withdrawn - changed:.1f} s after the change;")
    print(f"  v2 watches since the change: {sum(m > changed for m in v2_watches)};")
    print(f"  v1 watch restarts {v1_state.restarts}, relists {v1_state.relists}; {warned}")
    before = sorted(handler for handler, name in calls if name == "before")
    assert before in (["create_v1"], ["create_v2"], ["create_v1", "create_v2"])
    assert [handler for handler, name in calls if name == "after"] == ["create_v1"]
    assert ("v2", "after") not in seen
    # A watch of v2 that the API server ended as it changed may get a 404 (said at INFO) before
    # the withdrawal: at most QUIET_404S, and none a second after it (no retry loop).
    streams = [r for r in later if "Watch-stream" in r.getMessage()]
    assert all(r.levelno == logging.INFO for r in streams)
    assert len(streams) <= QUIET_404S
    assert sum(moment > changed for moment in v2_watches) <= QUIET_404S
    assert sum(moment > withdrawn + 1 for moment in v2_watches) == 0
    assert all(w.startswith("Unresolved resources cannot be served") for w in warned)
    assert len(warned) <= 1  # v2's handler's resource is said to be gone, once
    # kube-apiserver rebuilds the CRD's storage on the change: v1's watch ends, and its version
    # is "too old" (410) for the new watch cache: one relist, which handles nothing again.
    assert v1_state.relists <= 1
    assert v1_state.failures == 0
