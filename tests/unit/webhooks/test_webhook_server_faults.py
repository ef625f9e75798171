"""The webhook server under faults: RELIABILITY.md §5 rows 43-46 (the stop) and 50.

Half-sent requests left open over TLS when the server is stopped, as an operator's exit meets
them: the stop must log no error and no traceback. A certificate rotated on disk under load (the
kubelet's atomic ``..data`` symlink swap): no review may fail. Both backends.
"""

from __future__ import annotations

import gc
import logging
import os
import ssl
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.streams.tls
import httpx
import pytest
from tests.unit.webhooks.test_webhook_server import review, serving

import anyop.on as on
from anyop.errors import AdmissionError
from anyop.handlers.registry import OperatorRegistry
from anyop.webhooks.certs import CertificateAuthority
from anyop.webhooks.server import WebhookServer

pytestmark = pytest.mark.anyio


def denying_registry() -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.validate("kopfexamples", registry=registry, id="check")
    def check(spec: Any, **_: Any) -> None:
        if spec.get("a") != 1:
            raise AdmissionError("bad spec")

    return registry


async def test_a_stop_with_half_sent_tls_requests_open_logs_no_error(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    cadump = tmp_path / "ca.pem"
    server = WebhookServer(addr="127.0.0.1", port=0, cadump=cadump)
    streams = []
    async with serving(server, denying_registry()) as config:
        host, port = config["url"].split("//")[1].split("/")[0].rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=str(cadump))
        for _ in range(3):
            stream = await anyio.connect_tcp(
                host, int(port), tls=True, ssl_context=ctx, tls_standard_compatible=False
            )
            head = b"POST /check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            await stream.send(head + b"Content-Length: 1000\r\n\r\n{")
            streams.append(stream)
        await anyio.wait_all_tasks_blocked()
    for stream in streams:
        await stream.aclose()
    gc.collect()  # the loop's "never retrieved" reports come when their futures are collected
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert failures == []


async def test_a_denial_is_one_line_without_a_traceback_and_the_answer_carries_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's first failure, seen through the server (fixed in the reviewer)."""
    caplog.set_level(logging.INFO, logger="anyop")
    cadump = tmp_path / "ca.pem"
    server = WebhookServer(addr="127.0.0.1", port=0, cadump=cadump)
    async with serving(server, denying_registry()) as config:
        ctx = ssl.create_default_context(cafile=str(cadump))
        async with httpx.AsyncClient(verify=ctx, timeout=10) as client:
            body = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {"a": 2}}
            denied = await client.post(config["url"] + "/check", json=review("d-1", object=body))
    assert denied.status_code == 200
    answer = denied.json()["response"]
    assert (answer["uid"], answer["allowed"], answer["status"]["message"]) == (
        "d-1",
        False,
        "bad spec",
    )
    denials = [r for r in caplog.records if "denied: bad spec" in r.getMessage()]
    assert [r.levelname for r in denials] == ["INFO"]
    assert not [r for r in caplog.records if r.exc_info]


def issue_into(ca: CertificateAuthority, folder: Path, *sans: str) -> None:
    """A serving certificate for 127.0.0.1 (and ``sans``) as tls.crt/tls.key in ``folder``."""
    folder.mkdir()
    ca.issue("op", sans=["127.0.0.1", *sans], server=True).write(
        folder / "tls.crt", folder / "tls.key"
    )


def swap_data(mount: Path, target: str) -> None:
    """Point ``..data`` at ``target`` atomically, as the kubelet updates a Secret volume."""
    (mount / "..data_tmp").symlink_to(target)
    os.replace(mount / "..data_tmp", mount / "..data")


async def served_names(host: str, port: int, ctx: ssl.SSLContext) -> list[str]:
    """The DNS names in the certificate that a new connection gets."""
    stream = await anyio.connect_tcp(
        host, port, tls=True, ssl_context=ctx, tls_standard_compatible=False
    )
    async with stream:
        peer = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate) or {}
    names = cast("tuple[tuple[str, str], ...]", peer.get("subjectAltName", ()))
    return [value for kind, value in names if kind == "DNS"]


async def test_row50_a_certificate_swapped_under_load_fails_no_review(tmp_path: Path) -> None:
    """The Secret volume's ``..data`` symlink is swapped while reviews keep coming."""
    ca = CertificateAuthority()
    mount = tmp_path / "mount"
    mount.mkdir()
    issue_into(ca, mount / "..2026_old", "old.example")
    issue_into(ca, mount / "..2026_new", "new.example")
    swap_data(mount, "..2026_old")
    for name in ("tls.crt", "tls.key"):
        (mount / name).symlink_to(Path("..data") / name)
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    server = WebhookServer(
        addr="127.0.0.1",
        port=0,
        certfile=mount / "tls.crt",
        pkeyfile=mount / "tls.key",
        cafile=tmp_path / "ca.pem",
        file_check_interval=0.05,
    )
    statuses: list[int] = []
    stop = anyio.Event()
    async with serving(server, denying_registry()) as config:
        host, port = config["url"].split("//")[1].split("/")[0].rsplit(":", 1)
        assert await served_names(host, int(port), ctx) == ["old.example"]

        async def load() -> None:
            while not stop.is_set():  # a new connection per review: new handshakes meet the swap
                async with httpx.AsyncClient(verify=ctx, timeout=10) as client:
                    response = await client.post(config["url"] + "/check", json=review())
                    statuses.append(response.status_code)

        async with anyio.create_task_group() as tg:
            tg.start_soon(load)
            tg.start_soon(load)
            with anyio.fail_after(10):
                while len(statuses) < 5:
                    await anyio.sleep(0.01)
            swap_data(mount, "..2026_new")
            with anyio.fail_after(10):
                while await served_names(host, int(port), ctx) != ["new.example"]:
                    await anyio.sleep(0.01)
            swapped_at = len(statuses)
            with anyio.fail_after(10):
                while len(statuses) < swapped_at + 5:
                    await anyio.sleep(0.01)
            stop.set()
    assert statuses == [200] * len(statuses)  # not one review failed across the swap
