"""What an update of an apps/v1 workload may not change beyond its pod template
(``pkg/apis/apps/validation``): a Deployment's, ReplicaSet's and DaemonSet's ``spec.selector``
(``ValidateDeploymentUpdate``, ``ValidateReplicaSetUpdate``, ``ValidateDaemonSetSpecUpdate``:
``ValidateImmutableField``, the selector shown as Go's JSON). Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.pod_rules import invalid
from anyop.testing.fake.statuses import Cause

__all__ = ["SELECTOR_FIXED", "selector_update_causes"]

SELECTOR_FIXED = frozenset({("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "DaemonSet")})
"""The kinds whose ``spec.selector`` is immutable (a StatefulSet's is, with most of its spec:
``stateful_set_update_causes``)."""


def _selector(selector: Any) -> dict[str, Any] | None:
    """A label selector as Go holds it: its fields in the struct's order, map keys sorted, the
    empty ones left out (``omitempty``; empty and unset compare equal, as ``Semantic`` does)."""
    if not isinstance(selector, Mapping):
        return None
    shown: dict[str, Any] = {}
    if selector.get("matchLabels"):
        shown["matchLabels"] = dict(sorted(selector["matchLabels"].items()))
    if selector.get("matchExpressions"):
        shown["matchExpressions"] = [
            {"key": item.get("key") or "", "operator": item.get("operator") or "",
             **({"values": item["values"]} if item.get("values") else {})}
            for item in selector["matchExpressions"]
            if isinstance(item, Mapping)
        ]  # fmt: skip
    return shown


def selector_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[tuple[str, Cause]]:
    """``spec.selector: Invalid value: {...}: field is immutable`` where it changed."""
    before = _selector((old.get("spec") or {}).get("selector"))
    after = _selector((new.get("spec") or {}).get("selector"))
    if before == after:
        return []
    shown = "null" if after is None else json.dumps(after, separators=(",", ":"))
    return [invalid("spec.selector", shown, "field is immutable")]
