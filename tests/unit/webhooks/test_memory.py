"""Freed memory is given back after large request bodies (the decision; the effect is benched)."""

from __future__ import annotations

from typing import Any

import pytest

import anyop.webhooks.app as app_module
from anyop.webhooks.app import AdmissionApp
from anyop.webhooks.memory import TRIM_AFTER, release_freed_memory, trims_after


def test_a_large_body_trims_now_and_after_the_next_request() -> None:
    assert trims_after(TRIM_AFTER) == (True, True)
    assert trims_after(10, armed=True) == (True, False)
    assert trims_after(10) == (False, False)
    assert trims_after(TRIM_AFTER - 1) == (False, False)


def test_releasing_never_fails_whatever_the_platform() -> None:
    assert release_freed_memory() in (True, False)


async def call(app: AdmissionApp, chunks: list[bytes]) -> list[dict[str, Any]]:
    """One POST through the ASGI app, the body in these chunks; the messages sent back."""
    messages = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json")]
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    await app(scope, receive, send)
    return sent


@pytest.mark.anyio
async def test_the_app_trims_after_a_large_body_and_after_the_request_that_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trims: list[int] = []
    monkeypatch.setattr(app_module, "release_freed_memory", lambda: trims.append(1) or True)
    seen: list[Any] = []

    async def fn(request: Any, **_: Any) -> dict[str, Any]:
        seen.append(request)
        return {"ok": True}

    app = AdmissionApp(fn)
    big = b'{"blob":"' + b"x" * TRIM_AFTER + b'"}'
    await call(app, [big[:1000], big[1000:]])
    assert len(seen[0]["blob"]) == TRIM_AFTER
    assert trims == [1]
    await call(app, [b"{}"])
    assert trims == [1, 1]  # armed by the large one
    await call(app, [b"{}"])
    assert trims == [1, 1]  # small ones alone do not trim
