"""RBAC as kube-apiserver's authorizers decide it, over the fake's stored Roles, ClusterRoles
and their bindings (``plugin/pkg/auth/authorizer/rbac``, ``pkg/registry/rbac/validation``).

Pure (it reads the store). The chain is the local control plane's: members of
``system:masters`` may do anything (reason ``""``); else the RBAC rules of the ClusterRoleBindings
(by name), then of the RoleBindings of the request's namespace, that bind the user, its groups or
(its name ``system:serviceaccount:<ns>:<name>``) its service account; the first rule that allows
it is the reason (``RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "u"``). A
binding of a missing role is an error named in the denial's reason.

The stored roles include kube-apiserver's bootstrap ones (:mod:`~anyop.testing.fake.bootstrap`):
``system:authenticated`` may read ``/version`` and ``/healthz`` as on a real cluster (where two
bindings allow a request, the real reason names either, as its informer's map happens to list
them; the fake's names the first by name). ClusterRoles' aggregation rules are not applied (no
controller does it in the fake, nor in a control plane without its controller-manager):
``admin``, ``edit`` and ``view`` have no rules of their own, so a binding to them allows nothing,
while one to ``system:aggregate-to-view`` allows what that role lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["authorize"]

_GROUP = "rbac.authorization.k8s.io"
_MASTERS = "system:masters"
_SA_PREFIX = "system:serviceaccount:"


def authorize(
    objects: Mapping[tuple[str, str], Mapping[tuple[str, str], Any]],
    user: str,
    groups: Sequence[str],
    attributes: Mapping[str, Any],
    *,
    resource: bool,
) -> tuple[bool, str]:
    """Whether ``user`` in ``groups`` may do what ``attributes`` say (a SubjectAccessReview's
    ``resourceAttributes``, else its ``nonResourceAttributes``), and the reason."""
    if _MASTERS in groups:
        return True, ""
    namespace = str(attributes.get("namespace") or "") if resource else ""
    errors: list[str] = []
    for source, rule in _rules(objects, user, groups, namespace, errors):
        if _allows(rule, attributes, resource=resource):
            return True, f"RBAC: allowed by {source}"
    if not errors:
        return False, ""
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return False, f"RBAC: {joined}"


def _rules(
    objects: Mapping[tuple[str, str], Mapping[tuple[str, str], Any]],
    user: str,
    groups: Sequence[str],
    namespace: str,
    errors: list[str],
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    bindings = objects.get((_GROUP, "clusterrolebindings"), {})
    for key in sorted(bindings):
        binding = bindings[key]
        subject = _subject(binding.get("subjects") or (), user, groups, "")
        if subject is None:
            continue
        rules = _role_rules(objects, binding.get("roleRef") or {}, "", errors)
        name = binding["metadata"]["name"]
        source = f'ClusterRoleBinding "{name}" of {_ref(binding)} to {_described(subject, "")}'
        for rule in rules:
            yield source, rule
    if not namespace:
        return
    bindings = objects.get((_GROUP, "rolebindings"), {})
    for key in sorted(k for k in bindings if k[0] == namespace):
        binding = bindings[key]
        subject = _subject(binding.get("subjects") or (), user, groups, namespace)
        if subject is None:
            continue
        rules = _role_rules(objects, binding.get("roleRef") or {}, namespace, errors)
        name = binding["metadata"]["name"]
        source = (
            f'RoleBinding "{name}/{namespace}" of {_ref(binding)} to '
            f"{_described(subject, namespace)}"
        )
        for rule in rules:
            yield source, rule


def _ref(binding: Mapping[str, Any]) -> str:
    ref = binding.get("roleRef") or {}
    return f'{ref.get("kind", "")} "{ref.get("name", "")}"'


def _described(subject: Mapping[str, Any], namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or namespace}"'
    return f'{kind} "{name}"'


def _subject(
    subjects: Sequence[Any], user: str, groups: Sequence[str], namespace: str
) -> Mapping[str, Any] | None:
    for subject in subjects:
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user:
            return subject  # type: ignore[no-any-return]
        if kind == "Group" and name in groups:
            return subject  # type: ignore[no-any-return]
        if kind == "ServiceAccount":
            where = subject.get("namespace") or namespace
            if where and user == f"{_SA_PREFIX}{where}:{name}":
                return subject  # type: ignore[no-any-return]
    return None


def _role_rules(
    objects: Mapping[tuple[str, str], Mapping[tuple[str, str], Any]],
    ref: Mapping[str, Any],
    namespace: str,
    errors: list[str],
) -> Sequence[Mapping[str, Any]]:
    kind, name = ref.get("kind"), str(ref.get("name") or "")
    if kind == "Role":
        found = objects.get((_GROUP, "roles"), {}).get((namespace, name))
        if found is None:
            errors.append(f'role.rbac.authorization.k8s.io "{name}" not found')
    elif kind == "ClusterRole":
        found = objects.get((_GROUP, "clusterroles"), {}).get(("", name))
        if found is None:
            errors.append(f'clusterrole.rbac.authorization.k8s.io "{name}" not found')
    else:
        errors.append(f'unsupported role reference kind: "{kind}"')
        found = None
    return list((found or {}).get("rules") or ())


def _has(values: Any, wanted: str) -> bool:
    listed = list(values or ())
    return "*" in listed or wanted in listed


def _allows(rule: Mapping[str, Any], attributes: Mapping[str, Any], *, resource: bool) -> bool:
    verb = str(attributes.get("verb") or "")
    if not _has(rule.get("verbs"), verb):
        return False
    if not resource:
        path = str(attributes.get("path") or "")
        return any(
            url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or ()
        )
    if not _has(rule.get("apiGroups"), str(attributes.get("group") or "")):
        return False
    plural = str(attributes.get("resource") or "")
    sub = str(attributes.get("subresource") or "")
    combined = f"{plural}/{sub}" if sub else plural
    resources = list(rule.get("resources") or ())
    if not any(r in ("*", combined) or (sub and r == f"*/{sub}") for r in resources):
        return False
    names = list(rule.get("resourceNames") or ())
    return not names or str(attributes.get("name") or "") in names
