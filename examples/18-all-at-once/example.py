"""All at once: most of anyop's features in one operator, as a Kopf user would write it.

- startup: settings and the operator's memo; cleanup at exit;
- an index of objects by their ``spec.field``, seen by handlers, the timer and the probe;
- create with two sub-handlers, update of one field, delete (so a finalizer is kept);
- a raw event handler, a daemon and a timer;
- Kubernetes Events from handlers (``anyop.info``), and a probe for ``--liveness``.
"""

import datetime
from typing import Any

import anyop as kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Settings for this operator, and the memo every object gets a copy of."""
    settings.posting.reporting_component = "all-at-once"
    settings.persistence.finalizer = "all-at-once.anyop.dev/finalizer"
    memo.started = datetime.datetime.now(datetime.UTC)
    memo.ticks = []  # shared by all objects: the memo is copied shallowly


@kopf.on.cleanup()
def goodbye(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """Say how many ticks there were in this run."""
    logger.info(f"Goodbye after {len(memo.ticks)} ticks.")


@kopf.index("kopfexamples")
def by_field(name: str, spec: kopf.Spec, **_: Any) -> dict[Any, str]:
    """Object names by their ``spec.field``."""
    return {spec.get("field"): name}


@kopf.on.create("kopfexamples")
async def create_fn(
    name: str, spec: kopf.Spec, body: kopf.Body, by_field: kopf.Index[Any, str], **_: Any
) -> dict[str, Any]:
    """Two steps, each retried on its own; then an Event about the object."""

    @kopf.subhandler(id="validate")
    def validate(**_: Any) -> str:
        if not isinstance(spec.get("field"), str):
            raise kopf.PermanentError("spec.field must be a string.")
        return "valid"

    @kopf.subhandler(id="announce")
    def announce(**_: Any) -> str:
        kopf.info(body, reason="Created", message=f"{name} is ready.")
        return "announced"

    siblings = sorted(n for n in by_field.get(spec.get("field"), []) if n != name)
    return {"siblings": siblings}


@kopf.on.update("kopfexamples", field="spec.field")
def field_changed(old: Any, new: Any, logger: kopf.Logger, **_: Any) -> dict[str, Any]:
    """React to a change of one field only."""
    logger.info(f"spec.field changed from {old!r} to {new!r}.")
    return {"old": old, "new": new}


@kopf.on.delete("kopfexamples")
def delete_fn(name: str, logger: kopf.Logger, **_: Any) -> None:
    """The finalizer holds the object until this has run."""
    logger.info(f"Cleaning up after {name}.")


@kopf.on.event("kopfexamples")
def event_fn(type: str, name: str, logger: kopf.Logger, **_: Any) -> None:
    """Every raw watch event; errors here would only be logged."""
    logger.debug(f"{type} {name}")


@kopf.daemon("kopfexamples", cancellation_timeout=5)
async def heartbeat(name: str, stopped: kopf.DaemonStopped, logger: kopf.Logger, **_: Any) -> None:
    """One task per object while it exists; stopped when it is deleted or the operator exits."""
    logger.info(f"Heartbeat of {name} started.")
    await stopped.wait()
    logger.info(f"Heartbeat of {name} stopped: {stopped.reason!r}.")


@kopf.timer("kopfexamples", interval=1.0, initial_delay=0.5)
def tick(memo: kopf.Memo, by_field: kopf.Index[Any, str], **_: Any) -> dict[str, int]:
    """Every second, per object: the operator-wide tick count and the index's size."""
    memo.ticks.append(1)
    return {"ticks": len(memo.ticks), "indexed": len(by_field)}


@kopf.on.probe(id="objects")
def count_objects(by_field: kopf.Index[Any, str], **_: Any) -> int:
    """``GET /healthz`` reports how many objects are indexed."""
    return sum(len(names) for names in by_field.values())
