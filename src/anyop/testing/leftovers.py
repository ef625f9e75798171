"""What a stopped operator leaves in a test's namespace: custom objects that still hold finalizers.

An operator stopped before it could release its objects (a killed replica, a test that ends
while a delete handler waits) leaves them holding its finalizer; their namespace would then stay
``Terminating`` for ever, and kube-controller-manager's namespace controller would retry it
again and again, listing and deleting every kind in it each time, for the rest of the session.
So, before a test's namespace is deleted, the objects of every namespaced custom resource in it
lose their finalizers (built-in kinds are left alone: operators rarely finalize them, and the
garbage collector's own finalizers must stay).

The decisions are a generator of requests (:func:`release_requests`), driven by a sync client
(:func:`release_finalizers`) or an async one (:func:`release_finalizers_async`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["release_finalizers", "release_finalizers_async", "release_requests"]

Request = tuple[str, str, Any]
"""A request to make: its method, its path, and its JSON body (or ``None``)."""

Answer = tuple[int, Any]
"""A request's answer: its status code and its JSON body (``None`` if it had none)."""

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
RELEASE = {"metadata": {"finalizers": None}}


def namespaced_paths(crds: Any, namespace: str) -> list[str]:
    """The collection paths of every namespaced custom resource in ``namespace``, each at its
    storage version (or its first served one)."""
    paths = []
    for crd in (crds or {}).get("items") or ():
        spec = crd.get("spec") or {}
        if spec.get("scope") != "Namespaced":
            continue
        versions = [v for v in spec.get("versions") or () if v.get("served")]
        stored = [v for v in versions if v.get("storage")] or versions
        if stored:
            version, group = stored[0]["name"], spec["group"]
            paths.append(
                f"/apis/{group}/{version}/namespaces/{namespace}/{spec['names']['plural']}"
            )
    return paths


def finalized(listing: Any) -> list[str]:
    """The names of the listed objects that hold finalizers."""
    items = (listing or {}).get("items") or ()
    return [item["metadata"]["name"] for item in items if item["metadata"].get("finalizers")]


def release_requests(namespace: str) -> Generator[Request, Answer, None]:
    """The requests that release the finalizers of ``namespace``'s custom objects; each one's
    answer is sent back in. A kind that cannot be listed, or an object gone, is skipped."""
    status, crds = yield ("GET", CRDS, None)
    if status != 200:
        return
    for path in namespaced_paths(crds, namespace):
        status, listing = yield ("GET", path, None)
        if status != 200:
            continue
        for name in finalized(listing):
            yield ("PATCH", f"{path}/{name}", RELEASE)


def _answer(response: httpx.Response) -> Answer:
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, None


def _send(method: str, body: Any) -> dict[str, Any]:
    return {"json": body, "headers": MERGE_PATCH} if method == "PATCH" else {}


def release_finalizers(api: httpx.Client, namespace: str) -> None:
    """:func:`release_requests` with a sync client of the API server."""
    steps = release_requests(namespace)
    try:
        method, path, body = next(steps)
        while True:
            response = api.request(method, path, **_send(method, body))
            method, path, body = steps.send(_answer(response))
    except StopIteration:
        return


async def release_finalizers_async(api: httpx.AsyncClient, namespace: str) -> None:
    """:func:`release_requests` with an async client of the API server."""
    steps = release_requests(namespace)
    try:
        method, path, body = next(steps)
        while True:
            response = await api.request(method, path, **_send(method, body))
            method, path, body = steps.send(_answer(response))
    except StopIteration:
        return
