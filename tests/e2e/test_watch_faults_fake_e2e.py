"""Rows 10, 12, 13, 14 and 15 of RELIABILITY.md §5 against a whole operator, on FakeCluster.

Each fault strikes the operator's watch of its objects, which are changed, created and deleted
meanwhile; then the "nothing lost" checks hold: every object's last change is handled (L1),
each handler call is in the ledger once (L2), and the objects the watch knows are those of the
store, at their versions (L5). The row's own behaviour is counted from the requests the fake saw:

- row 10: a 410 answer to the watch request itself (not an ``ERROR`` event: row 11) after the
  history was compacted; the relist comes in pages, handles only what changed, and an object
  that vanished meanwhile comes as a synthetic DELETED;
- row 12: ``ERROR`` events with a 500 ``Status`` inside the watch-stream; the watch backs off and
  resumes from the same version, with no relist; the watcher survives;
- row 13: a 504 "Too large resource version" (as an ``ERROR`` event, or as the answer); a relist
  with no resourceVersion;
- row 14: watches answered 200 that end at once, for ten minutes: backed off like failures;
- row 15: an hour of a quiet resource, with and without the server's bookmarks.

The real API server cannot make these faults here (see docs/reliability.md, each row's note).
Time is virtual (Trio's ``MockClock``, or an asyncio loop with a fake clock).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from tests.e2e.test_fake_faults_e2e import CRD, anyio_backend, errors, served  # noqa: F401 (a fixture)

import anyop
from anyop.engine.operator.health import Health, current_health
from anyop.engine.resource.serve_resource import Watched
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.resources import Resource
from anyop.kube.watchstate import Phase
from anyop.testing import FakeCluster, Fault
from anyop.testing.fake.api import ApiRequest, ApiResponse, is_watch
from anyop.testing.handle import RunningOperator

pytestmark = pytest.mark.anyio

KEX = Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")
NAMESPACE = "watching"
PATH = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfexamples"
WAIT = 3600.0  # virtual seconds; only reached when something is broken
PAGE = "500"  # the watch's list page size
EARLY = ["early-0", "early-1", "early-2"]


@dataclasses.dataclass(frozen=True)
class Sent:
    """One request of the operator: when (virtual seconds), what, and the answer's status."""

    time: float
    method: str
    path: str
    query: dict[str, str]
    status: int
    watch: bool
    struck: bool  # a fault struck it

    @property
    def version(self) -> str | None:
        """The resourceVersion it asked for."""
        return self.query.get("resourceVersion")


class WatchedCluster(FakeCluster):
    """A FakeCluster that notes the operator's requests.

    Args:
        bookmarks: With ``False``, watches are served as if the client had not asked for
            bookmarks: a server that sends none (with its watch cache off, say).
    """

    def __init__(self, *, bookmarks: bool = True) -> None:
        super().__init__(seed=10)
        self.bookmarks = bookmarks
        self.sent: list[Sent] = []

    async def respond(
        self, request: ApiRequest, *, faults: bool = True
    ) -> ApiResponse | AsyncIterator[bytes]:
        if not faults:  # the test's own
            return await super().respond(request, faults=False)
        watch = is_watch(request)
        if watch and not self.bookmarks:
            query = {k: v for k, v in request.query.items() if k != "allowWatchBookmarks"}
            request = dataclasses.replace(request, query=query)
        before = len(self.faults.struck)
        answer = await super().respond(request)
        status = answer.status if isinstance(answer, ApiResponse) else 200
        now, query, hit = (
            anyio.current_time(),
            dict(request.query),
            len(self.faults.struck) > before,
        )
        self.sent.append(Sent(now, request.method, request.path, query, status, watch, hit))
        return answer

    def watches(self, since: float = 0.0) -> list[Sent]:
        """The operator's watches of the objects from ``since`` on."""
        return [s for s in self.sent if s.watch and s.path == PATH and s.time >= since]

    def lists(self, since: float = 0.0) -> list[Sent]:
        """The operator's lists of the objects (pages, and lists of one) from ``since`` on."""
        return [s for s in self.sent if not s.watch and s.path == PATH and s.time >= since]

    def stored(self) -> dict[str, tuple[str, str]]:
        """The objects in the store: uid -> (name, resourceVersion)."""
        objects = self.store.objects[(KEX.group, KEX.plural)].values()
        return {b["metadata"]["uid"]: _named(b["metadata"]) for b in objects}


def _named(metadata: dict[str, Any]) -> tuple[str, str]:
    return str(metadata["name"]), str(metadata["resourceVersion"])


def cluster(count: int = 0, *, bookmarks: bool = True) -> WatchedCluster:
    """A fake with the CRD, the namespace, and the early objects (or ``count`` others)."""
    fake = WatchedCluster(bookmarks=bookmarks)
    fake.apply(CRD)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    names = [f"kex-{index:04d}" for index in range(count)] if count else EARLY
    for name in names:
        body = {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"field": "one"}}
        fake.create({"apiVersion": KEX.api_version, "kind": KEX.kind, **body})
    return fake


class Ledger:
    """Every handler call, every raw event, and the operator's :class:`Health`."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.events: list[tuple[str, str]] = []
        self.health: Health | None = None

    def note(self, handler: str, name: str) -> None:
        self.calls[handler, name] += 1
        self.health = self.health or current_health.get()

    def watched(self) -> Watched:
        """The served objects: their watch and their workers."""
        assert self.health is not None
        return next(w for w in self.health.watchers.values() if w.resource.plural == KEX.plural)

    def handled(self, handler: str) -> int:
        return sum(1 for called, _ in self.calls if called == handler)

    def settled(self, fake: WatchedCluster) -> bool:
        """No worker busy, and the watch knows the store's objects at their versions (L5)."""
        watched = self.watched()
        return watched.workers.busy == 0 and view(watched) == fake.stored()


def view(watched: Watched) -> dict[str, tuple[str, str]]:
    """The operator's view: the objects its watch knows, uid -> (name, resourceVersion)."""
    return {uid: (name, rv) for uid, (_, name, rv) in watched.watcher._known.items()}


def ledgered() -> tuple[OperatorRegistry, Ledger]:
    """Creation, update and deletion handlers (with a finalizer), and a raw event handler."""
    registry, ledger = OperatorRegistry(), Ledger()

    @anyop.on.create("kopfexamples", registry=registry, id="create_fn")
    async def create_fn(name: str, **_: Any) -> None:
        ledger.note("create_fn", name)

    @anyop.on.update("kopfexamples", registry=registry, id="update_fn")
    async def update_fn(name: str, **_: Any) -> None:
        ledger.note("update_fn", name)

    @anyop.on.delete("kopfexamples", registry=registry, id="delete_fn")
    async def delete_fn(name: str, **_: Any) -> None:
        ledger.note("delete_fn", name)

    @anyop.on.event("kopfexamples", registry=registry, id="event_fn")
    async def event_fn(type: str, name: str, **_: Any) -> None:
        ledger.events.append((type, name))

    return registry, ledger


def watching(server_timeout: float | None = 30) -> anyop.OperatorSettings:
    """Watches that the server ends every ``server_timeout`` seconds (``None``: 240-290)."""
    settings = anyop.OperatorSettings()
    settings.watching.server_timeout = server_timeout
    return settings


async def until(condition: Callable[[], bool]) -> float:
    """Wait until the condition holds; return when it did (virtual seconds)."""
    with anyio.fail_after(WAIT):
        while not condition():
            await anyio.sleep(0.1)
    return anyio.current_time()


def struck(fake: FakeCluster) -> int:
    return len(fake.faults.struck)


def first_struck(fake: WatchedCluster) -> float:
    """When the first fault struck (virtual seconds)."""
    return next(s.time for s in fake.sent if s.struck)


async def change_one_and_create_one(operator: RunningOperator) -> None:
    """An early object changed, a new one created: the changes the watch must not lose."""
    await operator.patch(KEX, "early-0", {"spec": {"field": "two"}})
    await operator.create(KEX, {"metadata": {"name": "late-0"}, "spec": {"field": "one"}})


def each_call_once(*extra: tuple[str, str]) -> Counter[tuple[str, str]]:
    """The early objects' creation, then ``change_one_and_create_one``'s, each handled once."""
    calls = [("create_fn", name) for name in EARLY]
    return Counter([*calls, ("update_fn", "early-0"), ("create_fn", "late-0"), *extra])


def warnings_of(operator: RunningOperator, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in operator.records
        if r.levelno == logging.WARNING and text in r.getMessage()
    ]


async def test_row10_a_410_answer_to_the_watch_relists_in_pages_and_deletes_what_vanished() -> None:
    """600 objects (two pages); the watch is down while one changes, one is created, one is
    deleted (our finalizer holds it) and one is force-deleted (its finalizers removed); the
    history is compacted and the watch's return is answered 410. The relist comes in two pages
    with no resourceVersion; only the changes are handled; the vanished object's DELETED
    comes, synthetic, to the event handler; the engine's view equals the store."""
    count = 600
    fake, (registry, ledger) = cluster(count), ledgered()
    async with served(fake, registry, watching(), namespace=NAMESPACE) as operator:
        logging.getLogger("anyop").setLevel(logging.INFO)  # 600 objects' DEBUG records
        await until(lambda: ledger.handled("create_fn") == count and ledger.settled(fake))
        fake.faults.script(Fault.server_error(503), path=PATH, watch=True, times=None)
        await until(lambda: struck(fake) >= 1)  # the watch is down
        await operator.patch(KEX, "kex-0000", {"spec": {"field": "two"}})
        await operator.create(KEX, {"metadata": {"name": "new"}, "spec": {"field": "one"}})
        await operator.delete(KEX, "kex-0001")  # our finalizer holds it: Terminating
        await operator.delete(KEX, "kex-0002")
        await operator.patch(KEX, "kex-0002", {"metadata": {"finalizers": None}})  # forced: gone
        fake.compact()
        fake.faults.clear()
        fake.faults.script(Fault.expire(in_stream=False), path=PATH, watch=True)
        back = anyio.current_time()
        await until(lambda: ledger.watched().state.relists == 1)
        done = await until(lambda: ledger.calls["delete_fn", "kex-0001"] and ledger.settled(fake))
        known = {name for name, _ in view(ledger.watched()).values()}
        assert errors(operator) == []
    expired = [s for s in fake.watches(back) if s.status == 410]
    pages = [s for s in fake.lists(back) if s.query.get("limit") == PAGE]
    checks = [s for s in fake.lists(back) if s.query.get("limit") == "1"]
    print(f"\nrow 10: 410 to {len(expired)} watch; relisted in {len(pages)} pages of {PAGE}")
    print(f"  after {len(checks)} version check(s); all handled {done - back:.1f} s virtual later")
    assert len(expired) == 1
    assert [bool(s.query.get("continue")) for s in pages] == [False, True]
    assert all(not s.version for s in pages)
    expected = Counter({("create_fn", f"kex-{index:04d}"): 1 for index in range(count)})
    expected.update([("create_fn", "new"), ("update_fn", "kex-0000"), ("delete_fn", "kex-0001")])
    assert ledger.calls == expected  # the relist handled the changes only, each once
    deleted = Counter(name for kind, name in ledger.events if kind == "DELETED")
    assert deleted == {"kex-0001": 1, "kex-0002": 1}  # after the release; synthetic
    assert "new" in known  # L5
    assert not {"kex-0001", "kex-0002"} & known


async def test_row12_error_500_events_back_off_and_watch_again_from_the_same_version() -> None:
    """Three watches in a row get an ``ERROR`` event with a 500 ``Status`` and end; meanwhile
    an object changes and one is created. Each failure is backed off (0.8 s, 1.6 s, 3.2 s
    ± 20 %), and every watch that follows asks for the same resourceVersion: no relist."""
    fake, (registry, ledger) = cluster(), ledgered()
    async with served(fake, registry, watching(), namespace=NAMESPACE) as operator:
        await until(lambda: ledger.handled("create_fn") == len(EARLY) and ledger.settled(fake))
        watcher = ledger.watched().watcher
        error = Fault.server_error(500, in_stream=True)
        fake.faults.script(error, path=PATH, watch=True, times=3)
        await until(lambda: struck(fake) >= 1)
        await change_one_and_create_one(operator)
        failed = first_struck(fake)
        done = await until(lambda: ledger.calls["create_fn", "late-0"] and ledger.settled(fake))
        state = ledger.watched().state
        assert ledger.watched().watcher is watcher  # the watcher survived
        assert ledger.health is not None
        assert ledger.health.problems() == {}
        logged = warnings_of(operator, "(500 InternalError) Internal error occurred")
        assert errors(operator) == []
    watches = fake.watches(failed)
    waits = [b.time - a.time for a, b in itertools.pairwise(watches[:4])]
    shown = [round(wait, 2) for wait in waits]
    print(f"\nrow 12: {struck(fake)} ERROR 500 events; re-watched after {shown} s from version")
    print(f"  {watches[0].version}; {len(fake.lists(failed))} version checks; handled in")
    print(f"  {done - failed:.1f} s virtual")
    assert struck(fake) == len(logged) == 3
    assert len({s.version for s in watches[:4]}) == 1  # the same version, every time
    assert [0.79 <= wait / (0.8 * 2**n) <= 1.21 for n, wait in enumerate(waits)] == [True] * 3
    assert all(s.query.get("limit") == "1" for s in fake.lists(failed))  # no relist
    assert (state.relists, state.failures, state.phase) == (0, 0, Phase.WATCHING)
    assert ledger.calls == each_call_once()


@pytest.mark.parametrize("in_stream", [True, False], ids=["event", "answer"])
async def test_row13_a_too_large_version_relists_with_no_version(in_stream: bool) -> None:
    """A watch is answered 504 "Too large resource version" (as an ``ERROR`` event, as
    kube-apiserver's watch cache sends it, or as the answer); an object changes and one is
    created meanwhile. The watcher lists anew at once, asking for no resourceVersion, and
    watches from the list's; the relist handles the changes only."""
    fake, (registry, ledger) = cluster(), ledgered()
    async with served(fake, registry, watching(), namespace=NAMESPACE) as operator:
        await until(lambda: ledger.handled("create_fn") == len(EARLY) and ledger.settled(fake))
        fake.faults.script(Fault.too_large(in_stream=in_stream), path=PATH, watch=True)
        await until(lambda: struck(fake) >= 1)
        await change_one_and_create_one(operator)
        refused = first_struck(fake)
        done = await until(lambda: ledger.calls["create_fn", "late-0"] and ledger.settled(fake))
        state = ledger.watched().state
        assert errors(operator) == []
    lists, watches = fake.lists(refused), fake.watches(refused)
    print(f"\nrow 13 ({'event' if in_stream else 'answer'}): {len(lists)} list after the 504;")
    print(f"  handled in {done - refused:.1f} s virtual")
    assert [(s.query.get("limit"), s.version) for s in lists] == [(PAGE, None)]
    assert lists[0].time - refused < 0.5  # at once, with no backoff
    assert watches[0].status == (200 if in_stream else 504)
    assert int(watches[1].version or 0) >= int(watches[0].version or 0)  # the list's version
    assert (state.relists, state.phase) == (1, Phase.WATCHING)
    assert ledger.calls == each_call_once()


async def test_row14_watches_that_end_at_once_are_backed_off_not_hammered() -> None:
    """For ten minutes, every watch is answered 200 and ends at once, with no event; an object
    changes and one is created meanwhile. The watch requests come at the backoff's pace (capped
    at 30 s ± 20 %), no list is sent; once watches work again, the changes are handled."""
    fake, (registry, ledger) = cluster(), ledgered()
    async with served(fake, registry, watching(), namespace=NAMESPACE) as operator:
        await until(lambda: ledger.handled("create_fn") == len(EARLY) and ledger.settled(fake))
        fake.faults.script(Fault.empty_watch(), path=PATH, watch=True, times=None)
        await until(lambda: struck(fake) >= 1)
        await change_one_and_create_one(operator)
        started = first_struck(fake)
        await anyio.sleep(300)
        assert ledger.health is not None
        failing = await ledger.health.liveness()
        await anyio.sleep(started + 600 - anyio.current_time())
        fake.faults.clear()
        cleared = anyio.current_time()
        done = await until(lambda: ledger.calls["create_fn", "late-0"] and ledger.settled(fake))
        healthy = await ledger.health.liveness()
        assert errors(operator) == []
    storm = [s.time for s in fake.watches(started) if s.time < cleared]
    per_minute = Counter(int((time - started) // 60) for time in storm)
    gaps = [b - a for a, b in itertools.pairwise(storm)]
    print(f"\nrow 14: {len(storm)} watches in 10 min; per minute {sorted(per_minute.items())};")
    print(f"  longest gap {max(gaps):.1f} s; handled {done - cleared:.1f} s after the end")
    assert 15 <= len(storm) <= 30
    assert max(count for minute, count in per_minute.items() if minute >= 1) <= 3
    assert 24.0 <= min(gaps[6:]) <= max(gaps) <= 36.0  # the cap, 30 s ± 20 %
    assert fake.lists(started) == []  # no relist, no version check
    assert failing[0] == 500  # failing, and silent for longer than 70 s
    assert "failing" in str(failing[1]["anyop"])
    assert healthy == (200, {})
    assert done - cleared <= 40.0
    assert ledger.calls == each_call_once()


@dataclasses.dataclass
class QuietHour:
    """What an hour of a quiet resource came to."""

    watches: list[Sent]  # the watches of the objects during the hour
    lists: list[Sent]  # the lists of the objects during the hour
    probes: list[int]  # the liveness probe's status, read every minute
    inactive: int  # watch-streams given up as silent (said at DEBUG: a silence alone is routine)
    last_change: str  # the resourceVersion of the objects' last change


async def quiet_hour(fake: WatchedCluster, *, minutes: int = 60) -> tuple[QuietHour, Ledger]:
    """Three objects handled, then an hour (of virtual time) in which they do not change, while
    config maps are created every five minutes (the store's version moves on); the liveness
    probe is read every minute. The server's watch timeouts are anyop's (240-290 s)."""
    registry, ledger = ledgered()
    async with served(fake, registry, watching(None), namespace=NAMESPACE) as operator:
        await until(lambda: ledger.handled("create_fn") == len(EARLY) and ledger.settled(fake))
        last_change = max(rv for _, rv in fake.stored().values())
        health, started, probes = ledger.health, anyio.current_time(), []
        assert health is not None
        for minute in range(minutes):
            if minute % 5 == 0:
                metadata = {"name": f"cm-{minute}", "namespace": NAMESPACE}
                fake.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
            await anyio.sleep(started + 60 * (minute + 1) - anyio.current_time())
            probes.append((await health.liveness())[0])
        assert ledger.settled(fake)  # L5
        inactive = sum(f"{KEX!r} was silent for" in r.getMessage() for r in operator.records)
        assert warnings_of(operator, "was stalled") == []  # nothing waited: no false alarm
        assert errors(operator) == []
    watches, lists = fake.watches(started), fake.lists(started)
    return QuietHour(watches, lists, probes, inactive, last_change), ledger


def rewatched_at_the_timeouts(quiet: QuietHour) -> list[float]:
    """How long after its own ``timeoutSeconds`` each watch was followed by the next one."""
    pairs = itertools.pairwise(quiet.watches)
    return [b.time - a.time - float(a.query["timeoutSeconds"]) for a, b in pairs]


async def test_row15_a_quiet_hour_with_bookmarks_rewatches_only_at_the_servers_timeouts() -> None:
    """An hour without a change of the objects: the server's bookmarks (every minute) keep the
    watch from looking stalled; it is watched again only when the server ends it, from the
    bookmarks' version (which moved on with the other objects), and no bookmark reaches a
    handler; the probe says healthy all along."""
    fake = cluster()
    quiet, ledger = await quiet_hour(fake)
    lates = rewatched_at_the_timeouts(quiet)
    print(f"\nrow 15 (bookmarks): {len(quiet.watches)} watches in an hour, each {max(lates):.2f} s")
    print(f"  at most after its timeout; {len(quiet.lists)} lists; probes {set(quiet.probes)}")
    assert 12 <= len(quiet.watches) <= 16  # 3600 s / 240-290 s
    assert all(0 <= late <= 0.5 for late in lates)  # when the server ended it, not before
    assert quiet.inactive == 0
    assert quiet.lists == []
    assert all(int(s.version or 0) > int(quiet.last_change) for s in quiet.watches[1:])
    assert set(quiet.probes) == {200}
    assert "BOOKMARK" not in {kind for kind, _ in ledger.events}
    assert ledger.calls == Counter({("create_fn", name): 1 for name in EARLY})


async def test_row15_a_quiet_hour_without_bookmarks_loses_nothing_and_stays_healthy() -> None:
    """A server that sends no bookmarks (its watch cache off, say): an hour without a change
    of the objects. Whatever the watch's reconnects, each asks for the last change's version
    (no relist: only lists of one object, the version checks), no handler is called, and the
    probe says healthy all along."""
    fake = cluster(bookmarks=False)
    quiet, ledger = await quiet_hour(fake)
    print(f"\nrow 15 (no bookmarks): {len(quiet.watches)} watches in an hour ({quiet.inactive}")
    print(f"  called inactive); {len(quiet.lists)} lists of one; probes {set(quiet.probes)}")
    assert {s.version for s in quiet.watches} == {quiet.last_change}
    assert {s.query.get("limit") for s in quiet.lists} <= {"1"}
    assert set(quiet.probes) == {200}
    assert ledger.calls == Counter({("create_fn", name): 1 for name in EARLY})


async def test_row15_a_quiet_hour_without_bookmarks_rewatches_only_at_the_servers_timeouts() -> (
    None
):
    """Row 15's "no false reconnects", for a server that sends no bookmarks: after two silences
    taken for stalls (a server that sends bookmarks would have sent one), the watch is watched
    again only when the server ends it."""
    quiet, _ = await quiet_hour(cluster(bookmarks=False))
    assert quiet.inactive <= 1  # once; the second silence is said as what it is, at INFO
    assert 12 <= len(quiet.watches) <= 18
    assert all(0 <= late <= 0.5 for late in rewatched_at_the_timeouts(quiet)[2:])


async def test_row14_each_watch_that_ends_at_once_is_logged_as_a_failure() -> None:
    """Backed off like a failure, and said like one: a WARNING per watch that ended at once."""
    fake, (registry, ledger) = cluster(), ledgered()
    async with served(fake, registry, watching(), namespace=NAMESPACE) as operator:
        await until(lambda: ledger.handled("create_fn") == len(EARLY) and ledger.settled(fake))
        fake.faults.script(Fault.empty_watch(), path=PATH, watch=True, times=None)
        await until(lambda: struck(fake) >= 1)
        await anyio.sleep(120)
        failed = warnings_of(operator, f"Watch-stream for {KEX!r} failed; retrying in")
    assert struck(fake) >= 5
    assert len(failed) >= struck(fake) - 1
