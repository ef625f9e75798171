"""Reconcile: every KopfExample keeps ``spec.replicas`` ConfigMaps, whatever happens to them.

Level-triggered, unlike Kopf's handlers: the reconciler is called with the object's latest state
and its children whenever the object or one of its ConfigMaps changes or disappears, so a
ConfigMap deleted or edited by hand is put back, and a restart converges without duplicates.

Try it::

    anyop run examples/19-reconcile/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-19"}, "spec": {"replicas": 3}}'
    kubectl get configmaps -l app.kubernetes.io/managed-by=example-19
"""

from typing import Any

import anyop

LABELS = {"app.kubernetes.io/managed-by": "example-19"}


def wanted_data(parent: str, index: int) -> dict[str, str]:
    """What each ConfigMap holds."""
    return {"parent": parent, "index": str(index)}


@anyop.reconcile("kopfexamples", owns=["configmaps"], labels=LABELS)
async def keep_replicas(
    spec: anyop.Spec,
    name: str,
    children: dict[str, list[dict[str, Any]]],
    api: Any,
    patch: anyop.Patch,
    logger: anyop.Logger,
    **_: Any,
) -> None:
    """Make the ConfigMaps ``<name>-0`` .. ``<name>-<replicas-1>`` exist, hold their data, and
    be the only ones."""
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or replicas < 0:
        raise anyop.PermanentError(f"spec.replicas must be a whole number: {replicas!r}")
    wanted = {f"{name}-{i}": wanted_data(name, i) for i in range(replicas)}
    existing = {child["metadata"]["name"]: child for child in children["configmaps"]}
    for child_name, data in wanted.items():
        child = existing.get(child_name)
        if child is None:
            await api.create("configmaps", {"metadata": {"name": child_name}, "data": data})
            logger.info(f"Created {child_name}.")
        elif child.get("data") != data:
            extra = {key: None for key in child.get("data") or {} if key not in data}
            await api.patch("configmaps", child_name, {"data": {**data, **extra}})
            logger.info(f"Put back the data of {child_name}.")
    for child_name in sorted(existing.keys() - wanted.keys()):
        await api.delete("configmaps", child_name)
        logger.info(f"Deleted {child_name}.")
    patch.status["replicas"] = replicas
