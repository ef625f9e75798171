"""The convergence bench's operator under Kopf, written as Kopf's documentation recommends for
level-based reconciliation ("Reconciliation"): an index of the children, a timer that writes the
actual state into the status, and an event handler that compares it with the desired state.

Kopf has no API client of its own: ConfigMaps are written with aiohttp (Kopf's own dependency)
and the credentials Kopf logged in with.
"""

import random
import ssl
from typing import Any

import aiohttp
import kopf

LABEL = "bench-parent"
INTERVAL = 10  # the documentation's example interval


@kopf.on.startup()
async def open_session(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
    info = kopf.login_with_kubeconfig(settings=settings)
    context = ssl.create_default_context(cafile=info.ca_path)  # the local control plane's files
    context.load_cert_chain(info.certificate_path, info.private_key_path)
    memo.server = info.server
    memo.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))


@kopf.on.cleanup()
async def close_session(memo: kopf.Memo, **_: Any) -> None:
    await memo.session.close()


@kopf.index("configmaps", labels={LABEL: kopf.PRESENT})
def kex_configmaps(body: kopf.Body, name: str, **_: Any) -> Any:
    return {body.metadata.labels[LABEL]: name}


@kopf.timer("kopfexamples", interval=INTERVAL)
def calculate_actual_state(
    name: str, kex_configmaps: kopf.Index, patch: kopf.Patch, **_: Any
) -> None:
    patch.status["replicas"] = len(kex_configmaps.get(name, []))


@kopf.on.event("kopfexamples")
async def react_on_state_changes(
    body: kopf.Body,
    name: str,
    namespace: str,
    kex_configmaps: kopf.Index,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    if body.metadata.get("deletionTimestamp") or "replicas" not in body.spec:
        return
    delta = body.spec["replicas"] - body.status.get("replicas", 0)
    url = f"{memo.server}/api/v1/namespaces/{namespace}/configmaps"
    for _ in range(max(delta, 0)):
        child = {"metadata": {"generateName": f"{name}-", "labels": {LABEL: name}}}
        async with memo.session.post(url, json=child) as response:
            response.raise_for_status()
    running = list(kex_configmaps.get(name, []))
    for victim in random.sample(running, k=min(max(-delta, 0), len(running))):
        async with memo.session.delete(f"{url}/{victim}") as response:
            if response.status != 404:
                response.raise_for_status()
