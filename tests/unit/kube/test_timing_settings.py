"""The settings of the client's and the watch's timing do what they say.

``watching.reconnect_backoff`` is the pause before a re-watch after a stream's normal end (on
fake time). ``networking.connect_timeout`` and ``watching.connect_timeout`` bound the connection
to an API server that accepts TCP but never answers the TLS handshake (a real socket): without
them, the request or the watch would wait for its whole timeout (an hour here).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from tests.unit.kube.test_watch import Cluster, Recorder, client_for, kex, line, stream

from anyop.errors import TransportError
from anyop.kube.auth import Vault
from anyop.kube.client import open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent
from anyop.settings import OperatorSettings

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
HOUR = 3600.0
DEADLINE = 20.0  # real seconds; reached only if a connect timeout is not applied


class TimedCluster(Cluster):
    """A scripted cluster that notes when each watch request came."""

    def __init__(self) -> None:
        super().__init__()
        self.watch_times: list[float] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.params.get("watch") == "true":
            self.watch_times.append(anyio.current_time())
        return await super().__call__(request)


@pytest.mark.anyio
@pytest.mark.fake_time
@pytest.mark.parametrize("pause", [0.0, 5.0, 300.0])
async def test_a_watch_that_ended_normally_is_reopened_after_the_reconnect_backoff(
    pause: float,
) -> None:
    cluster = TimedCluster()
    cluster.watches = [stream(line("ADDED", kex("a", 12)))]  # one event, then a normal end
    watching = {"reconnect_backoff": pause, "streaming_lists": False, "inactivity_timeout": HOUR}
    settings = OperatorSettings.model_validate({"watching": watching})
    async with await client_for(cluster) as client, anyio.create_task_group() as tg:
        await client.list(KEX)  # the client loads its credentials in a thread: not on the clock
        watcher = Watcher(client, KEX, settings=settings)  # the settings' timing
        with anyio.fail_after(HOUR):  # virtual seconds
            await tg.start(watcher.run, Recorder(cluster))
            await cluster.wait_for(lambda: len(cluster.watch_requests) == 2)
        tg.cancel_scope.cancel()
    first, second = cluster.watch_times
    assert pause <= second - first < pause + 1.0


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never says a word."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield int(sock.getsockname()[1])


async def vault_for(port: int) -> Vault:
    vault = Vault()
    await vault.populate({"silent": ConnectionInfo(f"https://127.0.0.1:{port}", token="t")})
    return vault


def settings_of(**sections: dict[str, Any]) -> OperatorSettings:
    networking = {"request_timeout": HOUR, "error_backoffs": [], **sections.pop("networking", {})}
    return OperatorSettings.model_validate({"networking": networking, **sections})


@pytest.mark.anyio
async def test_a_request_to_a_server_that_never_completes_the_connection_gives_up_in_time(
    silent_server: int,
) -> None:
    settings = settings_of(networking={"connect_timeout": 0.3})
    async with open_client(await vault_for(silent_server), settings=settings) as client:
        with anyio.fail_after(DEADLINE), pytest.raises(TransportError):
            await client.get(KEX, name="kex", namespace="ns")


async def first_failure(settings: OperatorSettings, port: int) -> str:
    """Run a watcher against the port until its first failure; what it says of it."""

    async def ignore(event: WatchEvent) -> None:
        raise AssertionError(f"nothing can be watched here: {event}")

    async with (
        open_client(await vault_for(port), settings=settings) as client,
        anyio.create_task_group() as tg,
    ):
        watcher = Watcher(client, KEX, namespace="ns", settings=settings)
        tg.start_soon(watcher.run, ignore)
        with anyio.fail_after(DEADLINE):
            while watcher.state.failures == 0:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    return watcher.state.last_error or ""


@pytest.mark.anyio
async def test_a_watch_to_a_server_that_never_completes_the_connection_gives_up_in_time(
    silent_server: int,
) -> None:
    settings = settings_of(
        watching={"connect_timeout": 0.3, "streaming_lists": True, "inactivity_timeout": HOUR}
    )  # a streaming list: the watch-stream is the first request
    assert "ConnectTimeout" in await first_failure(settings, silent_server)
