"""Sub-handlers: a handler that splits its work into steps, each with its own retries and result.

- Declarative: ``@anyop.subhandler`` inside a handler declares a child handler, e.g. one per item
  of the spec (their ids are ``parent/child``); the parent is finished when all children are.
- Imperative: ``await anyop.execute(fns={...})`` runs the given functions as children and returns
  only once all of them have succeeded; the code after it runs once, at the very end.

A child that fails is retried on its own: the children that have succeeded are not run again.

Try it::

    anyop run examples/12-subhandlers/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-12"}, "spec": {"items": ["db", "slow-cache"], "version": 1}}'
    kubectl patch kex kex-12 --type merge -p '{"spec": {"version": 2}}'
    kubectl get kex kex-12 -o jsonpath='{.status}'
"""

from collections.abc import Callable
from typing import Any

import anyop


@anyop.on.create("kopfexamples")
def create_fn(spec: anyop.Spec, **_: Any) -> dict[str, int]:
    """Declare one sub-handler per item; each reports to ``status["create_fn/<item>"]``."""
    items = spec.get("items", [])
    for item in items:

        @anyop.subhandler(id=item)
        def handle_item(retry: int, logger: anyop.Logger, item: str = item, **_: Any) -> str:
            logger.info(f"=== Handling creation for {item}, attempt {retry + 1}. ===")
            if item.startswith("slow") and retry < 1:
                raise anyop.TemporaryError(f"{item} is not ready yet.", delay=1)
            return f"{item} is ready"

    return {"items": len(items)}


@anyop.on.update("kopfexamples", field="spec.version")  # on changes only, not on creation
async def upgrade(old: Any, new: Any, logger: anyop.Logger, **_: Any) -> str:
    """Run the steps of an upgrade as sub-handlers, then finish once all of them are done."""

    async def drain(**_: Any) -> str:
        logger.info(f"Draining the traffic off version {old}.")
        return "drained"

    async def install(retry: int, **_: Any) -> str:
        if retry < 1:
            raise anyop.TemporaryError("The new version is still downloading.", delay=1)
        logger.info(f"Installed version {new}.")
        return "installed"

    steps: dict[str, Callable[..., Any]] = {"drain": drain, "install": install}
    await anyop.execute(fns=steps)
    logger.info(f"Upgraded from version {old} to {new}.")  # once: after all steps succeeded
    return f"{old} -> {new}"
