"""A test's namespace goes, though a stopped operator left its finalizer on objects in it (see
:mod:`anyop.testing.leftovers`): on the real control plane, with its namespace controller."""

from __future__ import annotations

import time
import uuid

import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.leftovers import release_finalizers

KEX = "/apis/kopf.dev/v1/namespaces/{}/kopfexamples"


def test_a_namespace_whose_objects_held_finalizers_is_gone_after_their_release(
    anyop_controlplane: LocalControlPlane, kopfexample_crd: str
) -> None:
    plane, ns = anyop_controlplane, f"leftovers-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context(), timeout=30) as api:
        api.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).raise_for_status()
        for i in range(3):
            metadata = {"name": f"kex-{i}", "finalizers": ["anyop.dev/finalizer"]}
            body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata}
            api.post(KEX.format(ns), json=body).raise_for_status()

        release_finalizers(api, ns)
        api.delete(f"/api/v1/namespaces/{ns}").raise_for_status()

        deadline = time.monotonic() + 60
        while (found := api.get(f"/api/v1/namespaces/{ns}")).status_code != 404:
            conditions = found.json().get("status", {}).get("conditions")
            assert time.monotonic() < deadline, f"{ns} is still there: {conditions}"
            time.sleep(0.2)
