"""A flood of changes to one object: RELIABILITY.md §5 row 39.

While a handler runs, every further change to its object is coalesced into one pending state: at
most one running and one pending cycle, and the last state is the one handled. Both backends:
once on the real control plane (200 changes during one handler run), and once at full rate on
FakeCluster on virtual time (1,000 changes per second for a minute, while 50 other objects change
too: their changes are handled as promptly as without the flood).
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import anyio
import anyio._backends._asyncio
import httpx
import pytest
from tests.e2e.test_engine_e2e import DEADLINE, MERGE, create, running, url, wait_for
from tests.e2e.test_fake_faults_e2e import CRD
from tests.virtual import virtual_backend

import anyop.on as on
from anyop.handlers.registry import OperatorRegistry
from anyop.testing import FakeCluster, Fault
from anyop.testing.fake.api import ApiRequest, ApiResponse
from anyop.testing.fake.faults import Rule
from anyop.testing.handle import open_operator

pytestmark = pytest.mark.anyio

CHANGES = 200
RESULT = "update_fn/spec.seq"  # a field handler's id names its field, as in Kopf


@pytest.mark.usefixtures("kopfexample_crd", "anyop_kubeconfig")
async def test_row39_a_flood_of_changes_to_one_object_is_handled_as_its_latest_state(
    api: httpx.AsyncClient, anyop_namespace: str
) -> None:
    ns = anyop_namespace
    registry = OperatorRegistry()
    seen: list[int] = []
    busy, flooded = anyio.Event(), anyio.Event()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    def create_fn(**_: Any) -> str:
        return "created"

    @on.update("kopfexamples", registry=registry, id="update_fn", field="spec.seq")
    async def update_fn(new: Any, **_: Any) -> int:
        seen.append(int(new))
        busy.set()
        await flooded.wait()  # the first update runs through the whole flood
        return int(new)

    async with running(registry, ns):
        await create(api, ns, "flooded")
        await wait_for(api, url(ns, "flooded"), lambda b: "create_fn" in b.get("status", {}))
        for seq in range(CHANGES):
            patch = {"spec": {"seq": seq}}
            (await api.patch(url(ns, "flooded"), json=patch, headers=MERGE)).raise_for_status()
            if seq == 0:
                with anyio.fail_after(DEADLINE):
                    await busy.wait()
        flooded.set()
        last = CHANGES - 1
        body = await wait_for(
            api, url(ns, "flooded"), lambda b: b.get("status", {}).get(RESULT) == last
        )
    assert body["status"][RESULT] == last  # the last state is the one handled
    assert seen[0] == 0
    assert seen[-1] == last
    assert len(seen) <= 3, seen  # 200 changes: the running cycle, then the latest (a spare one)


# -- at full rate, on FakeCluster and virtual time ----------------------------------------------

NAMESPACE = "flood"
PATH = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"
MERGE_PATCH = "application/merge-patch+json"
FLOOD_RATE = 1000  # changes of the flooded object per virtual second
FLOOD_SECONDS = 60
TICK = 0.01  # virtual seconds between two bursts of changes
CONTROLS = [f"control-{index:02d}" for index in range(50)]  # each changes once per second
QUIET_SECONDS = 10  # the controls change alone first: their latency without the flood
HANDLER_TIME = 0.1  # virtual seconds that the flooded object's handler takes
LATENCY = 0.02  # virtual seconds that each of the operator's requests takes at the fake
WAIT = 3600.0  # virtual seconds; only reached when something is broken


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both backends; on fake time for the tests on FakeCluster (those that take ``fake``)."""
    if "fake" not in request.fixturenames:
        return request.param
    return virtual_backend(request.param, monkeypatch)


@pytest.fixture
def fake() -> FakeCluster:
    """The flooded object and the controls, created before the operator starts; every request
    of the operator takes LATENCY."""
    fake = FakeCluster(seed=39)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for name in ["flooded", *CONTROLS]:
        metadata = {"name": name, "namespace": NAMESPACE}
        fake.create({"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata})
    fake.faults.add(Rule(Fault.latency(LATENCY), watch=False, times=None))
    return fake


class Flood:
    """What the test sent and what the handlers saw, in virtual seconds."""

    def __init__(self) -> None:
        self.sent: dict[tuple[str, int], float] = {}  # (name, seq) -> when it was patched
        self.handled: dict[tuple[str, int], float] = {}  # (name, seq) -> when its handler began
        self.flooded: list[int] = []  # the seqs the flooded object's handler saw, in order
        self.created: set[str] = set()
        self.wall: dict[tuple[str, int], float] = {}  # (name, seq) -> the wall-clock wait
        self.running = 0
        self.most_running = 0

    async def change(self, fake: FakeCluster, name: str) -> None:
        """Patch an object's ``spec.seq`` to the next number, directly in the fake (the
        operator sees it by its watch)."""
        seq = len(self.sent)
        document = json.dumps({"spec": {"seq": seq}}).encode()
        request = ApiRequest("PATCH", f"{PATH}/{name}", {}, MERGE_PATCH, document)
        answer = await fake.respond(request, faults=False)
        assert isinstance(answer, ApiResponse)
        assert answer.status == 200
        self.sent[name, seq] = anyio.current_time()
        self.wall[name, seq] = time.perf_counter()

    def latencies(self, since: float, until: float, *, wall: bool = False) -> list[float]:
        """How long the controls' changes sent in that time waited for their handlers: in
        virtual seconds, or in wall-clock seconds (a figure, never asserted)."""
        return sorted(
            self.wall[key] if wall else self.handled[key] - sent
            for key, sent in self.sent.items()
            if key[0] != "flooded" and since <= sent < until and key in self.handled
        )


def flood_registry(flood: Flood) -> OperatorRegistry:
    registry = OperatorRegistry()

    @on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> None:
        flood.created.add(name)

    @on.update("kopfexamples", registry=registry, id="update_fn", field="spec.seq")
    async def update_fn(name: str, new: Any, **_: Any) -> None:
        flood.handled[name, int(new)] = anyio.current_time()
        flood.wall[name, int(new)] = time.perf_counter() - flood.wall[name, int(new)]
        if name == "flooded":
            flood.flooded.append(int(new))
            flood.running += 1
            flood.most_running = max(flood.most_running, flood.running)
            try:
                await anyio.sleep(HANDLER_TIME)
            finally:
                flood.running -= 1

    return registry


async def send_changes(fake: FakeCluster, flood: Flood, *, seconds: int, flooding: bool) -> None:
    """Every TICK: one control's next change (each control once per second), and with
    ``flooding``, FLOOD_RATE * TICK changes of the flooded object."""
    ticks = round(seconds / TICK)
    burst = round(FLOOD_RATE * TICK) if flooding else 0
    every = round(1 / TICK) // len(CONTROLS)
    for tick in range(ticks):
        for _ in range(burst):
            await flood.change(fake, "flooded")
        if tick % every == 0:
            name = CONTROLS[tick // every % len(CONTROLS)]
            await flood.change(fake, name)
        await anyio.sleep(TICK)


def percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, math.ceil(share * len(values)) - 1)]


async def test_row39_a_thousand_changes_a_second_for_a_minute_are_coalesced_and_delay_no_other(
    fake: FakeCluster,
) -> None:
    """One object changed 1,000 times per second for 60 s, 50 others once per second each:
    the flooded object's handler runs far fewer times than it changed, one run at a time, each
    on a newer state than the last and the last on its last state; every change of the others
    is handled, with a p99 latency (virtual) as without the flood."""
    flood = Flood()
    vault = await fake.vault()
    with fake.routed():
        async with (
            fake.client(faults=False, timeout=30) as api,
            open_operator(flood_registry(flood), namespace=NAMESPACE, api=api, vault=vault),
        ):
            with anyio.fail_after(WAIT):
                while len(flood.created) < 1 + len(CONTROLS):
                    await anyio.sleep(1)
            await anyio.sleep(10)  # their workers are idle again
            start, wall = anyio.current_time(), time.perf_counter()
            await send_changes(fake, flood, seconds=QUIET_SECONDS, flooding=False)
            flooding = anyio.current_time()
            await send_changes(fake, flood, seconds=FLOOD_SECONDS, flooding=True)
            end, wall = anyio.current_time(), time.perf_counter() - wall
            with anyio.fail_after(WAIT):
                while not flood.sent.keys() <= flood.handled.keys() | flooded_but_last(flood):
                    await anyio.sleep(1)
    changes = [seq for name, seq in flood.sent if name == "flooded"]
    quiet, loud = flood.latencies(start, flooding), flood.latencies(flooding, end)
    print(f"\nrow 39: {len(changes)} changes of the flooded object, {len(flood.flooded)} runs;")
    print(f"  {wall:.1f} s wall for {len(flood.sent)} changes in all (the fake's and operator's)")
    print(f"  controls: {len(quiet)} changes alone, p99 {percentile(quiet, 0.99):.3f} s virtual;")
    print(f"  {len(loud)} during the flood, p50 {percentile(loud, 0.5):.3f} s,")
    print(f"  p99 {percentile(loud, 0.99):.3f} s, max {loud[-1]:.3f} s virtual; wall-clock p99")
    quiet_wall = flood.latencies(start, flooding, wall=True)
    loud_wall = flood.latencies(flooding, end, wall=True)
    print(f"  {percentile(quiet_wall, 0.99) * 1000:.1f} ms alone, ", end="")
    print(f"{percentile(loud_wall, 0.99) * 1000:.1f} ms during the flood")
    assert len(changes) == FLOOD_RATE * FLOOD_SECONDS
    assert len(flood.flooded) <= len(changes) // 50  # coalesced
    assert flood.flooded == sorted(set(flood.flooded))  # each run saw a newer state
    assert flood.flooded[-1] == changes[-1]  # and the last one, the last state
    assert flood.most_running == 1
    assert len(loud) == len(CONTROLS) * FLOOD_SECONDS  # every other change handled
    assert percentile(loud, 0.99) < 2.0
    assert percentile(loud, 0.99) <= percentile(quiet, 0.99) + LATENCY


def flooded_but_last(flood: Flood) -> set[tuple[str, int]]:
    """The flooded object's changes that may be coalesced away: all but its last."""
    changes = sorted(seq for name, seq in flood.sent if name == "flooded")
    return {("flooded", seq) for seq in changes[:-1]}
