"""An API server that drains as it stops: RELIABILITY.md §5 row 3, on the real API server.

A control plane of its own runs kube-apiserver with ``--shutdown-send-retry-after=true``. Sent
SIGTERM, it serves on for its shutdown delay; then, until its non-long-running requests in flight
have drained, it answers every new request with 429, ``Retry-After: 5`` and ``Connection: close``,
and only then stops listening and exits. With nothing in flight that window closes at once, so
the test keeps it open: a create whose body it never finishes sending is a request in flight.

The handler of one object returns inside the window: the operator's write meets the 429, waits
the 5 seconds asked for (not its 1-second backoff), and is retried on a new connection, past the
restart of the API server; it never counts as a handler failure. Each handler runs once, no
handler retry is counted, nothing is logged as an ERROR. Both backends.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import signal
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.abc
import httpx
import pytest
from tests.e2e.test_watch_e2e import CONFIGMAPS, DEADLINE, NAMESPACES, admin, configmap

import anyop.on as on
from anyop.engine.operator.serve import serve
from anyop.errors import ApiError
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.kube.client import open_client
from anyop.metrics import Metrics, current_metrics
from anyop.testing.controlplane import LocalControlPlane

pytestmark = pytest.mark.anyio

DRAINING = ["--shutdown-send-retry-after=true", "--shutdown-delay-duration=2s"]
RETRY_AFTER = 5.0
"""What kube-apiserver's draining answers ask for, in seconds (hard-coded there)."""
PROBE = "/api/v1/namespaces/default"


@dataclasses.dataclass(frozen=True)
class Answer:
    """One attempt of an API request as the operator saw it: when, what, and its status."""

    method: str
    code: int | None
    started: float
    ended: float


class Recorder(Metrics):
    """The operator's metrics, which also keep every attempt's answer in order."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[Answer] = []

    def request(self, method: str, code: int | None, seconds: float) -> None:
        """Count the attempt as the metrics do, and keep it."""
        super().request(method, code, seconds)
        now = time.monotonic()
        self.answers.append(Answer(method, code, now - seconds, now))

    def total(self, name: str, **labels: str) -> float:
        """The sum of a counter's samples whose labels include ``labels``."""
        return sum(
            float(sample.value)
            for family in self.registry.collect()
            for sample in family.samples
            if sample.name == name and labels.items() <= sample.labels.items()
        )


@pytest.fixture(scope="module")
def draining_plane() -> Iterator[LocalControlPlane]:
    """A control plane of our own whose API server drains with 429s when it stops."""
    with LocalControlPlane(apiserver_flags=DRAINING) as plane:
        yield plane


async def hold_a_request(plane: LocalControlPlane, namespace: str) -> anyio.abc.ByteStream:
    """Start a create and send only half of its body: a request in flight until the stream
    closes, which keeps a draining API server answering 429s instead of stopping."""
    stream = await anyio.connect_tcp(
        "127.0.0.1", plane.port, ssl_context=plane.ssl_context(), tls_standard_compatible=False
    )
    body = json.dumps(configmap("held")).encode()
    head = (
        f"POST /api/v1/namespaces/{namespace}/configmaps HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{plane.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    await stream.send(head.encode() + body[: len(body) // 2])
    return stream


async def until_draining(plane: LocalControlPlane) -> httpx.Response:
    """Ask the stopping API server until it answers 429: its shutdown delay is over."""
    verify = plane.ssl_context()
    async with httpx.AsyncClient(base_url=plane.server, verify=verify, timeout=5) as http:
        while (response := await http.get(PROBE)).status_code == 200:
            await anyio.sleep(0.05)
    return response


async def until_exited(plane: LocalControlPlane) -> None:
    """Wait until the API server process has exited (it does so once it has drained)."""
    assert plane.apiserver is not None
    while plane.apiserver.exited() is None:
        await anyio.sleep(0.05)


def throttles(records: list[logging.LogRecord]) -> list[ApiError]:
    """The 429 errors that the API client logged as retried."""
    return [
        arg
        for record in records
        if record.name == "anyop.kube" and isinstance(record.args, tuple)
        for arg in record.args
        if isinstance(arg, ApiError) and arg.status == 429
    ]


def throttled_write(answers: list[Answer]) -> list[Answer]:
    """The attempts of the first PATCH answered 429, up to the first PATCH that succeeded after
    it; none until then."""
    patches = [answer for answer in answers if answer.method == "PATCH"]
    codes = [answer.code for answer in patches]
    if 429 not in codes:
        return []
    start = codes.index(429)
    for end in range(start + 1, len(patches)):
        if (codes[end] or 500) < 400:
            return patches[start : end + 1]
    return []


@pytest.mark.slow
async def test_row3_a_draining_api_server_costs_no_handler_a_retry(
    draining_plane: LocalControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="anyop")
    plane = draining_plane
    vault = Vault()
    await vault.populate({"admin": admin(plane)})
    calls: collections.Counter[tuple[str, int]] = collections.Counter()
    entered, release = anyio.Event(), anyio.Event()
    registry = OperatorRegistry()
    recorder = Recorder()

    mine = {"during", "after"}  # not the controllers' kube-root-ca.crt

    @on.create(
        "",
        "v1",
        "configmaps",
        registry=registry,
        id="create_fn",
        when=lambda name, **_: name in mine,
    )
    async def create_fn(name: str, retry: int, **_: Any) -> None:
        calls[name, retry] += 1
        if name == "during":
            entered.set()
            await release.wait()  # returns while the API server drains: its write meets a 429

    ns = f"drain-{anyio.current_time():.0f}".replace(".", "")
    stop, ready = anyio.Event(), anyio.Event()

    async def operator() -> None:
        current_metrics.set(recorder)  # in this task's own context: serve() counts into it
        await serve(registry, namespaces=[ns], vault=vault, stop_event=stop, ready_event=ready)

    async with open_client(vault) as client, anyio.create_task_group() as tg:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        tg.start_soon(operator)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        await client.create(CONFIGMAPS, configmap("during"), namespace=ns)
        with anyio.fail_after(DEADLINE):
            await entered.wait()
        held = await hold_a_request(plane, ns)
        assert plane.apiserver is not None
        plane.apiserver.send(signal.SIGTERM)  # the shutdown delay (2 s), then the draining
        with anyio.fail_after(DEADLINE):
            probe = await until_draining(plane)
        draining = time.monotonic()
        release.set()  # the handler returns; the operator's write meets the draining server
        with anyio.fail_after(DEADLINE):
            while not any(a.method == "PATCH" and a.code == 429 for a in recorder.answers):
                await anyio.sleep(0.01)
        await held.aclose()  # the last request in flight: the API server drains and exits
        with anyio.fail_after(DEADLINE):
            await until_exited(plane)
        exited = time.monotonic()
        await anyio.to_thread.run_sync(plane.stop_apiserver)  # reaps the exited process
        await plane.astart_apiserver()
        back = time.monotonic()
        with anyio.fail_after(DEADLINE):  # before "after" is created: its PATCH would mix in
            while not (attempts := throttled_write(recorder.answers)):
                await anyio.sleep(0.05)
        await client.create(CONFIGMAPS, configmap("after"), namespace=ns)
        with anyio.fail_after(DEADLINE):
            while ("after", 0) not in calls:
                await anyio.sleep(0.05)
        stop.set()

    assert probe.status_code == 429  # the real server's draining answer, as the operator met it
    assert probe.headers["Retry-After"] == "5"
    assert probe.headers["Connection"] == "close"
    throttled = [answer for answer in recorder.answers if answer.code == 429]
    first, retried, written = attempts[0], attempts[1], attempts[-1]
    waited = retried.started - first.ended
    assert {error.retry_after for error in throttles(caplog.records)} == {RETRY_AFTER}
    assert RETRY_AFTER <= waited < RETRY_AFTER * 1.1 + 1  # Retry-After, not the 1 s backoff
    assert calls == {("during", 0): 1, ("after", 0): 1}  # once each, no handler retry
    assert recorder.total("workqueue_retries_total") == 0
    assert recorder.total("anyop_handler_runs_total", outcome="success") == 2
    assert recorder.total("anyop_handler_runs_total") == 2
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    print(
        f"\nrow 3: {len(throttled)} answer(s) 429 with Retry-After {probe.headers['Retry-After']}"
        f" s ({', '.join(a.method for a in throttled)}); the draining lasted"
        f" {exited - draining:.2f} s, the restart {back - exited:.2f} s; the handler's PATCH"
        f" was retried {waited:.2f} s after its 429 and written"
        f" {written.ended - first.ended:.2f} s after it, in {len(attempts)} attempts"
    )
