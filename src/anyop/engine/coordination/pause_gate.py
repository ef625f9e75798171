"""The pause gate: whether the operator may serve its resources right now.

Peering closes it gracefully (a reason is added, the serving round stops its watches and asks
daemons to stop with ``OPERATOR_PAUSING``), and learns from it when the last round has ended
(:attr:`Gate.idle`). Leadership fences it by time: serving runs in cancel
scopes whose deadline is the leader's renewal deadline, pushed forward by every renewal, so a
leader that cannot renew stops by the deadline even if nothing else runs.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio

__all__ = ["Gate", "first_of"]


class Gate:
    """Reasons to pause, and the leadership fence; the serving rounds wait on it.

    Caveats:
        Use it from the event loop's tasks only.
    """

    def __init__(self, *, warm: bool = False) -> None:
        self.warm = warm
        """Standbys keep watching: the fence applies to handling only (see :meth:`leading`)."""
        self._reasons: dict[str, str] = {}
        self._changed = anyio.Event()
        self._fence = math.inf
        self._scopes: set[anyio.CancelScope] = set()
        self._rounds = 0

    def __repr__(self) -> str:
        return f"<Gate reasons={sorted(self._reasons)} fence={self._fence}>"

    @property
    def reasons(self) -> dict[str, str]:
        """Who pauses the operator, and why."""
        return dict(self._reasons)

    @property
    def idle(self) -> bool:
        """Whether no serving round runs now: every handler of the last one has finished."""
        return self._rounds == 0

    @property
    def changed(self) -> anyio.Event:
        """Set at the next change of the reasons, the fence, or :attr:`idle`."""
        return self._changed

    @contextlib.contextmanager
    def serving_round(self) -> Iterator[None]:
        """Mark a serving round as running while inside (see :attr:`idle`)."""
        self._rounds += 1
        self._wake()
        try:
            yield
        finally:
            self._rounds -= 1
            self._wake()

    @property
    def fence(self) -> float:
        """The AnyIO time after which nothing may serve (``inf``: no fence)."""
        return self._fence

    def is_open(self) -> bool:
        """Whether serving (watching, and handling unless :attr:`warm`) may run now."""
        return not self._reasons and (self.warm or self.leading())

    def leading(self) -> bool:
        """Whether the fence lets handlers run now (always, without leader election)."""
        return anyio.current_time() < self._fence

    def pause(self, holder: str, why: str) -> None:
        """Close the gate on behalf of ``holder`` (until it calls :meth:`resume`)."""
        if self._reasons.get(holder) != why:
            self._reasons[holder] = why
            self._wake()

    def resume(self, holder: str) -> None:
        """Withdraw ``holder``'s reason to pause."""
        if self._reasons.pop(holder, None) is not None:
            self._wake()

    def fence_until(self, deadline: float) -> None:
        """Let serving run until ``deadline`` (AnyIO time) at the latest; cancel it then."""
        self._fence = deadline
        for scope in self._scopes:
            scope.deadline = deadline
        self._wake()

    async def wait_open(self) -> None:
        """Return once serving may run."""
        while not self.is_open():
            changed = self._changed
            with anyio.move_on_after(max(0.0, self._fence - anyio.current_time()) or math.inf):
                await changed.wait()  # a fence that is already past waits for a renewal

    async def wait_leading(self) -> None:
        """Return once the fence lets handlers run."""
        while not self.leading():
            await self._changed.wait()

    async def wait_paused(self) -> None:
        """Return once a holder pauses the operator (the fence cancels by itself)."""
        while not self._reasons:
            await self._changed.wait()

    @contextlib.contextmanager
    def fenced(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that ends at the fence, wherever the fence moves meanwhile."""
        with anyio.CancelScope(deadline=self._fence) as scope:
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def round_scope(self) -> contextlib.AbstractContextManager[object]:
        """Where a serving round runs: fenced, unless standbys keep watching (then only the
        handling is fenced, see the warm path of :mod:`anyop.engine.resource.serve_resource`)."""
        return contextlib.nullcontext() if self.warm else self.fenced()

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()


async def first_of(*waits: Callable[[], Awaitable[Any]]) -> None:
    """Return as soon as one of ``waits`` returns (the others are cancelled)."""
    async with anyio.create_task_group() as tg:

        async def one(wait: Callable[[], Awaitable[Any]]) -> None:
            await wait()
            tg.cancel_scope.cancel()

        for wait in waits:
            tg.start_soon(one, wait)
