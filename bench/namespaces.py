"""Scratch namespaces: each scenario's objects live in its own namespace, gone when it ends.

A scenario's operator is stopped before its namespace goes, so the finalizers it left on the
objects would keep them (and the namespace, Terminating) forever, and every cluster-wide operator
that runs later on the same control plane would find them and handle them: the test suite runs
the benchmarks' smoke runs on the control plane its other tests share.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

__all__ = ["discard", "scratch_namespace"]

KEX = "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"


@contextmanager
def scratch_namespace(
    plane: LocalControlPlane, namespace: str, *, keep: bool = False
) -> Iterator[str]:
    """Create ``namespace``; on exit, discard it with its KopfExamples (finalizers or not), unless
    ``keep`` (the control plane is stopped next: deleting 300,000 objects takes minutes)."""
    kubectl(plane, "create", "namespace", namespace)
    try:
        yield namespace
    finally:
        if not keep:
            discard(plane, namespace)


def discard(plane: LocalControlPlane, namespace: str) -> None:
    """Delete a namespace's KopfExamples (their finalizers removed first), then the namespace.

    The objects are deleted here rather than left to the namespace controller: a control plane
    without controllers (``--anyop-bare``, the benchmarks') has none.
    """
    anyio.run(_discard, plane, namespace)


async def _discard(plane: LocalControlPlane, namespace: str, parallel: int = 16) -> None:
    url = KEX.format(namespace=namespace)
    verify = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=verify, timeout=120) as client:
        held = iter([o["metadata"]["name"] async for o in _listed(client, url)
                     if o["metadata"].get("finalizers")])  # fmt: skip
        merge = {"Content-Type": "application/merge-patch+json"}

        async def release() -> None:
            for name in held:
                patch = {"metadata": {"finalizers": None}}
                response = await client.patch(f"{url}/{name}", json=patch, headers=merge)
                if response.status_code != 404:
                    response.raise_for_status()

        async with anyio.create_task_group() as tg:
            for _ in range(parallel):
                tg.start_soon(release)
        for _ in range(MAX_DELETIONS):
            # Deleting a collection of 100,000 objects outlasts the server's request timeout
            # (504, or a dropped connection), and it stops where it was: asked again, it goes
            # on from there.
            try:
                response = await client.delete(url)
            except httpx.TransportError:
                continue
            if response.status_code != 504:
                response.raise_for_status()
                break
        else:
            raise RuntimeError(f"{url}: not deleted after {MAX_DELETIONS} tries")
        gone = await client.delete(f"/api/v1/namespaces/{namespace}")
        if gone.status_code != 404:
            gone.raise_for_status()


MAX_DELETIONS = 20
PAGE = 1000


async def _listed(client: httpx.AsyncClient, url: str) -> AsyncIterator[dict[str, Any]]:
    """The objects of a collection, a page at a time (one list of 100,000 objects outlasts the
    server's request timeout)."""
    token = ""
    while True:
        params = {"limit": str(PAGE), **({"continue": token} if token else {})}
        response = await client.get(url, params=params)
        response.raise_for_status()
        page = response.json()
        for item in page["items"]:
            yield item
        token = page["metadata"].get("continue") or ""
        if not token:
            return
