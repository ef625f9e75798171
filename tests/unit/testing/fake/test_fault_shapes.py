"""FakeCluster's 429s in the old style and the new, a client that no fault strikes, and the
watch faults: a 410 answer, an ``ERROR`` 500 or "too large" event, a watch that ends at once."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from anyop.kube.retries import error_of_response
from anyop.kube.watchstate import Expired, Failed, outcome_of_error, outcome_of_status
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


async def _watched(fake: FakeCluster, version: str = "") -> tuple[int, list[dict[str, Any]]]:
    """The status and the events of one watch of the config maps (from ``version``)."""
    params = {"watch": "1", "timeoutSeconds": "5", "resourceVersion": version}
    async with fake.client() as api, api.stream("GET", CMS, params=params) as answer:
        lines = [json.loads(line) async for line in answer.aiter_lines() if line]
        return answer.status_code, lines


async def test_an_error_500_in_a_watch_comes_as_kube_apiserver_sends_it_and_is_no_expiry() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.server_error(500, in_stream=True), method="GET", times=2)
    status, events = await _watched(fake)
    async with fake.client() as api:
        listed = await api.get(CMS)  # not a watch: the 500 answer itself
    assert status == 200
    [(kind, body)] = [(event["type"], event["object"]) for event in events]
    assert (kind, body["kind"], body["code"], body["reason"]) == (
        "ERROR",
        "Status",
        500,
        "InternalError",
    )
    assert body["message"] == "Internal error occurred: injected fault 500"
    assert body["details"] == {"causes": [{"message": "injected fault 500"}]}
    assert isinstance(outcome_of_status(body), Failed)  # backed off and watched again, no relist
    assert listed.status_code == 500


async def test_an_expiry_can_answer_the_watch_request_itself_with_a_410() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.expire(in_stream=False), watch=True)
    async with fake.client() as api:
        answer = await api.get(CMS, params={"watch": "1", "resourceVersion": "1"})
    assert (answer.status_code, answer.json()["reason"]) == (410, "Expired")
    error = error_of_response(answer.status_code, answer.headers, answer.content)
    assert isinstance(outcome_of_error(error), Expired)
    assert Fault.expire().in_stream  # an ERROR event unless told


@pytest.mark.parametrize("in_stream", [True, False], ids=["event", "answer"])
async def test_a_too_large_version_is_a_504_timeout_with_its_cause(in_stream: bool) -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.too_large(in_stream=in_stream), watch=True, times=None)
    asked = str(int(fake.resource_version) + 10)
    if in_stream:
        status, events = await _watched(fake, asked)
        assert (status, [event["type"] for event in events]) == (200, ["ERROR"])
        body = events[0]["object"]
        outcome = outcome_of_status(body)
    else:
        async with fake.client() as api:
            answer = await api.get(CMS, params={"watch": "1", "resourceVersion": asked})
        body = answer.json()
        assert answer.status_code == 504
        outcome = outcome_of_error(error_of_response(504, answer.headers, answer.content))
    current = fake.resource_version  # behind the version asked for
    assert (body["code"], body["reason"]) == (504, "Timeout")
    assert body["message"] == f"Timeout: Too large resource version: {asked}, current: {current}"
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    assert body["details"] == {"causes": [cause], "retryAfterSeconds": 1}
    assert isinstance(outcome, Expired)  # a relist


async def test_an_empty_watch_ends_at_once_and_strikes_only_watches() -> None:
    fake = FakeCluster()
    fake.faults.script(Fault.empty_watch(), method="GET", times=None)
    fake.faults.script(Fault.too_large(), method="POST", times=None)
    async with fake.client() as api:
        listed = await api.get(CMS)
        made = await api.post(CMS, json={"metadata": {"name": "a", "namespace": "default"}})
    status, events = await _watched(fake)
    assert (status, events) == (200, [])
    assert listed.status_code == 200  # a list is no watch: not struck
    assert made.status_code == 201  # a write is never "too large"
    assert [hit.fault for hit in fake.faults.struck] == [Fault.empty_watch()]
