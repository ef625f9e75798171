"""What the API server serves: the resources of the core API and of every group and version.

:func:`discover` reads it all (at start-up); :func:`discover_group` re-reads one group (when a
CRD appears, changes or goes); a :class:`Catalog` keeps the result and applies such rescans.
Parsing is done by the pure functions of :mod:`anyop.kube.resources`. Matching the operator's
selectors against the result is the engine's business (``handlers/selectors.resolve``): ``kube``
sits below ``handlers`` and does not import it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from anyop.errors import AnyopError, NotFoundError
from anyop.kube.client import KubeClient, Request
from anyop.kube.resources import (
    GroupVersion,
    Resource,
    parse_api_groups,
    parse_core_versions,
    parse_resource_list,
    with_own_preferences,
)

__all__ = ["Catalog", "discover", "discover_group"]

logger = logging.getLogger("anyop.kube")

_CONCURRENCY = 8  # group-version documents fetched at once


async def discover(client: KubeClient, *, failed: list[str] | None = None) -> list[Resource]:
    """Read every resource of every served version of the core API and of all groups.

    Group-versions that fail to answer (e.g. an aggregated API whose backend is down) are
    skipped with a warning; their resources are missing from the result, and their paths are
    added to ``failed`` (if given), for the caller to try again.

    Raises:
        ApiError: ``/api`` or ``/apis`` themselves failed.
        TransportError: The API server could not be reached.
    """
    core = parse_core_versions(await _get(client, "/api"))
    versions = [GroupVersion("", version, True) for version in core]
    versions += parse_api_groups(await _get(client, "/apis"))
    return await _resources(client, versions, failed)


async def discover_group(client: KubeClient, group: str) -> list[Resource]:
    """Read the resources of all served versions of one API group (``""``: the core API).

    Returns:
        The group's resources, or an empty list if the group is not served (any more).

    Raises:
        ApiError: The group's documents failed otherwise than with 404.
        TransportError: The API server could not be reached.
    """
    if not group:
        core = parse_core_versions(await _get(client, "/api"))
        return await _resources(client, [GroupVersion("", version, True) for version in core])
    try:
        document = await _get(client, f"/apis/{group}")
    except NotFoundError:
        return []
    return await _resources(client, parse_api_groups({"groups": [document]}))


class Catalog:
    """The resources the API server serves, kept up to date one group at a time.

    Guarantees:
        ``resources`` is replaced as a whole after each refresh or rescan, never changed in
        place, so a reader always sees one consistent list.
    """

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.resources: list[Resource] = []

    async def refresh(self) -> list[Resource]:
        """Discover everything again; return all resources."""
        self.resources = await discover(self.client)
        return self.resources

    async def rescan(self, group: str) -> list[Resource]:
        """Re-read one group (after a CRD of it was created, changed or deleted).

        Returns:
            All resources of all groups, with that group's replaced by what is served now.
        """
        fresh = await discover_group(self.client, group)
        self.resources = [r for r in self.resources if r.group != group] + fresh
        return self.resources

    def find(self, group: str, plural: str, version: str | None = None) -> Resource | None:
        """The resource of that group and plural name (its preferred version by default)."""
        for resource in self.resources:
            named = resource.group == group and resource.plural == plural
            if named and (version == resource.version or (version is None and resource.preferred)):
                return resource
        return None


async def _resources(
    client: KubeClient, versions: Iterable[GroupVersion], failed: list[str] | None = None
) -> list[Resource]:
    found: dict[GroupVersion, list[Resource]] = {}
    limiter = anyio.CapacityLimiter(_CONCURRENCY)

    async def fetch(version: GroupVersion) -> None:
        async with limiter:
            found[version] = await _group_version(client, version, failed)

    ordered = list(versions)
    async with anyio.create_task_group() as group:
        for version in ordered:
            group.start_soon(fetch, version)
    return with_own_preferences(r for version in ordered for r in found.get(version, []))


async def _group_version(
    client: KubeClient, version: GroupVersion, failed: list[str] | None = None
) -> list[Resource]:
    path = f"/api/{version.version}" if not version.group else version.path
    try:
        document = await _get(client, path)
    except AnyopError as exc:
        logger.warning("Cannot discover the resources of %s: %s", path, exc)
        if failed is not None:
            failed.append(path)
        return []
    return parse_resource_list(
        document, group=version.group, version=version.version, preferred=version.preferred
    )


async def _get(client: KubeClient, path: str) -> Mapping[str, Any]:
    document = await client.request(Request("GET", path))
    return document if isinstance(document, Mapping) else {}
