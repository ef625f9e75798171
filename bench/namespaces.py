"""Scratch namespaces: each scenario's objects live in its own namespace, gone when it ends.

A scenario's operator is stopped before its namespace goes, so the finalizers it left on the
objects would keep them (and the namespace, Terminating) forever, and every cluster-wide operator
that runs later on the same control plane would find them and handle them: the test suite runs
the benchmarks' smoke runs on the control plane its other tests share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

__all__ = ["discard", "scratch_namespace"]

KEX = "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples"


@contextmanager
def scratch_namespace(plane: LocalControlPlane, namespace: str) -> Iterator[str]:
    """Create ``namespace``; on exit, discard it with its KopfExamples (finalizers or not)."""
    kubectl(plane, "create", "namespace", namespace)
    try:
        yield namespace
    finally:
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
    async with httpx.AsyncClient(base_url=plane.server, verify=verify, timeout=60) as client:
        response = await client.get(url)
        response.raise_for_status()
        listed = response.json()["items"]
        held = iter([o["metadata"]["name"] for o in listed if o["metadata"].get("finalizers")])
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
        response = await client.delete(url)
        response.raise_for_status()
        gone = await client.delete(f"/api/v1/namespaces/{namespace}")
        if gone.status_code != 404:
            gone.raise_for_status()
