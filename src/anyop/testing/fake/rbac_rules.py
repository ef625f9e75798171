"""What kube-apiserver's Go code checks of RoleBindings and ClusterRoleBindings, with its
messages.

Pure. ``ValidateRoleBinding``: the role referred to (its group, kind and name) and each subject
(its kind, name and group; a ClusterRoleBinding's service account needs a namespace); an update
may not change the role referred to. The objects are defaulted already (a subject's and a
role reference's ``apiGroup``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.field_errors import path_segment_errors
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.pod_rules import dns_subdomain_causes, invalid, required, unsupported

__all__ = ["binding_causes", "binding_update_causes"]

Cause = dict[str, str]

_GROUP = "rbac.authorization.k8s.io"


def _subject(
    subject: Mapping[str, Any], where: str, *, namespaced: bool
) -> Iterator[tuple[str, Cause]]:
    name, kind = str(subject.get("name") or ""), str(subject.get("kind") or "")
    group = str(subject.get("apiGroup") or "")
    if not name:
        yield required(f"{where}.name")
    if kind == "ServiceAccount":
        if name:
            yield from dns_subdomain_causes(name, f"{where}.name")
        if group:
            yield unsupported(f"{where}.apiGroup", group, ("",))
        if not namespaced and not subject.get("namespace"):
            yield required(f"{where}.namespace")
    elif kind in ("User", "Group"):
        if group != _GROUP:
            yield unsupported(f"{where}.apiGroup", group, (_GROUP,))
    else:
        yield unsupported(f"{where}.kind", kind, ("ServiceAccount", "User", "Group"))


def binding_causes(binding: Mapping[str, Any], *, namespaced: bool) -> list[tuple[str, Cause]]:
    """The errors of a RoleBinding (``namespaced``) or ClusterRoleBinding, beyond its metadata's."""
    role = binding.get("roleRef") or {}
    causes: list[tuple[str, Cause]] = []
    if role.get("apiGroup") != _GROUP:
        causes.append(unsupported("roleRef.apiGroup", str(role.get("apiGroup") or ""), (_GROUP,)))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if role.get("kind") not in kinds:
        causes.append(unsupported("roleRef.kind", str(role.get("kind") or ""), kinds))
    name = str(role.get("name") or "")
    if not name:
        causes.append(required("roleRef.name"))
    for error in path_segment_errors(name):
        causes.append(invalid("roleRef.name", go_quoted(name), error))
    for index, subject in enumerate(binding.get("subjects") or ()):
        if isinstance(subject, Mapping):
            causes += _subject(subject, f"subjects[{index}]", namespaced=namespaced)
    return causes


def binding_update_causes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[tuple[str, Cause]]:
    """What an update of a binding may not do: change the role it refers to."""
    before, after = old.get("roleRef") or {}, new.get("roleRef") or {}
    keys = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))
    if all(str(before.get(k) or "") == str(after.get(k) or "") for _, k in keys):
        return []
    shown = json.dumps({go: str(after.get(k) or "") for go, k in keys}, separators=(",", ":"))
    return [invalid("roleRef", shown, "cannot change roleRef")]
