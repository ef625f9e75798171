"""Built-in resources: handlers for ConfigMaps and Pods work just as for custom resources.

- Every ConfigMap labelled ``app=greeter`` is greeted, and a change of its ``data.greeting`` is
  reported (as a log line, and as an Event that ``kubectl describe configmap`` shows).
- Every Pod with a ``ttl-seconds`` label is killed (deleted) when its time is up, counted from
  its creation or from the operator's start (resume) -- unless it is deleted earlier, which
  cancels the killing.

Kopf's example (10-builtins) starts an ``asyncio`` task in ``on.create``/``on.resume``, keeps it
in a global dict, and cancels it in ``on.delete``. That task belongs to nobody: it runs on
asyncio only (not on Trio), and it outlives the operator if ``on.delete`` never comes. Here, the
killer is a daemon: a task in the pod's own task group inside the operator's, started for every
selected pod (new, or found at the start) and stopped through its ``stopped`` flag when the pod
is deleted, loses its label, or the operator exits. Nothing to keep, nothing to cancel by hand,
nothing left behind, on asyncio and Trio alike. The ``on.delete`` handler has nothing to cancel:
the engine has set the daemon's flag before it runs.

Results of these handlers are not returned: ConfigMaps have no status, and a Pod's status
belongs to the kubelet.

Try it::

    anyop run examples/14-builtin-resources/example.py -n default
    kubectl create configmap hello --from-literal=greeting=hello
    kubectl label configmap hello app=greeter
    kubectl patch configmap hello --type merge -p '{"data": {"greeting": "bonjour"}}'
    kubectl run short-lived --image=busybox --labels=ttl-seconds=5 -- sleep 3600
    kubectl get pods -w                         # short-lived goes away after about 5 seconds
    kubectl run long-lived --image=busybox --labels=ttl-seconds=600 -- sleep 3600
    kubectl delete pod long-lived               # its killing is cancelled
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


SELECTED = {"ttl-seconds": anyop.PRESENT}
CANCELLING = (  # the pod is being deleted or is no longer labelled; not: the operator stops
    anyop.DaemonStoppingReason.RESOURCE_DELETED | anyop.DaemonStoppingReason.FILTERS_MISMATCH
)


@anyop.daemon("pods", labels=SELECTED)
async def kill_when_due(
    name: str,
    namespace: str,
    labels: anyop.Labels,
    memo: anyop.Memo,
    stopped: anyop.DaemonStopped,
    logger: anyop.Logger,
    **_: Any,
) -> None:
    """Wait for the pod's time to be up, then delete it -- unless the daemon is stopped first.

    The daemon starts for new pods and for those found when the operator starts, so the time
    counts from either. While it runs, anyop's finalizer keeps the pod, so a deletion waits for
    the daemon to exit: ``stopped.wait()`` returns at once when the engine sets the flag.
    """
    ttl = float(labels["ttl-seconds"])
    logger.info(f"=== Pod killing happens in {ttl:g}s.")
    if await stopped.wait(ttl):
        if stopped.reason & CANCELLING:
            logger.info("=== Pod killing is cancelled!")
        else:  # the operator exits or pauses: the next one (on resume) counts from the start
            logger.info("=== Pod killing is postponed until the operator serves the pod again.")
        return
    logger.info("=== Pod killing happens NOW!")
    response = await memo.api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")
    if response.is_error and response.status_code != 404:
        raise anyop.TemporaryError(f"Cannot delete the pod: {response.text}", delay=5)


@anyop.on.delete("pods", labels=SELECTED)
def pod_delete(name: str, logger: anyop.Logger, **_: Any) -> None:
    """Kopf's example cancels its task here. anyop has set the daemon's ``stopped`` flag already
    (a cycle stops the daemons of a deleted object before it runs the delete handlers), so this
    handler has nothing to cancel; the finalizer stays until both have finished."""
    logger.info(f"=== Pod {name} is being deleted.")
