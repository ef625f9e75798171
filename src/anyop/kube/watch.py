"""List-then-watch that never goes blind: pagination, bookmarks, relists, inactivity deadlines.

A :class:`Watcher` keeps one resource (in one namespace, or cluster-wide) mirrored into the
engine's ``handle`` callback. Its loop is the state machine of :mod:`anyop.kube.watchstate`: this
module only does the I/O of each phase, and reads the stream with :class:`LineStream`.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Callable
from typing import Any, NoReturn

import anyio
import anyio.abc
import httpx

from anyop.errors import AnyopError, ApiError, ForbiddenError, LoginError, TransportError
from anyop.kube.client import PAGE_SIZE, Body, KubeClient, ListOptions
from anyop.kube.linestream import EventType, Handler, LineStream, WatchEvent
from anyop.kube.resources import Resource
from anyop.kube.sessions import Request, strip_managed_fields
from anyop.kube.shard_ranges import ShardRanges
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

__all__ = [
    "QUIET_404S",
    "SHARE_CHECKS",
    "SILENCES_TO_TRUST",
    "EventType",
    "Handler",
    "LineStream",
    "WatchEvent",
    "Watcher",
    "may_list",
]

logger = logging.getLogger("anyop.kube")

SILENCES_TO_TRUST = 2
"""Silent watch-streams, with never a bookmark from the server, after which silence is taken
for a quiet resource, not a stall (see ``Watcher._silences``)."""

PROOF_WINDOW = 1.0
"""Seconds after a silent watch-stream is watched again in which a change that arrives proves
that the silence was a stall: it waited for the new stream (see ``Watcher._silent``)."""

SHARE_CHECKS = 64
"""Objects found inside the share asked for, after which a watcher takes it that the server
honours shard selectors and looks at no more (see ``Watcher._check_share``)."""

_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})
_SERVER_TIMEOUTS = (240, 290)  # a random timeoutSeconds in this range spreads reconnects out
_READ_MARGIN = 30.0  # the client's read timeout is timeoutSeconds plus this
_INITIAL_END = "k8s.io/initial-events-end"
QUIET_404S = 2
"""Consecutive 404s of a watch logged at INFO, not WARNING: a deleted CRD's watch gets one or two
before the operator stops it (see :func:`anyop.engine.serving.scope_groups.follow_crds`)."""

_SILENT = "Watch-stream for %r was silent for %.0fs; watching it again."
_REFUSED = frozenset({400, 403, 422})  # sendInitialEvents is unknown, disabled or forbidden


class Watcher:
    """Lists and then watches one resource forever, dispatching every change to ``handle``.

    Args:
        client: The API client.
        resource: What to watch; it must support ``list`` and ``watch``.
        namespace: One namespace, or ``None`` for the whole cluster.
        label_selector: Evaluated by the server: other objects never reach memory.
        field_selector: Evaluated by the server.
        settings: ``settings.watching`` gives the server timeout, the client's hard limit per
            stream, the inactivity deadline and the reconnect pause.
        policy: The timing rules, when they should differ from those of ``settings``.
        page_size: The ``limit`` of each list page.
        shard: This replica's share of a sharded operator's objects (asked anew for every
            request; ``None``: everything), sent as a ``shardSelector`` with every listing and
            watch-stream until an object outside it shows that the server ignores it (said
            once, at INFO). It only spares the replica the others' objects: the engine still
            decides what is its own. The objects are looked at until :data:`SHARE_CHECKS` of
            them were inside the share.

    Guarantees:
        * ``run`` reports ``started`` only after every object of the initial listing has been
          dispatched (as a listed ``ADDED``): then the engine's view is synced.
        * It never ends by itself: every error is classified and followed by a re-watch from the
          last resourceVersion, a relist, or a backoff; only cancellation stops it.
        * Bookmarks advance the resourceVersion and are never dispatched.
        * After a relist, objects that vanished meanwhile get a synthetic ``DELETED``. Memory per
          object is its uid, name, namespace and resourceVersion, never its body.
        * ``state`` is always a consistent snapshot, for probes and metrics.

    Caveats:
        * After a relist every existing object comes again as a listed ``ADDED``, changed or
          not: the engine compares resourceVersions or contents.
        * An exception from ``handle`` is a bug in the engine: it is logged with its traceback
          and the watch goes on. ``handle`` should be quick (queue the work, don't do it).
        * Objects whose event arrived but whose dispatch was interrupted by cancellation are not
          redelivered by this instance: a new watcher starts with a fresh listing.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        settings: OperatorSettings | None = None,
        policy: WatchPolicy | None = None,
        page_size: int = PAGE_SIZE,
        shard: Callable[[], ShardRanges | None] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.settings = settings or client.settings
        self.state = WatchState()
        self._path = resource.get_url(namespace=namespace)  # fails early if it makes no sense
        self._selectors = {"labelSelector": label_selector, "fieldSelector": field_selector}
        self._list_options = ListOptions(
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
        )
        reconnect = self.settings.watching.reconnect_backoff
        self._policy = policy or WatchPolicy(reconnect_pause=reconnect)
        self._known: dict[str, tuple[str | None, str, str]] = {}  # uid -> (namespace, name, rv)
        self._streaming = self.settings.watching.streaming_lists
        self._relist_wanted = False
        self.listings = 0
        """How many listings this watcher has started (a listing's events come after its start)."""
        self._interruptible: anyio.CancelScope | None = None
        self._suspect = False  # a failure or a stall: check the server's version before watching
        self._bookmarked = False
        """The server sent this watcher a bookmark once: it sends them (kube-apiserver about
        every minute), so a silence longer than ``inactivity_timeout`` is a stall."""
        self._shard = shard
        self._shards_ignored = False
        """An object outside the share came: the server ignores shard selectors."""
        self._share_checks = 0
        """Objects found inside the share asked for (up to :data:`SHARE_CHECKS`)."""
        self._streamed_share: ShardRanges | None = None  # the share the open stream asked for
        self._silent: float | None = None
        """How long the last watch-stream was silent before it was given up, while the next one
        has not shown yet whether changes waited meanwhile. A quiet resource's stream is silent
        for two bookmark periods at times (kube-apiserver sends a bookmark about every minute,
        but only once its version for the resource moved past the stream's): a silence alone is
        no sign of trouble, changes that come at once when watched again are."""
        self._opened: float | None = None  # when the current watch-stream (not a list) opened
        self._silences = 0
        """Stalls of watch-streams that had opened, while no bookmark ever came. A server that
        sends none (its watch cache off, an aggregated API) is silent on a quiet resource:
        after :data:`SILENCES_TO_TRUST` of them, its watch-streams are awaited until their own
        timeout instead (until a bookmark comes after all)."""

    def __repr__(self) -> str:
        where = f" in {self.namespace!r}" if self.namespace else ""
        return f"<Watcher {self.resource!r}{where} {self.state.phase.value}>"

    async def run(
        self,
        handle: Handler,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> NoReturn:
        """List, then watch, forever; dispatch every change to ``handle``.

        Args:
            handle: Called with every :class:`WatchEvent`, one at a time, in order.
            task_status: Reported ``started`` once the initial listing has been dispatched.
        """
        ready = False
        while True:
            if self.state.delay > 0 and not self._relist_wanted:
                with anyio.move_on_after(self.state.delay) as self._interruptible:
                    await anyio.sleep_forever()
            outcome: Outcome | None = None
            if not self._relist_wanted:
                interruptible = self.state.phase in (Phase.WATCHING, Phase.BACKING_OFF)
                with anyio.CancelScope() as scope:
                    self._interruptible = scope if interruptible else None
                    outcome = await self._step(self.state.phase, handle)
                self._interruptible = None
            if outcome is not None:
                self.state = advance(self.state, outcome, policy=self._policy, rand=random.random())
                self._report(outcome)
                self._suspect = self._suspect or isinstance(outcome, Failed | Stalled)
            if self._relist_wanted:
                self._relist_wanted = False
                self.state = self.state.relisting()
            if self.state.synced and not ready:
                ready = True
                task_status.started()

    @property
    def server_sharded(self) -> bool:
        """Whether the API server is asked for this replica's share of the objects only (a
        sharded replica's watcher, unless an object showed that the server ignores that)."""
        return self._shard is not None and not self._shards_ignored

    def relist(self) -> None:
        """List anew, now: every object comes again as a listed ``ADDED`` (and what vanished as
        a synthetic ``DELETED``). A watch-stream or a backoff in progress is cut short; a
        listing in progress is finished first."""
        self._relist_wanted = True
        if self._interruptible is not None:
            self._interruptible.cancel()

    async def _step(self, phase: Phase, handle: Handler) -> Outcome:
        if phase in (Phase.LISTING, Phase.RELISTING):
            self.listings += 1
            self._silent = None  # what a silence hid comes listed: nothing to tell it by
        try:
            match phase:
                case Phase.LISTING | Phase.RELISTING if self._streaming:
                    return await self._stream_list(handle)
                case Phase.LISTING | Phase.RELISTING:
                    return await self._list(handle)
                case Phase.WATCHING:
                    return await self._watch(handle)
                case Phase.BACKING_OFF:
                    return Waited()
        except LoginError:
            raise  # the vault is closed: no request can succeed, the operator must fail
        except AnyopError as exc:
            return outcome_of_error(exc)
        except Exception as exc:  # a surprise must not end the watch: report it and go on
            logger.exception("Watch-stream for %r failed unexpectedly.", self.resource)
            return Failed(f"{type(exc).__name__}: {exc}")

    def _report(self, outcome: Outcome) -> None:
        outcome = quick_end(outcome, self._policy) or outcome  # said as the failure it counts as
        if isinstance(outcome, Failed):
            self._silences = 0  # troubles of the network: its silences prove nothing of the server
        match outcome:
            case Stalled(seconds) if not self._bookmarked:
                self._silences += 1
                self._silent = seconds
                if self._silences < SILENCES_TO_TRUST:
                    logger.debug(_SILENT, self.resource, seconds)
                elif self._silences == SILENCES_TO_TRUST:
                    logger.info(
                        "Watch-stream for %r: the API server sends no bookmarks; a quiet "
                        "watch-stream is awaited until its own timeout from now on.",
                        self.resource,
                    )
            case Stalled(seconds):
                self._silent = seconds
                logger.debug(_SILENT, self.resource, seconds)
            case Expired(reason):
                what = "Restarting the watch-stream for %r with a new listing: %s"
                logger.info(what, self.resource, reason)
            case Failed(status=404) if self.state.failures <= QUIET_404S:
                logger.info(
                    "Watch-stream for %r: the resource is not found (is its CRD being deleted?); "
                    "retrying in %.1fs.",
                    self.resource,
                    self.state.delay,
                )
            case Failed(error):
                delay = self.state.delay
                logger.warning(
                    "Watch-stream for %r failed; retrying in %.1fs: %s", self.resource, delay, error
                )

    # -- listing --------------------------------------------------------------------------------

    async def _list(self, handle: Handler) -> Listed:
        fresh: set[str] = set()
        version = ""
        options, share = self._list_options, self._share_to_ask()
        if share is not None:
            options = {**options, "shard_selector": share.selector}
        async for page in self.client.list_pages(self.resource, **options):
            if share is not None and page.shard_info is None:  # not said: look (custom resources)
                for body in page.items:
                    self._check_share(share, body)
            if page.restarted:
                fresh.clear()
            for body in page.items:
                fresh.add(self._remember(body))
                await self._dispatch(handle, WatchEvent("ADDED", body, listed=True))
            version = page.resource_version
            self.state = self.state.listed(anyio.current_time())
        await self._vanish(handle, fresh)
        return Listed(version)

    async def _stream_list(self, handle: Handler) -> Outcome:
        """List with a watch that sends the initial events first (``sendInitialEvents``).

        The objects come as ``ADDED`` events, then a bookmark annotated
        ``k8s.io/initial-events-end`` says the listing is complete at its resourceVersion. A server
        that refuses the parameters (400, 403, 422) is listed page by page from then on.
        """
        stream = self._stream(initial=True)
        fresh: set[str] = set()
        try:
            async with stream:
                self.state = self.state.with_stream(open=True)
                while True:
                    line, stalled = await self._next_line(stream, math.inf)
                    if line is None and stalled:
                        return Failed("The streaming list stalled before its last object.")
                    if line is None:  # an old server ignores the parameters: it never ends them
                        return await self._refused(handle, "it never marked the initial events")
                    kind, body = _parse(line)
                    if body is None:
                        return Failed(f"A garbled line in the streaming list: {line[:100]!r}")
                    if kind == "ERROR":
                        return outcome_of_status(body)
                    metadata = body.get("metadata") or {}
                    self.state = self.state.listed(anyio.current_time())
                    if kind == "BOOKMARK":
                        if (metadata.get("annotations") or {}).get(_INITIAL_END) == "true":
                            await self._vanish(handle, fresh)
                            return Listed(str(metadata.get("resourceVersion") or ""))
                    elif kind == "ADDED":
                        self._check_share(self._streamed_share, body)
                        fresh.add(self._remember(body))
                        body = (
                            body if self.client.keep_managed_fields else strip_managed_fields(body)
                        )
                        await self._dispatch(handle, WatchEvent("ADDED", body, listed=True))
        except ApiError as exc:
            if exc.status not in _REFUSED:
                raise
            return await self._refused(handle, str(exc))
        finally:
            self.state = self.state.with_stream(open=False)

    def _share_to_ask(self) -> ShardRanges | None:
        """This replica's share, unless the server is known to ignore shard selectors."""
        if self._shard is None or self._shards_ignored:
            return None
        return self._shard()

    def _check_share(self, share: ShardRanges | None, body: Body) -> None:
        """Note an object that the server sent although it is outside the share asked for: the
        server ignores shard selectors (said once; they are not sent again).

        Only the first objects are looked at: once :data:`SHARE_CHECKS` of them were inside
        the share, the server honours the selectors (one that ignores them sends others'
        objects among the first few: half of them with two replicas), and hashing every uid
        again cost each of three replicas about 4 % of its CPU.
        """
        if share is None or self._shards_ignored or self._share_checks >= SHARE_CHECKS:
            return
        if share.holds(str((body.get("metadata") or {}).get("uid") or "")):
            self._share_checks += 1
            return
        self._shards_ignored = True
        what = (
            "The API server ignores shard selectors for %r (is its ShardedListAndWatch feature "
            "gate off?): all objects come to this replica, which drops the others'."
        )
        logger.info(what, self.resource)

    async def _refused(self, handle: Handler, why: str) -> Outcome:
        """List in pages, now and from now on: the server cannot stream lists."""
        what = "Streaming lists of %r are not supported (%s); listing in pages."
        logger.info(what, self.resource, why)
        self._streaming = False
        return await self._list(handle)

    async def _vanish(self, handle: Handler, fresh: set[str]) -> None:
        """Dispatch a synthetic ``DELETED`` for every known object that a relisting missed."""
        for uid in [uid for uid in self._known if uid not in fresh]:
            await self._dispatch(handle, WatchEvent("DELETED", self._forget(uid), synthetic=True))

    def _remember(self, body: Body) -> str:
        metadata = body.get("metadata") or {}
        uid = str(metadata.get("uid") or "")
        name, namespace = str(metadata.get("name") or ""), metadata.get("namespace")
        self._known[uid] = (namespace, name, str(metadata.get("resourceVersion") or ""))
        return uid

    def _forget(self, uid: str) -> Body:
        """Drop a vanished object; return the last known metadata as its tombstone."""
        namespace, name, version = self._known.pop(uid)
        metadata = {"uid": uid, "name": name, "resourceVersion": version}
        metadata |= {"namespace": namespace} if namespace else {}
        kind = {"kind": self.resource.kind} if self.resource.kind else {}
        return {"apiVersion": self.resource.api_version, **kind, "metadata": metadata}

    async def _dispatch(self, handle: Handler, event: WatchEvent) -> None:
        try:
            await handle(event)
        except Exception:
            logger.exception(
                "The handler of %r failed on a %s event; continuing.", self.resource, event.type
            )

    # -- watching -------------------------------------------------------------------------------

    async def _watch(self, handle: Handler) -> Outcome:
        if self._suspect:
            behind = await self._server_version()  # if it fails, the next attempt checks again
            self._suspect = False
            if behind is not None:
                ours = self.state.resource_version
                why = f"is behind ours ({ours}): its storage went back (restored?)"
                return Expired(f"the API server's resourceVersion {behind} {why}")
        watching = self.settings.watching
        stream = self._stream()
        started = anyio.current_time()
        hard_deadline = started + (watching.client_timeout or math.inf)
        events = 0
        try:
            async with stream:
                self.state = self.state.with_stream(open=True)
                self._opened = anyio.current_time()
                while True:
                    line, stalled = await self._next_line(stream, hard_deadline)
                    if line is None:
                        elapsed = anyio.current_time() - started
                        return Stalled(stalled) if stalled else Ended(events, elapsed)
                    if (outcome := await self._consume(line, handle)) is not None:
                        return outcome
                    events += 1
        finally:
            self.state = self.state.with_stream(open=False)
            self._opened = None

    def _stalled_before(self, kind: str | None) -> None:
        """The first line of a watch-stream that follows a silent one: a change that comes at
        once waited for it, so the silence was a stall (said as a warning); anything else (a
        bookmark, a change later) shows nothing was missed."""
        silent, self._silent = self._silent, None
        opened = self._opened
        if silent is None or opened is None or kind not in _EVENT_TYPES:
            return
        if anyio.current_time() - opened < PROOF_WINDOW:
            logger.warning(
                "Watch-stream for %r was stalled: changes waited %.0fs until it was watched again.",
                self.resource,
                silent,
            )

    async def _server_version(self) -> str | None:
        """The server's current resourceVersion if it is behind ours (one list of one object).

        Raises:
            TransportError: No answer within the time a watch gets to open (a paused server):
                a failure like a watch that does not open.
        """
        options: ListOptions = {**self._list_options, "page_size": 1}
        timeout = self._open_timeout()
        with anyio.move_on_after(timeout):
            async for page in self.client.list_pages(self.resource, **options):
                theirs = page.resource_version
                return theirs if went_back(self.state.resource_version, theirs) else None
            return None
        raise TransportError(f"The API server did not answer a list of one object in {timeout} s.")

    def _stream(self, *, initial: bool = False) -> LineStream:
        """A watch from the last resourceVersion, or one that lists first (``initial``)."""
        watching = self.settings.watching
        timeout = int(watching.server_timeout or random.randint(*_SERVER_TIMEOUTS))
        params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout)}
        if initial:
            params |= {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan"}
        else:
            params["resourceVersion"] = self.state.resource_version or ""
        params |= {key: value for key, value in self._selectors.items() if value}
        self._streamed_share = self._share_to_ask()
        if self._streamed_share is not None:
            params["shardSelector"] = self._streamed_share.selector
        connect = watching.connect_timeout or self.settings.networking.connect_timeout
        return LineStream(
            self.client.sessions,
            Request("GET", self._path, params),
            timeout=httpx.Timeout(timeout + _READ_MARGIN, connect=connect),
            open_timeout=self._open_timeout(),
        )

    def _open_timeout(self) -> float:
        watching, networking = self.settings.watching, self.settings.networking
        return watching.inactivity_timeout or networking.request_timeout or 60.0

    async def _next_line(
        self, stream: LineStream, hard_deadline: float
    ) -> tuple[bytes | None, float]:
        """Read a line within the inactivity deadline; ``(None, seconds)`` if it stalled.

        ``(None, 0.0)`` once the stream's own deadline (``client_timeout``) has passed, even if
        lines were read ahead: they come again in the next stream, from the last version seen.
        """
        now = anyio.current_time()
        if now >= hard_deadline:
            return None, 0.0  # a read of data already there would not notice a past deadline
        if (line := stream.buffered_line()) is not None:
            return line, 0.0  # no deadline to set for a line that came with an earlier one
        inactivity = self.settings.watching.inactivity_timeout or math.inf
        if not self._bookmarked and self._silences >= SILENCES_TO_TRUST:
            inactivity = math.inf  # no bookmarks from this server: a silence is no sign
        with anyio.move_on_after(min(inactivity, hard_deadline - now)) as scope:
            return await stream.next_line(), 0.0
        stalled = anyio.current_time() - now
        return None, (stalled if scope.deadline < hard_deadline else 0.0)

    async def _consume(self, line: bytes, handle: Handler) -> Outcome | None:
        kind, body = _parse(line)
        if self._silent is not None:
            self._stalled_before(kind)
        if body is None:
            return Failed(f"A garbled line in the watch-stream: {line[:100]!r}")
        if kind == "ERROR":
            return outcome_of_status(body)
        version = (body.get("metadata") or {}).get("resourceVersion")
        self.state = self.state.seen(version, anyio.current_time())
        if kind == "BOOKMARK":
            self._bookmarked = True
            return None  # only its resourceVersion counts
        if kind not in _EVENT_TYPES:
            logger.warning(
                "Ignoring an unknown event type in the watch-stream for %r: %r", self.resource, kind
            )
            return None
        self._check_share(self._streamed_share, body)
        if kind == "DELETED":
            self._known.pop(str(body.get("metadata", {}).get("uid")), None)
        else:
            self._remember(body)
        body = body if self.client.keep_managed_fields else strip_managed_fields(body)
        await self._dispatch(handle, WatchEvent(kind, body))
        return None


def _parse(line: bytes) -> tuple[Any, dict[str, Any] | None]:
    """The type and object of a watch event's line; ``("", None)`` if it is garbled."""
    try:
        event = json.loads(line)
        kind, body = event["type"], event["object"]
    except (ValueError, RecursionError, KeyError, TypeError):
        return "", None
    return (kind, body) if isinstance(body, dict) else ("", None)


async def may_list(client: KubeClient, resource: Resource) -> bool:
    """Whether this identity may list the resource cluster-wide (a one-item list).

    Only a refusal (403) says no; other errors propagate.
    """
    try:
        async for _ in client.list_pages(resource, page_size=1):
            break
    except ForbiddenError:
        return False
    return True
