"""What kube-apiserver's Go code checks of RuntimeClasses (``node.k8s.io/v1``) beyond their
schema, with its messages and in its order.

Pure. ``node.k8s.io/v1`` has no defaulting function. :data:`CREATES` is ``ValidateRuntimeClass``
beyond the metadata (the handler a DNS label; the overhead's resources as a container's limits;
the scheduling's node selector as labels and its tolerations, each once); :data:`UPDATES` is the
strategy's ``ValidateUpdate``: the object's checks, then the handler, which may not change. The
declarative validations of ``node.k8s.io/v1`` are alpha in 1.36.3: the handwritten ones answer.
The objects are decoded (typed) already, their quantities canonical.

Not here: the strategy's warnings (``Warning`` headers).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import label_causes
from anyop.testing.fake.pod_rules import dns_label_causes, invalid, required, toleration_causes
from anyop.testing.fake.quantities import QuantityError, quantity_value
from anyop.testing.fake.resource_names import HUGE_PAGES, container_resource_name_causes, is_integer

__all__ = ["CREATES", "DEFAULTERS", "UPDATES"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_GROUP = "node.k8s.io"
_NEGATIVE = "must be greater than or equal to 0"


def _overhead(pod_fixed: Mapping[str, Any]) -> Causes:
    """``validateOverhead``: the fixed overhead checked as a container's limits (named so)."""
    causes: Causes = []
    cpu_or_memory = huge_pages = False
    for name, quantity in pod_fixed.items():
        where = f"overhead.limits[{name}]"
        causes += container_resource_name_causes(name, where, shown=go_quoted(name))
        try:
            value = quantity_value(quantity)
        except QuantityError:
            continue  # refused when decoded
        if value < 0:
            causes.append(invalid(where, go_quoted(str(quantity)), _NEGATIVE))
        if is_integer(name) and (value * 1000) % 1000 != 0:
            causes.append(invalid(where, go_quoted(str(quantity)), "must be an integer"))
        if name.startswith(HUGE_PAGES):
            huge_pages = True
            if not _divisible(name, value):
                detail = f"{quantity} is not positive integer multiple of {name}"
                causes.append(invalid(where, go_quoted(str(quantity)), detail))
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    if huge_pages and not cpu_or_memory:
        causes.append(forbidden("overhead", "HugePages require cpu or memory"))
    return causes


def _divisible(name: str, value: Any) -> bool:
    """``IsHugePageResourceValueDivisible``."""
    try:
        page = quantity_value(name.removeprefix(HUGE_PAGES))
    except QuantityError:
        return False
    if page <= 0 or page.denominator != 1:
        return False
    return bool(value.denominator == 1 and value % page == 0)


def _tolerations(tolerations: list[Any]) -> Iterator[tuple[str, Cause]]:
    """``validateTolerations``: each as a pod's, then none twice (its key, operator, value and
    effect; shown as Go writes the internal struct)."""
    yield from toleration_causes(tolerations, "scheduling.tolerations")
    seen: set[tuple[str, str, str, str]] = set()
    for index, toleration in enumerate(tolerations):
        toleration = toleration or {}
        key = tuple(str(toleration.get(f) or "") for f in ("key", "operator", "value", "effect"))
        identity = (key[0], key[1], key[2], key[3])
        if identity in seen:
            shown = json.dumps(
                {"Key": key[0], "Operator": key[1], "Value": key[2], "Effect": key[3],
                 "TolerationSeconds": toleration.get("tolerationSeconds")},
                separators=(",", ":"),
            )  # fmt: skip
            message = f"Duplicate value: {shown}"
            yield (
                f"scheduling.tolerations[{index}]",
                {
                    "reason": "FieldValueDuplicate",
                    "message": message,
                },
            )
        seen.add(identity)


def _runtime_class(obj: Mapping[str, Any]) -> Causes:
    """``ValidateRuntimeClass`` beyond the metadata."""
    handler = str(obj.get("handler") or "")
    causes = [required("handler")] if not handler else dns_label_causes(handler, "handler")
    overhead = obj.get("overhead")
    if isinstance(overhead, Mapping):
        causes += _overhead(overhead.get("podFixed") or {})
    scheduling = obj.get("scheduling")
    if isinstance(scheduling, Mapping):
        selector = scheduling.get("nodeSelector")
        if selector is not None:
            causes += label_causes(selector, "scheduling.nodeSelector")
        tolerations = scheduling.get("tolerations") or ()  # a null one is Go's zero struct
        causes += _tolerations([t if isinstance(t, Mapping) else {} for t in tolerations])
    return causes


def _runtime_class_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """The strategy's ``ValidateUpdate``: ``ValidateRuntimeClass``, then the handler, which
    may not change."""
    causes = _runtime_class(new)
    handler = str(new.get("handler") or "")
    if handler != str(old.get("handler") or ""):
        causes.append(invalid("handler", go_quoted(handler), "field is immutable"))
    return causes


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (_GROUP, "RuntimeClass"): _runtime_class,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (_GROUP, "RuntimeClass"): _runtime_class_update,
}
