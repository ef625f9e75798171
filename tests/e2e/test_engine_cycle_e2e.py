"""More of the handling cycle on the real control plane.

An update during a slow create, an object without a spec, the ``patch`` kwarg with transformation
functions, objects that no filter matches left untouched, and a Kopf operator run unchanged.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.e2e.kex import apply_kex, wait_for_status
from tests.e2e.test_cli_run import start_operator
from tests.e2e.test_engine_e2e import DEADLINE, create, running, url, wait_for, wait_for_log

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.client import KubeClient
from anyop.testing.controlplane import LocalControlPlane

pytestmark = [pytest.mark.usefixtures("kopfexample_crd")]

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(autouse=True)
def debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop")


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_an_update_during_a_slow_create_is_handled_after_it_with_the_right_diff(
    api: httpx.AsyncClient, anyop_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = OperatorRegistry()
    entered, release = anyio.Event(), anyio.Event()
    updates: list[tuple[Any, Any]] = []

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> None:
        entered.set()
        await release.wait()

    @on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(old: Any, new: Any, **_: Any) -> None:
        updates.append((old["spec"]["field"], new["spec"]["field"]))

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "slow")
        with anyio.fail_after(DEADLINE):
            await entered.wait()
        change = {"spec": {"field": "changed"}}
        path = url(anyop_namespace, "slow")
        (await api.patch(path, json=change, headers=MERGE)).raise_for_status()
        release.set()
        await wait_for_log(caplog, "Updating is processed: 1 succeeded; 0 failed.")
    assert updates == [("value", "changed")]


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_an_object_without_a_spec_is_handled(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(spec: Any, **_: Any) -> dict[str, Any]:
        return {"spec": dict(spec)}

    async with running(registry, anyop_namespace):
        body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": {"name": "bare"}}
        (await api.post(url(anyop_namespace), json=body)).raise_for_status()
        path = url(anyop_namespace, "bare")
        found = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert found["status"]["create_fn"] == {"spec": {}}


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_the_patch_kwarg_merges_and_applies_transformation_functions(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    registry = OperatorRegistry()

    def append_item(body: Any) -> None:
        body["spec"].setdefault("items", []).append("added")

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(patch: Any, **_: Any) -> None:
        patch.metadata.labels["patched"] = "yes"
        patch.spec["merged"] = True
        patch.fns.append(append_item)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "patched")
        path = url(anyop_namespace, "patched")
        found = await wait_for(api, path, lambda b: "items" in b.get("spec", {}))
    assert found["metadata"]["labels"] == {"patched": "yes"}
    assert found["spec"] == {"field": "value", "merged": True, "items": ["added"]}


@pytest.mark.anyio
@pytest.mark.usefixtures("anyop_kubeconfig")
async def test_objects_that_no_filter_matches_are_never_touched(
    api: httpx.AsyncClient, anyop_namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched: list[str] = []
    original = KubeClient.patch

    async def recording(self: KubeClient, *args: Any, **kwargs: Any) -> Any:
        patched.append(kwargs.get("name", ""))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(KubeClient, "patch", recording)
    registry = OperatorRegistry()
    on.create("kopfexamples", registry=registry, id="c", labels={"app": "yes"})(lambda **_: 1)
    on.delete("kopfexamples", registry=registry, id="d", labels={"app": "yes"})(lambda **_: 1)

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "ignored")
        body = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "handled", "labels": {"app": "yes"}},
        }
        (await api.post(url(anyop_namespace), json=body)).raise_for_status()
        await wait_for(api, url(anyop_namespace, "handled"), lambda b: "c" in b.get("status", {}))
        # The unmatched object was listed or watched before the matched one: it is settled.
        ignored = (await api.get(url(anyop_namespace, "ignored"))).json()
    assert set(patched) == {"handled"}
    assert "finalizers" not in ignored["metadata"]
    assert "annotations" not in ignored["metadata"]
    assert "status" not in ignored


KOPF_OPERATOR = """
    import kopf

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.posting.enabled = False

    @kopf.on.create("kopfexamples")
    def create_fn(spec, logger, **kwargs):
        logger.info("Kopf code, unchanged.")
        return {"message": f"field is {spec['field']}"}

    @kopf.on.field("kopfexamples", field="spec.field")
    def field_fn(old, new, **kwargs):
        return {"old": old, "new": new}
"""

SHIM = "import sys, anyop; sys.modules['kopf'] = anyop\n"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_kopf_operator_runs_unchanged_with_kopf_being_anyop(
    anyop_controlplane: LocalControlPlane, anyop_namespace: str, backend: str, tmp_path: Path
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    (tmp_path / "shim.py").write_text(SHIM)
    (tmp_path / "operator.py").write_text(textwrap.dedent(KOPF_OPERATOR))
    # `anyop run shim.py operator.py`: the first file makes `import kopf` give anyop.
    shim, source = str(tmp_path / "shim.py"), str(tmp_path / "operator.py")
    operator = start_operator(plane, shim, ns, backend, source)
    try:
        apply_kex(plane, ns, "kopf-1", field="a")
        status = wait_for_status(plane, ns, "kopf-1")
        assert status["create_fn"] == {"message": "field is a"}
        apply_kex(plane, ns, "kopf-1", field="b")
        status = wait_for_status(plane, ns, "kopf-1", "field_fn/spec.field")
        assert status["field_fn/spec.field"] == {"old": "a", "new": "b"}
    finally:
        operator.terminate()
        output, _ = operator.communicate(timeout=30)
    assert operator.returncode == 0, output
    assert f"[{ns}/kopf-1] Kopf code, unchanged." in output
