"""The Python client libraries that operator authors use in tests get the same answers from
FakeCluster served on a socket (plain HTTP and TLS) as from the real API server.

Each client's scripted session (``tests/e2e/python_clients.py``) runs in a worker thread (the
libraries are sync, or run their own event loop there) against the local control plane's
kubeconfig and against the fake's; the records, normalised as the conformance suite does it
(uids, timestamps, resourceVersions by rank, the namespace's name), must be equal.
"""

from __future__ import annotations

import difflib
import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from tests.conformance.harness import normalise
from tests.e2e.python_clients import SESSIONS, Names

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The client libraries run in a worker thread and compare API servers, not anyop's
    backends (the fake's socket server runs on both in its unit tests): one is enough."""
    return "trio"


async def _session_on_fake(client: str, names: Names, folder: Path, *, tls: bool) -> list[Any]:
    fake = FakeCluster()
    async with anyio.create_task_group() as tg:
        await tg.start(lambda task_status: fake.serve(tls=tls, task_status=task_status))
        kubeconfig = fake.write_kubeconfig(folder / f"fake-{tls}.kubeconfig")
        records = await anyio.to_thread.run_sync(SESSIONS[client], kubeconfig, names)
        tg.cancel_scope.cancel()
    return normalise(records, names.namespace)


def _diff(real: list[Any], fake: list[Any]) -> str:
    texts = [json.dumps(records, indent=1, sort_keys=True).splitlines() for records in (real, fake)]
    return "\n" + "\n".join(difflib.unified_diff(*texts, "real", "fake", lineterm="", n=4))


@pytest.mark.parametrize("client", sorted(SESSIONS))
async def test_a_client_library_gets_the_same_answers_from_the_fake_as_from_the_real_server(
    client: str, anyop_controlplane: LocalControlPlane, tmp_path: Path
) -> None:
    names = Names(f"pyc-{uuid.uuid4().hex[:10]}")
    session = SESSIONS[client]
    real = normalise(
        await anyio.to_thread.run_sync(session, anyop_controlplane.kubeconfig, names),
        names.namespace,
    )
    plain = await _session_on_fake(client, names, tmp_path, tls=False)
    assert plain == real, _diff(real, plain)
    secure = await _session_on_fake(client, names, tmp_path, tls=True)
    assert secure == real, _diff(real, secure)
