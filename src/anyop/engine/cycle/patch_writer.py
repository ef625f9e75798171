"""Applying one cycle's patch: the fewest requests, in a safe order, the freshest body back.

A cycle collects everything it wants to write (handler results, progress, diff-base, finalizers,
the user's ``patch``) into one :class:`~anyop.kube.patches.Patch`; this module turns it into
requests: the ``status`` part to ``/status`` when the resource has that subresource, the rest as a
merge-patch, and ``patch.fns`` as a JSON patch guarded by the body's ``resourceVersion``.

The order of the requests is what keeps each handler to one run per cause (docs/architecture.md,
"Once per cause"): the merge-patches come first, the endpoint that holds the engine's state
(``first``) before the other, and the JSON patches (the finalizer's release among them) last. A
JSON patch whose ``resourceVersion`` test fails because somebody else wrote meanwhile is no error:
its functions are applied to the fresh object and sent again until they land.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableSequence
from typing import Any, Literal

from anyop.errors import InvalidError, NotFoundError
from anyop.kube.client import KubeClient, PatchType
from anyop.kube.patches import (
    RESOURCE_VERSION_PATH,
    JsonPatchOp,
    Patch,
    format_inconsistencies,
    inconsistencies,
    json_patch_from_fns,
    split_json_patch,
    split_status,
)
from anyop.kube.resources import Resource
from anyop.logs import object_logger

__all__ = [
    "CONFLICT_ATTEMPTS",
    "Endpoint",
    "apply_patch",
    "json_parts",
    "merge_requests",
]

logger = logging.getLogger("anyop.engine")

CONFLICT_ATTEMPTS = 100
"""How many times a JSON patch is re-applied to a fresh object before the conflict is an error."""

Endpoint = Literal["main", "status"]


async def apply_patch(
    client: KubeClient,
    resource: Resource,
    body: Mapping[str, Any],
    *,
    patch: Patch,
    first: Endpoint = "status",
    landed: MutableSequence[Mapping[str, Any]] | None = None,
) -> Mapping[str, Any] | None:
    """Send the patch of one cycle and return the object as the server last returned it.

    Args:
        client: The API client.
        resource: The object's resource.
        body: The body the cycle handled (its name, namespace and resourceVersion are used).
        patch: What to write; empty patches send nothing.
        first: Which merge-patch goes first when there are two: the one with the engine's state.
        landed: Gets each response as it comes, so that the caller knows what was written even
            when a later request fails.

    Returns:
        The body from the last response, or ``None`` if nothing was sent or the object is gone.
        Where the response to a merge-patch lacks what it set (a field pruned by the schema),
        Kopf's warning "Patching failed with inconsistencies: ..." is logged.

    Raises:
        ApiError: A request was refused (the ones before it have landed: see ``landed``).
    """
    meta = body.get("metadata") or {}
    where: dict[str, Any] = {"name": meta.get("name", ""), "namespace": meta.get("namespace")}
    response: Mapping[str, Any] | None = None
    try:
        for payload, subresource in merge_requests(resource, patch, first=first):
            response = await client.patch(
                resource, payload, subresource=subresource, patch_type=PatchType.MERGE, **where
            )
            if landed is not None:
                landed.append(response)
            if items := inconsistencies(payload, response):  # e.g. pruned by the schema
                object_logger(body).warning(format_inconsistencies(items))
        # The functions see our own merge-patches' result, and the test is of its version.
        base = response or body
        parts = json_parts(resource, base, patch) if patch.fns else []
        for index, (ops, subresource) in enumerate(parts):
            if response is not None and response is not base:
                # After the ``/status`` part, the main part is made again from what it left,
                # so that a conflict met and resolved there leaves no stale operation here.
                ops = json_parts(resource, response, patch)[index][0]
            if not _changes(ops):
                continue
            sent = await _send_json(
                client, resource, patch, ops=ops, subresource=subresource, where=where
            )
            if sent is not None:
                response = sent
                if landed is not None:
                    landed.append(response)
    except NotFoundError:
        return None
    return response


async def _send_json(
    client: KubeClient,
    resource: Resource,
    patch: Patch,
    *,
    ops: list[JsonPatchOp],
    subresource: str | None,
    where: dict[str, Any],
) -> Mapping[str, Any] | None:
    """Send a guarded JSON patch; on a conflict, re-apply the functions to the fresh object.

    Returns ``None`` if the fresh object already is as the functions would make it.
    """
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            return await client.patch(
                resource, ops, subresource=subresource, patch_type=PatchType.JSON, **where
            )
        except InvalidError:
            fresh = await client.get(resource, **where)
            tested = next((op.get("value") for op in ops if _is_version_test(op)), None)
            if tested is None or _version(fresh) == str(tested) or attempt == CONFLICT_ATTEMPTS:
                raise  # the object is as we tested it: a real refusal of the operations
            logger.debug(
                f"The object changed meanwhile (resourceVersion {tested} -> {_version(fresh)}); "
                f"its JSON patch is applied to the fresh object (attempt {attempt + 1})."
            )
            main, status = split_json_patch(json_patch_from_fns(fresh, patch.fns))
            ops = status if subresource == "status" else main
            if not _changes(ops):
                return None
    raise AssertionError("unreachable")  # pragma: no cover


def merge_requests(
    resource: Resource, patch: Patch, *, first: Endpoint = "status"
) -> list[tuple[dict[str, Any], str | None]]:
    """The merge-patches of a patch and their subresources, in the order to send them. Pure.

    ``first``'s goes before the other's: the one with the engine's state, so that every state
    that our requests leave behind holds it.
    """
    if "status" not in resource.subresources:
        return [(dict(patch), None)] if len(patch) else []  # a Patch with only fns is true
    main, status = split_status(patch)
    requests = [(dict(status), "status"), (dict(main), None)]
    if first == "main":
        requests.reverse()
    return [(payload, subresource) for payload, subresource in requests if payload]


def json_parts(
    resource: Resource, base: Mapping[str, Any], patch: Patch
) -> list[tuple[list[JsonPatchOp], str | None]]:
    """The JSON patches of a patch's functions applied to ``base``, and their subresources, in
    the order to send them (some may change nothing). Pure.

    Each is guarded by a ``test`` of ``base``'s ``resourceVersion``. The ``/status`` one goes
    before the main one: the main one may release the finalizer, after which the object may be
    gone.
    """
    ops = json_patch_from_fns(base, patch.fns)
    if "status" not in resource.subresources:
        return [(ops, None)]
    main, status = split_json_patch(ops)
    return [(status, "status"), (main, None)]


def _version(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion", ""))


def _is_version_test(op: JsonPatchOp) -> bool:
    return op.get("op") == "test" and op.get("path") == RESOURCE_VERSION_PATH


def _changes(payload: list[JsonPatchOp]) -> bool:
    """Whether a JSON patch changes anything (a lone ``test`` operation changes nothing)."""
    return any(op.get("op") != "test" for op in payload)
