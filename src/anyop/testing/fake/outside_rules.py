"""The rules of the built-in kinds operators meet less often, for :mod:`.builtin_rules` and the
write path to call: CertificateSigningRequests (:mod:`.csr_rules`), ValidatingAdmissionPolicies
and their bindings (:mod:`.admission_policy_rules`), and an APIService's ``PrepareForCreate``
(:mod:`.apiservice_rules`; its checks are :mod:`.storage_rules`').

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.admission_policy_rules import POLICY_DEFAULTERS, policy_causes
from anyop.testing.fake.apiservice_rules import prepared as apiservice_prepared
from anyop.testing.fake.csr_rules import CSR_KEY, csr_causes, csr_prepared
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.resource_slice_rules import prepared as resource_slice_prepared
from anyop.testing.fake.statuses import Cause

__all__ = ["OUTSIDE_DEFAULTERS", "outside_causes", "outside_update_causes", "strategy_prepared"]

Body = dict[str, Any]
Causes = list[tuple[str, Cause]]
_API_SERVICE = ("apiregistration.k8s.io", "APIService")
_RESOURCE_SLICE = ("resource.k8s.io", "ResourceSlice")

OUTSIDE_DEFAULTERS = {**POLICY_DEFAULTERS}
"""Their defaulting functions, by group and kind."""


def outside_causes(kind: Kind, obj: Mapping[str, Any]) -> Causes | None:
    """A new object's errors (beyond its metadata's); ``None`` for the other kinds."""
    if kind.custom:
        return None
    if (kind.group, kind.kind) == CSR_KEY:
        return csr_causes(obj)
    if kind.group == "admissionregistration.k8s.io":
        return policy_causes(kind.kind, obj)
    return None


def outside_update_causes(
    kind: Kind, old: Mapping[str, Any], new: Mapping[str, Any], *, subresource: str | None
) -> Causes | None:
    """An update's errors (beyond its metadata's); ``None`` for the other kinds."""
    if kind.custom:
        return None
    if (kind.group, kind.kind) == CSR_KEY:
        return csr_causes(new, old, subresource=subresource)
    if kind.group == "admissionregistration.k8s.io":
        return policy_causes(kind.kind, new)
    return None


def strategy_prepared(
    kind: Kind,
    obj: Body,
    *,
    old: Mapping[str, Any] | None = None,
    sent: Mapping[str, Any] | None = None,
    subresource: str | None = None,
    now: str = "",
) -> Body:
    """A write's object as its kind's strategy prepares it (``PrepareForCreate``, or with
    ``old`` ``PrepareForUpdate`` of the object or its ``subresource``; ``sent``: the update as
    decoded), before validation."""
    if not kind.custom and (kind.group, kind.kind) == CSR_KEY:
        return csr_prepared(obj, old=old, sent=sent, subresource=subresource, now=now)
    if old is None and not kind.custom and (kind.group, kind.kind) == _API_SERVICE:
        return apiservice_prepared(obj, now=now)
    if subresource is None and not kind.custom and (kind.group, kind.kind) == _RESOURCE_SLICE:
        return resource_slice_prepared(obj, old=old, now=now)
    return obj
