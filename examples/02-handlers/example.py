"""Every kind of resource-changing handler, with sub-handlers for the items of the spec.

Try it::

    anyop run examples/02-handlers/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-2"}, "spec": {"field": "a", "items": ["x", "y"]}}'
    kubectl patch kex kex-2 --type merge -p '{"spec": {"field": "b"}}'
    kubectl delete kex kex-2
"""

from typing import Any

import anyop


@anyop.on.resume("kopfexamples")
@anyop.on.create("kopfexamples")
def create_fn(spec: anyop.Spec, logger: anyop.Logger, **_: Any) -> dict[str, Any]:
    """Declare one sub-handler per item: each runs once, with its own retries and status."""
    for item in spec.get("items", []):

        @anyop.subhandler(id=item)
        def handle_item(item: str = item, **_: Any) -> str:
            return f"handled {item}"

    logger.info(f"Declared sub-handlers for {len(spec.get('items', []))} items.")
    return {"items": len(spec.get("items", []))}


@anyop.on.update("kopfexamples")
def update_fn(old: Any, new: Any, diff: anyop.Diff, logger: anyop.Logger, **_: Any) -> str:
    """Runs for every change of the spec (not of the status)."""
    logger.info(f"Changed: {list(diff)}")
    return f"updated {len(diff)} fields"


@anyop.on.field("kopfexamples", field="spec.field")
def field_fn(old: Any, new: Any, **_: Any) -> dict[str, Any]:
    """Runs when ``spec.field`` changes, with its old and new values only."""
    return {"old": old, "new": new}


@anyop.on.delete("kopfexamples")
def delete_fn(name: str, logger: anyop.Logger, **_: Any) -> None:
    """Runs before the object goes away: the finalizer holds it until this succeeds."""
    logger.info(f"Cleaning up after {name}.")
