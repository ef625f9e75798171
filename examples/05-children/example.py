"""Children: every KopfExample gets a Pod of its own, adopted so that it belongs to its parent.

anyop is not a Kubernetes client library: talk to the API with any client you like. This example
uses httpx (which anyop depends on anyway) with the same credentials that anyop itself uses.

Try it::

    anyop run examples/05-children/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-5", "labels": {"app": "demo"}}, "spec": {"duration": 60}}'
    kubectl get pods -l app=demo -o yaml     # ownerReferences point to kex-5
    kubectl get kex kex-5 -o jsonpath='{.status.create_fn.children}'
"""

from typing import Any

import anyio
import httpx

import anyop


@anyop.on.startup()
async def open_api(memo: anyop.Memo, logger: anyop.Logger, **_: Any) -> None:
    """One HTTP client for all handlers: as the pod's service account, or with the kubeconfig."""
    info = await anyop.login_with_service_account() or await anyop.login_with_kubeconfig()
    if info is None:
        raise anyop.PermanentError("Neither a service account nor a kubeconfig is available.")
    tls = await anyio.to_thread.run_sync(info.as_ssl_context)  # reads the certificate files
    memo.api = httpx.AsyncClient(
        base_url=info.server, verify=tls, headers=info.as_http_headers(), timeout=30
    )
    logger.info(f"Talking to {info.server}.")


@anyop.on.cleanup()
async def close_api(memo: anyop.Memo, **_: Any) -> None:
    """Close the client when the operator stops."""
    await memo.api.aclose()


@anyop.on.create("kopfexamples")
async def create_fn(
    spec: anyop.Spec, memo: anyop.Memo, logger: anyop.Logger, **_: Any
) -> dict[str, Any]:
    """Create a Pod that sleeps for ``spec.duration`` seconds, owned by this KopfExample.

    Handlers run at least once: if the operator dies after the Pod is created but before the
    success is stored, this runs again and creates a second Pod. Where that matters, name the
    child exactly (``anyop.adopt(pod, strict=True)``) and take a 409 Conflict as done.
    """
    duration = int(spec.get("duration", 3600))
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [
                {
                    "name": "sleeper",
                    "image": "busybox",
                    "command": ["sh", "-c", f"echo 'Hello, world!'; sleep {duration}"],
                }
            ],
        },
    }

    # The owner reference, generateName "<parent>-", the parent's namespace and its labels:
    anyop.adopt(pod)

    namespace = pod["metadata"]["namespace"]
    response = await memo.api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    if response.is_error:  # e.g. a quota or RBAC problem: try again in a while
        raise anyop.TemporaryError(f"Cannot create the pod: {response.text}", delay=10)
    child = response.json()["metadata"]
    logger.info(f"Pod child is created: {child['name']}")
    return {"children": [child["uid"]]}  # lands in status.create_fn.children
