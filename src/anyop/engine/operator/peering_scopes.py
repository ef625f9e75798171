"""Peering where the operator serves: cluster-wide, in each named namespace, or each matching one.

Kopf peers in every namespace that a namespaced operator serves. With namespace patterns
(``-n 'app-*'``), the served namespaces come and go: the operator peers in each matching
namespace while it exists, as it serves them (see
:func:`~anyop.engine.serving.namespace_follower.serve_namespaces`). A higher-priority peer in
any of them pauses the whole operator, as in Kopf.
"""

from __future__ import annotations

import functools

import anyio
import anyio.abc

from anyop.engine.coordination.pause_gate import Gate
from anyop.engine.coordination.peering_keeper import hold_peering
from anyop.engine.serving.namespace_follower import NamespacePatterns, serve_namespaces
from anyop.kube.client import KubeClient
from anyop.settings import PeeringSettings

__all__ = ["hold_peering_where_served"]


async def hold_peering_where_served(
    client: KubeClient,
    settings: PeeringSettings,
    patterns: NamespacePatterns,
    *,
    clusterwide: bool,
    gate: Gate,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Peer as :func:`hold_peering` does, in the namespaces that the patterns match.

    Reports ``started`` once the peering in every namespace that exists now has started (and
    so has paused the gate where a higher-priority peer holds it). Runs until cancelled.
    """
    exact = patterns.exact_names
    if clusterwide or exact is not None or settings.standalone:
        namespaces = None if clusterwide else exact
        await hold_peering(client, settings, namespaces, gate=gate, task_status=task_status)
        return
    peer = functools.partial(hold_peering, client, settings, gate=gate)

    async def peer_in(namespace: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        await peer([namespace], task_status=task_status)

    never = anyio.Event()  # it peers until cancelled, with the rest of the operator
    await serve_namespaces(client, patterns, peer_in, stopping=never, task_status=task_status)
