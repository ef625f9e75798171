"""Which resource a handler's selector names, for RBAC: its group, plural and scope.

A selector may name a resource by its plural, singular, kind or short name, with or without a
group. RBAC needs the group and the plural: they come from the typed resources' classes, from
CRDs given to ``anyop manifests --crd``, or from the built-in kinds below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from anyop.errors import ConfigError
from anyop.handlers.selectors import Selector
from anyop.models.resources import CustomResource

__all__ = ["BUILTINS", "Named", "known_resources", "named"]


@dataclasses.dataclass(frozen=True)
class Named:
    """A resource as RBAC names it.

    Attributes:
        group: The API group (``""``: the core API).
        plural: The plural name.
        cluster: Whether it is cluster-scoped.
        status: Whether it has the status subresource (``None``: not known).
    """

    group: str
    plural: str
    cluster: bool = False
    status: bool | None = None


def _builtins() -> dict[str, Named]:
    core = ("pods", "configmaps", "secrets", "services", "serviceaccounts", "endpoints")
    found = {name: Named("", name) for name in (*core, "persistentvolumeclaims", "events")}
    found |= {name: Named("", name, cluster=True) for name in ("namespaces", "nodes")}
    for name in ("deployments", "statefulsets", "daemonsets", "replicasets"):
        found[name] = Named("apps", name)
    found |= {name: Named("batch", name) for name in ("jobs", "cronjobs")}
    found["ingresses"] = Named("networking.k8s.io", "ingresses")
    found["leases"] = Named("coordination.k8s.io", "leases")
    return found


BUILTINS = _builtins()
"""Built-in resources that selectors name by their plural without a group (``'pods'``)."""


def known_resources(
    crds: Iterable[Mapping[str, Any]] = (), classes: Iterable[type[CustomResource]] = ()
) -> dict[str, list[Named]]:
    """Every name of the CRDs' and the classes' resources (plural, singular, kind, short
    names), each with the resources it may stand for."""
    known: dict[str, list[Named]] = {}
    for crd in crds:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = spec.get("versions") or []
        status = any("status" in (v.get("subresources") or {}) for v in versions)
        group, plural = str(spec.get("group")), str(names.get("plural"))
        resource = Named(group, plural, spec.get("scope") == "Cluster", status)
        aliases = [names.get("plural"), names.get("singular"), names.get("kind")]
        _add(known, resource, [*aliases, *(names.get("shortNames") or ())])
    for cls in classes:
        info = cls.__resource__
        status = "status" in cls.model_fields
        resource = Named(info.group, info.plural, info.scope == "Cluster", status)
        _add(known, resource, [info.plural, info.singular, info.kind, *info.short_names])
    return known


def _add(known: dict[str, list[Named]], resource: Named, names: list[Any]) -> None:
    for name in names:
        if isinstance(name, str) and name and resource not in known.setdefault(name, []):
            known[name].append(resource)


def named(selector: Selector, known: Mapping[str, list[Named]], culprit: str) -> Named:
    """The one resource that ``selector`` names.

    Raises:
        ConfigError: It names no single resource that is known (a category, a callable,
            ``EVERYTHING``, an unknown or an ambiguous name); the message says how to fix it.
    """
    names = (selector.plural, selector.kind, selector.singular, selector.shortcut)
    name = next((n for n in (*names, selector.any_name) if isinstance(n, str)), None)
    if name is None:
        raise ConfigError(
            f"{culprit}: RBAC needs one resource, not {selector!r}; name it by its plural and "
            f"group (e.g. 'widgets.demo.example.com') or by a typed resource's class."
        )
    builtin = [BUILTINS[name]] if name in BUILTINS else []
    candidates: list[Named] = [*known.get(name, []), *builtin]
    if selector.group is not None:
        candidates = [c for c in candidates if c.group == selector.group]
        if not candidates and name.islower() and selector.plural in (None, name):
            candidates = [Named(selector.group, name)]  # a plural with its group: as written
    if len(set(candidates)) != 1:
        found = "ambiguous" if candidates else "unknown"
        raise ConfigError(
            f"{culprit}: the resource {name!r} is {found}; give its group ('{name}.<group>') "
            f"or its CRD (anyop manifests --crd FILE)."
        )
    return candidates[0]
