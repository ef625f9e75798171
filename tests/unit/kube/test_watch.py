"""The watch state machine (pure) and the Watcher against a scripted API, on both backends.

The scripted API is a hand-rolled ``httpx.MockTransport`` (:class:`Cluster`), not respx routes:
it lists the objects it holds at that moment, answers each watch with the next scripted stream,
and wakes the waiting test on every request; one stateful object says that more plainly than
routes with side effects would.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Self

import anyio
import anyio.lowlevel
import httpx
import pytest
import trio

from anyop.errors import GoneError, NotFoundError, ServerError, TransportError
from anyop.kube.auth import Vault
from anyop.kube.client import KubeClient, open_client
from anyop.kube.connection import ConnectionInfo
from anyop.kube.resources import Resource
from anyop.kube.retries import Backoff
from anyop.kube.shard_ranges import ShardRanges, uid_hash
from anyop.kube.watch import QUIET_404S, SHARE_CHECKS, Watcher, WatchEvent
from anyop.kube.watchstate import (
    Ended,
    Expired,
    Failed,
    Listed,
    Outcome,
    Phase,
    Stalled,
    Waited,
    WatchPolicy,
    WatchState,
    advance,
    outcome_of_error,
    outcome_of_status,
    quick_end,
    went_back,
)
from anyop.settings import OperatorSettings

DEADLINE = 10  # seconds; only reached when a test is broken
KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample", namespaced=True)
FAST = WatchPolicy(backoff=Backoff(initial=0.001, cap=0.01), reconnect_pause=0.0)
POLICY = WatchPolicy(backoff=Backoff(initial=1, factor=2, cap=8, jitter=0), reconnect_pause=0.1)


# The state machine, without a loop


def step(state: WatchState, outcome: Outcome) -> WatchState:
    return advance(state, outcome, policy=POLICY, rand=0.5)


def test_a_listing_leads_to_watching_from_its_resource_version() -> None:
    state = step(WatchState(), Listed("10"))
    assert (state.phase, state.resource_version, state.synced) == (Phase.WATCHING, "10", True)


def test_a_normal_end_rewatches_after_the_reconnect_pause() -> None:
    state = WatchState(Phase.WATCHING, "10", synced=True)
    state = step(state, Ended(events=3, seconds=270))
    assert (state.phase, state.delay, state.restarts) == (Phase.WATCHING, 0.1, 1)
    assert state.resource_version == "10"


def test_a_quick_empty_end_backs_off_like_a_failure() -> None:
    state = WatchState(Phase.WATCHING, "10", synced=True)
    state = step(state, Ended(events=0, seconds=0.01))
    assert (state.phase, state.next_phase, state.delay) == (Phase.BACKING_OFF, Phase.WATCHING, 1)
    assert "closed after" in (state.last_error or "")


def test_failures_back_off_exponentially_and_resume_the_same_phase() -> None:
    state = WatchState(Phase.WATCHING, "10", synced=True)
    delays = []
    for _ in range(5):
        state = step(state, Failed("refused"))
        delays.append(state.delay)
        state = step(state, Waited())
        assert (state.phase, state.resource_version) == (Phase.WATCHING, "10")
    assert delays == [1, 2, 4, 8, 8]


def test_a_failed_initial_listing_lists_again() -> None:
    state = step(WatchState(), Failed("refused"))
    assert (state.phase, state.next_phase) == (Phase.BACKING_OFF, Phase.LISTING)
    assert step(state, Waited()).phase is Phase.LISTING


def test_retry_after_lengthens_the_backoff() -> None:
    state = step(WatchState(Phase.WATCHING, "1"), Failed("429", retry_after=5))
    assert state.delay == 5


def test_progress_resets_the_failures() -> None:
    state = step(WatchState(Phase.WATCHING, "1"), Failed("x"))
    assert state.seen("2", now=5.0).failures == 0
    assert state.seen(None, now=5.0).resource_version == "1"


def test_an_expired_version_relists_at_once_but_not_in_a_hot_loop() -> None:
    state = WatchState(Phase.WATCHING, "10", synced=True)
    state = step(state, Expired("410"))
    assert (state.phase, state.delay, state.relists) == (Phase.RELISTING, 0, 1)
    state = step(step(state, Listed("20")), Expired("410"))
    assert (state.phase, state.delay, state.relists) == (Phase.RELISTING, 1, 2)


def test_a_stall_reconnects_at_once() -> None:
    state = step(WatchState(Phase.WATCHING, "10"), Stalled(70))
    assert (state.phase, state.delay, state.restarts) == (Phase.WATCHING, 0, 1)


@pytest.mark.parametrize(
    "status",
    [
        {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"},
        {"kind": "Status", "code": 410, "reason": "Gone"},
        {"kind": "Status", "reason": "Expired"},
        {
            "code": 504,
            "reason": "Timeout",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]},
        },
        {"code": 504, "message": "Too large resource version: 100, current: 50"},
    ],
)
def test_expired_and_too_large_versions_need_a_relist(status: dict[str, Any]) -> None:
    assert isinstance(outcome_of_status(status), Expired)


def test_other_error_events_are_failures() -> None:
    error = {"code": 500, "reason": "InternalError", "details": {"retryAfterSeconds": 2}}
    outcome = outcome_of_status(error)
    assert outcome == Failed("An ERROR event in the watch-stream: (500 InternalError)", 2)


def test_errors_are_classified() -> None:
    assert isinstance(outcome_of_error(GoneError("gone", status=410)), Expired)
    assert isinstance(outcome_of_error(ServerError("x", status=503, retry_after=3)), Failed)
    assert outcome_of_error(ServerError("x", status=503, retry_after=3)).retry_after == 3  # type: ignore[union-attr]
    assert isinstance(outcome_of_error(TransportError("refused")), Failed)


# A scripted API server


def kex(name: str, rv: int) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": str(rv)}
    return {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": metadata}


def line(kind: str, body: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": body}).encode() + b"\n"


def bookmark(rv: int) -> bytes:
    return line("BOOKMARK", {"kind": "KopfExample", "metadata": {"resourceVersion": str(rv)}})


class Chunks(httpx.AsyncByteStream):
    """A response body of scripted chunks, then the end (or silence, or a broken connection)."""

    def __init__(self, chunks: Sequence[bytes], then: str = "end") -> None:
        self.chunks = list(chunks)
        self.then = then

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        await anyio.lowlevel.checkpoint()
        if self.chunks:
            return self.chunks.pop(0)
        if self.then == "hang":
            await anyio.sleep_forever()
        if self.then == "break":
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message"
            )
        raise StopAsyncIteration


Reply = httpx.Response | Exception | Callable[[], httpx.Response | Exception]


def stream(*chunks: bytes, then: str = "end") -> httpx.Response:
    return httpx.Response(200, stream=Chunks(chunks, then))


def status(code: int, reason: str, **details: Any) -> httpx.Response:
    body = {"kind": "Status", "code": code, "reason": reason, "message": reason, "details": details}
    return httpx.Response(code, json=body)


class Cluster:
    """Lists its current objects page by page, and answers watches from a script (then hangs)."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {obj["metadata"]["uid"]: obj for obj in objects}
        self.version = 10
        self.watches: list[Reply] = []
        self.requests: list[httpx.Request] = []
        self.changed = anyio.Event()
        self.sharding = False  # whether it applies shard selectors (and says so in lists)

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.notify()
        if request.url.params.get("watch") == "true":
            reply = self.watches.pop(0) if self.watches else stream(then="hang")
            reply = reply() if callable(reply) else reply
            if isinstance(reply, Exception):
                raise reply
            self._advance(reply)
            return reply
        return self._page(request.url.params)

    def _advance(self, reply: httpx.Response) -> None:
        """A real store is at least as new as anything it streams: so is this one's listing."""
        for chunk in getattr(reply.stream, "chunks", []):
            for raw in chunk.splitlines():
                try:
                    version = json.loads(raw)["object"]["metadata"]["resourceVersion"]
                except (ValueError, KeyError, TypeError):
                    continue
                if str(version).isdigit():
                    self.version = max(self.version, int(version))

    def _page(self, params: httpx.QueryParams) -> httpx.Response:
        items = sorted(self.objects.values(), key=lambda obj: obj["metadata"]["name"])
        start, limit = int(params.get("continue") or 0), int(params["limit"])
        token = str(start + limit) if start + limit < len(items) else None
        metadata = {"resourceVersion": str(self.version), **({"continue": token} if token else {})}
        if self.sharding and (selector := params.get("shardSelector")):
            metadata["shardInfo"] = {"selector": selector}
        body = {
            "kind": "KopfExampleList",
            "metadata": metadata,
            "items": items[start : start + limit],
        }
        return httpx.Response(200, json=body)

    @property
    def lists(self) -> list[httpx.Request]:
        """The listings (not the one-object lists that check the store's version)."""
        return [r for r in self.requests if "watch" not in r.url.params and not self.probe(r)]

    @property
    def probes(self) -> list[httpx.Request]:
        """The one-object lists that check the store's version after a failure."""
        return [r for r in self.requests if self.probe(r)]

    @staticmethod
    def probe(request: httpx.Request) -> bool:
        return "watch" not in request.url.params and request.url.params.get("limit") == "1"

    @property
    def watch_requests(self) -> list[httpx.Request]:
        return [r for r in self.requests if "watch" in r.url.params]

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self.changed.wait()

    def factory(self, info: ConnectionInfo, context: object) -> httpx.AsyncBaseTransport:
        return httpx.MockTransport(self)


class Recorder:
    """The engine's side: records what is dispatched (and wakes up whoever waits on the cluster)."""

    def __init__(self, cluster: Cluster, fail_on: str | None = None) -> None:
        self.events: list[WatchEvent] = []
        self.cluster = cluster
        self.fail_on = fail_on

    async def __call__(self, event: WatchEvent) -> None:
        self.events.append(event)
        self.cluster.notify()
        if event.object["metadata"].get("name") == self.fail_on:
            raise RuntimeError("a bug in the engine")

    def summary(self, start: int = 0) -> list[tuple[str, str, bool, bool]]:
        events = self.events[start:]
        return [(e.type, e.object["metadata"]["name"], e.listed, e.synthetic) for e in events]


async def client_for(cluster: Cluster) -> KubeClient:
    vault = Vault()
    await vault.populate({"token": ConnectionInfo("https://k8s.test", token="t")})
    return open_client(vault, transport_factory=cluster.factory)


def watching(**options: Any) -> OperatorSettings:
    return OperatorSettings.model_validate({"watching": options})


def versions(cluster: Cluster) -> list[str]:
    return [r.url.params["resourceVersion"] for r in cluster.watch_requests]


async def watch_until(recorder: Recorder, until: Callable[[], bool], **options: Any) -> Watcher:
    """Run a watcher (fast backoffs unless told otherwise) until the condition holds."""
    cluster = recorder.cluster
    async with await client_for(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, **{"policy": FAST, **options})
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
            await cluster.wait_for(until)
        tg.cancel_scope.cancel()
    return watcher


# The Watcher


@pytest.mark.anyio
async def test_started_comes_after_the_whole_initial_listing() -> None:
    cluster = Cluster(*(kex(name, 5) for name in "abcde"))
    recorder = Recorder(cluster)
    async with await client_for(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, namespace="ns", label_selector="app=x", page_size=2)
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
        assert recorder.summary() == [("ADDED", name, True, False) for name in "abcde"]
        assert watcher.state.synced
        with anyio.fail_after(DEADLINE):
            await cluster.wait_for(lambda: len(cluster.watch_requests) == 1)
        tg.cancel_scope.cancel()
    assert [r.url.params.get("continue") for r in cluster.lists] == [None, "2", "4"]
    params = cluster.watch_requests[0].url.params
    assert params["resourceVersion"] == "10"
    assert params["allowWatchBookmarks"] == "true"
    assert 240 <= int(params["timeoutSeconds"]) <= 290
    assert params["labelSelector"] == "app=x"
    assert cluster.watch_requests[0].url.path == "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"


@pytest.mark.anyio
async def test_bookmarks_advance_the_version_and_are_not_dispatched() -> None:
    cluster = Cluster(kex("a", 5))
    cluster.watches = [stream(line("ADDED", kex("b", 11)), bookmark(15))]
    recorder = Recorder(cluster)
    await watch_until(
        recorder, lambda: len(cluster.watch_requests) == 2, settings=watching(server_timeout=60)
    )
    assert recorder.summary() == [("ADDED", "a", True, False), ("ADDED", "b", False, False)]
    assert versions(cluster) == ["10", "15"]
    assert cluster.watch_requests[0].url.params["timeoutSeconds"] == "60"
    assert len(cluster.lists) == 1


@pytest.mark.anyio
async def test_unknown_event_types_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    cluster = Cluster(kex("a", 5))
    weird = line("WEIRD", kex("b", 12))
    cluster.watches = [stream(weird, line("ADDED", kex("c", 13)))]
    recorder = Recorder(cluster)
    await watch_until(recorder, lambda: len(cluster.watch_requests) == 2)
    assert recorder.summary() == [("ADDED", "a", True, False), ("ADDED", "c", False, False)]
    assert versions(cluster)[-1] == "13"
    assert "Ignoring an unknown event type in the watch-stream for " in caplog.text
    assert "'WEIRD'" in caplog.text


@pytest.mark.anyio
@pytest.mark.parametrize(
    "expiry",
    [
        lambda: stream(line("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})),
        lambda: status(410, "Gone"),
        lambda: status(504, "Timeout", causes=[{"reason": "ResourceVersionTooLarge"}]),
    ],
    ids=["error-event", "http-410", "too-large"],
)
async def test_an_expired_version_relists_and_deletes_what_vanished(
    expiry: Callable[[], httpx.Response],
) -> None:
    cluster = Cluster(kex("a", 5), kex("b", 6))

    def meanwhile() -> httpx.Response:
        del cluster.objects["uid-b"]  # deleted while the watch was away
        cluster.objects["uid-c"] = kex("c", 14)
        cluster.version = 20
        return expiry()

    cluster.watches = [stream(line("MODIFIED", kex("b", 12))), meanwhile]
    recorder = Recorder(cluster)
    watcher = await watch_until(
        recorder, lambda: len(recorder.events) >= 6 and len(cluster.watch_requests) == 3
    )
    assert recorder.summary(3) == [
        ("ADDED", "a", True, False),
        ("ADDED", "c", True, False),
        ("DELETED", "b", False, True),
    ]
    assert recorder.events[5].object == {
        "apiVersion": "kopf.dev/v1",
        "kind": "KopfExample",
        "metadata": {"uid": "uid-b", "name": "b", "namespace": "ns", "resourceVersion": "12"},
    }
    assert watcher.state.relists == 1
    assert versions(cluster)[-1] == "20"


@pytest.mark.anyio
async def test_a_stream_cut_mid_line_rewatches_from_the_last_version_without_relisting() -> None:
    cluster = Cluster()
    half = line("MODIFIED", kex("a", 13))[:25]
    cluster.watches = [
        stream(line("ADDED", kex("a", 12)), half),  # the end comes in the middle of a line
        stream(line("ADDED", kex("b", 14)) + half, then="break"),  # and so does a reset
    ]
    recorder = Recorder(cluster)
    watcher = await watch_until(recorder, lambda: len(cluster.watch_requests) == 3)
    assert recorder.summary() == [("ADDED", "a", False, False), ("ADDED", "b", False, False)]
    assert versions(cluster) == ["10", "12", "14"]
    assert len(cluster.lists) == 1
    assert "RemoteProtocolError" in (watcher.state.last_error or "")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "failure",
    [
        lambda: httpx.ConnectError("connection refused"),
        lambda: status(429, "TooManyRequests"),
        lambda: status(503, "ServiceUnavailable"),
        lambda: stream(line("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError"})),
    ],
    ids=["refused", "429", "503", "error-event-500"],
)
async def test_other_errors_back_off_and_resume_from_the_same_version(
    failure: Callable[[], httpx.Response | Exception],
) -> None:
    cluster = Cluster(kex("a", 5))
    after = stream(line("ADDED", kex("c", 13)), then="hang")
    cluster.watches = [stream(line("ADDED", kex("b", 12))), failure, after]
    recorder = Recorder(cluster)
    watcher = await watch_until(recorder, lambda: len(recorder.events) >= 3)
    assert recorder.summary(1) == [("ADDED", "b", False, False), ("ADDED", "c", False, False)]
    assert versions(cluster) == ["10", "12", "12"]
    assert len(cluster.lists) == 1
    assert watcher.state.last_error
    assert watcher.state.failures == 0  # the event after the failure reset them


@pytest.mark.trio
async def test_a_stream_that_closes_at_once_is_backed_off_not_hammered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = Cluster()
    cluster.watches = [stream() for _ in range(1000)]
    async with await client_for(cluster) as client, trio.open_nursery() as nursery:
        watcher = Watcher(client, KEX)  # the default backoff: 0.8 s doubling up to 30 s
        await nursery.start(watcher.run, Recorder(cluster))
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert 4 <= len(cluster.watch_requests) <= 8
    assert watcher.state.phase is Phase.BACKING_OFF
    assert watcher.state.failures >= 4


@pytest.mark.trio
async def test_expiring_after_every_relisting_is_backed_off_not_looped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cluster = Cluster(kex("a", 5))
    gone = {"kind": "Status", "code": 410, "reason": "Expired"}
    cluster.watches = [stream(line("ERROR", gone)) for _ in range(1000)]
    async with await client_for(cluster) as client, trio.open_nursery() as nursery:
        watcher = Watcher(client, KEX)
        await nursery.start(watcher.run, Recorder(cluster))
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert 4 <= len(cluster.lists) <= 9
    assert watcher.state.relists >= len(cluster.lists) - 1  # the last one may still wait


@pytest.mark.anyio
async def test_a_garbled_line_rewatches_from_the_last_version() -> None:
    cluster = Cluster()
    cluster.watches = [
        stream(line("ADDED", kex("a", 12)), b"{not json}\n", line("ADDED", kex("b", 13))),
        stream(line("ERROR", "not a status")),  # type: ignore[arg-type]
    ]
    recorder = Recorder(cluster)
    await watch_until(recorder, lambda: len(cluster.watch_requests) == 3)
    assert recorder.summary() == [("ADDED", "a", False, False)]
    assert versions(cluster) == ["10", "12", "12"]
    assert len(cluster.lists) == 1


@pytest.mark.anyio
async def test_inactivity_reconnects_from_the_last_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="anyop.kube")
    cluster = Cluster()
    cluster.watches = [stream(line("ADDED", kex("a", 12)), then="hang")]
    watcher = await watch_until(
        Recorder(cluster),
        lambda: len(cluster.watch_requests) == 2,
        settings=watching(inactivity_timeout=0.1),
    )
    assert versions(cluster) == ["10", "12"]
    assert "Watch-stream for kopfexamples.v1.kopf.dev was silent for 0s" in caplog.text
    assert watcher.state.restarts >= 1
    assert len(cluster.lists) == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("then", "stalled"),
    [(line("ADDED", kex("b", 13)), True), (bookmark(13), False)],
    ids=["a-change-waited", "nothing-waited"],
)
async def test_a_silence_is_called_a_stall_only_if_changes_waited_for_the_next_stream(
    caplog: pytest.LogCaptureFixture, then: bytes, stalled: bool
) -> None:
    """A quiet resource's stream may be silent for two bookmark periods: given up, it is
    watched again; a warning says it was a stall only if a change comes at once."""
    cluster = Cluster()
    cluster.watches = [stream(line("ADDED", kex("a", 12)), then="hang"), stream(then, then="hang")]
    await watch_until(
        Recorder(cluster),
        lambda: len(cluster.watch_requests) == 3,
        settings=watching(inactivity_timeout=0.1),
    )
    warned = "Watch-stream for kopfexamples.v1.kopf.dev was stalled: changes waited 0s" in (
        caplog.text
    )
    assert warned == stalled
    assert "is inactive" not in caplog.text


@pytest.mark.anyio
async def test_the_client_limit_ends_a_stream_without_calling_it_a_stall(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster()
    watcher = await watch_until(
        Recorder(cluster),
        lambda: len(cluster.watch_requests) == 3,
        settings=watching(client_timeout=0.05, inactivity_timeout=60),
        policy=dataclasses.replace(FAST, quick_close=0.01),  # 0.05 s is not "at once" here
    )
    assert "inactive" not in caplog.text
    assert watcher.state.failures == 0


@pytest.mark.anyio
async def test_the_client_limit_ends_a_stream_even_with_lines_read_ahead() -> None:
    class Busy(Recorder):
        async def __call__(self, event: WatchEvent) -> None:
            await super().__call__(event)
            if event.object["metadata"]["name"] == "a" and len(self.events) == 1:
                await anyio.sleep(0.2)  # past the stream's 0.05 s limit

    cluster = Cluster()
    both = line("ADDED", kex("a", 12)) + line("ADDED", kex("b", 13))  # one chunk: b read ahead
    cluster.watches = [stream(both, then="hang"), stream(line("ADDED", kex("b", 13)), then="hang")]
    recorder = Busy(cluster)
    await watch_until(
        recorder,
        lambda: len(cluster.watch_requests) == 3,
        settings=watching(client_timeout=0.05, inactivity_timeout=60),
        policy=dataclasses.replace(FAST, quick_close=0.01),
    )
    assert versions(cluster)[:2] == ["10", "12"]  # b was left unread: it came again, once
    assert [name for _, name, _, _ in recorder.summary()] == ["a", "b"]


EVERYTHING = ShardRanges(((0, 1 << 63), (1 << 63, 1 << 64)))  # in two halves: a selector
QUARTERS = ShardRanges(((0, 1 << 62), (1 << 62, 1 << 64)))


def without(body: dict[str, Any]) -> ShardRanges:
    """A share that does not hold this object."""
    hashed = uid_hash(body["metadata"]["uid"])
    return ShardRanges(tuple(r for r in ((0, hashed), (hashed + 1, 1 << 64)) if r[0] < r[1]))


@pytest.mark.anyio
async def test_a_shard_selector_goes_with_every_request_for_the_share_of_its_moment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster(kex("a", 5))
    cluster.watches = [stream(line("ADDED", kex("b", 12)))]  # then the stream ends
    shares = iter([EVERYTHING, EVERYTHING, QUARTERS])  # the replica's share changes meanwhile
    watcher = await watch_until(
        Recorder(cluster), lambda: len(cluster.watch_requests) == 2, shard=lambda: next(shares)
    )
    assert cluster.lists[0].url.params["shardSelector"] == EVERYTHING.selector
    sent = [r.url.params.get("shardSelector") for r in cluster.watch_requests]
    assert sent == [EVERYTHING.selector, QUARTERS.selector]
    assert watcher.server_sharded
    assert "ignores shard selectors" not in caplog.text


@pytest.mark.anyio
@pytest.mark.parametrize("echoed", [False, True], ids=["custom", "typed"])
async def test_an_object_outside_the_share_shows_the_server_ignores_it_and_is_said_once(
    caplog: pytest.LogCaptureFixture, echoed: bool
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.kube")
    first, second = kex("a", 5), kex("b", 12)
    cluster = Cluster(first)
    cluster.sharding = echoed  # a typed list says it applied the selector: no object is checked
    expired = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    cluster.watches = [stream(line("ADDED", second), line("ERROR", expired))]
    watcher = await watch_until(
        Recorder(cluster),
        lambda: len(cluster.watch_requests) == 2,
        shard=lambda: without(first if not echoed else second),
    )
    lists = [r.url.params.get("shardSelector") is not None for r in cluster.lists]
    watches = [r.url.params.get("shardSelector") is not None for r in cluster.watch_requests]
    if echoed:  # b came on the watch-stream: that tells
        assert (lists, watches) == ([True, False], [True, False])
    else:  # a came in the listing: that tells
        assert (lists, watches) == ([True, False], [False, False])
    assert not watcher.server_sharded
    assert caplog.text.count("ignores shard selectors") == 1


@pytest.mark.anyio
async def test_after_enough_objects_inside_the_share_the_server_is_trusted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A server that ignored the selector would have sent another replica's object among the
    # first ones; after SHARE_CHECKS inside the share, no uid is hashed again (the engine still
    # admits only its own objects).
    caplog.set_level(logging.INFO, logger="anyop.kube")
    outsider = kex("z", 1000)
    listed = [kex(f"o{i}", 10 + i) for i in range(SHARE_CHECKS)]
    cluster = Cluster(*listed)
    cluster.watches = [stream(line("ADDED", outsider), then="hang")]
    recorder = Recorder(cluster)
    watcher = await watch_until(
        recorder, lambda: len(recorder.events) == SHARE_CHECKS + 1, shard=lambda: without(outsider)
    )
    assert watcher.server_sharded
    assert "ignores shard selectors" not in caplog.text


@pytest.mark.anyio
async def test_a_streaming_list_sends_the_shard_selector_and_checks_its_objects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="anyop.kube")
    cluster = Cluster(kex("a", 5))
    cluster.watches = [stream(line("ADDED", kex("a", 5)), initial_end(10), then="hang")]
    await watch_until(
        Recorder(cluster),
        lambda: len(cluster.watch_requests) == 2,
        shard=lambda: without(kex("a", 5)),
        settings=watching(streaming_lists=True),
    )
    sent = [r.url.params.get("shardSelector") is not None for r in cluster.watch_requests]
    assert sent == [True, False]  # "a" was outside: the server ignores the selector
    assert cluster.lists == []
    assert "ignores shard selectors" in caplog.text


@pytest.mark.anyio
async def test_a_failing_handler_is_logged_and_the_watch_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster(kex("a", 5))
    cluster.watches = [stream(line("ADDED", kex("b", 12)), line("ADDED", kex("c", 13)))]
    recorder = Recorder(cluster, fail_on="b")
    await watch_until(recorder, lambda: len(recorder.events) >= 3)
    assert [name for _, name, _, _ in recorder.summary()] == ["a", "b", "c"]
    assert "failed on a ADDED event; continuing" in caplog.text
    assert "RuntimeError: a bug in the engine" in caplog.text


@pytest.mark.anyio
async def test_a_failing_initial_listing_is_retried_until_it_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = Cluster(kex("a", 5))
    answers = [status(500, "InternalError"), status(500, "InternalError")]

    async def flaky(request: httpx.Request) -> httpx.Response:
        return answers.pop(0) if answers else await cluster(request)

    vault = Vault()
    await vault.populate({"token": ConnectionInfo("https://k8s.test", token="t")})
    settings = OperatorSettings.model_validate({"networking": {"error_backoffs": ()}})
    factory = lambda info, ctx: httpx.MockTransport(flaky)  # noqa: E731
    recorder = Recorder(cluster)
    client = open_client(vault, settings=settings, transport_factory=factory)
    async with client, anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(Watcher(client, KEX, policy=FAST).run, recorder)
        tg.cancel_scope.cancel()
    assert recorder.summary() == [("ADDED", "a", True, False)]
    assert caplog.text.count("Watch-stream for kopfexamples.v1.kopf.dev failed") == 2


@pytest.mark.anyio
async def test_a_missing_resource_is_said_quietly_at_first_then_loudly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A deleted CRD's watch gets a 404 or two before the operator stops it: INFO, not WARNING;
    a 404 that lasts is a WARNING."""
    cluster = Cluster(kex("a", 5))
    answers = [status(404, "NotFound") for _ in range(4)]

    async def missing(request: httpx.Request) -> httpx.Response:
        return answers.pop(0) if answers else await cluster(request)

    vault = Vault()
    await vault.populate({"token": ConnectionInfo("https://k8s.test", token="t")})
    settings = OperatorSettings.model_validate({"networking": {"error_backoffs": ()}})
    factory = lambda info, ctx: httpx.MockTransport(missing)  # noqa: E731
    client = open_client(vault, settings=settings, transport_factory=factory)
    caplog.set_level(logging.INFO, logger="anyop")
    async with client, anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(Watcher(client, KEX, policy=FAST).run, Recorder(cluster))
        tg.cancel_scope.cancel()
    quiet = [r for r in caplog.records if "the resource is not found" in r.getMessage()]
    loud = [r for r in caplog.records if "failed; retrying" in r.getMessage()]
    assert [r.levelno for r in quiet] == [logging.INFO] * QUIET_404S
    assert [r.levelno for r in loud] == [logging.WARNING] * (4 - QUIET_404S)
    assert "(404 NotFound)" in loud[0].getMessage()


def test_an_api_error_outcome_keeps_its_status() -> None:
    assert outcome_of_error(NotFoundError("no", status=404)) == Failed(
        "NotFoundError: (404) no", None, 404
    )


@pytest.mark.trio
async def test_cancelling_mid_stream_leaves_no_generator_behind() -> None:
    cluster = Cluster()
    cluster.watches = [stream(line("ADDED", kex("a", 12)), then="hang")]
    blocked = trio.Event()

    async def handle(event: WatchEvent) -> None:
        if not event.listed:
            blocked.set()
            await trio.sleep_forever()  # cancelled here, while the stream is suspended

    async with await client_for(cluster) as client, trio.open_nursery() as nursery:
        await nursery.start(Watcher(client, KEX).run, handle)
        with trio.fail_after(DEADLINE):
            await blocked.wait()
        nursery.cancel_scope.cancel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
        await trio.lowlevel.checkpoint()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_namespace_for_a_cluster_scoped_resource_fails_early() -> None:
    nodes = Resource("", "v1", "nodes", namespaced=False)
    client = KubeClient.__new__(KubeClient)
    client.settings = OperatorSettings()
    with pytest.raises(ValueError, match="cluster-scoped"):
        Watcher(client, nodes, namespace="ns")


def test_a_watcher_shows_its_resource_and_phase() -> None:
    client = KubeClient.__new__(KubeClient)
    client.settings = OperatorSettings()
    expected = "<Watcher kopfexamples.v1.kopf.dev in 'ns' listing>"
    assert repr(Watcher(client, KEX, namespace="ns")) == expected


# Streaming lists (sendInitialEvents)

STREAMING = OperatorSettings.model_validate({"watching": {"streaming_lists": True}})


def initial_end(version: int) -> bytes:
    annotations = {"k8s.io/initial-events-end": "true"}
    body = {"kind": "KopfExample", "metadata": {"resourceVersion": str(version),
                                                "annotations": annotations}}  # fmt: skip
    return json.dumps({"type": "BOOKMARK", "object": body}).encode() + b"\n"


async def streaming_client(cluster: Cluster) -> KubeClient:
    vault = Vault()
    await vault.populate({"token": ConnectionInfo("https://k8s.test", token="t")})
    return open_client(vault, settings=STREAMING, transport_factory=cluster.factory)


@pytest.mark.anyio
async def test_a_streaming_list_dispatches_the_initial_events_then_watches_from_the_bookmark() -> (
    None
):
    cluster = Cluster()
    cluster.watches = [
        stream(line("ADDED", kex("a", 11)), line("ADDED", kex("b", 12)), initial_end(15),
               then="hang"),
        stream(line("MODIFIED", kex("a", 16)), then="hang"),
    ]  # fmt: skip
    recorder = Recorder(cluster)
    async with await streaming_client(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, policy=FAST)
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
            await cluster.wait_for(lambda: len(recorder.events) == 3)
        tg.cancel_scope.cancel()
    assert recorder.summary() == [
        ("ADDED", "a", True, False), ("ADDED", "b", True, False), ("MODIFIED", "a", False, False)
    ]  # fmt: skip
    assert cluster.lists == []  # no page was listed
    first, second = cluster.watch_requests
    assert first.url.params["sendInitialEvents"] == "true"
    assert first.url.params["resourceVersionMatch"] == "NotOlderThan"
    assert "resourceVersion" not in first.url.params
    assert "sendInitialEvents" not in second.url.params  # a resume never asks for it again
    assert second.url.params["resourceVersion"] == "15"


@pytest.mark.anyio
async def test_a_refused_streaming_list_falls_back_to_pages_for_good() -> None:
    cluster = Cluster(kex("a", 11))
    refusal = status(422, "Invalid", causes=[{"field": "sendInitialEvents"}])
    cluster.watches = [refusal, stream(then="end"), stream(then="hang")]
    recorder = Recorder(cluster)
    async with await streaming_client(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, policy=FAST)
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
            await cluster.wait_for(lambda: len(cluster.watch_requests) >= 3)
        tg.cancel_scope.cancel()
    assert recorder.summary() == [("ADDED", "a", True, False)]
    assert len(cluster.lists) == 1
    assert all("sendInitialEvents" not in r.url.params for r in cluster.watch_requests[1:])


@pytest.mark.anyio
async def test_a_streaming_list_cut_before_its_end_is_retried_and_nothing_is_half_synced() -> None:
    cluster = Cluster()
    cluster.watches = [
        stream(line("ADDED", kex("a", 11)), then="break"),
        stream(line("ADDED", kex("a", 11)), line("ADDED", kex("b", 12)), initial_end(15),
               then="hang"),
    ]  # fmt: skip
    recorder = Recorder(cluster)
    async with await streaming_client(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, policy=FAST)
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)  # started only once the list is complete
        tg.cancel_scope.cancel()
    assert [name for _, name, _, _ in recorder.summary()] == ["a", "a", "b"]
    assert watcher.state.synced
    assert watcher.state.resource_version == "15"
    assert all(r.url.params.get("sendInitialEvents") == "true" for r in cluster.watch_requests[:2])


@pytest.mark.anyio
async def test_a_server_that_ignores_streaming_lists_is_listed_in_pages_once_its_stream_ends() -> (
    None
):
    cluster = Cluster(kex("a", 11))
    cluster.watches = [stream(line("ADDED", kex("a", 11)), then="end"), stream(then="hang")]
    recorder = Recorder(cluster)
    async with await streaming_client(cluster) as client, anyio.create_task_group() as tg:
        with anyio.fail_after(DEADLINE):
            await tg.start(Watcher(client, KEX, policy=FAST).run, recorder)
        tg.cancel_scope.cancel()
    assert [name for _, name, _, _ in recorder.summary()] == ["a", "a"]
    assert len(cluster.lists) == 1


@pytest.mark.anyio
async def test_a_relist_asked_while_watching_cuts_the_stream_and_lists_anew() -> None:
    cluster = Cluster(kex("a", 5), kex("b", 6))
    recorder = Recorder(cluster)
    async with await client_for(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, policy=FAST)
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
            await cluster.wait_for(lambda: len(cluster.watch_requests) == 1)  # it hangs there
            del cluster.objects["uid-b"]
            cluster.objects["uid-c"] = kex("c", 14)
            watcher.relist()
            await cluster.wait_for(lambda: len(cluster.watch_requests) == 2)
        tg.cancel_scope.cancel()
    assert recorder.summary(2) == [
        ("ADDED", "a", True, False),
        ("ADDED", "c", True, False),
        ("DELETED", "b", False, True),
    ]
    assert len(cluster.lists) == 2
    assert (watcher.state.relists, watcher.state.failures, watcher.state.last_error) == (1, 0, None)


@pytest.mark.anyio
async def test_a_relist_asked_before_the_first_listing_costs_no_second_one() -> None:
    cluster = Cluster(kex("a", 5))
    recorder = Recorder(cluster)
    async with await client_for(cluster) as client, anyio.create_task_group() as tg:
        watcher = Watcher(client, KEX, policy=FAST)
        watcher.relist()  # before it runs: its first listing is that new listing
        with anyio.fail_after(DEADLINE):
            await tg.start(watcher.run, recorder)
            await cluster.wait_for(lambda: len(cluster.watch_requests) == 1)
        tg.cancel_scope.cancel()
    assert recorder.summary() == [("ADDED", "a", True, False)]
    assert len(cluster.lists) == 1
    assert watcher.state.relists == 0


def test_a_store_behind_our_version_went_back_only_if_both_are_numbers() -> None:
    assert went_back("120", "20")
    assert not went_back("120", "120")
    assert not went_back("120", "121")
    assert not went_back(None, "20")
    assert not went_back("opaque-1", "20")


@pytest.mark.anyio
async def test_after_a_failure_a_store_that_went_back_is_listed_anew() -> None:
    """etcd restored from an older copy: the server would hold a watch from our version
    silently; its version, checked after the failure, is behind ours: list anew."""
    cluster = Cluster(kex("a", 5), kex("b", 6))

    def restored() -> httpx.Response | Exception:
        del cluster.objects["uid-b"]  # undone by the restore
        cluster.version = 8  # behind the 120 we watch from
        return httpx.ConnectError("the API server restarts")

    cluster.watches = [stream(line("MODIFIED", kex("a", 120))), restored]
    recorder = Recorder(cluster)
    watcher = await watch_until(
        recorder, lambda: len(recorder.events) >= 5 and len(cluster.watch_requests) >= 3
    )
    assert recorder.summary(3) == [("ADDED", "a", True, False), ("DELETED", "b", False, True)]
    assert watcher.state.relists == 1
    assert len(cluster.probes) == 1
    assert "its storage went back" in (watcher.state.last_error or "")


@pytest.mark.anyio
async def test_after_a_failure_a_store_that_went_on_is_watched_from_our_version() -> None:
    """A paused or restarted server that kept its store: no listing, the watch goes on."""
    cluster = Cluster(kex("a", 5))
    cluster.watches = [stream(line("MODIFIED", kex("a", 12))), httpx.ConnectError("refused")]
    recorder = Recorder(cluster)
    watcher = await watch_until(recorder, lambda: len(cluster.watch_requests) >= 3)
    assert versions(cluster)[-1] == "12"
    assert (len(cluster.lists), len(cluster.probes), watcher.state.relists) == (1, 1, 0)


@pytest.mark.anyio
async def test_a_version_check_that_gets_no_answer_is_a_failure_and_is_tried_again() -> None:
    """A paused server: the check is bounded like a watch's opening, fails, and comes again."""
    cluster = Cluster(kex("a", 5))
    hangs = [True]
    original = cluster.__call__

    async def answering(request: httpx.Request) -> httpx.Response:
        if Cluster.probe(request) and hangs:
            hangs.clear()
            cluster.requests.append(request)
            await anyio.sleep_forever()
        return await original(request)

    cluster.watches = [httpx.ConnectError("refused")]
    cluster.factory = lambda info, context: httpx.MockTransport(answering)  # type: ignore[method-assign]
    recorder = Recorder(cluster)
    watcher = await watch_until(
        recorder,
        lambda: len(cluster.watch_requests) >= 2,
        settings=watching(inactivity_timeout=0.5),
    )
    assert len(cluster.probes) == 2  # the one that got no answer, then one that did
    assert watcher.state.relists == 0


def test_a_stream_that_ends_at_once_with_nothing_is_the_failure_it_is_backed_off_as() -> None:
    policy = WatchPolicy()
    failure = quick_end(Ended(0, policy.quick_close / 2), policy)
    assert isinstance(failure, Failed)
    assert "closed after" in str(failure.error)
    assert quick_end(Ended(0, policy.quick_close * 2), policy) is None  # a normal end
    assert quick_end(Ended(3, 0.01), policy) is None  # it brought events
    assert quick_end(Stalled(5.0), policy) is None
