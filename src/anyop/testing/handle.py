"""An operator running for one test, and what the test needs around it.

The ``anyop_operator`` fixture of anyop's pytest plugin yields a :class:`RunningOperator`::

    KEX = anyop.Resource("kopf.dev", "v1", "kopfexamples", kind="KopfExample")

    async def test_it_greets(anyop_operator: RunningOperator) -> None:
        await anyop_operator.create(KEX, {"metadata": {"name": "kex"}, "spec": {"who": "Al"}})
        body = await anyop_operator.wait_for(KEX, "kex", lambda obj: obj["status"]["greet"])
        assert body["status"]["greet"] == "Hello, Al!"

The operator runs in a task group of the test's own event loop (Trio or asyncio), so the test and
the handlers share it. Waits poll the API server at a short interval until a condition holds, and
fail the test with what they saw last when it does not hold in time.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import anyio
import httpx

from anyop.engine.operator.launch import single_error
from anyop.engine.operator.serve import serve
from anyop.handlers.registry import OperatorRegistry
from anyop.kube.auth import Vault
from anyop.kube.resources import Resource
from anyop.logs import PLAIN_FORMAT, ObjectPrefixingFormatter
from anyop.settings import OperatorSettings

__all__ = ["RunningOperator", "open_operator"]

T = TypeVar("T")
Body = dict[str, Any]
Condition = Callable[[Body], object]

POLL_INTERVAL = 0.1
"""Seconds between two looks at the API server (or at the log records) while waiting."""

_MERGE = {"Content-Type": "application/merge-patch+json"}
_LINE = ObjectPrefixingFormatter(PLAIN_FORMAT)
_SHOWN = 2000  # characters of the last seen object in a failed wait's message


class LogRecords(logging.Handler):
    """Keeps every record of a logger and its children, at all levels, while attached."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    @contextmanager
    def attached(self, name: str = "anyop") -> Iterator[None]:
        """Attach to the logger ``name``, which logs at all levels meanwhile (until the last of
        the recorders attached to it, in whatever order, is detached: several operators of one
        test overlap)."""
        logger = logging.getLogger(name)
        count, level = _ATTACHED.get(name, (0, logger.level))
        _ATTACHED[name] = (count + 1, level)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)
        try:
            yield
        finally:
            logger.removeHandler(self)
            count, level = _ATTACHED.pop(name)
            if count > 1:
                _ATTACHED[name] = (count - 1, level)
            else:
                logger.setLevel(level)


_ATTACHED: dict[str, tuple[int, int]] = {}
"""Per logger name: how many recorders are attached, and its level before the first."""


def _log_line(record: logging.LogRecord) -> str:
    """The record as ``anyop run --log-format plain`` prints it, without a traceback."""
    copy = logging.makeLogRecord(record.__dict__)
    copy.message = copy.getMessage()
    return _LINE.formatMessage(copy)


class RunningOperator:
    """An operator serving one fresh namespace while a test runs (see :func:`open_operator`).

    Attributes:
        namespace: The namespace the operator serves, created for this test.
        api: An httpx client of the API server with admin credentials; its ``base_url`` is the
            server, so paths such as ``/api/v1/namespaces`` are enough.
    """

    def __init__(self, namespace: str, api: httpx.AsyncClient) -> None:
        self.namespace = namespace
        self.api = api
        self._logs = LogRecords()
        self._stop, self._ready, self._done = anyio.Event(), anyio.Event(), anyio.Event()
        self._error: BaseException | None = None
        self._raised = False

    # -- what the operator logged ---------------------------------------------------------------

    @property
    def records(self) -> list[logging.LogRecord]:
        """The records of the ``anyop`` loggers since the operator started, oldest first."""
        return list(self._logs.records)

    @property
    def messages(self) -> list[str]:
        """The records' messages; those about an object start with ``[namespace/name] ``."""
        return [_log_line(record) for record in self._logs.records]

    # -- objects in the test's namespace --------------------------------------------------------

    def url(self, resource: Resource, name: str | None = None) -> str:
        """The path of the resource's objects (or of one of them) in the test's namespace.

        A resource that is not declared cluster-scoped (``namespaced=False``) is taken as
        namespaced.
        """
        if resource.namespaced is False:
            return resource.get_url(name=name)
        namespaced = dataclasses.replace(resource, namespaced=True)
        return namespaced.get_url(namespace=self.namespace, name=name)

    async def create(self, resource: Resource, body: Mapping[str, Any]) -> Body:
        """Create an object in the test's namespace; returns it as the server stored it.

        ``apiVersion`` and ``kind`` are taken from the resource unless the body has them.

        Raises:
            AssertionError: The server refused it (with its reason).
        """
        kind = {"kind": resource.kind} if resource.kind else {}
        full = {"apiVersion": resource.api_version, **kind, **body}
        return _checked(await self.api.post(self.url(resource), json=full), "Creating")

    async def patch(self, resource: Resource, name: str, patch: Mapping[str, Any]) -> Body:
        """Merge-patch an object of the test's namespace; returns the patched object."""
        response = await self.api.patch(self.url(resource, name), json=patch, headers=_MERGE)
        return _checked(response, "Patching")

    async def delete(self, resource: Resource, name: str) -> None:
        """Ask to delete an object; its finalizers may keep it for a while (see
        :meth:`wait_for_deletion`)."""
        _checked(await self.api.delete(self.url(resource, name)), "Deleting")

    # -- waiting --------------------------------------------------------------------------------

    async def wait_for(
        self,
        resource: Resource,
        name: str,
        condition: Condition,
        *,
        timeout: float = 30.0,  # noqa: ASYNC109 (a failed wait tells what it saw last)
    ) -> Body:
        """Wait until the object exists and ``condition(body)`` is true; returns that body.

        A ``KeyError`` or ``IndexError`` of the condition means "not yet", so
        ``lambda obj: obj["status"]["greet"]`` waits for the field to appear.

        Raises:
            AssertionError: Not within ``timeout`` seconds (the message shows the object as it
                was last seen).
            Exception: What the operator raised, if it failed meanwhile.
        """
        url = self.url(resource, name)
        last: Body | None = None

        async def attempt() -> Body | None:
            nonlocal last
            response = await self.api.get(url)
            if response.status_code == 404:
                return None
            last = _checked(response, "Reading")
            return last if _holds(condition, last) else None

        def failure() -> str:
            what = getattr(condition, "__name__", repr(condition))
            seen = "It was never found." if last is None else f"Last seen: {_shown(last)}"
            return f"{url} did not satisfy the condition {what} within {timeout} seconds. {seen}"

        return await self._until(attempt, timeout, failure)

    async def wait_for_deletion(
        self,
        resource: Resource,
        name: str,
        *,
        timeout: float = 30.0,  # noqa: ASYNC109 (as wait_for's)
    ) -> None:
        """Wait until the object is gone (its finalizers released)."""
        url = self.url(resource, name)

        async def attempt() -> bool | None:
            return (await self.api.get(url)).status_code == 404 or None

        await self._until(attempt, timeout, lambda: f"{url} still exists after {timeout} seconds.")

    async def wait_for_log(self, text: str, *, timeout: float = 30.0) -> str:  # noqa: ASYNC109
        """Wait until a message (as in :attr:`messages`) contains ``text``; returns it."""

        async def attempt() -> str | None:
            return next((line for line in self.messages if text in line), None)

        return await self._until(attempt, timeout, lambda: f"No message has {text!r} yet.")

    async def _until(
        self, attempt: Callable[[], Awaitable[T | None]], seconds: float, failure: Callable[[], str]
    ) -> T:
        with anyio.move_on_after(seconds):
            while True:
                self._raise_error(again=True)
                if (found := await attempt()) is not None:
                    return found
                with anyio.move_on_after(POLL_INTERVAL):
                    await self._done.wait()  # an operator that fails ends the wait at once
        raise AssertionError(failure())

    # -- the operator's life --------------------------------------------------------------------

    async def _serve(
        self, registry: OperatorRegistry, settings: OperatorSettings | None, vault: Vault | None
    ) -> None:
        try:
            await serve(
                registry=registry,
                settings=settings,
                vault=vault,
                namespaces=[self.namespace],
                stop_event=self._stop,
                ready_event=self._ready,
            )
        except Exception as error:  # kept for the test: see open_operator()
            self._error = error
        else:
            if not self._stop.is_set():
                self._error = RuntimeError("The operator exited before the test ended.")
        finally:
            self._done.set()

    async def _became_ready(self, seconds: float) -> bool:
        """Wait until the operator is ready, or has failed or not been ready in time (``False``)."""
        with anyio.move_on_after(seconds):
            async with anyio.create_task_group() as race:
                for event in (self._ready, self._done):
                    race.start_soon(_then_cancel, event.wait, race.cancel_scope)
        if self._ready.is_set() and not self._done.is_set():
            return True
        if self._error is None:
            self._error = TimeoutError(f"The operator was not ready within {seconds} seconds.")
        return False

    async def _stop_within(self, seconds: float) -> None:
        self._stop.set()
        with anyio.move_on_after(seconds, shield=True):
            await self._done.wait()
        if not self._done.is_set() and self._error is None:
            self._error = TimeoutError(f"The operator did not stop within {seconds} seconds.")

    def _raise_error(self, *, again: bool) -> None:
        """Raise what the operator raised, if it failed; ``again``: even if it was raised before."""
        if self._error is not None and (again or not self._raised):
            self._raised = True
            error = self._error
            raise single_error(error) if isinstance(error, BaseExceptionGroup) else error


@asynccontextmanager
async def open_operator(
    registry: OperatorRegistry,
    *,
    namespace: str,
    api: httpx.AsyncClient,
    settings: OperatorSettings | None = None,
    vault: Vault | None = None,
    ready_timeout: float = 60.0,
    stop_timeout: float = 30.0,
) -> AsyncIterator[RunningOperator]:
    """Run an operator serving ``namespace`` for the duration of the block.

    ``vault`` holds the credentials (by default, those of the kubeconfig, as ``anyop run``
    logs in); a :class:`~anyop.testing.FakeCluster`'s :meth:`vault
    <anyop.testing.FakeCluster.vault>` serves the operator from it.

    The block starts once every resource is listed (the startup handlers have run); it ends by
    stopping the operator gracefully (the cleanup handlers run). The ``anyop`` loggers' records
    are kept meanwhile, at all levels.

    WARNING: the operator's error does not cancel the task that entered this block: under AnyIO's
    pytest plugin, fixtures and the test share one task, so a cancellation meant for a fixture
    would end the test from outside its own scopes. The error is kept instead: the handle's waits
    raise it as soon as it happens, and the block's end raises it if no wait did.

    Raises:
        TimeoutError: Not ready within ``ready_timeout``, or not stopped within ``stop_timeout``.
        Exception: What the operator raised (e.g. ``ActivityError`` of a startup handler).
    """
    handle = RunningOperator(namespace, api)
    with handle._logs.attached():
        async with anyio.create_task_group() as tg:
            tg.start_soon(handle._serve, registry, settings, vault)
            if await handle._became_ready(ready_timeout):
                try:
                    yield handle
                finally:
                    await handle._stop_within(stop_timeout)
            tg.cancel_scope.cancel()
    handle._raise_error(again=False)


async def _then_cancel(wait: Callable[[], Awaitable[Any]], scope: anyio.CancelScope) -> None:
    await wait()
    scope.cancel()


def _holds(condition: Condition, body: Body) -> bool:
    try:
        return bool(condition(body))
    except LookupError:
        return False


def _checked(response: httpx.Response, doing: str) -> Body:
    if response.is_error:
        try:
            reason = response.json().get("message", response.text)
        except ValueError:
            reason = response.text
        url = response.request.url.path
        raise AssertionError(f"{doing} {url} failed: HTTP {response.status_code}: {reason}")
    body: Body = response.json()
    return body


def _shown(body: Body) -> str:
    metadata = {k: v for k, v in body.get("metadata", {}).items() if k != "managedFields"}
    text = json.dumps({**body, "metadata": metadata}, sort_keys=True)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
