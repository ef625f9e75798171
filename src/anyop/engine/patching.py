"""Applying one cycle's patch: the fewest requests, the freshest body back.

A cycle collects everything it wants to write (handler results, progress, diff-base, finalizers,
the user's ``patch``) into one :class:`~anyop.kube.patches.Patch`; this module turns it into
requests: the ``status`` part to ``/status`` when the resource has that subresource, the rest as a
merge-patch, and ``patch.fns`` as a JSON patch guarded by the body's ``resourceVersion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anyop.errors import NotFoundError
from anyop.kube.client import KubeClient, PatchType
from anyop.kube.patches import (
    Patch,
    json_patch_from_fns,
    split_json_patch,
    split_status,
    with_resource_version,
)
from anyop.kube.resources import Resource

__all__ = ["apply_patch"]


async def apply_patch(
    client: KubeClient,
    resource: Resource,
    body: Mapping[str, Any],
    patch: Patch,
) -> Mapping[str, Any] | None:
    """Send the patch of one cycle and return the object as the server last returned it.

    Args:
        client: The API client.
        resource: The object's resource.
        body: The body the cycle handled (its name, namespace and resourceVersion are used).
        patch: What to write; empty patches send nothing.

    Returns:
        The body from the last response, or ``None`` if nothing was sent or the object is gone.

    Caveats:
        The status request goes first: removing a finalizer in the main request may delete the
        object, after which a status request would fail.
    """
    requests = _requests(resource, body, patch)
    meta = body.get("metadata") or {}
    where: dict[str, Any] = {"name": meta.get("name", ""), "namespace": meta.get("namespace")}
    response: Mapping[str, Any] | None = None
    try:
        for payload, subresource, patch_type in requests:
            if patch_type is PatchType.JSON and response is not None:
                # Our own earlier request of this cycle changed the version; nobody else's did.
                version = (response.get("metadata") or {}).get("resourceVersion")
                payload = with_resource_version(payload, version)
            response = await client.patch(
                resource, payload, subresource=subresource, patch_type=patch_type, **where
            )
    except NotFoundError:
        return None
    return response


Request = tuple[Any, str | None, PatchType]


def _requests(resource: Resource, body: Mapping[str, Any], patch: Patch) -> list[Request]:
    """The requests for a patch, in the order to send them."""
    ops = json_patch_from_fns(body, patch.fns) if patch.fns else []
    merge = dict(patch)
    if "status" not in resource.subresources:
        return _some([(merge, None, PatchType.MERGE), (ops, None, PatchType.JSON)])
    main, status = split_status(patch)
    main_ops, status_ops = split_json_patch(ops) if ops else ([], [])
    return _some(
        [
            (dict(status), "status", PatchType.MERGE),
            (status_ops, "status", PatchType.JSON),
            (dict(main), None, PatchType.MERGE),
            (main_ops, None, PatchType.JSON),
        ]
    )


def _some(requests: list[Request]) -> list[Request]:
    """Only the requests that change something (a lone ``test`` operation changes nothing)."""
    return [r for r in requests if _changes(r[0])]


def _changes(payload: Any) -> bool:
    if isinstance(payload, list):
        return any(op.get("op") != "test" for op in payload)
    return bool(payload)
