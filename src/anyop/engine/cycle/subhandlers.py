"""Sub-handlers: handlers declared by a running resource-changing handler, run as its children.

A parent handler registers sub-handlers declaratively (``@anyop.subhandler``, ``anyop.register``)
or runs them imperatively (``await anyop.execute(fns=...)``). Either way they are ordinary
resource-changing handlers with the ids ``parent/child``: their progress, retries and results are
kept on the object like any handler's, and the parent counts as finished only when all of its
children are. Until then the parent is called again in later cycles to declare them again.

The engine opens an :class:`Execution` around every resource-changing handler it invokes; the
functions here find it through a context variable, so they work from nested helpers too.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from anyop.clock import utcnow
from anyop.errors import PermanentError
from anyop.handlers.lifecycles import LifeCycleFn
from anyop.handlers.progression import Progress
from anyop.handlers.records import ResourceChangingHandler, generate_id
from anyop.handlers.registry import SubRegistry, current_handler, current_subregistry

__all__ = ["ChildrenRetry", "Execution", "execute"]


class RunChildren(Protocol):
    """Runs the due children of the parent for the parent's cause; returns their progress."""

    def __call__(
        self,
        handlers: Sequence[ResourceChangingHandler],
        /,
        *,
        registry: SubRegistry,
        lifecycle: LifeCycleFn | None,
    ) -> Awaitable[Progress]: ...


class ChildrenRetry(Exception):
    """Some sub-handlers are not finished: the parent is not finished either.

    It passes through the parent's code (do not catch it there) up to the engine, which keeps
    the parent pending and calls it again after ``delay`` seconds.
    """

    def __init__(self, delay: float | None) -> None:
        super().__init__(f"Sub-handlers are not finished; next attempt in {delay} seconds.")
        self.delay = delay


_current_execution: contextvars.ContextVar[Execution | None] = contextvars.ContextVar(
    "anyop_current_execution", default=None
)


class _Active:
    """The context manager of :meth:`Execution.active` (a class: cheaper than a generator)."""

    __slots__ = ("_execution", "_tokens")

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    def __enter__(self) -> Execution:
        execution = self._execution
        self._tokens = (
            _current_execution.set(execution),
            current_handler.set(execution.parent),
            current_subregistry.set(execution.registry),
        )
        return execution

    def __exit__(self, *exc_info: object) -> None:
        execution_token, handler_token, subregistry_token = self._tokens
        current_subregistry.reset(subregistry_token)
        current_handler.reset(handler_token)
        _current_execution.reset(execution_token)


@dataclasses.dataclass(eq=False)
class Execution:
    """The running invocation of one resource-changing handler, as its children see it.

    Attributes:
        parent: The running handler.
        run_children: How the engine runs children for the parent's cause.
        registry: The sub-handlers declared so far in this invocation.
        executed: Whether the children were already run (explicitly by ``execute()``).
        subrefs: The ids of all children run in this invocation.
    """

    parent: ResourceChangingHandler
    run_children: RunChildren
    registry: SubRegistry = dataclasses.field(default_factory=SubRegistry)
    executed: bool = False
    subrefs: list[str] = dataclasses.field(default_factory=list)

    def active(self) -> _Active:
        """Make this execution the current one (for decorators and ``execute()``)."""
        return _Active(self)

    async def finish(self) -> None:
        """Run the declared sub-handlers if the parent did not ``execute()`` them itself.

        Raises:
            ChildrenRetry: Some of them are not finished yet.
            PermanentError: All are finished, but some failed for good.
        """
        if self.registry.handlers and not self.executed:
            await self.run(self.registry, lifecycle=None)

    async def run(self, registry: SubRegistry, *, lifecycle: LifeCycleFn | None) -> None:
        """Run the children of ``registry`` once; raise unless all of them are finished."""
        self.executed = True
        handlers = registry.handlers
        for handler in handlers:
            if handler.id not in self.subrefs:
                self.subrefs.append(handler.id)
        progress = await self.run_children(handlers, registry=registry, lifecycle=lifecycle)
        if not progress.done:
            raise ChildrenRetry(progress.delay(utcnow()))
        failed = sorted(hid for hid in progress if progress[hid].active and progress[hid].failure)
        if failed:
            names = ", ".join(repr(hid) for hid in failed)
            raise PermanentError(f"Sub-handlers failed for good: {names}.")


async def execute(
    *,
    fns: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None = None,
    handlers: Iterable[ResourceChangingHandler] | None = None,
    registry: SubRegistry | None = None,
    lifecycle: LifeCycleFn | None = None,
) -> None:
    """Run sub-handlers of the running handler now, and return when all of them are finished.

    Args:
        fns: Functions to run as sub-handlers: ``{id: fn}`` (ids ``parent/id``), or a list of
            functions (ids ``parent/<function name>``).
        handlers: Ready sub-handler records.
        registry: A registry of sub-handlers.
        lifecycle: Which of the due sub-handlers run in this cycle (the default lifecycle if
            ``None``).

    Without arguments, runs the sub-handlers declared so far with ``@anyop.subhandler``.

    Raises:
        RuntimeError: Called outside of a running resource-changing handler.
        ChildrenRetry: Some sub-handlers are not finished: let it propagate; the engine calls
            the parent again later.
        PermanentError: All are finished, but some failed for good.
    """
    execution = _current_execution.get()
    if execution is None:
        raise RuntimeError(
            "anyop.execute() works only inside a running resource-changing handler "
            "(create/update/delete/resume/field), awaited in its own task."
        )
    chosen = SubRegistry()
    explicit = fns is not None or handlers is not None or registry is not None
    for handler in _children(execution.parent, fns, handlers=handlers, registry=registry):
        chosen.append(handler)
    if not explicit:
        chosen = execution.registry
    await execution.run(chosen, lifecycle=lifecycle)


def _children(
    parent: ResourceChangingHandler,
    fns: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | None,
    *,
    handlers: Iterable[ResourceChangingHandler] | None,
    registry: SubRegistry | None,
) -> Iterator[ResourceChangingHandler]:
    """The sub-handler records for ``execute()``'s arguments, with the parent's id prefixed."""
    if fns is not None:
        items = fns.items() if isinstance(fns, Mapping) else ((None, fn) for fn in fns)
        for key, fn in items:
            if not callable(fn):
                raise TypeError(f"anyop.execute(fns=...): {fn!r} is not callable.")
            yield ResourceChangingHandler(
                id=generate_id(fn, key, prefix=parent.id),
                fn=fn,
                field_needs_change=parent.field_needs_change,
            )
    if handlers is not None:
        yield from handlers
    if registry is not None:
        yield from registry.handlers
