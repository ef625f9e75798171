"""Event watching: see every raw watch-event of a resource, without any state kept on the objects.

``@anyop.on.event`` handlers get every event as it comes: ``type`` is ``None`` for objects found
by the initial listing, else ``ADDED``, ``MODIFIED`` or ``DELETED``. They are never retried and
store nothing on the objects (no annotations, no finalizers, no status): an error is logged, and
the operator goes on.

Try it::

    anyop run examples/13-event-watching/example.py -n default
    kubectl apply -f - <<< '{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
        "metadata": {"name": "kex-13", "labels": {"fragile": "yes"}}, "spec": {"field": "a"}}'
    kubectl patch kex kex-13 --type merge -p '{"spec": {"field": "b"}}'
    kubectl delete kex kex-13
"""

from typing import Any

import anyop


@anyop.on.event("kopfexamples")
def log_event(
    type: str | None, name: str, spec: anyop.Spec, memo: anyop.Memo, logger: anyop.Logger, **_: Any
) -> None:
    """Every event of every KopfExample in the served namespaces."""
    memo.setdefault("seen", 0)
    memo.seen += 1  # the object's memo lives as long as the object does
    logger.info(f"Event {type or 'LISTED'} #{memo.seen} for {name}: field={spec.get('field')!r}")


@anyop.on.event("kopfexamples", labels={"fragile": "yes"})
def fragile(type: str | None, **_: Any) -> None:
    """A failing event handler: its error is logged with a traceback, and that is all."""
    raise RuntimeError(f"Cannot cope with the {type or 'LISTED'} event.")
