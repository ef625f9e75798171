"""Which conversion functions convert an object of a custom resource between two versions, pure.

The declared steps (``@on.convert(..., from_=..., to=...)``) of one resource are the edges of
a directed graph over its versions. An object is converted along the shortest path of steps
(the first declared wins among equally short ones), so a hub version with a step to and from
every other one works, as does a chain ``v1alpha1 -> v1beta1 -> v1`` with its way back.
:func:`plan_routes` works out every route once, at startup, and refuses a set of steps that
cannot connect every pair of the resource's versions, naming the missing steps.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from anyop.errors import ConfigError
from anyop.handlers.records import ConversionHandler

__all__ = ["Routes", "plan_routes"]

Route = tuple[ConversionHandler, ...]


@dataclasses.dataclass(frozen=True)
class Routes:
    """The conversions of one custom resource.

    Attributes:
        crd: The CustomResourceDefinition's name, e.g. ``"kopfexamples.kopf.dev"``.
        group: The resource's API group.
        kind: The resource's kind.
        versions: Every version an object may be converted from or to.
        routes: The steps from one version to another, for every ordered pair of them.
    """

    crd: str
    group: str
    kind: str
    versions: tuple[str, ...]
    routes: Mapping[tuple[str, str], Route]

    def route(self, source: str, target: str) -> Route:
        """The steps from ``source`` to ``target`` (none if they are the same).

        Raises:
            KeyError: One of the versions is not the resource's.
        """
        if source == target and source in self.versions:
            return ()
        return self.routes[source, target]


def plan_routes(
    crd: str,
    *,
    group: str,
    kind: str,
    versions: Iterable[str],
    steps: Sequence[ConversionHandler],
) -> Routes:
    """The routes between every pair of ``versions`` along the declared ``steps``.

    Raises:
        ConfigError: A step names a version the resource does not have, two functions declare
            the same step, or some version cannot be converted to another one (each missing
            pair is named).
    """
    known = tuple(dict.fromkeys(versions))
    _check_steps(crd, known, steps)
    routes: dict[tuple[str, str], Route] = {}
    missing: list[str] = []
    for source in known:
        reached = _shortest_routes(source, steps)
        for target in known:
            if target == source:
                continue
            if target in reached:
                routes[source, target] = reached[target]
            else:
                missing.append(f"from {source} to {target}")
    if missing:
        declared = ", ".join(f"{h.from_version} -> {h.to_version}" for h in steps)
        raise ConfigError(
            f"The conversions of {crd} cannot convert {'; '.join(missing)} (declared: "
            f"{declared}). Add @anyop.on.convert(..., from_=..., to=...) for the missing steps, "
            f"directly or through a hub version."
        )
    return Routes(crd, group, kind, known, routes)


def _check_steps(crd: str, versions: Sequence[str], steps: Sequence[ConversionHandler]) -> None:
    by_step: dict[tuple[str, str], ConversionHandler] = {}
    for handler in steps:
        for version in (handler.from_version, handler.to_version):
            if version not in versions:
                raise ConfigError(
                    f"{handler} names the version {version!r}, which {crd} does not have "
                    f"(its versions: {', '.join(versions) or 'none'})."
                )
        step = (handler.from_version, handler.to_version)
        other = by_step.setdefault(step, handler)
        if other is not handler and other.fn is not handler.fn:
            raise ConfigError(f"{other} and {handler} both convert {crd}; keep one of them.")


def _shortest_routes(source: str, steps: Sequence[ConversionHandler]) -> dict[str, Route]:
    """The shortest route from ``source`` to every version it reaches (breadth first)."""
    reached: dict[str, Route] = {source: ()}
    queue = collections.deque([source])
    while queue:
        version = queue.popleft()
        for handler in steps:
            if handler.from_version == version and handler.to_version not in reached:
                reached[handler.to_version] = (*reached[version], handler)
                queue.append(handler.to_version)
    del reached[source]
    return reached
