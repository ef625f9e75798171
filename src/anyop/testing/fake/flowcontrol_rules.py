"""What kube-apiserver's Go code does to API Priority and Fairness' kinds
(``flowcontrol.apiserver.k8s.io/v1`` FlowSchemas and PriorityLevelConfigurations) beyond their
schemas, with its messages and in its order.

:data:`DEFAULTERS` are ``pkg/apis/flowcontrol/v1/defaults.go``: a FlowSchema's
``matchingPrecedence`` 1000 (for 0 too); a limited level's ``nominalConcurrencyShares`` 30 (only
where it is missing: a 0 stays, as v1 keeps it) and ``lendablePercent`` 0, its queuing's
``queues`` 64, ``handSize`` 8 and ``queueLengthLimit`` 50 (for 0 too); an exempt level's
``nominalConcurrencyShares`` and ``lendablePercent`` 0. :data:`CREATES` and :data:`UPDATES` are
``ValidateFlowSchema`` and ``ValidatePriorityLevelConfiguration`` beyond the metadata (an update
checks the object as a create does; the status subresource's update checks the status alone,
which is all an update of it can change): the spec, then the mandatory objects' fixed specs
(``exempt`` and ``catch-all``; the ``exempt`` level's ``spec.exempt`` may change), then the
status's conditions. The declarative validations of the group are alpha in 1.36.3: the
handwritten ones answer. The objects are decoded (typed) already.

Pure. API Priority and Fairness' config consumer, which sets FlowSchemas' ``Dangling``
condition, is :mod:`.apf_config_consumer`.

The config producer's pass of each minute (the bootstrap objects set right, the unwanted
ones deleted) is :mod:`.apf_config_producer`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anyop.testing.fake.field_errors import duplicate, forbidden, required_because
from anyop.testing.fake.flowcontrol_internal import (
    MANDATORY_FLOW_SCHEMAS,
    MANDATORY_LEVELS,
    flow_schema_spec,
    level_spec,
    semantic,
)
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import dns_label_errors, dns_subdomain_errors
from anyop.testing.fake.pod_rules import invalid, unsupported, unsupported_shown

__all__ = ["CREATES", "DEFAULTERS", "GROUP", "UPDATES"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

GROUP = "flowcontrol.apiserver.k8s.io"
"""The API group."""
_FLOW_SCHEMAS = (GROUP, "flowschemas")
_LEVELS = (GROUP, "prioritylevelconfigurations")
_API_VERSION = f"{GROUP}/v1"
_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update",
          "watch")  # fmt: skip
_MAX_PRECEDENCE = 10000
_MAX_QUEUES = 10_000_000
_MAX_HASH_BITS = 60
_NS_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_ROUND_TRIP = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"

# -- defaults -----------------------------------------------------------------------------------


def _null_times(obj: Body) -> None:
    """A condition's ``lastTransitionTime``, a ``metav1.Time`` (no pointer), is written even
    when unset: as ``null``."""
    status = obj.get("status")
    for condition in (status.get("conditions") if isinstance(status, dict) else None) or ():
        if isinstance(condition, dict) and condition.get("lastTransitionTime") is None:
            condition["lastTransitionTime"] = None


def _flow_schema_defaults(obj: Body) -> None:
    """``SetDefaults_FlowSchemaSpec`` (and the conditions' unset times)."""
    _null_times(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def _level_defaults(obj: Body) -> None:
    """``SetObjectDefaults_PriorityLevelConfiguration``: a limited level's and its queuing's,
    an exempt level's (and the conditions' unset times)."""
    _null_times(obj)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    limited = spec.get("limited")
    if isinstance(limited, dict):
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = 30
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            for field, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(field):
                    queuing[field] = value
    exempt = spec.get("exempt")
    if isinstance(exempt, dict):
        for field in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt.get(field) is None:
                exempt[field] = 0


# -- FlowSchemas --------------------------------------------------------------------------------


def _verbs(verbs: list[Any], where: str) -> Causes:
    """A rule's verbs: some, ``*`` alone, or the supported ones."""
    if not verbs:
        return [required_because(f"{where}.verbs", "verbs must contain at least one value")]
    if "*" in verbs:
        if len(verbs) > 1:
            detail = "if '*' is present, must not specify other verbs"
            return [invalid(f"{where}.verbs", go_marshalled(verbs), detail)]
        return []
    if not set(verbs) <= set(_VERBS):
        return [unsupported_shown(f"{where}.verbs", go_marshalled(verbs), _VERBS)]
    return []


def _wildcard_alone(values: list[Any], where: str, what: str, *, needed: str) -> Causes:
    """A rule's API groups, resources or non-resource URLs: some, and ``*`` alone."""
    if not values:
        return [required_because(where, needed)]
    if len(values) > 1 and "*" in values:
        detail = f"if '*' is present, must not specify other {what}"
        return [invalid(where, go_marshalled(values), detail)]
    return []


def _resource_rule_causes(rule: Mapping[str, Any], where: str) -> Causes:
    """``ValidateFlowSchemaResourcePolicyRule``."""
    causes = _verbs([str(verb) for verb in rule.get("verbs") or ()], where)
    groups = [str(group) for group in rule.get("apiGroups") or ()]
    needed = "resource rules must supply at least one api group"
    causes += _wildcard_alone(groups, f"{where}.apiGroups", "api groups", needed=needed)
    resources = [str(resource) for resource in rule.get("resources") or ()]
    needed = "resource rules must supply at least one resource"
    causes += _wildcard_alone(resources, f"{where}.resources", "resources", needed=needed)
    namespaces = [str(namespace) for namespace in rule.get("namespaces") or ()]
    if not namespaces and not rule.get("clusterScope"):
        detail = "resource rules that are not cluster scoped must supply at least one namespace"
        causes.append(required_because(f"{where}.namespaces", detail))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            detail = "if '*' is present, must not specify other namespaces"
            causes.append(invalid(f"{where}.namespaces", go_marshalled(namespaces), detail))
    else:
        for index, namespace in enumerate(namespaces):
            causes += [
                invalid(f"{where}.namespaces[{index}]", go_quoted(namespace), _NS_INTRO + error)
                for error in dns_label_errors(namespace)
            ]
    return causes


def _url_error(path: str) -> str | None:
    """``ValidateNonResourceURLPath``."""
    if not path:
        return "must not be empty"
    if path == "/":
        return None
    if not path.startswith("/"):
        return "must start with slash"
    if " " in path:
        return "must not contain white-space"
    if "//" in path:
        return "must not contain double slash"
    stars = path.count("*")
    if stars > 1 or (stars == 1 and path[-2:] != "/*"):
        return "wildcard can only do suffix matching"
    return None


def _non_resource_rule_causes(rule: Mapping[str, Any], where: str) -> Causes:
    """``ValidateFlowSchemaNonResourcePolicyRule``."""
    causes = _verbs([str(verb) for verb in rule.get("verbs") or ()], where)
    urls = [str(url) for url in rule.get("nonResourceURLs") or ()]
    needed = "nonResourceURLs must contain at least one value"
    found = _wildcard_alone(urls, f"{where}.nonResourceURLs", "non-resource URLs", needed=needed)
    causes += found
    if not found and "*" not in urls:
        for index, url in enumerate(urls):
            if (error := _url_error(url)) is not None:
                causes.append(invalid(f"{where}.nonResourceURLs[{index}]", go_quoted(url), error))
    return causes


_OTHERS = {
    "user": "user is forbidden when subject kind is not 'User'",
    "group": "group is forbidden when subject kind is not 'Group'",
    "serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
}
_SUBJECT_ORDER = {
    "ServiceAccount": ("serviceAccount", "user", "group"),
    "User": ("user", "serviceAccount", "group"),
    "Group": ("group", "serviceAccount", "user"),
}


def _named_subject(subject: Any, where: str, kind: str) -> Causes:
    """``ValidateUserSubject`` and ``ValidateGroupSubject``."""
    if not isinstance(subject, Mapping):
        field = kind.lower()
        return [required_because(where, f"{field} is required when subject kind is '{kind}'")]
    return [] if subject.get("name") else [required_because(f"{where}.name")]


def _service_account(subject: Any, where: str) -> Causes:
    """``ValidateServiceAccountSubject``."""
    if not isinstance(subject, Mapping):
        detail = "serviceAccount is required when subject kind is 'ServiceAccount'"
        return [required_because(where, detail)]
    causes: Causes = []
    name, namespace = str(subject.get("name") or ""), str(subject.get("namespace") or "")
    if not name:
        causes.append(required_because(f"{where}.name"))
    elif name != "*":
        causes += [invalid(f"{where}.name", go_quoted(name), error)
                   for error in dns_subdomain_errors(name)]  # fmt: skip
    if namespace:
        causes += [invalid(f"{where}.namespace", go_quoted(namespace), error)
                   for error in dns_label_errors(namespace)]  # fmt: skip
    else:
        detail = "must specify namespace for service account"
        causes.append(required_because(f"{where}.namespace", detail))
    return causes


def _subject_causes(subject: Mapping[str, Any], where: str) -> Causes:
    """``ValidateFlowSchemaSubject``: the subject of its kind, and no other."""
    kind = str(subject.get("kind") or "")
    order = _SUBJECT_ORDER.get(kind)
    if order is None:
        return [unsupported(f"{where}.kind", kind, ("Group", "ServiceAccount", "User"))]
    own, *others = order
    if own == "serviceAccount":
        causes = _service_account(subject.get(own), f"{where}.{own}")
    else:
        causes = _named_subject(subject.get(own), f"{where}.{own}", kind)
    for other in others:
        if subject.get(other) is not None:
            causes.append(forbidden(f"{where}.{other}", _OTHERS[other]))
    return causes


def _rules_causes(rules: Mapping[str, Any], where: str) -> Causes:
    """``ValidateFlowSchemaPolicyRulesWithSubjects``."""
    subjects = rules.get("subjects") or []
    causes: Causes = []
    for index, subject in enumerate(subjects):
        subject = subject if isinstance(subject, Mapping) else {}
        causes += _subject_causes(subject, f"{where}.subjects[{index}]")
    if not subjects:
        causes.append(
            required_because(f"{where}.subjects", "subjects must contain at least one value")
        )
    resource_rules = rules.get("resourceRules") or []
    non_resource_rules = rules.get("nonResourceRules") or []
    if not resource_rules and not non_resource_rules:
        detail = "at least one of resourceRules and nonResourceRules has to be non-empty"
        causes.append(required_because(where, detail))
    for index, rule in enumerate(resource_rules):
        rule = rule if isinstance(rule, Mapping) else {}
        causes += _resource_rule_causes(rule, f"{where}.resourceRules[{index}]")
    for index, rule in enumerate(non_resource_rules):
        rule = rule if isinstance(rule, Mapping) else {}
        causes += _non_resource_rule_causes(rule, f"{where}.nonResourceRules[{index}]")
    return causes


def _flow_schema_spec_causes(name: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidateFlowSchemaSpec``."""
    causes: Causes = []
    precedence = int(spec.get("matchingPrecedence") or 0)
    where = "spec.matchingPrecedence"
    if precedence <= 0:
        causes.append(invalid(where, str(precedence), "must be a positive value"))
    if precedence > _MAX_PRECEDENCE:
        detail = f"must not be greater than {_MAX_PRECEDENCE}"
        causes.append(invalid(where, str(precedence), detail))
    if precedence == 1 and name != "exempt":
        detail = "only the schema named 'exempt' may have matchingPrecedence 1"
        causes.append(invalid(where, str(precedence), detail))
    method = spec.get("distinguisherMethod")
    if isinstance(method, Mapping) and method.get("type") not in ("ByNamespace", "ByUser"):
        shown = go_marshalled({"Type": str(method.get("type") or "")}, sort_keys=False)
        causes.append(unsupported_shown("spec.distinguisherMethod.type", shown,
                                        ("ByNamespace", "ByUser")))  # fmt: skip
    level = str((spec.get("priorityLevelConfiguration") or {}).get("name") or "")
    where = "spec.priorityLevelConfiguration.name"
    if level:
        causes += [invalid(where, go_quoted(level), error) for error in dns_subdomain_errors(level)]
    else:
        causes.append(required_because(where, "must reference a priority level"))
    for index, rules in enumerate(spec.get("rules") or ()):
        causes += _rules_causes(rules if isinstance(rules, Mapping) else {}, f"spec.rules[{index}]")
    return causes


def _conditions_causes(status: Any) -> Causes:
    """``ValidateFlowSchemaStatus`` and ``ValidatePriorityLevelConfigurationStatus``: each
    condition's type given, and once."""
    causes: Causes = []
    seen: set[str] = set()
    conditions = (status.get("conditions") if isinstance(status, Mapping) else None) or ()
    for index, condition in enumerate(conditions):
        kind = str((condition if isinstance(condition, Mapping) else {}).get("type") or "")
        where = f"status.conditions[{index}].type"
        if kind in seen:
            causes.append(duplicate(where, kind))
        seen.add(kind)
        if not kind:
            causes.append(required_because(where))
    return causes


def _flow_schema(obj: Mapping[str, Any]) -> Causes:
    """``ValidateFlowSchema`` beyond the metadata: its spec, a mandatory one's fixed spec,
    its status."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    causes = _flow_schema_spec_causes(name, spec)
    fixed = MANDATORY_FLOW_SCHEMAS.get(name)
    if fixed is not None:
        internal = flow_schema_spec(spec)
        if semantic(internal) != fixed:
            detail = f"spec of '{name}' must equal the fixed value"
            causes.append(invalid("spec", go_marshalled(internal, sort_keys=False), detail))
    return causes + _conditions_causes(obj.get("status"))


# -- PriorityLevelConfigurations ----------------------------------------------------------------


def _queuing_causes(queuing: Mapping[str, Any], where: str) -> Causes:
    """``ValidatePriorityLevelQueuingConfiguration``."""
    causes: Causes = []
    limit = int(queuing.get("queueLengthLimit") or 0)
    queues = int(queuing.get("queues") or 0)
    hand = int(queuing.get("handSize") or 0)
    if limit <= 0:
        causes.append(invalid(f"{where}.queueLengthLimit", str(limit), "must be positive"))
    if queues <= 0:
        causes.append(invalid(f"{where}.queues", str(queues), "must be positive"))
    elif queues > _MAX_QUEUES:
        detail = f"must not be greater than {_MAX_QUEUES}"
        causes.append(invalid(f"{where}.queues", str(queues), detail))
    if hand <= 0:
        causes.append(invalid(f"{where}.handSize", str(hand), "must be positive"))
    elif hand > queues:
        detail = f"should not be greater than queues ({queues})"
        causes.append(invalid(f"{where}.handSize", str(hand), detail))
    elif math.ceil(math.log2(queues) * hand) > _MAX_HASH_BITS:
        detail = (f"required entropy bits of deckSize {queues} and handSize {hand} should not "
                  f"be greater than {_MAX_HASH_BITS}")  # fmt: skip
        causes.append(invalid(f"{where}.handSize", str(hand), detail))
    return causes


def _limit_response_causes(response: Mapping[str, Any], where: str) -> Causes:
    """``ValidateLimitResponse``."""
    kind = str(response.get("type") or "")
    queuing = response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            detail = "must be nil if limited.limitResponse.type is not Limited"
            return [forbidden(f"{where}.queuing", detail)]
        return []
    if kind == "Queue":
        if not isinstance(queuing, Mapping):
            detail = "must not be empty if limited.limitResponse.type is Limited"
            return [required_because(f"{where}.queuing", detail)]
        return _queuing_causes(queuing, f"{where}.queuing")
    if not kind:
        return [required_because(f"{where}.type")]
    return [unsupported(f"{where}.type", kind, ("Queue", "Reject"))]


def _percent(value: Any, where: str) -> Causes:
    if value is not None and not 0 <= int(value) <= 100:
        return [invalid(where, str(int(value)), "must be between 0 and 100, inclusive")]
    return []


def _limited_causes(limited: Mapping[str, Any], where: str) -> Causes:
    """``ValidateLimitedPriorityLevelConfiguration``."""
    causes: Causes = []
    shares = int(limited.get("nominalConcurrencyShares") or 0)
    if shares < 0:
        detail = "must be a non-negative integer"
        causes.append(invalid(f"{where}.nominalConcurrencyShares", str(shares), detail))
    response = limited.get("limitResponse")
    causes += _limit_response_causes(
        response if isinstance(response, Mapping) else {}, f"{where}.limitResponse"
    )
    causes += _percent(limited.get("lendablePercent"), f"{where}.lendablePercent")
    borrowing = limited.get("borrowingLimitPercent")
    if borrowing is not None and int(borrowing) < 0:
        detail = "if specified, must be a non-negative integer"
        causes.append(invalid(f"{where}.borrowingLimitPercent", str(int(borrowing)), detail))
    return causes


def _exempt_causes(exempt: Mapping[str, Any], where: str) -> Causes:
    """``ValidateExemptPriorityLevelConfiguration``."""
    causes: Causes = []
    shares = exempt.get("nominalConcurrencyShares")
    if shares is not None and int(shares) < 0:
        detail = "must be a non-negative integer"
        causes.append(invalid(f"{where}.nominalConcurrencyShares", str(int(shares)), detail))
    return causes + _percent(exempt.get("lendablePercent"), f"{where}.lendablePercent")


def _level_spec_causes(name: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidatePriorityLevelConfigurationSpec``."""
    causes: Causes = []
    kind = str(spec.get("type") or "")
    if (name == "exempt") != (kind == "Exempt"):
        detail = "must be 'Exempt' if and only if `name` is 'exempt'"
        causes.append(invalid("spec.type", go_quoted(kind), detail))
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if kind == "Exempt":
        if limited is not None:
            causes.append(forbidden("spec.limited", "must be nil if the type is not Limited"))
        if isinstance(exempt, Mapping):
            causes += _exempt_causes(exempt, "spec.exempt")
    elif kind == "Limited":
        if exempt is not None:
            causes.append(forbidden("spec.exempt", "must be nil if the type is Limited"))
        if not isinstance(limited, Mapping):
            detail = "must not be empty when type is Limited"
            causes.append(required_because("spec.limited", detail))
        else:
            causes += _limited_causes(limited, "spec.limited")
    elif not kind:
        causes.append(required_because("spec.type"))
    else:
        causes.append(unsupported("spec.type", kind, ("Exempt", "Limited")))
    return causes


def _mandatory_level_causes(name: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidateIfMandatoryPriorityLevelConfigurationObject``: the ``exempt`` level's spec but
    its ``exempt`` field, and the ``catch-all`` level's, fixed."""
    fixed = MANDATORY_LEVELS.get(name)
    if fixed is None:
        return []
    internal = level_spec(spec)
    compared = semantic(internal)
    detail = f"spec of '{name}' must equal the fixed value"
    if name == "exempt":
        compared = {**compared, "Exempt": fixed["Exempt"]}
        detail = f"spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
    if compared == fixed:
        return []
    return [invalid("spec", go_marshalled(internal, sort_keys=False), detail)]


def _level(obj: Mapping[str, Any]) -> Causes:
    """``ValidatePriorityLevelConfiguration`` beyond the metadata: the round-trip annotation
    of ``v1beta3``, the spec, a mandatory one's fixed spec, the status."""
    metadata = obj.get("metadata") or {}
    causes: Causes = []
    if _ROUND_TRIP in (metadata.get("annotations") or {}):
        detail = f"annotation '{_ROUND_TRIP}' is forbidden"
        causes.append(forbidden("metadata.annotations", detail))
    name = str(metadata.get("name") or "")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    causes += _level_spec_causes(name, spec)
    causes += _mandatory_level_causes(name, spec)
    return causes + _conditions_causes(obj.get("status"))


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {
    (GROUP, "FlowSchema"): _flow_schema_defaults,
    (GROUP, "PriorityLevelConfiguration"): _level_defaults,
}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (GROUP, "FlowSchema"): _flow_schema,
    (GROUP, "PriorityLevelConfiguration"): _level,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (GROUP, "FlowSchema"): lambda old, new: _flow_schema(new),
    (GROUP, "PriorityLevelConfiguration"): lambda old, new: _level(new),
}
