"""The checks of a built-in object's name (and ``generateName``) as each kind's validation
makes them, with the other checks of ``ValidateObjectMeta`` that come before its labels'.

Pure. Each kind validates its name by its own function: most as an RFC 1123 subdomain; a
Namespace's, a StatefulSet's and a Service's as an RFC 1123 label, RBAC's
kinds' as a path segment (``system:controller:x`` is a Role's name); a kind whose validation
checks no metadata (a PodDisruptionBudget's) is checked by the API server's generic check
alone, as a path segment. Their errors come first among the metadata's, with the kind's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.apiservice_rules import name_check as apiservice_name_check
from anyop.testing.fake.crd_checks import crd_name_check
from anyop.testing.fake.field_errors import path_segment_errors
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.object_meta import dns_label_errors, dns_subdomain_errors
from anyop.testing.fake.service_cidr_rules import ip_name_errors

__all__ = ["name_causes"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]


def _segment(name: str, prefix: bool) -> list[str]:
    """``IsPathSegmentName`` (a prefix may be ``.`` or ``..``: more follows)."""
    if prefix:
        return [f"may not contain '{part}'" for part in ("/", "%") if part in name]
    return path_segment_errors(name)


def _masked(check: Callable[[str], list[str]]) -> Callable[[str, bool], list[str]]:
    """A DNS check of a name or (``prefix``) of a ``generateName``, whose trailing dash is
    taken for a letter (``maskTrailingDash``)."""

    def checked(name: str, prefix: bool) -> list[str]:
        if prefix and len(name) > 1 and name.endswith("-"):
            name = name[:-1] + "a"
        return check(name)

    return checked


_SEGMENT_NAMED = {
    ("rbac.authorization.k8s.io", plural)
    for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
} | {("policy", "poddisruptionbudgets")}  # (its validation checks no metadata)
_SEGMENT_NAMED.add(("certificates.k8s.io", "certificatesigningrequests"))  # any name (Go's)
_RULES: dict[tuple[str, str], Callable[[str, bool], list[str]]] = {
    ("", "namespaces"): _masked(dns_label_errors),
    ("apps", "statefulsets"): _masked(dns_label_errors),
    ("", "services"): _masked(dns_label_errors),  # (RelaxedServiceNameValidation, on in 1.36)
    ("networking.k8s.io", "ipaddresses"): ip_name_errors,
    ("", "replicationcontrollers"): lambda name, prefix: (
        [] if prefix else dns_subdomain_errors(name)
    ),
    **{key: _segment for key in _SEGMENT_NAMED},
}
_DEFAULT_RULE = _masked(dns_subdomain_errors)
_NameCheck = Callable[[str, bool], list[str]]
_OBJECT_RULES: dict[tuple[str, str], Callable[[Mapping[str, Any]], _NameCheck]] = {
    ("apiregistration.k8s.io", "apiservices"): apiservice_name_check,
    ("apiextensions.k8s.io", "customresourcedefinitions"): crd_name_check,
}
"""Kinds whose name function depends on the object (an APIService's name is its spec's, a
CRD's its plural and group)."""


def name_causes(
    kind: Kind, metadata: Mapping[str, Any], obj: Mapping[str, Any] | None = None
) -> Causes:
    """A new built-in object's errors of its ``generateName``, its name and its generation, in
    ``ValidateObjectMeta``'s order (the generation is the client's where the kind's strategy
    sets none). ``obj``: the whole object, for a kind whose names depend on it."""
    check = _RULES.get((kind.group, kind.plural), _DEFAULT_RULE)
    if obj is not None and (made := _OBJECT_RULES.get((kind.group, kind.plural))) is not None:
        check = made(obj)
    causes: Causes = []
    prefix = metadata.get("generateName")
    if isinstance(prefix, str) and prefix:
        causes += [_invalid("metadata.generateName", prefix, e) for e in check(prefix, True)]
    name = metadata.get("name")
    if not name:
        message = "Required value: name or generateName is required"
        causes.append(("metadata.name", {"reason": "FieldValueRequired", "message": message}))
    else:
        causes += [_invalid("metadata.name", str(name), e) for e in check(str(name), False)]
    generation = metadata.get("generation")
    if isinstance(generation, int) and generation < 0:
        message = f"Invalid value: {generation}: must be greater than or equal to 0"
        causes.append(("metadata.generation", {"reason": "FieldValueInvalid", "message": message}))
    return causes


def _invalid(field: str, value: str, detail: str) -> tuple[str, Cause]:
    return field, {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {go_quoted(value)}: {detail}",
    }
