"""API Priority and Fairness' config consumer, as it runs inside kube-apiserver (so whatever
the fake's ``controllers``): each FlowSchema's ``Dangling`` condition says whether the priority
level it names exists, set by a forced server-side apply of its status as
``api-priority-and-fairness-config-consumer-v1``, with the time of the change. It acts on a
change of a FlowSchema, or of a priority level (then on each FlowSchema naming it, in the order
of their names), and writes only what differs.

Sync: :func:`apf_config_consumer` is a controller of the fake's (see
:mod:`anyop.testing.fake.controllers`). Not here: the consumer's limit of 5 writes of one
FlowSchema a minute.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from anyop.testing.fake.flowcontrol_rules import GROUP
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.statuses import StatusError

if TYPE_CHECKING:
    from anyop.testing.fake.history import Change
    from anyop.testing.fake.store import Store

__all__ = ["CONSUMER", "apf_config_consumer", "dangling_condition"]

Body = dict[str, Any]
CONSUMER = "api-priority-and-fairness-config-consumer-v1"
"""The field manager of its applies."""
_FLOW_SCHEMAS = (GROUP, "flowschemas")
_LEVELS = (GROUP, "prioritylevelconfigurations")
_WATCHED = frozenset((_FLOW_SCHEMAS, _LEVELS))
_API_VERSION = f"{GROUP}/v1"


def dangling_condition(level: str, *, found: bool) -> Body:
    """The ``Dangling`` condition the config consumer wants of a FlowSchema naming ``level``
    (without its ``lastTransitionTime``)."""
    if found:
        message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
                   f"{go_quoted(level)} and it exists")  # fmt: skip
        return {"type": "Dangling", "status": "False", "reason": "Found", "message": message}
    message = (f"This FlowSchema references the PriorityLevelConfiguration object named "
               f"{go_quoted(level)} but there is no such object")  # fmt: skip
    return {"type": "Dangling", "status": "True", "reason": "NotFound", "message": message}


def _stale(flow_schema: Mapping[str, Any], levels: Mapping[Any, Any]) -> Body | None:
    """The condition to apply to a FlowSchema whose ``Dangling`` condition is not what the
    consumer wants (its status, reason and message), else ``None``."""
    level = str(((flow_schema.get("spec") or {}).get("priorityLevelConfiguration") or {})
                .get("name") or "")  # fmt: skip
    wanted = dangling_condition(level, found=("", level) in levels)
    conditions = (flow_schema.get("status") or {}).get("conditions") or ()
    held: Mapping[str, Any] = next(
        (item for item in conditions if item.get("type") == "Dangling"), {}
    )
    if all(held.get(field) == wanted[field] for field in ("status", "reason", "message")):
        return None
    return wanted


def apf_config_consumer(store: Store, change: Change) -> None:
    """The controller: after a change of a FlowSchema, or of a priority level (then of each
    FlowSchema naming it, in the order of their names), apply the ``Dangling`` condition of
    each whose condition is not the one wanted, with the time of now."""
    if change.resource not in _WATCHED:  # (every write's: at once for the others)
        return
    levels = store.objects[_LEVELS]
    schemas = store.objects[_FLOW_SCHEMAS]
    if change.resource == _FLOW_SCHEMAS:  # (a deleted one is no longer stored)
        found = schemas.get(change.key)
        chosen = [] if found is None else [found]
    else:
        name = change.key[1]
        chosen = [
            body for _, body in sorted(schemas.items())
            if ((body.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name")
            == name
        ]  # fmt: skip
    for flow_schema in chosen:
        wanted = _stale(flow_schema, levels)
        if wanted is not None:
            _apply(store, str(flow_schema["metadata"]["name"]), wanted)


def _apply(store: Store, name: str, wanted: Body) -> None:
    from anyop.testing.fake.server_side_apply import apply  # (the store's own modules)
    from anyop.testing.fake.store import Ref

    kind = store.kind(GROUP, "v1", _FLOW_SCHEMAS[1])
    assert kind is not None  # (a built-in kind, always served)
    condition = {"type": wanted["type"], "status": wanted["status"], "reason": wanted["reason"],
                 "lastTransitionTime": store.now(), "message": wanted["message"]}  # fmt: skip
    config = {"apiVersion": _API_VERSION, "kind": "FlowSchema", "metadata": {"name": name},
              "status": {"conditions": [condition]}}  # fmt: skip
    try:
        apply(store, Ref(kind, None, name), document=json.dumps(config).encode(),
              manager=CONSUMER, force=True, subresource="status")  # fmt: skip
    except StatusError as exc:  # logged, as the consumer would, and tried again later
        if exc.code != 404:
            store.controller_errors.append(exc)
