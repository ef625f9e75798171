"""Lifecycles: which of the due handlers run in this handling cycle, and in which order.

A lifecycle gets the due handlers (in declaration order, finished ones excluded) and the
handlers' states, and returns the ones to run now. Each cycle ends with one patch, so running
fewer handlers per cycle means more patches; running more means a later first status update.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from anyop.handlers.progression import HandlerState

__all__ = [
    "LifeCycleFn",
    "all_at_once",
    "asap",
    "get_default_lifecycle",
    "one_by_one",
    "randomized",
    "set_default_lifecycle",
    "shuffled",
]

H = TypeVar("H")


class LifeCycleFn(Protocol):
    """``fn(handlers, *, state, **kwargs) -> handlers to run now``."""

    def __call__(
        self, handlers: Sequence[H], *, state: Mapping[str, HandlerState], **kwargs: Any
    ) -> Sequence[H]: ...


def all_at_once(handlers: Sequence[H], **_: Any) -> Sequence[H]:
    """Run all due handlers in this cycle."""
    return list(handlers)


def one_by_one(handlers: Sequence[H], **_: Any) -> Sequence[H]:
    """Run one handler per cycle, in declaration order."""
    return list(handlers[:1])


def randomized(handlers: Sequence[H], **_: Any) -> Sequence[H]:
    """Run one randomly chosen handler per cycle."""
    return [random.choice(handlers)] if handlers else []


def shuffled(handlers: Sequence[H], **_: Any) -> Sequence[H]:
    """Run all due handlers in this cycle, in a random order."""
    return random.sample(list(handlers), k=len(handlers))


def asap(handlers: Sequence[H], *, state: Mapping[str, HandlerState], **_: Any) -> Sequence[H]:
    """Run one handler per cycle: the one with the fewest retries (the default).

    A failing handler thus does not block the others: they get their turn before its retry.
    """

    def retries(handler: H) -> int:
        known = state.get(getattr(handler, "id", ""))
        return known.retries if known is not None else 0

    return sorted(handlers, key=retries)[:1]


_default: LifeCycleFn = asap


def get_default_lifecycle() -> LifeCycleFn:
    """The lifecycle used when the operator is not given one."""
    return _default


def set_default_lifecycle(lifecycle: LifeCycleFn | None) -> None:
    """Set the default lifecycle; ``None`` restores :func:`asap`."""
    global _default
    _default = lifecycle if lifecycle is not None else asap
