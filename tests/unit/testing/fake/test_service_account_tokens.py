"""Service account tokens on FakeCluster's clock: they expire (with a minute of leeway), a
successful review is kept for 10 seconds (kube-apiserver's token cache), a token of another
cluster does not authenticate."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from anyop.testing.fake import FakeCluster

pytestmark = [pytest.mark.anyio, pytest.mark.fake_time]

SA = "/api/v1/namespaces/default/serviceaccounts"
REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


async def _token(api: Any, seconds: int = 600, **spec: Any) -> str:
    await api.post(SA, json={"metadata": {"name": "m"}})
    body = {"spec": {"expirationSeconds": seconds, **spec}}
    answer = (await api.post(f"{SA}/m/token", json=body)).json()
    token: str = answer["status"]["token"]
    return token


async def _review(api: Any, token: str) -> Any:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}}  # fmt: skip
    return (await api.post(REVIEWS, json=body)).json()["status"]


async def test_a_token_expires_a_minute_after_its_expiration() -> None:
    async with FakeCluster().client() as api:
        token = await _token(api)
        await anyio.sleep(600 + 59)
        assert (await _review(api, token))["authenticated"] is True
        await anyio.sleep(12)  # (a success is kept for 10 seconds)
        status = await _review(api, token)
    assert status == {"user": {}, "error": "[invalid bearer token, service account token has "
                      "expired]"}  # fmt: skip


async def test_a_review_is_kept_for_ten_seconds_then_the_binding_is_checked_again() -> None:
    async with FakeCluster().client() as api:
        await api.post("/api/v1/namespaces/default/secrets", json={"metadata": {"name": "s"}})
        ref = {"kind": "Secret", "apiVersion": "v1", "name": "s"}
        token = await _token(api, 3600, boundObjectRef=ref)
        assert (await _review(api, token))["authenticated"] is True
        await api.delete("/api/v1/namespaces/default/secrets/s")
        assert (await _review(api, token))["authenticated"] is True  # kept
        await anyio.sleep(11)
        status = await _review(api, token)
    assert status["error"] == "[invalid bearer token, service account token has been invalidated]"


async def test_a_token_of_another_cluster_does_not_authenticate() -> None:
    async with FakeCluster().client() as one, FakeCluster().client() as other:
        token = await _token(one)
        await other.post(SA, json={"metadata": {"name": "m"}})
        status = await _review(other, token)
    assert status["error"] == (
        "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]"
    )
