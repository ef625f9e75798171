"""A served resource's share of a sharded operator: the filter between its watch and its workers.

Every event passes through :meth:`ResourceShard.dispatch`. An object this replica handles goes to
its worker (an object gained at an activation only from a listing started after it); any other
object is dropped (and handed over if it was handled here). See :mod:`anyop.sharding` for
the rules and :mod:`anyop.engine.coordination.shard_keeper` for who calls the rest.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import anyio

from anyop.engine.coordination.shards import Shard
from anyop.engine.cycle.reconciler import Observed
from anyop.engine.daemons.spawner import Spawner
from anyop.engine.object_groups import ObjectHosts
from anyop.engine.reconciling.reconcilers import Controllers
from anyop.engine.resource.workers import ObjectWorkers
from anyop.handlers.stop_reasons import DaemonStoppingReason
from anyop.sharding import View

__all__ = ["ResourceShard"]


def _uid(observed: Observed) -> str:
    return str((observed.get("metadata") or {}).get("uid", ""))


class ResourceShard:
    """One served resource's part of the shard (a :class:`~anyop.engine.coordination.shards.
    ShardPart`), for one serving round.

    Args:
        shard: This replica's shard.
        workers: The resource's object workers.
        dispatch: Where handled objects' events go (the workers, and the reconcilers).
        spawner: Its daemons and timers, if any.
        hosts: The objects' task groups (a handed-over object is clean once it has none).
        relist: Asks the resource's watch for a new listing.
        reshard: Asks the resource's watch for a new listing if the API server selects its
            objects by this replica's share (which changed): what is no longer ours is forgotten.
        listings: How many listings the resource's watch has started.
        exit_timeout: Seconds a handed-over object's running cycle may take before it is
            cancelled (``queueing.exit_timeout``).
        controllers: Its reconcilers (``@anyop.reconcile``), if any: they hand over too.

    Guarantees:
        An object is dispatched only while :meth:`Shard.handles` says so. A handed-over object's
        daemons and timers stop with ``OPERATOR_PAUSING`` and their normal termination. An
        object gained at an activation is dispatched only from a listing that started after it
        (or the watch-stream after that listing): its earlier bodies may predate what its
        previous owner wrote before acknowledging the view.
    """

    def __init__(
        self,
        shard: Shard,
        workers: ObjectWorkers,
        dispatch: Callable[[Observed], object],
        *,
        spawner: Spawner | None,
        hosts: ObjectHosts,
        relist: Callable[[], None],
        exit_timeout: float,
        listings: Callable[[], int] = lambda: 0,
        controllers: Controllers | None = None,
        reshard: Callable[[], None] = lambda: None,
    ) -> None:
        self.shard = shard
        self.workers = workers
        self._dispatch = dispatch
        self.spawner = spawner
        self.hosts = hosts
        self.relist = relist
        self.reshard = reshard
        self.listings = listings
        self._stale_before: int | None = None  # after an activation: the listing to wait for
        self._clean: tuple[View, View | None] | None = None  # the views of the last clean sweep
        self.exit_timeout = exit_timeout
        self.controllers = controllers

    @property
    def size(self) -> int:
        """How many objects it handles now."""
        return sum(1 for uid in self._held() if self.shard.handles(uid))

    def _held(self) -> set[str]:
        """The objects that have a worker here (or are known to a reconciler)."""
        held = set(self.workers.slots)
        return held | self.controllers.held() if self.controllers is not None else held

    def dispatch(self, observed: Observed) -> None:
        """Pass the event on, keep it for later, or drop it (handing the object over)."""
        uid = _uid(observed)
        if self.shard.handles(uid):
            if not self._stale(uid):
                self._dispatch(observed)
        elif uid in self.workers.slots or (
            self.controllers is not None and self.controllers.holds(uid)
        ):
            self._release(uid)  # others' objects that nothing here holds cost nothing

    def retarget(self, *, gaining: bool) -> None:
        """Hand over what is not ours (what we gain is listed anew at the activation)."""
        self.sweep()

    def sweep(self) -> bool:
        """Hand over what is not ours; say if nothing of it is left.

        Once a sweep finds nothing to hand over, the next ones under the same views say so at
        once: an object enters a worker, a reconciler, a daemon or a task group only through
        :meth:`dispatch`, which lets in only ours, and what is ours changes only with the
        views. (A sweep looks at every object held: at 100,000 objects, sweeping each second
        took most of a replica's CPU.)
        """
        views = (self.shard.state.target, self.shard.state.active)
        if self._clean is not None and all(map(operator.is_, self._clean, views)):
            return True
        clean = True
        for uid in self._held():
            if not self.shard.handles(uid):
                self._release(uid)
                clean = False
        if self.spawner is not None:
            for uid in list(self.spawner.objects):
                if not self.shard.handles(uid):
                    # Again and again: a cycle that ran on may have spawned a daemon meanwhile.
                    self.spawner.forget(uid, DaemonStoppingReason.OPERATOR_PAUSING)
                    clean = False
        clean = clean and not any(not self.shard.handles(uid) for uid in self.hosts.uids())
        self._clean = views if clean else None
        return clean

    def activate(self, *, gaining: bool) -> None:
        """Handle the gained objects from a new listing (see the class's guarantees); if
        nothing is gained (a member joined), go on as before (listing only the narrower share
        anew where the API server selects it)."""
        if gaining:
            self._stale_before = self.listings() + 1
            self.relist()
        else:
            self.reshard()

    def _stale(self, uid: str) -> bool:
        """Whether the object was gained at the last activation and no listing has started
        since (an object handled here before goes on as it was)."""
        if self._stale_before is None:
            return False
        if self.listings() >= self._stale_before:
            self._stale_before = None
            return False
        return uid not in self._held()

    def _release(self, uid: str) -> None:
        deadline = anyio.current_time() + self.exit_timeout
        self.workers.release(uid, deadline)
        if self.controllers is not None:
            self.controllers.release(uid, deadline)
        if self.spawner is not None:
            self.spawner.forget(uid, DaemonStoppingReason.OPERATOR_PAUSING)
