"""One replica's shard at run time: the pure :class:`~anyop.sharding.ShardState` and the served
resources that obey it.

Each served resource of a serving round joins the shard with a :class:`ShardPart` (its filter on
the watch-stream, see :mod:`anyop.engine.resource.shard_parts`) while the round runs. The keeper
(:mod:`anyop.engine.coordination.shard_keeper`) changes the target view, sweeps the parts until
they hold nothing outside it, and activates the view once every member acknowledges it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from anyop.kube.shard_ranges import HASH_SPACE, ShardRanges
from anyop.sharding import ShardState

__all__ = ["Shard", "ShardPart"]


class ShardPart(Protocol):
    """A served resource's side of the shard."""

    @property
    def size(self) -> int:
        """How many objects it handles now."""

    def retarget(self, *, gaining: bool) -> None:
        """The target view changed: stop handling what is not ours there any more; list anew
        if we may gain objects (their bodies are not kept while they are others')."""

    def sweep(self) -> bool:
        """Stop what is not ours (again: a running cycle may have started daemons); say if
        nothing outside our share is left (no cycle, daemon, timer or termination)."""

    def activate(self, *, gaining: bool) -> None:
        """The target view is active: handle the gained objects (``gaining``: there may be
        some, from a listing that starts now)."""


class Shard:
    """This replica's share of the objects, and the parts that obey it.

    Args:
        state: The pure state (the views).
    """

    def __init__(self, state: ShardState) -> None:
        self.state = state
        self._parts: list[ShardPart] = []

    @property
    def me(self) -> str:
        """This replica's identity."""
        return self.state.me

    @property
    def size(self) -> int:
        """How many objects this replica handles now, in all its served resources."""
        return sum(part.size for part in list(self._parts))

    def handles(self, uid: str) -> bool:
        """Whether this replica may handle the object now."""
        return self.state.handles(uid)

    def share(self) -> ShardRanges | None:
        """This replica's share under its active view (what it may handle is within it), to ask
        the API server for; ``None`` before its first activation, or if it has all or none."""
        active = self.state.active
        share = active.share(self.me) if active is not None else None
        if share is None or share.ranges in ((), ((0, HASH_SPACE),)):
            return None
        return share

    def gains(self, uid: str) -> bool:
        """Whether the object becomes this replica's once the target view is active."""
        return self.state.gains(uid)

    @contextlib.contextmanager
    def joined(self, part: ShardPart) -> Iterator[None]:
        """Obey the shard while the block runs (a resource's serving round)."""
        self._parts.append(part)
        try:
            yield
        finally:
            self._parts.remove(part)

    def retarget(self, members: Iterable[str] | Mapping[str, str]) -> bool:
        """Take the live members (a mapping: with their incarnations) as the target view; say
        if it changed."""
        before = set(self.state.target.members)
        if not self.state.retarget(members):
            return False
        gaining = bool(before - set(self.state.target.members))  # someone left: we may gain
        for part in list(self._parts):
            part.retarget(gaining=gaining)
        return True

    def sweep(self) -> bool:
        """Stop what is outside our share in every part; say if all of them are clean."""
        clean = [part.sweep() for part in list(self._parts)]  # every part, not the first dirty
        return all(clean)

    def activate(self) -> None:
        """Activate the target view and start the gained objects."""
        before = self.state.active
        gaining = before is None or bool(set(before.members) - set(self.state.target.members))
        self.state.activate()
        for part in list(self._parts):
            part.activate(gaining=gaining)
