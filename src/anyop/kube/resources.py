"""Kubernetes resource kinds, their API URLs, and the discovery documents that describe them.

Pure: nothing here talks to the API server. ``kube/discovery.py`` fetches the discovery documents
(``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>/<version>``) and hands their parsed JSON to the
functions below, which turn them into :class:`Resource` records.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = [
    "GroupVersion",
    "Resource",
    "parse_api_groups",
    "parse_core_versions",
    "parse_resource_list",
    "version_priority",
    "with_own_preferences",
]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Resource:
    """One specific resource kind of one specific API group and version.

    Only ``group``, ``version`` and ``plural`` identify it (and take part in equality and hashing);
    the other names are remembered to match selectors against and for logging.

    Attributes:
        group: The API group, e.g. ``"kopf.dev"`` or ``"apps"``; ``""`` for the core API.
        version: The API version, e.g. ``"v1"``.
        plural: The plural name used in URLs, e.g. ``"kopfexamples"``.
        kind: The kind as in manifests, e.g. ``"KopfExample"``.
        singular: The singular name, e.g. ``"kopfexample"``.
        shortcuts: The short names, e.g. ``{"kex"}``.
        categories: The categories, e.g. ``{"all"}``.
        subresources: The subresources, e.g. ``{"status", "scale"}``.
        namespaced: Whether objects live in namespaces; ``None`` if unknown.
        preferred: Whether a reference without a version means this version: the group's
            preferred version, or, for a resource that version does not serve, the resource's
            own highest served version (see :func:`with_own_preferences`). Versionless selectors
            match only such resources.
        verbs: The verbs the API supports for it, e.g. ``{"list", "watch", "patch"}``.
    """

    group: str
    version: str
    plural: str
    kind: str | None = None
    singular: str | None = None
    shortcuts: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()
    namespaced: bool | None = None
    preferred: bool = True
    verbs: frozenset[str] = frozenset()

    def __hash__(self) -> int:
        return hash((self.group, self.version, self.plural))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (self.group, self.version, self.plural) == (other.group, other.version, other.plural)

    def __repr__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group}".strip(".")

    def __iter__(self) -> Iterator[str]:
        """Unpack as ``(group, version, plural)``, e.g. for ``@anyop.on.event(*resource)``."""
        return iter((self.group, self.version, self.plural))

    @property
    def api_version(self) -> str:
        """The objects' ``apiVersion``: ``"v1"`` for the core API, else ``"group/version"``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def get_url(
        self,
        *,
        server: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> str:
        """Build the URL (or just the path) of a list, an object, or an object's subresource.

        Args:
            server: The API server's base URL; without it, only the path is returned.
            namespace: The namespace; ``None`` means cluster-wide. Giving one for a cluster-scoped
                resource is an error.
            name: The object's name; ``None`` means the list URL.
            subresource: The subresource, e.g. ``"status"``; requires ``name``.
            params: Query parameters.

        Returns:
            E.g. ``/apis/kopf.dev/v1/namespaces/ns/kopfexamples/ex1/status``.

        Raises:
            ValueError: If the combination makes no sense for this resource.
        """
        if subresource is not None and name is None:
            raise ValueError("Subresources can be addressed only for named objects.")
        if not self.namespaced and namespace is not None:
            raise ValueError(f"Namespaces are not supported for cluster-scoped {self!r}.")
        if self.namespaced and namespace is None and name is not None:
            raise ValueError(f"A namespace is required for a named object of {self!r}.")
        root = "/api" if self.group == "" else "/apis"
        scope = ["namespaces", namespace] if namespace is not None else []
        parts = [root, self.group, self.version, *scope, self.plural, name, subresource]
        path = "/".join(part for part in parts if part)
        query = urllib.parse.urlencode(params) if params else ""
        url = f"{path}?{query}" if query else path
        return url if server is None else f"{server.rstrip('/')}/{url.lstrip('/')}"


@dataclasses.dataclass(frozen=True)
class GroupVersion:
    """One version of one API group, as listed by ``/apis``.

    Attributes:
        group: The API group name.
        version: The version name.
        preferred: Whether it is the group's preferred version.
    """

    group: str
    version: str
    preferred: bool

    @property
    def path(self) -> str:
        """The discovery path of this group-version, e.g. ``/apis/apps/v1``."""
        return f"/apis/{self.group}/{self.version}"


def parse_core_versions(document: Mapping[str, Any]) -> list[str]:
    """Read the core API versions from the ``/api`` document (``kind: APIVersions``)."""
    return [str(version) for version in document.get("versions") or []]


def parse_api_groups(document: Mapping[str, Any]) -> list[GroupVersion]:
    """Read the group-versions from the ``/apis`` document (``kind: APIGroupList``)."""
    found: list[GroupVersion] = []
    for group in document.get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("version")
        for version in group.get("versions") or []:
            name = str(version["version"])
            found.append(GroupVersion(str(group["name"]), name, preferred == name))
    return found


def parse_resource_list(
    document: Mapping[str, Any],
    *,
    group: str,
    version: str,
    preferred: bool = True,
) -> list[Resource]:
    """Read the resources of one group-version from its ``APIResourceList`` document.

    Subresources (``pods/status``) are not resources of their own: they are folded into their
    parent's ``subresources``.

    Args:
        document: The JSON of ``/api/v1`` or ``/apis/<group>/<version>``.
        group: The group of that document (``""`` for the core API).
        version: The version of that document.
        preferred: Whether that version is the group's preferred one (always true for ``/api/v1``).

    Returns:
        One :class:`Resource` per top-level entry.
    """
    entries: list[Mapping[str, Any]] = list(document.get("resources") or [])
    subresources: dict[str, set[str]] = {}
    for entry in entries:
        parent, _, sub = str(entry["name"]).partition("/")
        if sub:
            subresources.setdefault(parent, set()).add(sub)
    return [
        _resource_from_entry(
            entry, group=group, version=version, preferred=preferred, subresources=subresources
        )
        for entry in entries
        if "/" not in str(entry["name"])
    ]


def _resource_from_entry(
    entry: Mapping[str, Any],
    *,
    group: str,
    version: str,
    preferred: bool,
    subresources: Mapping[str, set[str]],
) -> Resource:
    plural = str(entry["name"])
    kind = str(entry.get("kind") or "") or None
    # Built-ins come with empty singular names; the lowercase kind is what kubectl accepts.
    singular = str(entry.get("singularName") or "") or (kind.lower() if kind else None)
    return Resource(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        singular=singular,
        shortcuts=frozenset(entry.get("shortNames") or ()),
        categories=frozenset(entry.get("categories") or ()),
        subresources=frozenset(subresources.get(plural, ())),
        namespaced=bool(entry.get("namespaced")),
        preferred=preferred,
        verbs=frozenset(entry.get("verbs") or ()),
    )


def version_priority(version: str) -> tuple[int, int, int, int, str]:
    """Kubernetes' version priority as a sort key (the first is preferred): GA over beta over
    alpha, a higher number first; other names last, alphabetically."""
    match = _VERSION.match(version)
    if match is None:
        return (1, 0, 0, 0, version)
    major, stability, minor = match.groups()
    return (0, -_STABILITY[stability], -int(major), -int(minor or 0), version)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY = {"alpha": 0, "beta": 1, None: 2}


def with_own_preferences(resources: Iterable[Resource]) -> list[Resource]:
    """Discovered resources, where each one that its group's preferred version does not serve is
    preferred in its own highest served version, as kubectl resolves a name without a version.

    A group prefers one version for all its resources: once a CRD of the group serves ``v2``,
    the group prefers ``v2``, and another CRD of it that serves only ``v1`` would otherwise have
    no preferred version at all (and selectors without a version would never match it).
    """
    resources = list(resources)
    covered = {(r.group, r.plural) for r in resources if r.preferred}
    best: dict[tuple[str, str], Resource] = {}
    for resource in resources:
        key = (resource.group, resource.plural)
        if key in covered:
            continue
        if key not in best or version_priority(resource.version) < version_priority(
            best[key].version
        ):
            best[key] = resource
    chosen = {(r.group, r.version, r.plural) for r in best.values()}
    return [
        dataclasses.replace(r, preferred=True) if (r.group, r.version, r.plural) in chosen else r
        for r in resources
    ]
