"""Login handlers on the real API server: a rejected credential and an expired one mean re-login."""

from __future__ import annotations

import datetime
import logging
from typing import Any

import httpx
import pytest
from tests.e2e.test_engine_e2e import create, running, url, wait_for, wait_for_log

from anyop import ConnectionInfo, LoginError, on
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.testing.controlplane import LocalControlPlane

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")]


@pytest.fixture(autouse=True)
def info_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="anyop")


def admin(plane: LocalControlPlane, **extra: Any) -> ConnectionInfo:
    return ConnectionInfo(
        server=plane.server,
        ca_path=str(plane.ca_path),
        certificate_path=str(plane.client_cert_path),
        private_key_path=str(plane.client_key_path),
        **extra,
    )


async def test_a_401_runs_the_login_handlers_again_and_requests_go_on(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    logins: list[str] = []

    @on.login(registry=registry, id="login_fn")
    def login_fn(**_: Any) -> ConnectionInfo:
        logins.append("called")
        if len(logins) == 1:  # a token the API server does not know: 401 on the first request
            return ConnectionInfo(
                server=anyop_controlplane.server, ca_path=str(anyop_controlplane.ca_path),
                token="not-a-valid-token",
            )  # fmt: skip
        return admin(anyop_controlplane)

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        return "handled"

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "relogin")
        path = url(anyop_namespace, "relogin")
        body = await wait_for(api, path, lambda b: "create_fn" in b.get("status", {}))
    assert body["status"]["create_fn"] == "handled"
    assert logins == ["called", "called"]
    assert "Re-authentication has been initiated." in caplog.messages


async def test_an_expired_credential_is_replaced_by_a_new_login(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    logins: list[datetime.datetime] = []

    @on.login(registry=registry, id="short_lived")
    def short_lived(**_: Any) -> ConnectionInfo:
        now = datetime.datetime.now(datetime.UTC)
        logins.append(now)
        return admin(anyop_controlplane, expiration=now + datetime.timedelta(seconds=1))

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        return "handled"

    async with running(registry, anyop_namespace):
        await wait_for_log(caplog, "Re-authentication has been initiated.")
        await create(api, anyop_namespace, "expiring")
        await wait_for(api, url(anyop_namespace, "expiring"), lambda b: "status" in b)
    assert len(logins) >= 2
    assert logins[1] - logins[0] >= datetime.timedelta(seconds=0.9)


async def test_login_handlers_returning_garbage_are_retried_with_a_clear_error(
    api: httpx.AsyncClient,
    anyop_controlplane: LocalControlPlane,
    anyop_namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = OperatorRegistry()
    calls: list[int] = []

    @on.login(registry=registry, id="flaky", backoff=0.1)
    def flaky(**_: Any) -> Any:
        calls.append(1)
        return {"server": "not a ConnectionInfo"} if len(calls) == 1 else admin(anyop_controlplane)

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(**_: Any) -> str:
        return "handled"

    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, "garbage")
        await wait_for(api, url(anyop_namespace, "garbage"), lambda b: "status" in b)
    assert len(calls) == 2
    assert any(
        "The login handler 'flaky' returned a dict; it must return an anyop.ConnectionInfo "
        "or None." in message
        for message in caplog.messages
    ), caplog.messages


async def test_login_handlers_returning_nothing_stop_the_operator_with_a_login_error(
    anyop_namespace: str,
) -> None:
    registry = OperatorRegistry()

    @on.login(registry=registry, id="nothing")
    def nothing(**_: Any) -> None:
        return None

    with pytest.raises(LoginError, match="every login handler returned None"):
        await serve(registry=registry, namespaces=[anyop_namespace])


@pytest.mark.parametrize(
    "login", ["login_via_client", "login_via_async_client", "login_via_pykube"]
)
async def test_the_client_libraries_configurations_log_in_as_kopfs_piggybacking_does(
    api: httpx.AsyncClient, anyop_namespace: str, login: str
) -> None:
    import anyop

    library = {"login_via_client": "kubernetes", "login_via_async_client": "kubernetes_asyncio"}
    pytest.importorskip(library.get(login, "pykube"))  # in the dev environment, not the oldest
    registry = OperatorRegistry()
    used: list[ConnectionInfo] = []
    piggyback = getattr(anyop, login)

    @on.login(registry=registry, id="login_fn")
    async def login_fn(**kwargs: Any) -> ConnectionInfo | None:
        info = piggyback(**kwargs)
        info = await info if hasattr(info, "__await__") else info
        used.append(info)
        return info

    on.create("kopfexamples", registry=registry, id="create_fn")(lambda **_: "handled")
    async with running(registry, anyop_namespace):
        await create(api, anyop_namespace, f"piggy-{login.replace('_', '-')}")
        path = url(anyop_namespace, f"piggy-{login.replace('_', '-')}")
        await wait_for(api, path, lambda b: b.get("status", {}).get("create_fn") == "handled")
    assert used
    assert used[0] is not None
    assert used[0].certificate_path  # the control plane's admin logs in with a certificate


def test_without_the_client_libraries_the_logins_return_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    import anyio

    import anyop

    for module in ("pykube", "kubernetes", "kubernetes_asyncio"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails
        monkeypatch.setitem(sys.modules, f"{module}.config", None)
        monkeypatch.setitem(sys.modules, f"{module}.client", None)
    logger = logging.getLogger("test")
    assert anyop.login_via_pykube(logger=logger) is None
    assert anyop.login_via_client(logger=logger) is None
    assert anyio.run(lambda: anyop.login_via_async_client(logger=logger)) is None
