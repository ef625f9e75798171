"""ClusterRole aggregation, as kube-controller-manager runs it: a ClusterRole with an
``aggregationRule`` holds the rules of every other ClusterRole that its selectors choose.

Each selector in turn chooses ClusterRoles by their labels, taken in the order of their names;
their rules are added in order, each once (a rule equal to one already there is not added
again). Whenever any ClusterRole changes, every aggregating one whose rules differ from that
union gets it by a forced server-side apply of its ``rules`` alone, as the field manager
``clusterrole-aggregation-controller``: the rules written in it by others are replaced, and
their owners lose them.

:func:`aggregated_rules` and :func:`settled` are pure; :func:`clusterrole_aggregator`
is a controller of the fake's (see :mod:`anyop.testing.fake.controllers`): it writes to the
store, sync.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from anyop.testing.fake.history import Change
from anyop.testing.fake.label_selectors import selects
from anyop.testing.fake.managed_fields import in_order
from anyop.testing.fake.statuses import StatusError

if TYPE_CHECKING:
    from anyop.testing.fake.store import Store

__all__ = ["MANAGER", "RESOURCE", "aggregated_rules", "clusterrole_aggregator", "settled"]

Body = dict[str, Any]
K = TypeVar("K")
MANAGER = "clusterrole-aggregation-controller"
"""The field manager of the aggregation's applies."""
RESOURCE = ("rbac.authorization.k8s.io", "clusterroles")
_API_VERSION = "rbac.authorization.k8s.io/v1"


def _rule(rule: Mapping[str, Any]) -> Body:
    """A rule as Go compares it (an empty list is no list) and as the controller applies it
    (its five fields)."""
    fields = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
    return {field: list(rule[field]) for field in fields if rule.get(field)}


def aggregated_rules(role: Mapping[str, Any], roles: Iterable[Mapping[str, Any]]) -> list[Body]:
    """The rules of an aggregating ClusterRole, from all the ClusterRoles there are (itself
    among them or not), as the aggregation controller makes them."""
    selectors = ((role.get("aggregationRule") or {}).get("clusterRoleSelectors")) or ()
    name = (role.get("metadata") or {}).get("name")
    ordered = sorted(roles, key=lambda other: str((other.get("metadata") or {}).get("name")))
    result: list[Body] = []
    for selector in selectors:
        for other in ordered:
            metadata = other.get("metadata") or {}
            if metadata.get("name") == name or not selects(selector, metadata.get("labels") or {}):
                continue
            for rule in other.get("rules") or ():
                if (found := _rule(rule)) not in result:
                    result.append(found)
    return result


def _same_rules(role: Mapping[str, Any], rules: list[Body]) -> bool:
    return [_rule(rule) for rule in role.get("rules") or ()] == rules


def _aggregated_role(role: Mapping[str, Any], rules: list[Body], now: str) -> Body:
    """A bootstrap ClusterRole as the aggregation's apply leaves it, where no one else owns
    its rules: the rules, and the controller's entry in ``managedFields``."""
    entry = {"manager": MANAGER, "operation": "Apply", "apiVersion": _API_VERSION, "time": now,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:rules": {}}}  # fmt: skip
    metadata = dict(role["metadata"])
    owners = [item for item in metadata.get("managedFields") or () if item["manager"] != MANAGER]
    metadata["managedFields"] = in_order([*owners, entry])
    return {**role, "metadata": metadata, "rules": rules}


def settled(roles: dict[K, Body], now: str) -> Iterator[K]:
    """Aggregate the bootstrap ClusterRoles (``roles``, changed in place) until none changes,
    as the controller's applies at ``now`` would leave them; the key of each role written, in
    the order of the writes. (An aggregating role may choose another: ``edit`` is chosen for
    ``admin``, so ``admin`` changes again once ``edit`` has its rules.)"""
    changed = True
    while changed:
        changed = False
        for key, role in list(roles.items()):
            if not role.get("aggregationRule"):
                continue
            rules = aggregated_rules(role, roles.values())
            if not _same_rules(role, rules):
                roles[key], changed = _aggregated_role(role, rules, now), True
                yield key


def clusterrole_aggregator(store: Store, change: Change) -> None:
    """The controller: after any change of a ClusterRole, apply the rules of each aggregating
    one (in the order of their names) whose rules are not what its selectors choose."""
    if change.resource != RESOURCE:
        return
    kind = store.kind(RESOURCE[0], "v1", RESOURCE[1])
    assert kind is not None  # (a built-in kind, always served)
    from anyop.testing.fake.server_side_apply import apply  # (the store's own modules:
    from anyop.testing.fake.store import Ref  # the boot's aggregation is this module's too)

    roles = store.objects[RESOURCE]
    for _, role in sorted(roles.items()):
        if not role.get("aggregationRule"):
            continue
        rules = aggregated_rules(role, list(roles.values()))
        if _same_rules(role, rules):
            continue
        name = str(role["metadata"]["name"])
        config = {"apiVersion": _API_VERSION, "kind": "ClusterRole", "metadata": {"name": name},
                  "rules": rules}  # fmt: skip
        try:
            apply(store, Ref(kind, None, name), document=json.dumps(config).encode(),
                  manager=MANAGER, force=True)  # fmt: skip
        except StatusError as exc:  # logged, as a real controller would, and tried again later
            store.controller_errors.append(exc)
