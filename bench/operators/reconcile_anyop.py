"""The convergence bench's operator under anyop: ``spec.replicas`` ConfigMaps per KopfExample,
as an ``@anyop.reconcile`` (see ``bench/reconcile_latency.py``)."""

from typing import Any

import anyop

LABEL = "bench-parent"


@anyop.reconcile("kopfexamples", owns=["configmaps"], labels={"bench": "reconcile"})
async def keep_replicas(
    spec: anyop.Spec, name: str, children: dict[str, list[Any]], api: Any, **_: Any
) -> None:
    """Create or delete ConfigMaps until there are ``spec.replicas`` of them."""
    alive = [c for c in children["configmaps"] if not c["metadata"].get("deletionTimestamp")]
    delta = int(spec.get("replicas", 0)) - len(alive)
    for _ in range(delta):
        child = {"metadata": {"generateName": f"{name}-", "labels": {LABEL: name}}}
        await api.create("configmaps", child)
    for child in alive[: max(-delta, 0)]:
        await api.delete("configmaps", child["metadata"]["name"])
