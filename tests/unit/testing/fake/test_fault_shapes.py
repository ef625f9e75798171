"""FakeCluster's 429s in the old style and the new, and a client that no fault strikes."""

from __future__ import annotations

import httpx
import pytest

from anyop.kube.retries import error_of_response
from anyop.testing.fake import FakeCluster, Fault

pytestmark = pytest.mark.anyio

CMS = "/api/v1/namespaces/default/configmaps"


def _retry_after(answer: httpx.Response) -> float | None:
    """What anyop's client makes of the answer's ``Retry-After``."""
    return error_of_response(answer.status_code, answer.headers, answer.content).retry_after


async def test_a_new_style_429_asks_for_its_wait_in_the_header_only() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.throttle(retry_after=3, details=False), method="GET")
    async with fake.client() as api:
        answer = await api.get(CMS)
    assert answer.status_code == 429
    assert answer.headers["Retry-After"] == "3"
    assert "retryAfterSeconds" not in answer.json()["details"]
    assert _retry_after(answer) == 3


async def test_an_old_style_429_asks_for_its_wait_in_the_status_details_only() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.throttle(retry_after=4, header=False), method="GET")
    async with fake.client() as api:
        answer = await api.get(CMS)
    assert answer.status_code == 429
    assert "Retry-After" not in answer.headers
    assert answer.json()["details"] == {"retryAfterSeconds": 4}
    assert _retry_after(answer) == 4


def test_a_throttle_puts_its_wait_in_both_places_unless_told() -> None:
    fault = Fault.throttle(retry_after=2)
    assert (fault.retry_after_header, fault.retry_after_details) == (True, True)


async def test_a_client_without_faults_is_never_struck_and_leaves_the_faults_to_others() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.server_error(503), method="GET", times=1)
    async with fake.client(faults=False) as own, fake.client() as operator:
        mine = [(await own.get(CMS)).status_code for _ in range(3)]
        theirs = [(await operator.get(CMS)).status_code for _ in range(2)]
    assert mine == [200, 200, 200]
    assert theirs == [503, 200]
    assert len(fake.faults.struck) == 1


async def test_what_struck_says_whether_it_was_a_watch() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.throttle(), method="GET", times=2)
    async with fake.client() as api:
        await api.get(CMS)
        await api.get(CMS, params={"watch": "1"})
    assert [struck.watch for struck in fake.faults.struck] == [False, True]
