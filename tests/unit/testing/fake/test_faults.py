"""Faults of FakeCluster: the pure rules, each fault as a client sees it, and the trace's hash."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from anyop.testing.fake import FakeCluster, Fault, Rule
from anyop.testing.fake.faults import FaultPlan
from anyop.testing.fake.trace import Trace

NS = {"metadata": {"name": "ns"}}
CMS = "/api/v1/namespaces/ns/configmaps"


# -- the rules (pure) ----------------------------------------------------------------------------


def test_a_scripted_fault_strikes_after_the_first_requests_and_only_so_often() -> None:
    plan = FaultPlan()
    plan.script(Fault.server_error(503), method="GET", path="/configmaps", after=1, times=2)
    decided = [plan.decide("GET", CMS, watch=False) for _ in range(5)]
    assert decided == [None, Fault.server_error(503), Fault.server_error(503), None, None]
    assert plan.decide("POST", CMS, watch=False) is None


def test_a_rule_added_after_clearing_counts_its_requests_from_zero() -> None:
    plan = FaultPlan()
    plan.script(Fault.server_error(503), times=None)
    assert plan.decide("GET", CMS, watch=True) == Fault.server_error(503)
    plan.clear()
    plan.script(Fault.expire(), times=1)  # the same place in the list as the cleared rule
    decided = [plan.decide("GET", CMS, watch=True) for _ in range(2)]
    assert decided == [Fault.expire(), None]
    assert len(plan.struck) == 2


def test_conflicts_strike_only_writes_and_expiries_only_reads() -> None:
    plan = FaultPlan()
    plan.script(Fault.conflict(), times=None)
    plan.script(Fault.expire(), times=None)
    assert plan.decide("GET", CMS, watch=True) == Fault.expire()
    assert plan.decide("PATCH", CMS, watch=False) == Fault.conflict()


def test_seeded_faults_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    def run(seed: int) -> list[Fault | None]:
        plan = FaultPlan()
        plan.inject(seed=seed, rate=0.3)
        return [plan.decide("GET", f"{CMS}/{i % 3}", watch=False) for i in range(60)]

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert any(run(1))
    assert None in run(1)


def test_a_request_gets_its_fault_whatever_other_requests_come_between() -> None:
    alone, mixed = FaultPlan(), FaultPlan()
    alone.inject(seed=5, rate=0.5)
    mixed.inject(seed=5, rate=0.5)
    first = [alone.decide("GET", "/a", watch=False) for _ in range(10)]
    second = []
    for _ in range(10):
        mixed.decide("GET", "/b", watch=False)
        second.append(mixed.decide("GET", "/a", watch=False))
    assert first == second


@pytest.mark.parametrize(
    "make",
    [
        lambda: Fault.latency(-1),
        lambda: Fault.throttle(retry_after=-1),
        lambda: Fault.server_error(404),
        lambda: Rule(Fault.drop(), rate=1.5),
        lambda: Rule(Fault.drop(), after=-1),
    ],
)
def test_a_nonsensical_fault_is_refused_with_a_clear_error(make: object) -> None:
    with pytest.raises(ValueError, match=r"cannot|between|5xx"):
        make()  # type: ignore[operator]


# -- as clients see them -------------------------------------------------------------------------


def _cluster() -> tuple[FakeCluster, httpx.AsyncClient]:
    fake = FakeCluster()
    fake.create({"apiVersion": "v1", "kind": "Namespace", **NS})
    return fake, fake.client()


@pytest.mark.anyio
async def test_a_throttled_request_gets_429_with_retry_after_and_is_not_applied() -> None:
    fake, api = _cluster()
    fake.faults.script(Fault.throttle(retry_after=3), method="POST")
    async with api:
        refused = await api.post(CMS, json={"metadata": {"name": "a"}})
        listed = await api.get(CMS, params={"fieldSelector": "metadata.name=a"})
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "3"
    assert refused.json()["reason"] == "TooManyRequests"
    assert listed.json()["items"] == []


@pytest.mark.anyio
async def test_a_dropped_connection_is_a_transport_error_and_a_conflict_a_409() -> None:
    fake, api = _cluster()
    fake.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    )
    fake.faults.script(Fault.drop(), method="GET")
    fake.faults.script(Fault.conflict(), method="PATCH")
    headers = {"Content-Type": "application/merge-patch+json"}
    async with api:
        with pytest.raises(httpx.RemoteProtocolError):
            await api.get(f"{CMS}/a")
        conflict = await api.patch(f"{CMS}/a", json={"data": {"x": "1"}}, headers=headers)
        after = await api.get(f"{CMS}/a")
    assert (conflict.status_code, conflict.json()["reason"]) == (409, "Conflict")
    assert "data" not in after.json()


@pytest.mark.anyio
async def test_an_injected_server_error_answers_a_5xx_status() -> None:
    fake, api = _cluster()
    fake.faults.script(Fault.server_error(503), path="/configmaps")
    async with api:
        answer = await api.get(CMS)
    assert (answer.status_code, answer.json()["reason"]) == (503, "ServiceUnavailable")


@pytest.mark.anyio
async def test_an_expired_watch_sends_one_410_error_event() -> None:
    fake, api = _cluster()
    fake.faults.script(Fault.expire(), watch=True, times=3)
    lines = []
    async with api:
        for _ in range(3):
            async with api.stream("GET", CMS, params={"watch": "1"}) as stream:
                lines += [json.loads(line) async for line in stream.aiter_lines()]
    assert [(e["type"], e["object"]["code"]) for e in lines] == [("ERROR", 410)] * 3


@pytest.mark.anyio
@pytest.mark.fake_time
async def test_a_stalled_watch_sends_nothing_until_its_timeout_and_latency_takes_time() -> None:
    fake, api = _cluster()
    fake.faults.script(Fault.stall(), watch=True)
    fake.faults.script(Fault.latency(30), method="POST")
    started = anyio.current_time()
    async with api:
        params = {"watch": "1", "timeoutSeconds": "120"}
        async with api.stream("GET", CMS, params=params) as stream:
            await api.post(CMS, json={"metadata": {"name": "a"}})
            posted = anyio.current_time() - started
            lines = [line async for line in stream.aiter_lines()]
    assert lines == []
    assert posted >= 30
    assert anyio.current_time() - started >= 120


# -- the trace -----------------------------------------------------------------------------------


async def _workload(seed: int, *, faulty: bool) -> str:
    """Creates, patches, lists and watches through faults, retrying each request until it
    succeeds; the digest of the cluster's trace."""
    fake = FakeCluster(seed=seed)
    if faulty:
        kinds = [Fault.throttle(), Fault.server_error(), Fault.conflict(), Fault.drop()]
        fake.faults.inject(seed=seed, rate=0.25, faults=kinds)
    merge = {"Content-Type": "application/merge-patch+json"}

    async def until_done(method: str, path: str, **kwargs: object) -> httpx.Response:
        while True:
            try:
                answer = await api.request(method, path, **kwargs)  # type: ignore[arg-type]
            except httpx.TransportError:
                continue
            if answer.status_code < 400:
                return answer

    async with fake.client() as api:
        await until_done("POST", "/api/v1/namespaces", json=NS)
        for _ in range(10):
            made = await until_done("POST", CMS, json={"metadata": {"generateName": "cm-"}})
            name = made.json()["metadata"]["name"]
            await until_done("PATCH", f"{CMS}/{name}", json={"data": {"n": name}}, headers=merge)
        await until_done("GET", CMS, params={"limit": "3"})
    return fake.trace.digest()


@pytest.mark.anyio
async def test_the_same_seed_gives_the_same_trace_and_another_seed_with_faults_another() -> None:
    first = await _workload(1, faulty=True)
    again = await _workload(1, faulty=True)
    other = await _workload(2, faulty=True)
    assert first == again
    assert first != other


@pytest.mark.anyio
async def test_the_trace_records_requests_faults_and_changes() -> None:
    fake, api = _cluster()
    fake.faults.script(Fault.throttle(), method="POST")
    async with api:
        await api.post(CMS, json={"metadata": {"name": "a"}})
        await api.post(CMS, json={"metadata": {"name": "a"}})
    kinds = [json.loads(line)[0] for line in fake.trace.lines]
    assert kinds[-6:] == ["request", "fault", "answer", "request", "change", "answer"]


def test_a_trace_keeps_its_latest_lines_and_its_digest_covers_all_of_them() -> None:
    first, second = Trace(limit=2), Trace(limit=2)
    first.request("GET", "/a", query={})
    second.request("GET", "/b", query={})  # the only difference: a line neither keeps
    for trace in (first, second):
        trace.answer(200)
        trace.fault("drop")
    assert list(first.lines) == list(second.lines) == ['["answer",200]', '["fault","drop"]']
    assert len(first) == len(second) == 3
    assert first.digest() != second.digest()
    again = Trace(limit=100)
    again.request("GET", "/a", query={})
    again.answer(200)
    again.fault("drop")
    assert again.digest() == first.digest()  # the limit does not change the digest


def test_a_digest_is_the_same_whenever_it_is_asked_for_and_after_the_lines_are_cleared() -> None:
    """Lines are hashed lazily (when read, asked for or dropped): when does not matter."""

    def lines(trace: Trace, asked: set[int]) -> str:
        for n in range(12):
            trace.request("GET", f"/{n}", query={"limit": str(n)})
            trace.change(n, "ADDED", obj={"kind": "K", "metadata": {"name": f"o{n}"}, "n": n})
            if n in asked:
                trace.digest()
            if n == 7 and asked:
                trace.clear()
        return trace.digest()

    expected = lines(Trace(limit=1000), asked=set())
    assert lines(Trace(limit=3), asked=set()) == expected
    assert lines(Trace(limit=3), asked={0, 4, 5, 11}) == expected
    assert lines(Trace(limit=1000), asked={2, 9}) == expected
    cleared = Trace(limit=1000)
    lines(cleared, asked={1})
    assert len(cleared.lines) == 8
    assert len(cleared) == 24
    changed = Trace(limit=1000)
    changed.change(1, "ADDED", obj={"kind": "K", "metadata": {"name": "o"}, "n": 2})
    other = Trace(limit=1000)
    other.change(1, "ADDED", obj={"kind": "K", "metadata": {"name": "o"}, "n": 3})
    assert changed.digest() != other.digest()  # the contents' digest is in the line


def test_a_trace_that_keeps_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="trace_limit=0"):
        FakeCluster(trace_limit=0)


@pytest.mark.anyio
async def test_a_long_running_fake_keeps_only_its_trace_limit() -> None:
    fake = FakeCluster(trace_limit=5)
    async with fake.client() as api:
        await api.post("/api/v1/namespaces", json=NS)
        for n in range(10):
            await api.post(CMS, json={"metadata": {"name": f"cm-{n}"}})
    assert len(fake.trace.lines) == 5
    assert len(fake.trace) > 30  # request, change and answer per creation
