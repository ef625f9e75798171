"""Built-in resources: handlers for ConfigMaps and Pods work just as for custom resources.

- Every ConfigMap labelled ``app=greeter`` is greeted, and a change of its ``data.greeting`` is
  reported (as a log line, and as an Event that ``kubectl describe configmap`` shows).
- Every Pod with a ``ttl-seconds`` label is deleted when its time is up: a daemon per pod waits,
  and the operator's finalizer keeps the pod until its daemon has finished.

Results of these handlers are not returned: ConfigMaps have no status, and a Pod's status
belongs to the kubelet.

Try it::

    anyop run examples/14-builtin-resources/example.py -n default
    kubectl create configmap hello --from-literal=greeting=hello
    kubectl label configmap hello app=greeter
    kubectl patch configmap hello --type merge -p '{"data": {"greeting": "bonjour"}}'
    kubectl run short-lived --image=busybox --labels=ttl-seconds=5 -- sleep 3600
    kubectl get pods -w                         # short-lived goes away after about 5 seconds
"""

from typing import Any

import anyio
import httpx

import anyop


@anyop.on.create("v1", "configmaps", labels={"app": "greeter"})
def greet(body: anyop.Body, name: str, logger: anyop.Logger, **_: Any) -> None:
    greeting = (body.get("data") or {}).get("greeting", "nothing")
    logger.info(f"ConfigMap {name} says: {greeting}")


@anyop.on.update("v1", "configmaps", field="data.greeting", labels={"app": "greeter"})
def greeting_changed(body: anyop.Body, old: Any, new: Any, logger: anyop.Logger, **_: Any) -> None:
    """The ``data`` of a ConfigMap is part of what anyop watches for changes, as a spec is.

    ``@on.update(field=...)`` runs on changes of the field only; ``@on.field(field=...)`` would
    also run when the object is created (with ``old=None``).
    """
    logger.info(f"The greeting has changed: {old!r} -> {new!r}")
    anyop.info(body, reason="GreetingChanged", message=f"{old!r} -> {new!r}")


@anyop.on.startup()
async def open_api(memo: anyop.Memo, **_: Any) -> None:
    """An HTTP client for the daemons, with the credentials that anyop itself uses."""
    info = await anyop.login_with_service_account() or await anyop.login_with_kubeconfig()
    if info is None:
        raise anyop.PermanentError("Neither a service account nor a kubeconfig is available.")
    tls = await anyio.to_thread.run_sync(info.as_ssl_context)
    memo.api = httpx.AsyncClient(
        base_url=info.server, verify=tls, headers=info.as_http_headers(), timeout=30
    )


@anyop.on.cleanup()
async def close_api(memo: anyop.Memo, **_: Any) -> None:
    await memo.api.aclose()


@anyop.daemon("pods", labels={"ttl-seconds": anyop.PRESENT})
async def expire(
    name: str,
    namespace: str,
    labels: anyop.Labels,
    memo: anyop.Memo,
    stopped: anyop.DaemonStopped,
    logger: anyop.Logger,
    **_: Any,
) -> None:
    """Wait for the pod's time to be up, then delete it (unless it goes away first)."""
    ttl = float(labels["ttl-seconds"])
    logger.info(f"=== Pod {name} will be deleted in {ttl:g} seconds.")
    await stopped.wait(ttl)
    if stopped:
        logger.info(f"=== Pod {name} is not deleted: {stopped.reason.name}.")
        return
    response = await memo.api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")
    if response.is_error and response.status_code != 404:
        raise anyop.TemporaryError(f"Cannot delete the pod: {response.text}", delay=5)
    logger.info(f"=== Pod {name} has expired and is deleted.")
