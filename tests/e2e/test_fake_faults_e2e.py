"""Rows 17 and 18 of RELIABILITY.md §5 against a whole operator, with FakeCluster's seeded faults.

The operator serves a namespace of a FakeCluster in-process while a storm of 429s (row 17: half
of all its requests, watches included, with ``Retry-After`` in the header or in the ``Status``
details) or bursts of 500/503/504 on its GETs, LISTs and PATCHes (row 18) strike it. The test's
own client is spared (``fake.client(faults=False)``). Objects are created, changed, and created
again after a while; then every handler call is in the ledger exactly once (the client's retries
absorbed the faults: no handler retry was spent, no side effect doubled), every result is
written, and the objects created last were handled too (the watch outlived the faults).

Time is virtual (Trio's ``MockClock``, or an asyncio loop with a fake clock): the servers'
``Retry-After`` and the backoffs are waited in full, at no cost in wall time.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio._backends._asyncio
import pytest
from tests.virtual import virtual_backend

import anyop
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.testing import FakeCluster, Fault, RunningOperator
from anyop.testing.fake.api import ApiRequest, ApiResponse
from anyop.testing.fake.faults import FaultKind
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
CRD = Path(__file__).parents[2] / "examples" / "crd.yaml"
EARLY = [f"early-{i}" for i in range(6)]
LATE = [f"late-{i}" for i in range(4)]
WAIT = 3600.0  # virtual seconds; only reached when something is broken
NAMESPACE = "faults"
SERVER_ERRORS = [Fault.server_error(500), Fault.server_error(503), Fault.server_error(504)]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends on fake time (as ``@pytest.mark.fake_time`` does in tests/unit)."""
    return virtual_backend(request.param, monkeypatch)


class Ledger:
    """Every handler call: (handler, object name), in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def counts(self) -> Counter[tuple[str, str]]:
        return Counter(self.calls)


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def registry(ledger: Ledger) -> OperatorRegistry:
    registry = OperatorRegistry()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, spec: anyop.Spec, **_: Any) -> dict[str, str]:
        ledger.calls.append(("create_fn", name))
        return {"field": spec["field"]}

    @anyop.on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(name: str, spec: anyop.Spec, **_: Any) -> dict[str, str]:
        ledger.calls.append(("update_fn", name))
        return {"field": spec["field"]}

    return registry


class TimedCluster(FakeCluster):
    """A FakeCluster that notes when each of the operator's requests came and how it went."""

    def __init__(self) -> None:
        super().__init__(seed=17)
        self.timeline: list[Sent] = []

    async def respond(
        self, request: ApiRequest, *, faults: bool = True
    ) -> ApiResponse | AsyncIterator[bytes]:
        answer = await super().respond(request, faults=faults)
        if faults:  # the operator's, not the test's own
            status = answer.status if isinstance(answer, ApiResponse) else 200
            now, method, path = anyio.current_time(), request.method, request.path
            self.timeline.append(Sent(now, method, path, status, request.content_type))
        return answer


@dataclasses.dataclass(frozen=True)
class Sent:
    """One request of the operator: when (virtual seconds), what, and the answer's status."""

    time: float
    method: str
    path: str
    status: int
    content_type: str = ""


def retries_of_patches(timeline: list[Sent], failed: Callable[[int], bool]) -> list[Sent]:
    """The PATCHes sent again to the same path after a failed one, with the wait (as ``time``)."""
    failures: dict[str, float] = {}
    again = []
    for sent in timeline:
        if sent.method != "PATCH":
            continue
        if sent.path in failures:
            waited = sent.time - failures.pop(sent.path)
            again.append(dataclasses.replace(sent, time=waited))
        if failed(sent.status):
            failures[sent.path] = sent.time
    return again


@pytest.fixture
def fake() -> TimedCluster:
    fake = TimedCluster()
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    return fake


@asynccontextmanager
async def served(
    fake: FakeCluster,
    registry: OperatorRegistry,
    settings: anyop.OperatorSettings | None = None,
    *,
    namespace: str = NAMESPACE,
) -> AsyncIterator[RunningOperator]:
    """The operator, serving the namespace through the faults; the handle's client is spared.
    (The other FakeCluster files of the fault matrix use it too.)"""
    vault = await fake.vault()
    with fake.routed():
        async with (
            fake.client(faults=False, timeout=30) as api,
            open_operator(
                registry, namespace=namespace, api=api, vault=vault, settings=settings
            ) as operator,
        ):
            yield operator


async def create_change_and_create_again(operator: RunningOperator) -> None:
    """Create the early objects, change each once handled, then create the late ones."""
    for name in EARLY:
        await operator.create(KEX, {"metadata": {"name": name}, "spec": {"field": "one"}})
    for name in EARLY:
        await operator.wait_for(KEX, name, lambda obj: obj["status"]["create_fn"], timeout=WAIT)
        await operator.patch(KEX, name, {"spec": {"field": "two"}})
    for name in EARLY:
        handled = lambda obj: obj["status"]["update_fn"]["field"] == "two"  # noqa: E731
        await operator.wait_for(KEX, name, handled, timeout=WAIT)
    for name in LATE:
        await operator.create(KEX, {"metadata": {"name": name}, "spec": {"field": "one"}})
    for name in LATE:
        await operator.wait_for(KEX, name, lambda obj: obj["status"]["create_fn"], timeout=WAIT)


def each_handler_once() -> Counter[tuple[str, str]]:
    calls = [("create_fn", name) for name in EARLY + LATE]
    return Counter(calls + [("update_fn", name) for name in EARLY])


def struck(fake: FakeCluster, kind: FaultKind, *, watch: bool | None = None) -> int:
    return sum(
        1
        for hit in fake.faults.struck
        if hit.fault.kind is kind and (watch is None or hit.watch is watch)
    )


def errors(operator: RunningOperator) -> list[str]:
    """The operator's messages at ERROR or above (a handler that failed, a cycle that broke)."""
    return [r.getMessage() for r in operator.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "throttle",
    [
        pytest.param(Fault.throttle(retry_after=2, details=False), id="header"),
        pytest.param(Fault.throttle(retry_after=2, header=False), id="details"),
    ],
)
async def test_row17_a_storm_of_429s_on_half_the_requests_costs_no_handler_a_retry(
    fake: TimedCluster, registry: OperatorRegistry, ledger: Ledger, throttle: Fault
) -> None:
    """Half of every request (watches included) gets 429 and Retry-After: 2, in the header (APF,
    new style) or in the Status details (max-in-flight, old style)."""
    fake.faults.inject(seed=fake.seed, rate=0.5, faults=[throttle])
    async with served(fake, registry) as operator:
        await create_change_and_create_again(operator)
        assert errors(operator) == []
    assert ledger.counts() == each_handler_once()  # every object's last change, each call once
    assert struck(fake, FaultKind.THROTTLE, watch=False) >= 20
    assert struck(fake, FaultKind.THROTTLE, watch=True) >= 2  # the watch was refused and lived on
    waits = [sent.time for sent in retries_of_patches(fake.timeline, lambda code: code == 429)]
    assert len(waits) >= 5
    assert min(waits) >= 2.0  # the server's Retry-After, longer than the first backoffs (1 s)


async def test_row18_bursts_of_server_errors_on_gets_lists_and_patches_duplicate_nothing(
    fake: TimedCluster, registry: OperatorRegistry, ledger: Ledger
) -> None:
    """A burst of three 503s, then 500/503/504 at random, on the GETs and LISTs and on the
    PATCHes; the PATCHes that write the handlers' results may not be lost, nor done twice."""
    for method in ("GET", "PATCH"):
        fake.faults.script(Fault.server_error(503), method=method, watch=False, times=3)
        faults = SERVER_ERRORS
        fake.faults.inject(seed=fake.seed, rate=0.15, faults=faults, method=method, watch=False)
    async with served(fake, registry) as operator:
        await create_change_and_create_again(operator)
        bodies = [(await operator.api.get(operator.url(KEX, n))).json() for n in EARLY + LATE]
        assert errors(operator) == []
    assert ledger.counts() == each_handler_once()  # no side effect twice
    assert all(body["status"]["create_fn"] == {"field": "one"} for body in bodies)
    assert all(body["status"]["update_fn"] == {"field": "two"} for body in bodies[: len(EARLY)])
    assert [progress_left(body) for body in bodies] == [{}] * len(bodies)
    assert {hit.fault.code for hit in fake.faults.struck} == {500, 503, 504}
    assert sum(hit.method == "GET" for hit in fake.faults.struck) >= 5
    patched = {sent.content_type for sent in fake.timeline if sent.method == "PATCH"}
    assert patched == {"application/merge-patch+json"}  # absolute, hence idempotent: retried
    again = retries_of_patches(fake.timeline, lambda code: code >= 500)
    assert len(again) >= 3
    assert min(sent.time for sent in again) >= 1.0  # the first backoff


def progress_left(body: dict[str, Any]) -> dict[str, Any]:
    """The progress records and annotations left on an object (none once its handlers are
    done)."""
    records = body["status"].get("anyop", {}).get("progress", {})
    annotations = body["metadata"].get("annotations", {})
    return {**records, **annotations}
