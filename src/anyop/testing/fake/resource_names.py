"""Kubernetes' resource names (``cpu``, ``requests.memory``, ``example.com/gpu``): the sets its
Go helpers keep (``pkg/apis/core/helper``) and the checks of names that its validation shares
(``validateResourceName`` and the container's and quota's variants), with their messages.

Pure. ``shown`` is a name as a field error shows it: a ``ResourceName`` is a named string type,
which apimachinery writes with ``json.Marshal`` (``go_marshalled``).
"""

from __future__ import annotations

from anyop.testing.fake.object_meta import label_key_errors
from anyop.testing.fake.pod_rules import invalid
from anyop.testing.fake.statuses import Cause

__all__ = [
    "CONTAINER_RESOURCES",
    "HUGE_PAGES",
    "INTEGER_RESOURCES",
    "QUOTA_RESOURCES",
    "STANDARD_RESOURCES",
    "container_resource_name_causes",
    "is_extended",
    "is_huge_pages",
    "is_integer",
    "is_native",
    "is_standard",
    "quota_resource_name_causes",
    "resource_name_causes",
]

Causes = list[tuple[str, Cause]]

HUGE_PAGES = "hugepages-"
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
STANDARD_RESOURCES = (
    *CONTAINER_RESOURCES, "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas",
    "services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims",
    "storage", "requests.storage", "services.nodeports", "services.loadbalancers",
)  # fmt: skip
"""``standardResources``."""
QUOTA_RESOURCES = tuple(name for name in STANDARD_RESOURCES if name != "storage")
"""``standardQuotaResources``: the standard ones but ``storage``."""
INTEGER_RESOURCES = (
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
)  # fmt: skip
"""``integerResources``."""


def is_native(name: str) -> bool:
    """``IsNativeResource``: unprefixed, or in ``kubernetes.io/``."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """``IsExtendedResourceName``: prefixed outside ``kubernetes.io/``, and a qualified name
    once ``requests.`` is put before it."""
    if is_native(name) or name.startswith("requests."):
        return False
    return not label_key_errors(f"requests.{name}")


def is_huge_pages(name: str) -> bool:
    """``IsQuotaHugePageResourceName``: huge pages, or requests of them."""
    return name.startswith((HUGE_PAGES, "requests.hugepages-"))


def is_standard(name: str) -> bool:
    """``IsStandardResourceName``."""
    return name in STANDARD_RESOURCES or is_huge_pages(name)


def is_integer(name: str) -> bool:
    """``IsIntegerResourceName``: counts of objects, and extended resources."""
    return name in INTEGER_RESOURCES or is_extended(name)


def resource_name_causes(name: str, where: str, *, shown: str) -> Causes:
    """``validateResourceName``: a qualified name, and a standard one unless qualified."""
    causes = [invalid(where, shown, error) for error in label_key_errors(name)]
    if not causes and "/" not in name and not is_standard(name):
        causes.append(invalid(where, shown, "must be a standard resource type or fully qualified"))
    return causes


def container_resource_name_causes(name: str, where: str, *, shown: str) -> Causes:
    """``validateContainerResourceName``: :func:`resource_name_causes`, then a container's
    resource unless qualified, an extended resource if qualified outside Kubernetes."""
    causes = resource_name_causes(name, where, shown=shown)
    if "/" not in name:
        if name not in CONTAINER_RESOURCES and not name.startswith(HUGE_PAGES):
            causes.append(invalid(where, shown, "must be a standard resource for containers"))
    elif not is_native(name) and not is_extended(name):
        causes.append(invalid(where, shown, "doesn't follow extended resource name standard"))
    return causes


def quota_resource_name_causes(name: str, where: str, *, shown: str) -> Causes:
    """``ValidateResourceQuotaResourceName``: :func:`resource_name_causes`, then a quota's
    resource unless qualified."""
    causes = resource_name_causes(name, where, shown=shown)
    if "/" not in name and name not in QUOTA_RESOURCES and not is_huge_pages(name):
        causes.append(invalid(where, shown, "must be a standard resource for quota"))
    return causes
