"""What the operator remembers of each object for as long as it runs, across pauses.

A pause (a peer of a higher priority, a lost leadership) ends a serving round: the watches and the
workers stop, and the next round lists every object again with new workers. What Kopf keeps for
the whole process must survive that: the object's ``memo``, whether its resume handlers have run,
and which of its daemons and timers have exited for good. This store keeps them by uid, from the
object's first cycle until its deletion is seen; an object that leaves the watch's label selection
keeps its memory, as it is not deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Memories", "ObjectMemory"]


@dataclass(eq=False, slots=True)
class ObjectMemory:
    """What the process remembers of one object.

    Attributes:
        memo: The object's memo, shared by its handlers, daemons and timers.
        resumed: A cause has finished for the object in this process: resume handlers do not
            run for it again, even when it is listed again (after a pause).
        finished: The ids of the daemons and timers that exited for good (returned, or failed
            permanently): they are never spawned again for the object in this process.
    """

    memo: Any = None
    resumed: bool = False
    finished: set[str] = field(default_factory=set)


class Memories:
    """The memories of the objects of one operator, by uid.

    Args:
        new_memo: Makes the memo of an object seen for the first time.
    """

    def __init__(self, new_memo: Callable[[], Any] = dict) -> None:
        self._new_memo = new_memo
        self._memories: dict[str, ObjectMemory] = {}

    def __len__(self) -> int:
        return len(self._memories)

    def __contains__(self, uid: object) -> bool:
        return uid in self._memories

    def recall(self, uid: str) -> ObjectMemory:
        """The object's memory; a new one if it has none yet."""
        memory = self._memories.get(uid)
        if memory is None:
            memory = self._memories[uid] = ObjectMemory(self._new_memo())
        return memory

    def memo_of(self, uid: str) -> Any:
        """The object's memo if it has a memory, else a new memo that is not kept."""
        memory = self._memories.get(uid)
        return memory.memo if memory is not None else self._new_memo()

    def forget(self, uid: str) -> None:
        """The object is deleted: drop its memory."""
        self._memories.pop(uid, None)
