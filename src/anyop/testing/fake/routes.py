"""URL paths of the Kubernetes API, parsed into what they address.

Pure. ``/api/v1/namespaces/ns/configmaps/name/status`` becomes a :class:`Route` with the group
``""``, version ``v1``, plural ``configmaps``, namespace ``ns``, name and subresource; discovery
paths become :class:`DiscoveryRoute`.
"""

from __future__ import annotations

import dataclasses
import functools

__all__ = ["DiscoveryRoute", "Route", "parse_path", "watch_path"]


@dataclasses.dataclass(frozen=True, slots=True)
class Route:
    """A path to a resource, an object of it, or an object's subresource."""

    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class DiscoveryRoute:
    """A discovery path: ``/api`` (group ``None``), ``/apis`` (``""`` and no version), a group,
    or a group version."""

    group: str | None
    version: str | None = None
    core: bool = False


@functools.lru_cache(maxsize=1024)
def parse_path(path: str) -> Route | DiscoveryRoute | None:
    """What a URL path addresses, or ``None`` for a path the API does not have (remembered
    for the latest paths: a client asks for the same ones again and again)."""
    parts = path.split("/")[1:]
    if parts and not parts[-1]:
        parts.pop()  # one trailing slash is the path without it; an empty part within is none
    if not parts or not all(parts):
        return None
    if parts[0] == "api":
        if len(parts) == 1:
            return DiscoveryRoute(None, core=True)
        if len(parts) == 2:
            return DiscoveryRoute("", parts[1], core=True)
        return _resource("", parts[1], parts[2:])
    if parts[0] == "apis":
        if len(parts) == 1:
            return DiscoveryRoute("")
        if len(parts) == 2:
            return DiscoveryRoute(parts[1])
        if len(parts) == 3:
            return DiscoveryRoute(parts[1], parts[2])
        return _resource(parts[1], parts[2], parts[3:])
    return None


def _resource(group: str, version: str, rest: list[str]) -> Route | None:
    namespace = None
    # "namespaces/<ns>/<plural>..." addresses namespaced objects; "namespaces/<ns>" and
    # "namespaces/<ns>/status" address the namespace itself.
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and not group
        and rest[2] in ("status", "finalize")
    ):
        return Route(group, version, "namespaces", None, rest[1], rest[2])
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    return Route(group, version, plural, namespace, name, subresource)


def watch_path(path: str) -> tuple[str, str | None] | None:
    """A deprecated watch path (``/api/v1/watch/namespaces/ns/configmaps[/name]``, and under
    ``/apis/<group>/<version>/watch/``) as the collection's path and the object's name, if it
    names one; ``None`` for any other path."""
    parts = path.split("/")[1:]
    at = 2 if parts[:1] == ["api"] else 3 if parts[:1] == ["apis"] else 0
    if not at or len(parts) < at + 2 or parts[at] != "watch":
        return None
    rest = [part for part in parts[at + 1 :] if part]
    scoped = rest[0] == "namespaces" and len(rest) >= 3  # (else the namespaces themselves)
    name = rest[3] if scoped and len(rest) == 4 else None
    if not scoped and len(rest) == 2:
        name = rest[1]
    collection = rest[: 3 if scoped else 1]
    return "/".join(["", *parts[:at], *collection]), name
