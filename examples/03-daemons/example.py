"""Daemons: a sync one that fails a few times before it settles, and a filtered async one.

Try it::

    anyop run examples/03-daemons/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-3", "annotations": {"monitored": "yes"}},
        "spec": {"field": "a"}}'
    kubectl patch kex kex-3 --type merge -p '{"spec": {"field": "b"}}'   # seen live, no restart
    kubectl annotate kex kex-3 monitored-                                # the async one stops
    kubectl delete kex kex-3                                             # the sync one stops
"""

from typing import Any

import anyio

import anyop


@anyop.daemon("kopfexamples", backoff=1)
def background_sync(
    spec: anyop.Spec,
    retry: int,
    patch: anyop.Patch,
    stopped: anyop.DaemonStopped,
    logger: anyop.Logger,
    **_: Any,
) -> None:
    """Fail three times (each failure is reported in the status), then ping every second."""
    if retry < 3:
        patch.status["message"] = f"Failed {retry + 1} times."
        raise anyop.TemporaryError("Not ready yet.", delay=1)
    while not stopped:
        logger.info(f"=> Ping from a sync daemon: field={spec.get('field')!r}, retry={retry}")
        stopped.wait(1)
    logger.info(f"The sync daemon exits: {stopped.reason!r}")


@anyop.daemon(
    "kopfexamples",
    annotations={"monitored": "yes"},
    cancellation_backoff=1.0,
    cancellation_timeout=0.5,
)
async def background_async(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> None:
    """Ping every second while the object is annotated; stop flag ignored: it is cancelled."""
    try:
        while True:
            logger.info(f"=> Ping from an async daemon: field={spec.get('field')!r}")
            await anyio.sleep(1)
    finally:
        logger.info("The async daemon is cancelled.")
