"""API Priority and Fairness' objects as kube-apiserver's internal Go structs hold them, for
the errors that show them (a mandatory object's fixed spec is compared and shown so), and the
mandatory objects' fixed specs themselves (``exempt`` and ``catch-all``).

Pure; for :mod:`.flowcontrol_rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "MANDATORY_FLOW_SCHEMAS",
    "MANDATORY_LEVELS",
    "flow_schema_spec",
    "level_spec",
    "semantic",
]

Body = dict[str, Any]


def _list(items: Any, each: Callable[[Any], Any]) -> Any:
    """A Go slice: ``null`` if missing, ``[]`` if empty."""
    return None if items is None else [each(item) for item in items]


def _strings(items: Any) -> Any:
    return None if items is None else [str(item) for item in items]


def _named(holder: Any) -> Any:
    return None if not isinstance(holder, Mapping) else {"Name": str(holder.get("name") or "")}


def _subject(subject: Any) -> Body:
    subject = subject if isinstance(subject, Mapping) else {}
    account = subject.get("serviceAccount")
    if isinstance(account, Mapping):
        account = {"Namespace": str(account.get("namespace") or ""),
                   "Name": str(account.get("name") or "")}  # fmt: skip
    return {"Kind": str(subject.get("kind") or ""), "User": _named(subject.get("user")),
            "Group": _named(subject.get("group")),
            "ServiceAccount": account if isinstance(account, dict) else None}  # fmt: skip


def _resource_rule(rule: Any) -> Body:
    rule = rule if isinstance(rule, Mapping) else {}
    return {"Verbs": _strings(rule.get("verbs")), "APIGroups": _strings(rule.get("apiGroups")),
            "Resources": _strings(rule.get("resources")),
            "ClusterScope": bool(rule.get("clusterScope")),
            "Namespaces": _strings(rule.get("namespaces"))}  # fmt: skip


def _non_resource_rule(rule: Any) -> Body:
    rule = rule if isinstance(rule, Mapping) else {}
    return {"Verbs": _strings(rule.get("verbs")),
            "NonResourceURLs": _strings(rule.get("nonResourceURLs"))}  # fmt: skip


def _rules(rules: Any) -> Body:
    rules = rules if isinstance(rules, Mapping) else {}
    return {"Subjects": _list(rules.get("subjects"), _subject),
            "ResourceRules": _list(rules.get("resourceRules"), _resource_rule),
            "NonResourceRules": _list(rules.get("nonResourceRules"),
                                      _non_resource_rule)}  # fmt: skip


def flow_schema_spec(spec: Mapping[str, Any]) -> Body:
    """A FlowSchema's spec as the internal Go struct (no JSON tags: Go's field names)."""
    method = spec.get("distinguisherMethod")
    return {
        "PriorityLevelConfiguration": {
            "Name": str((spec.get("priorityLevelConfiguration") or {}).get("name") or "")
        },
        "MatchingPrecedence": int(spec.get("matchingPrecedence") or 0),
        "DistinguisherMethod": (
            {"Type": str(method.get("type") or "")} if isinstance(method, Mapping) else None
        ),
        "Rules": _list(spec.get("rules"), _rules),
    }


def _optional(value: Any) -> Any:
    return None if value is None else int(value)


def level_spec(spec: Mapping[str, Any]) -> Body:
    """A PriorityLevelConfiguration's spec as the internal Go struct."""
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if isinstance(limited, Mapping):
        response = limited.get("limitResponse") or {}
        queuing = response.get("queuing")
        if isinstance(queuing, Mapping):
            queuing = {"Queues": int(queuing.get("queues") or 0),
                       "HandSize": int(queuing.get("handSize") or 0),
                       "QueueLengthLimit": int(queuing.get("queueLengthLimit") or 0)}  # fmt: skip
        limited = {
            "NominalConcurrencyShares": int(limited.get("nominalConcurrencyShares") or 0),
            "LimitResponse": {"Type": str(response.get("type") or ""),
                              "Queuing": queuing if isinstance(queuing, dict) else None},
            "LendablePercent": _optional(limited.get("lendablePercent")),
            "BorrowingLimitPercent": _optional(limited.get("borrowingLimitPercent")),
        }  # fmt: skip
    if isinstance(exempt, Mapping):
        exempt = {"NominalConcurrencyShares": _optional(exempt.get("nominalConcurrencyShares")),
                  "LendablePercent": _optional(exempt.get("lendablePercent"))}  # fmt: skip
    return {"Type": str(spec.get("type") or ""),
            "Limited": limited if isinstance(limited, dict) else None,
            "Exempt": exempt if isinstance(exempt, dict) else None}  # fmt: skip


def semantic(value: Any) -> Any:
    """A value as ``equality.Semantic`` compares it: an empty slice is a nil one."""
    if isinstance(value, dict):
        return {key: semantic(item) for key, item in value.items()}
    if isinstance(value, list):
        return [semantic(item) for item in value] or None
    return value


_ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True,
                  "namespaces": ["*"]}  # fmt: skip
_ALL_URLS = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _groups(*names: str) -> list[Body]:
    return [{"kind": "Group", "group": {"name": name}} for name in names]


MANDATORY_FLOW_SCHEMAS = {
    "exempt": semantic(flow_schema_spec({
        "priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1,
        "rules": [{"subjects": _groups("system:masters"), "resourceRules": [_ALL_RESOURCES],
                   "nonResourceRules": [_ALL_URLS]}]})),
    "catch-all": semantic(flow_schema_spec({
        "priorityLevelConfiguration": {"name": "catch-all"}, "matchingPrecedence": 10000,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": _groups("system:unauthenticated", "system:authenticated"),
                   "resourceRules": [_ALL_RESOURCES], "nonResourceRules": [_ALL_URLS]}]})),
}  # fmt: skip
"""``internalbootstrap.MandatoryFlowSchemas``' specs (apiserver's ``bootstrap/default.go``)."""
MANDATORY_LEVELS = {
    "exempt": semantic(level_spec(
        {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})),
    "catch-all": semantic(level_spec(
        {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0,
                                        "limitResponse": {"type": "Reject"}}})),
}  # fmt: skip
"""``internalbootstrap.MandatoryPriorityLevelConfigurations``' specs."""
