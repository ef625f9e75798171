"""The objects' own task groups: one per object while it has work, inside its resource's group.

An object's work is its handling cycles (one worker at a time), its daemons, its timers' turns, and
the terminations of its stopped daemons. Its daemons, timers and terminations run in one task group
of the object's own; its worker runs there too when the group is open as it starts, and otherwise
beside it in the resource's group; either way in a cancel scope of its own. Cancelling an object
(:meth:`anyop.engine.resource.workers.ObjectWorkers.cancel`: its group and its worker's scope) stops
everything of it, and an idle object holds no task: the group closes with its last job.

Costs, chosen by measurement (``bench.ab``, docs/benchmarks.md): the task that opens an object's
group runs the first job itself, and a worker never opens a group: an object that only has
handling cycles costs one task and one cancel scope, and one whose daemon runs costs the daemon's
task and its group, as before there were object groups.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.abc

__all__ = ["ObjectHosts"]

JobFn = Callable[..., Coroutine[Any, Any, Any]]
Job = tuple[JobFn, tuple[Any, ...], str]


class _Host:
    """One object's group while it has jobs there."""

    __slots__ = ("group", "jobs", "pending", "uid")

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self.group: anyio.abc.TaskGroup | None = None
        self.pending: list[Job] | None = None
        """Jobs started before the group is open: the host task starts them in it."""
        self.jobs = 0
        """Jobs started in its group and not ended (running, or pending)."""


class ObjectHosts:
    """The task groups of the objects that have work, in one resource's task group.

    Args:
        task_group: The resource's group: each object's group is opened in a task there.

    Guarantees:
        * At most one group per object at a time holds its jobs (a closing group has none).
        * An object without work has no task, no group and no entry here.
        * A job that raises fails its object's group, and so the resource's: as a task of the
          resource's group would.
    """

    def __init__(self, task_group: anyio.abc.TaskGroup) -> None:
        self._tg = task_group
        self._hosts: dict[str, _Host] = {}

    def __len__(self) -> int:
        """How many objects have work."""
        return len(self._hosts)

    def __contains__(self, uid: object) -> bool:
        return uid in self._hosts

    def uids(self) -> list[str]:
        """The objects that have work now."""
        return list(self._hosts)

    def start(self, uid: str, fn: JobFn, *args: Any, name: str) -> None:
        """Run ``fn(*args)`` as a task in the object's group, opening one if it has none."""
        host = self._host_of(uid)
        host.jobs += 1
        if host.group is not None:
            host.group.start_soon(self._job, host, fn, args, name=name)
        elif host.pending is not None:
            host.pending.append((fn, args, name))
        else:
            host.pending = [(fn, args, name)]
            self._tg.start_soon(self._open, host, name=f"anyop object {uid}")

    def start_worker(self, uid: str, fn: JobFn, *args: Any, name: str) -> None:
        """Run the object's worker ``fn(*args)``: in the object's group if it is open, else as a
        task of the resource's group (a worker never opens a group). The worker keeps a cancel
        scope of its own, which the caller cancels with :meth:`cancel` to stop all of the object.
        """
        host = self._hosts.get(uid)
        if host is not None and host.group is not None:
            host.jobs += 1
            host.group.start_soon(self._job, host, fn, args, name=name)
        else:
            self._tg.start_soon(fn, *args, name=name)

    def cancel(self, uid: str) -> None:
        """Cancel the object's group (jobs not started yet never run); its worker's own scope
        is the caller's to cancel."""
        host = self._hosts.get(uid)
        if host is None:
            return
        self._drop(host)  # jobs started from now on are the object's new work
        if host.group is not None:
            host.group.cancel_scope.cancel()
        elif host.pending:
            host.jobs -= len(host.pending)
            host.pending.clear()

    def _host_of(self, uid: str) -> _Host:
        host = self._hosts.get(uid)
        if host is None:
            host = self._hosts[uid] = _Host(uid)
        return host

    async def _open(self, host: _Host) -> None:
        async with anyio.create_task_group() as group:
            pending, host.pending = host.pending or [], None
            if not pending:  # cancelled before it opened
                return
            host.group = group
            (fn, args, _), *others = pending
            for other, other_args, name in others:
                group.start_soon(self._job, host, other, other_args, name=name)
            try:  # the first job in this task (one task fewer per object), and no wrapper frame
                await fn(*args)
            finally:
                self._ended(host)
        host.group = None

    async def _job(self, host: _Host, fn: JobFn, args: tuple[Any, ...]) -> None:
        try:
            await fn(*args)
        finally:
            self._ended(host)

    def _ended(self, host: _Host) -> None:
        host.jobs -= 1
        if not host.jobs:
            self._drop(host)  # the next job opens another group

    def _drop(self, host: _Host) -> None:
        if self._hosts.get(host.uid) is host:
            del self._hosts[host.uid]
