"""One handling cycle of one object: event handlers, then resource-changing handlers, one patch.

The decisions are the pure pieces of :mod:`anyop.handlers` and :mod:`anyop.storage`; this module
only reads the body, invokes the user's functions, logs Kopf's lines and writes the patch.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from anyop.engine.cycle.handler_calls import Cycle, HandlerCalls, utcnow
from anyop.engine.cycle.object_slots import Backpressure, CycleResult, Echo, ObjectSlot, Settled
from anyop.engine.cycle.patch_writer import Endpoint, apply_patch
from anyop.engine.cycle.state_records import StateRecords, last_cause_failed
from anyop.engine.daemons.spawner import Spawner
from anyop.engine.indexer import Indexer
from anyop.engine.invocation import invoke
from anyop.errors import AnyopError
from anyop.handlers.causes import (
    ChangingCause,
    Reason,
    WatchingCause,
    detect_changing_cause,
    settled_by,
)
from anyop.handlers.diffs import remove_empty_stanzas
from anyop.handlers.filters import KwargsFactory
from anyop.handlers.outcomes import deliver_results
from anyop.handlers.progression import (
    FREE_MESSAGE,
    GONE_MESSAGE,
    NOOP_MESSAGE,
    Progress,
    in_progress_message,
    processed_message,
)
from anyop.handlers.records import ResourceChangingHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.handlers.stop_reasons import DaemonStoppingReason as Stopping
from anyop.kube.client import KubeClient
from anyop.kube.patches import Patch, merge_patches
from anyop.kube.resources import Resource
from anyop.kube.watch import EventType
from anyop.logs import object_logger
from anyop.metrics import Metrics
from anyop.settings import OperatorSettings
from anyop.storage.defaults import Persistence
from anyop.storage.diffbase import (
    read_diffbase,
)
from anyop.storage.finalizers import (
    ADDING_MESSAGE,
    RELEASING_MESSAGE,
    UNNEEDED_MESSAGE,
    allow_deletion,
    block_deletion,
    has_finalizer,
    is_deletion_ongoing,
)
from anyop.storage.progress import ProgressStorage

__all__ = ["Observed", "Reconciler"]

DEFERRING_MESSAGE = "The API server is behind: the finalizer is added in turn, once it catches up."


class Observed(dict[str, Any]):
    """A body as the watch delivered it, with its event's type.

    Args:
        body: The object's body.
        type: ``ADDED``, ``MODIFIED`` or ``DELETED``.
        listed: The body comes from a (re)listing.
    """

    __slots__ = ("consumed", "listed", "type")

    def __init__(self, body: Mapping[str, Any], *, type: EventType, listed: bool = False) -> None:
        super().__init__(body)
        self.type = type
        self.listed = listed
        self.consumed = False
        """Whether the event handlers have seen it (a delayed re-run must not repeat them)."""


def _cleared(progress: ProgressStorage, essence: Mapping[str, Any]) -> Mapping[str, Any]:
    """The essence without the progress storage's fields, and without the stanzas left empty.

    A storage written for Kopf may leave ``annotations: {}`` behind where it removed its own;
    the stored essence is read without empty stanzas, so the built one must be too.
    """
    cleared = progress.clear(essence=essence)
    if cleared is essence:
        return essence
    cleaned = copy.deepcopy(dict(cleared))  # the storage may keep what it returned
    remove_empty_stanzas(cleaned)
    return cleaned


def _version(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion", ""))


def _not_older(version: str, than: str) -> bool:
    """Whether a resourceVersion is the same or newer (numeric if both are, as etcd's are)."""
    if version.isdigit() and than.isdigit():
        return int(version) >= int(than)
    return version == than


def _older(version: str, than: str) -> bool:
    """Whether a resourceVersion is known to be older (both numeric, as etcd's are)."""
    return version.isdigit() and than.isdigit() and int(version) < int(than)


@dataclasses.dataclass(eq=False)
class Reconciler(HandlerCalls, StateRecords):
    """Runs handling cycles for the objects of one resource (an :class:`ObjectWorkers` cycle).

    Guarantees:
        * One patch per cycle (status and main parts are separate requests when the resource
          has the status subresource); the freshest body goes back to the worker.
        * Read-your-own-writes: after our patch, older bodies are not handled until our echo
          comes or ``persistence.consistency_timeout`` passes; after that, a body older than
          our write (a listing from a cache far behind) is replaced by the object read afresh.
        * An unexpected error is logged and the object is retried after
          ``queueing.error_delays``; other objects are not affected.

    Caveats:
        * ``@on.event`` handlers see the latest state of a burst (events coalesce in the
          worker), not every intermediate event.
        * If the server prunes ``status.anyop`` (a schema that drops unknown status fields),
          ``persistence`` switches to annotations for the whole resource, with one warning.
    """

    client: KubeClient
    resource: Resource
    registry: OperatorRegistry
    settings: OperatorSettings
    persistence: Persistence
    limiter: anyio.CapacityLimiter | None = None
    indexer: Indexer | None = None
    spawner: Spawner | None = None
    metrics: Metrics | None = None
    backpressure: Backpressure | None = None
    """The workers' backpressure: while it has no room, finalizer-only writes are deferred."""

    async def __call__(self, slot: ObjectSlot, body: Mapping[str, Any]) -> CycleResult:
        """Handle the latest body of an object once."""
        if self.indexer is not None:
            await self.indexer.ready.wait()  # no handler sees a half-built index at startup
        cycle = Cycle(slot, object_logger(body))
        started = time.monotonic()
        try:
            result = await self._cycle(cycle, body)
        except Exception as error:
            self._observe(started, "error")
            return self._throttle(cycle, body, error)
        self._observe(started, "success" if result.delay is None else "requeue_after")
        if slot.errors:
            slot.errors = 0
            cycle.logger.info("Throttling is over. Switching back to normal operations.")
        return result

    def _observe(self, started: float, result: str) -> None:
        if self.metrics is not None:
            self.metrics.cycle(str(self.resource), time.monotonic() - started, result)

    def _throttle(self, cycle: Cycle, body: Mapping[str, Any], error: Exception) -> CycleResult:
        slot, logger = cycle.slot, cycle.logger
        count = slot.errors
        delays = self.settings.queueing.error_delays
        slot.errors = count + 1
        if not delays:  # throttling is off: the next event is handled when it comes, no retry
            logger.exception(f"Failed with an unexpected error: {error!r}")
            return CycleResult(delay=None, body=body)
        delay = delays[min(count, len(delays) - 1)]
        shown = int(delay) if float(delay).is_integer() else delay  # "2 seconds", as Kopf says
        message = f"Throttling for {shown} seconds due to an unexpected error: {error!r}"
        logger.exception(message)
        echo = slot.echo
        if echo is not None and _not_older(_version(echo.body), _version(body)):
            body = echo.body  # what our writes before the error left on the server
        return CycleResult(delay=delay, body=body, throttled=True)

    async def _cycle(self, cycle: Cycle, body: Mapping[str, Any]) -> CycleResult:
        slot, patch, logger = cycle.slot, cycle.patch, cycle.logger
        if isinstance(body, Observed) and not body.consumed:  # their patches join the cycle's
            body.consumed = True
            await self._run_event_handlers(cycle, body)
        deleted = isinstance(body, Observed) and body.type == "DELETED"
        if not deleted and slot.released and self._released_before(body):
            logger.debug("Our finalizer is released already: an older state is not handled.")
            fresh = await self._send(slot, body, patch) if patch else None
            return CycleResult(delay=None, body=fresh or body)
        if not deleted and (echo := self._awaited_echo(slot, body)) is not None:
            logger.debug("Waiting for our own patch to arrive before handling older states.")
            delay = max(0.0, echo.deadline - anyio.current_time())
            fresh = await self._send(slot, echo.body, patch) if patch else None
            return CycleResult(delay=delay, body=fresh or echo.body)
        if not deleted and _older(_version(body), slot.written):
            logger.debug("A state older than our own last write: reading the object afresh.")
            if (fresh := await self._reread(body)) is None:
                return CycleResult(delay=None, body=body)  # gone: its deletion comes next
            body = fresh
        settled, slot.settled = slot.settled, None
        if (
            settled is not None
            and not deleted
            and not patch
            and _version(body) == settled.version
            and self._quiet_echo(cycle, body, settled)
        ):
            logger.debug(NOOP_MESSAGE)  # as the full cycle ends
            return CycleResult(delay=None, body=body)
        return await self._run_changing(cycle, body)

    async def _reread(self, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The object as it is now (``None`` if gone), listed by its name: with the verbs it
        is watched with, as least-privilege RBAC grants no ``get`` (``anyop manifests``)."""
        meta = body.get("metadata") or {}
        selector = f"metadata.name={meta.get('name')}"
        found = await self.client.list(
            self.resource, namespace=meta.get("namespace"), field_selector=selector
        )
        return next((o for o in found.items if o["metadata"].get("uid") == meta.get("uid")), None)

    def _released_before(self, body: Mapping[str, Any]) -> bool:
        """Whether a body is older than the release of our finalizer, which has landed.

        The object is being deleted and still shows our finalizer: only a state before our own
        release looks so (nothing adds the finalizer to an object being deleted). Its deletion
        is over for us, whatever its stored progress says.
        """
        return is_deletion_ongoing(body) and has_finalizer(body, self.persistence.finalizer)

    def _awaited_echo(self, slot: ObjectSlot, body: Mapping[str, Any]) -> Echo | None:
        """The echo that this body is older than, if it is still worth waiting for."""
        echo = slot.echo
        if echo is None:
            return None
        if _not_older(_version(body), _version(echo.body)) or anyio.current_time() >= echo.deadline:
            slot.echo = None
            return None
        return echo

    # -- event handlers ----------------------------------------------------------------------

    async def _run_event_handlers(self, cycle: Cycle, body: Observed) -> None:
        """Run ``@on.event`` handlers; their errors are logged and ignored."""
        if not self.registry.watching.has_handlers(self.resource):
            return  # no copy of the body for an event that no handler reads
        event_type: Any = None if body.listed else body.type  # Kopf's: None for a listing
        event = {"type": event_type, "object": dict(body)}
        cause = WatchingCause(resource=self.resource, body=body, type=event_type, event=event)
        factory = self._factory(cause, cycle)
        logger = cycle.logger
        for handler in self.registry.watching.select(cause, factory):
            kwargs = {**factory(), "param": handler.param}
            try:
                await invoke(handler.fn, kwargs, limiter=self.limiter, body=body)
            except Exception:
                logger.exception(f"{handler} failed with an exception. Will ignore.")
            else:
                logger.info(f"{handler} succeeded.")

    # -- resource-changing handlers ----------------------------------------------------------

    async def _run_changing(self, cycle: Cycle, body: Mapping[str, Any]) -> CycleResult:
        slot = cycle.slot
        cause, corrupt = self._detect(cycle, body)
        if cause.reason is Reason.GONE:
            return await self._gone(cycle, body)
        if cause.reason is Reason.FREE:
            cycle.logger.debug(FREE_MESSAGE)
            if self.spawner is not None:
                self.spawner.forget(slot.uid)
            return await self._write(cycle, body, delay=None)
        if not self.registry.keeps_state(self.resource):
            return await self._write(cycle, body, delay=None)
        factory = self._factory(cause, cycle)
        # Daemons and timers start in the cycle after the finalizer landed, never on an object
        # that could be deleted past its delete handlers.
        adding = self._adds_finalizer(cause, factory)
        if adding and not cycle.patch and self._defers(slot):  # no event handler's patch
            cycle.logger.debug(DEFERRING_MESSAGE)
            return CycleResult(requeue=True)
        spawner = None if adding else self.spawner
        alive = spawner is not None and spawner.sync(cycle, cause, factory)
        if alive and cause.deleted and self.spawner is not None:
            alive = await self.spawner.exit_instantly(slot.uid)
        rest = self._changing(cycle, cause, factory, alive=alive, corrupt=corrupt)
        if self.spawner is not None and not cause.deleted and self.spawner.respawning(slot.uid):
            result = await rest
            if result.delay is None:  # the run's exit wakes the worker: it must cycle again
                polling = self.settings.background.cancellation_polling
                result = dataclasses.replace(result, delay=polling)
            return result
        return await rest

    async def _changing(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        factory: KwargsFactory,
        *,
        alive: bool,
        corrupt: bool,
    ) -> CycleResult:
        """The cycle once the daemons are in step: the finalizer, or the changing handlers."""
        body = cause.body
        if self._finalizer_change(cycle, cause, factory):
            return await self._write(cycle, body, delay=0.0)  # and the next cycle at once
        if cause.reason is Reason.NOOP:
            cycle.logger.debug(NOOP_MESSAGE)
            return await self._write(cycle, body, delay=None)
        if not cause.deleted and not self.registry.changing.prematch(cause, factory):
            # No handler wants the object (or only daemons and timers do): keep no diff-base or
            # progress on it, as Kopf keeps none on objects its filters leave out.
            return await self._write(cycle, body, delay=None)
        handlers = self.registry.changing.select(cause, factory)
        if any(handler.failed_only for handler in handlers):
            handlers = self._unless_unfailed(cause, handlers)
        held = alive and cause.deleted
        return await self._handle(cycle, cause, handlers, store_essence=corrupt, held=held)

    def _unless_unfailed(
        self, cause: ChangingCause, handlers: Sequence[ResourceChangingHandler]
    ) -> list[ResourceChangingHandler]:
        """The handlers, but the ``failed_only`` ones where the last cause failed no handler."""
        failed = last_cause_failed(cause.body, self.persistence.progress)
        return [handler for handler in handlers if failed or not handler.failed_only]

    async def _gone(self, cycle: Cycle, body: Mapping[str, Any]) -> CycleResult:
        """Forget a deleted object, or one that left the watch's label selector.

        An object that left the server-side selection still exists: its filters no longer
        match, so its daemons stop and our finalizer is released now, as nothing would ever
        release it later; the operator keeps its memory. A deleted object's is forgotten.
        """
        left = await self._left(body)
        if self.spawner is not None:
            reason = Stopping.FILTERS_MISMATCH if left else Stopping.RESOURCE_DELETED
            self.spawner.forget(cycle.slot.uid, reason)
        if left and has_finalizer(left, self.persistence.finalizer):
            cycle.logger.debug(UNNEEDED_MESSAGE)
            cycle.patch.fns.append(allow_deletion(self.persistence.finalizer))
            await self._send(cycle.slot, left, cycle.patch)
        else:
            cycle.logger.debug(GONE_MESSAGE)
        return CycleResult(gone=True, deleted=not left)

    async def _left(self, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The object as it is now if it left the watch's selection, ``None`` if it is deleted.

        The API server sends the DELETED of an object that left the selection with its state
        from before the change (its old labels still match): only the server can tell it from
        a deletion without finalizers, so the object is read when the watch has a selector
        (and for the relist's DELETED of objects that vanished, which carries no labels).
        """
        deleting = (body.get("metadata") or {}).get("deletionTimestamp")
        if deleting or not self.registry.selects_on_server(self.resource):
            return None
        try:
            return await self.client.find(self.resource, body)
        except AnyopError:
            return body  # unknown: keep its memory, and release our finalizer if it is there

    def _detect(self, cycle: Cycle, body: Mapping[str, Any]) -> tuple[ChangingCause, bool]:
        """The cause, and whether the stored diff-base was unreadable."""
        storage = self.persistence
        stored = read_diffbase(storage.diffbase, body)
        for warning in stored.warnings:
            cycle.logger.warning(str(warning))
        extra = self.registry.extra_fields(self.resource)
        built = storage.diffbase.build(body=body, extra_fields=extra)
        new = _cleared(storage.progress, built)
        old = None if stored.essence is None else _cleared(storage.progress, stored.essence)
        observed = body if isinstance(body, Observed) else None
        cause = detect_changing_cause(
            resource=self.resource,
            event_type=observed.type if observed else "MODIFIED",
            body=body,
            old=old,
            new=new,
            finalizer=storage.finalizer,
            initial=self._initial(cycle.slot, observed),
            corrupt_diffbase=stored.corrupt,
        )
        return cause, stored.corrupt

    @staticmethod
    def _initial(slot: ObjectSlot, observed: Observed | None) -> bool:
        """Whether the object is new to this process: listed, and no cause finished since.

        Remembered in the slot until a cause finishes: the cycles after the listing's (a retry,
        the next handler of the lifecycle) run on our own writes' answers, which are no listing.
        """
        if slot.memory.resumed:
            return False
        if observed is not None and observed.listed:
            slot.listed = True
        return slot.listed

    def _adds_finalizer(self, cause: ChangingCause, factory: KwargsFactory) -> bool:
        """Whether the object needs our finalizer and has none yet."""
        if cause.deleted:
            return False
        wanted = self.registry.requires_finalizer(cause, factory)
        return wanted and not has_finalizer(cause.body, self.persistence.finalizer)

    def _defers(self, slot: ObjectSlot) -> bool:
        """Whether a cycle that would only write the finalizer leaves it for later.

        It does while the workers' backpressure has no room (``queueing.max_requests_in_flight``
        requests are in flight), once per object: waiting to write, a cycle would hold its memory
        (its frames, its body, its patch) all along, and a listing of thousands of objects with
        daemons would hold thousands of such cycles. Its object waits in the queue instead and
        runs again, without deferring, once there is room.
        """
        if slot.deferred:
            slot.deferred = False
            return False
        if self.backpressure is None or self.backpressure.room_here > 0:
            return False
        slot.deferred = True
        return True

    def _finalizer_change(self, cycle: Cycle, cause: ChangingCause, factory: KwargsFactory) -> bool:
        """Add or remove our finalizer (in a cycle of its own) if needed; say if it is."""
        patch, logger = cycle.patch, cycle.logger
        if cause.deleted:
            return False
        finalizer = self.persistence.finalizer
        wanted = self.registry.requires_finalizer(cause, factory)
        present = has_finalizer(cause.body, finalizer)
        if wanted and not present:
            logger.debug(ADDING_MESSAGE)
            patch.fns.append(block_deletion(finalizer))
        elif present and not wanted:
            logger.debug(UNNEEDED_MESSAGE)
            patch.fns.append(allow_deletion(finalizer))
        return wanted != present

    async def _handle(
        self,
        cycle: Cycle,
        cause: ChangingCause,
        handlers: Sequence[ResourceChangingHandler],
        *,
        store_essence: bool,
        held: bool = False,
    ) -> CycleResult:
        """Run the due handlers and write their outcomes, progress and diff-base.

        ``held``: the object is being deleted and daemons or timers still hold it, so it is not
        released yet (the worker is woken when they exit, or re-checks after the polling).
        """
        slot, patch, logger = cycle.slot, cycle.patch, cycle.logger
        owned = self.registry.changing.for_resource(self.resource)
        now = utcnow()
        storage = self.persistence.progress
        progress = Progress.from_storage(body=cause.body, storage=storage, handlers=owned, now=now)
        progress = progress.with_purpose(cause.reason).with_handlers(handlers, now=now)
        # The engine's state (the sub-handlers' progress too) goes into a patch of its own, sent
        # first: every state that our requests leave behind holds it (docs/architecture.md,
        # "Once per cause").
        state = cycle.records = Patch()
        progress = self._supersede(cycle, cause, progress, handlers=handlers)
        if handlers and logger.isEnabledFor(logging.DEBUG):  # the message holds the whole body
            logger.debug(in_progress_message(cause.reason, cause.body))
        outcomes = await self._attempt(cycle, cause, handlers, progress=progress)
        progress = progress.with_outcomes(outcomes, now=utcnow())
        deliver_results(outcomes, patch)
        stored = self._record(
            cause,
            progress,
            state,
            store_essence=store_essence,
            held=held,
            alongside=bool(patch) or bool(state),
        )
        first = self._first(state, diffbase=stored)
        if patch:
            merge_patches(patch, state)
            patch.fns.extend(state.fns)  # the release, after the user's functions
        else:
            patch = state
        if progress.done and not held:
            self._log_conclusion(cycle, cause, progress, announce=bool(handlers))
        response = await self._send(slot, cause.body, patch, first=first)
        if cause.deleted and progress.done and not held:
            slot.released = True  # landed (or the object is gone): see _released_before
        if response is not None and self._pruned(patch, response, logger):
            again = Patch()
            self._record(cause, progress, again, store_essence=True)
            response = await self._send(slot, response, again) or response
        elif response is not None and stored and self._settles(cause, response):
            slot.settled = Settled(_version(response), cause.new)
        delay = None if progress.done else progress.delay(utcnow())
        if held:
            polling = self.settings.background.cancellation_polling
            delay = polling if delay is None else min(delay, polling)
        return CycleResult(delay=delay, body=response or cause.body)

    def _log_conclusion(
        self, cycle: Cycle, cause: ChangingCause, progress: Progress, *, announce: bool
    ) -> None:
        """Kopf's lines for a finished cause (``announce``: there were handlers for it)."""
        slot, logger = cycle.slot, cycle.logger
        slot.memory.resumed = True
        slot.listed = False
        if announce and logger.isEnabledFor(logging.INFO):
            logger.info(processed_message(cause.reason, progress.counts))
        if cause.deleted and has_finalizer(cause.body, self.persistence.finalizer):
            logger.debug(RELEASING_MESSAGE)

    def _settles(self, cause: ChangingCause, response: Mapping[str, Any]) -> bool:
        """Whether the echo of this response may skip cause detection (see :meth:`_quiet_echo`).

        Asked only where the cycle finished its cause and wrote the diff-base itself (so
        whatever another client wrote there is overwritten; never for a deletion): whether the
        response differs from the handled body only in ``status`` and the server's bookkeeping,
        so that its essence is the one handled and a cycle on it would detect a no-op cause.
        Only with anyop's own storages, as another storage's ``fetch`` is the user's code.
        """
        options = self.settings.persistence
        return (
            bool(_version(response))
            and options.progress_storage is None
            and options.diffbase_storage is None
            and settled_by(cause.body, response)
        )

    def _quiet_echo(self, cycle: Cycle, body: Mapping[str, Any], settled: Settled) -> bool:
        """Whether the full cycle on our write's echo would end as a no-op and write nothing.

        The cause would be a no-op (see :meth:`_settles`). A no-op cycle calls no handler and
        only decides the finalizer, from the filters of the delete handlers. Where those read
        only the essence, the labels and the annotations and call nothing back, and nothing else
        looks at the resource's bodies (``echoes_are_quiet``, asked now: handlers may have been
        registered since the write), the finalizer is decided here as that cycle would decide
        it: for the no-op cause that it would detect.
        """
        if not self.registry.echoes_are_quiet(self.resource):
            return False
        present = has_finalizer(body, self.persistence.finalizer)
        if not self.registry.may_require_finalizer(self.resource):
            return not present
        essence = settled.essence
        noop = ChangingCause(
            resource=self.resource, body=body, reason=Reason.NOOP, old=essence, new=essence
        )
        factory = self._factory(noop, Cycle(cycle.slot, cycle.logger))  # a patch of its own
        return self.registry.requires_finalizer(noop, factory) == present

    async def _write(
        self, cycle: Cycle, body: Mapping[str, Any], *, delay: float | None
    ) -> CycleResult:
        """Apply the cycle's patch; the worker goes on with the freshest body."""
        quiet = not cycle.patch and cycle.slot.echo is None
        response = await self._send(cycle.slot, body, cycle.patch)
        return CycleResult(delay=delay, body=response or body, quiet=quiet)

    async def _send(
        self,
        slot: ObjectSlot,
        body: Mapping[str, Any],
        patch: Patch,
        *,
        first: Endpoint = "status",
    ) -> Mapping[str, Any] | None:
        """Apply a patch; remember what landed last as the echo to wait for, even if a later
        request failed: older bodies are our own intermediate writes (or older still).

        Caveats:
            The response to the release of the last finalizer of a deleted object carries the
            version that the object had before it (kube-apiserver 1.36): the state that our
            request before it left looks no older. See :meth:`_released_before`.
        """
        if not patch:
            return None
        landed: list[Mapping[str, Any]] = []
        try:
            return await apply_patch(
                self.client, self.resource, body, patch=patch, first=first, landed=landed
            )
        finally:
            if landed:
                timeout = self.settings.persistence.consistency_timeout
                slot.echo = Echo(landed[-1], anyio.current_time() + timeout)
                slot.written = _version(landed[-1] or {}) if timeout > 0 else ""  # 0: Kopf's
