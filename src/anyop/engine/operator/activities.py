"""Operator-level activities: startup, cleanup and login handlers (probes: :mod:`.health`).

All handlers of an activity run at once; each is retried per its ``errors``, ``retries``,
``backoff`` and ``timeout`` until it succeeds or fails for good. Their state lives in memory only.
A final failure of any of them fails the whole activity with :class:`ActivityError`.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from anyop.clock import utcnow
from anyop.engine.invocation import invoke
from anyop.errors import AnyopError
from anyop.handlers.causes import Activity
from anyop.handlers.indexes import OperatorIndexes
from anyop.handlers.outcomes import Decision, Failed, Succeeded, decide, precheck
from anyop.handlers.progression import HandlerState
from anyop.handlers.records import ActivityHandler
from anyop.handlers.registry import OperatorRegistry
from anyop.settings import OperatorSettings

__all__ = ["ActivityError", "activity_kwargs", "run_activity"]


class ActivityError(AnyopError):
    """One or more handlers of an activity failed for good.

    Attributes:
        failures: The final errors by handler id.
    """

    def __init__(self, message: str, failures: Mapping[str, BaseException]) -> None:
        super().__init__(message)
        self.failures = dict(failures)


def _now() -> datetime.datetime:
    return utcnow()


ResultCheck = Callable[[ActivityHandler, Any], None]
"""Raises if a handler's result is unusable (the attempt then fails like a raising handler)."""


async def _attempt(
    handler: ActivityHandler,
    state: HandlerState,
    *,
    context: Mapping[str, Any],
    check: ResultCheck | None,
    settings: OperatorSettings,
) -> Decision:
    now = _now()
    if (early := precheck(handler, state, now=now)) is not None:
        return early
    kwargs = {
        **context,
        "param": handler.param,
        "retry": state.retries,
        "started": state.started or now,
        "runtime": state.runtime(now),
    }
    try:
        result = await invoke(handler.fn, kwargs)
        if check is not None:
            check(handler, result)
    except Exception as error:  # a handler's failure is data for the decision
        backoff = settings.execution.default_backoff
        return decide(handler, state, Failed(error), now=_now(), default_backoff=backoff)
    return decide(handler, state, Succeeded(result), now=_now())


def activity_kwargs(
    settings: OperatorSettings,
    memo: Any,
    activity: Activity,
    *,
    param: Any = None,
    indexes: OperatorIndexes | None = None,
) -> dict[str, Any]:
    """The kwargs of an activity handler's first attempt (``retry=0``), the indexes included.

    The indexes may be empty or partly filled while the operator starts or stops (as in Kopf);
    they override the framework's kwargs, as for resource handlers (and in Kopf).
    """
    now = _now()
    return {
        "logger": logging.getLogger(f"anyop.activities.{activity.value}"),
        "memo": memo,
        "settings": settings,
        "activity": activity,
        "param": param,
        "retry": 0,
        "started": now,
        "runtime": datetime.timedelta(0),
        **(indexes.kwargs() if indexes is not None else {}),
    }


async def run_activity(
    registry: OperatorRegistry,
    activity: Activity,
    *,
    settings: OperatorSettings,
    memo: Any,
    handlers: Sequence[ActivityHandler] | None = None,
    check: ResultCheck | None = None,
    indexes: OperatorIndexes | None = None,
) -> dict[str, Any]:
    """Run the activity's handlers until all have succeeded or one has failed for good.

    Args:
        registry: Where the activity's handlers are.
        activity: Which activity.
        settings: The operator's settings (a kwarg of the handlers).
        memo: The operator's memo (a kwarg of the handlers).
        handlers: These handlers instead of the registry's.
        check: Judges each result; what it raises fails that attempt (retried as usual).
        indexes: The operator's indexes, given to the handlers as kwargs by name.

    Returns:
        The handlers' results by handler id.

    Raises:
        ActivityError: A handler failed permanently, or ran out of retries or time.
    """
    context = activity_kwargs(settings, memo, activity, indexes=indexes)
    logger = context["logger"]
    selected = registry.activities.select(activity) if handlers is None else handlers
    pending = {h.id: h for h in selected}
    states = {hid: HandlerState.from_scratch(now=_now(), purpose=activity.value) for hid in pending}
    results: dict[str, Any] = {}
    failures: dict[str, BaseException] = {}
    while pending:
        delays: list[float] = []
        for handler_id, handler in list(pending.items()):
            decision = await _attempt(
                handler, states[handler_id], context=context, check=check, settings=settings
            )
            logger.log(decision.level, decision.message, exc_info=decision.exc_info)
            states[handler_id] = decision.state
            if not decision.outcome.final:
                delays.append(decision.outcome.delay or 0)
                continue
            del pending[handler_id]
            if decision.outcome.exception is not None:
                failures[handler_id] = decision.outcome.exception
            else:
                results[handler_id] = decision.outcome.result
        if failures:
            names = ", ".join(sorted(failures))
            raise ActivityError(f"The {activity.value} activity failed: {names}.", failures)
        if pending:
            await anyio.sleep(min(delays))
    return results
