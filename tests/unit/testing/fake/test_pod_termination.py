"""A scheduled Pod's graceful deletion in FakeCluster, and the kubelet's part that ends it once
its grace period is over on FakeCluster's clock (compared with kube-apiserver's answers in
tests/conformance/test_pod_defaults.py; a real kubelet's in none: the local control plane's
node runs none)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.virtual import run_virtual

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.kinds import BUILTIN_KINDS
from anyop.testing.fake.pod_termination import grace_period, later, shortened

PODS = "/api/v1/namespaces/default/pods"
POD_KIND = next(kind for kind in BUILTIN_KINDS if (kind.group, kind.kind) == ("", "Pod"))


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}  # fmt: skip


def test_the_grace_period_is_the_asked_for_the_pods_or_none() -> None:
    on_node = {"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 5}}
    assert grace_period(POD_KIND, on_node, {}) == 5
    assert grace_period(POD_KIND, on_node, {"gracePeriodSeconds": 2}) == 2
    assert grace_period(POD_KIND, on_node, {"gracePeriodSeconds": -3}) == 1
    assert grace_period(POD_KIND, {"spec": {"terminationGracePeriodSeconds": 5}}, {}) == 0
    done = {**on_node, "status": {"phase": "Failed"}}
    assert grace_period(POD_KIND, done, {}) == 0


def test_a_later_delete_may_only_shorten_it_and_not_into_the_past() -> None:
    now = "2026-01-01T00:00:10Z"
    stored = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:30Z",
                           "deletionGracePeriodSeconds": 30}}  # fmt: skip
    assert shortened(POD_KIND, stored, {"gracePeriodSeconds": 30}, now=now) is None
    assert shortened(POD_KIND, stored, {}, now=now) is None
    assert shortened(POD_KIND, stored, {"gracePeriodSeconds": 25}, now=now) == (
        "2026-01-01T00:00:25Z", 25)  # fmt: skip
    assert shortened(POD_KIND, stored, {"gracePeriodSeconds": 5}, now=now) == (now, 1)
    assert shortened(POD_KIND, stored, {"gracePeriodSeconds": 0}, now=now) == (now, 0)
    assert later("2026-12-31T23:59:50Z", 20) == "2027-01-01T00:00:10Z"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_kubelet_deletes_a_pod_once_its_grace_period_is_over(backend: str) -> None:
    async def main() -> list[Any]:
        seen = []
        async with FakeCluster().client() as api:
            await api.post(PODS, json=_pod("a", nodeName="n", terminationGracePeriodSeconds=5))
            await api.post(PODS, json=_pod("b", nodeName="n"))
            marked = (await api.delete(f"{PODS}/a")).json()["metadata"]
            seen.append((marked["deletionTimestamp"], marked["deletionGracePeriodSeconds"]))
            await api.delete(f"{PODS}/b")
            await anyio.sleep(4)
            seen.append((await api.get(f"{PODS}/a")).status_code)
            await anyio.sleep(2)
            seen.append((await api.get(f"{PODS}/a")).status_code)
            seen.append((await api.get(f"{PODS}/b")).status_code)  # 30 s: still there
        return seen

    assert run_virtual(main, backend=backend) == [("2026-01-01T00:00:05Z", 5), 200, 404, 200]


@pytest.mark.anyio
async def test_without_controllers_such_a_pod_stays_and_an_update_does_not_end_it() -> None:
    async with FakeCluster(controllers=False).client() as api:
        body = _pod("a", nodeName="n")
        body["metadata"]["finalizers"] = ["x.dev/keep"]
        await api.post(PODS, json=body)
        await api.delete(f"{PODS}/a")
        patched = await api.patch(
            f"{PODS}/a",
            json={"metadata": {"finalizers": None}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        kept = (await api.get(f"{PODS}/a")).json()["metadata"]
        gone = await api.delete(f"{PODS}/a", params={"gracePeriodSeconds": "0"})
        after = await api.get(f"{PODS}/a")
    assert patched.status_code == 200
    assert kept.get("finalizers") is None
    assert kept["deletionGracePeriodSeconds"] == 30
    assert gone.json()["metadata"]["deletionGracePeriodSeconds"] == 0
    assert after.status_code == 404
