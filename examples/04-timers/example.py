"""Timers: one that waits for the object to be quiet, and a sharp one that patches the status.

Try it::

    anyop run examples/04-timers/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-4"}, "spec": {"field": "a"}}'
    kubectl patch kex kex-4 --type merge -p '{"spec": {"field": "b"}}'   # the quiet one waits again
    kubectl get kex kex-4 -o jsonpath='{.status.heartbeat}'
"""

from typing import Any

import anyop


@anyop.timer("kopfexamples", idle=3, interval=1)
def quiet_ping(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> None:
    """Every second, once the spec has not changed for 3 seconds."""
    logger.info(f"Ping from a sync timer: field={spec.get('field')!r}")


@anyop.timer("kopfexamples", interval=2, sharp=True)
async def heartbeat(status: anyop.Status, **_: Any) -> int:
    """Every 2 seconds on the dot, count up in status.heartbeat (the result goes there).

    Status changes do not reset the quiet timer's idle clock: only the spec and metadata count.
    """
    return int(status.get("heartbeat") or 0) + 1
