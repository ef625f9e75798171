"""A whole operator against an API server that goes away or stops trusting it: RELIABILITY.md §5
rows 1 (an API server restart) and 20 (the operator's token revoked mid-run).

The operator runs in the test's event loop (both backends); every object must be handled once,
none lost, none twice (L1, L2).
"""

from __future__ import annotations

import collections
import functools
import logging
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log
from tests.e2e.test_namespaces_forbidden_e2e import ROLE

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.connection import ConnectionInfo
from anyop.settings import OperatorSettings
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]

QUICK_WATCH = {"watching": {"server_timeout": 2, "connect_timeout": 1}}


def handled(body: dict[str, Any]) -> bool:
    return "create_fn" in body.get("status", {})


def counting_registry(calls: collections.Counter[str]) -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> str:
        calls[name] += 1
        return "handled"

    return registry


@pytest.mark.slow
async def test_row1_an_api_server_restart_loses_no_object_and_handles_none_twice(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    plane, ns = anyop_controlplane, anyop_namespace
    calls: collections.Counter[str] = collections.Counter()
    settings = OperatorSettings.model_validate(QUICK_WATCH)
    before = [f"before-{index}" for index in range(10)]
    after = [f"after-{index}" for index in range(10)]
    async with running(counting_registry(calls), ns, settings):
        for name in before:  # some are still being handled when the server goes away
            await create(api, ns, name)
        await anyio.to_thread.run_sync(plane.stop_apiserver)
        await anyio.sleep(2)  # the outage: a real wait, as the server is really gone
        plane.start_apiserver()  # in the main thread, so that the process is tied to it
        for name in after:
            await create(api, ns, name)
        for name in before + after:
            await wait_for(api, url(ns, name), handled)
    assert calls == dict.fromkeys(before + after, 1)  # each handled, and once
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.exc_info]


SERVICE_ACCOUNT = """
apiVersion: v1
kind: ServiceAccount
metadata: {{name: kex-operator, namespace: {ns}}}
"""


def rotating_identity(plane: LocalControlPlane, namespace: str) -> str:
    """A token of a service account with the example operator's rights in one namespace.

    The account is made again if it was deleted: a new account of the same name.
    """
    kubectl(plane, "apply", "-f", "-", stdin=SERVICE_ACCOUNT.format(ns=namespace))
    kubectl(plane, "apply", "-f", "-", stdin=ROLE.format(ns=namespace))
    return kubectl(plane, "create", "token", "-n", namespace, "kex-operator").strip()


async def test_row20_a_token_revoked_mid_run_leads_to_one_new_login_and_nothing_lost(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The operator's service account is deleted: its token gets 401 from then on."""
    caplog.set_level(logging.INFO, logger="anyop")
    plane, ns = anyop_controlplane, anyop_namespace
    calls: collections.Counter[str] = collections.Counter()
    registry = counting_registry(calls)
    logins: list[str] = []

    @on.login(registry=registry, id="token_login")
    def token_login(**_: Any) -> ConnectionInfo:
        logins.append(rotating_identity(plane, ns))
        return ConnectionInfo(server=plane.server, ca_path=str(plane.ca_path), token=logins[-1])

    settings = OperatorSettings.model_validate(QUICK_WATCH)
    async with running(registry, ns, settings):
        await create(api, ns, "before")
        await wait_for(api, url(ns, "before"), handled)
        revoke = functools.partial(kubectl, plane, "delete", "serviceaccount", "-n", ns)
        await anyio.to_thread.run_sync(revoke, "kex-operator")
        await wait_for_log(caplog, "Re-authentication has been initiated.")  # the watch's 401
        await create(api, ns, "after")
        await wait_for(api, url(ns, "after"), handled)
    assert calls == {"before": 1, "after": 1}
    assert len(logins) == 2  # one new login for the one revoked token: no re-login loop
