"""Peering with other operators: keep-alives, pausing for higher priorities, freeze and resume.

:func:`hold_peering` runs beside the serving rounds (see
:mod:`anyop.engine.coordination.pause_gate`): for every peering object the operator uses, a
:class:`PeeringKeeper` writes our record, watches the object, removes dead peers, and pauses the
gate while a live peer has a higher (or the same) priority. Our record says whether we serve:
``serving: true`` before the gate opens (and the gate opens only if the answer to that write
lets us serve), ``serving: false`` once the gate is closed and the last serving round has ended.
The pure rules are in :mod:`anyop.peering`.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc

from anyop.clock import utcnow
from anyop.engine.coordination.pause_gate import Gate, first_of
from anyop.errors import (
    AnyopError,
    ConfigError,
    ForbiddenError,
    NotFoundError,
)
from anyop.kube.client import KubeClient
from anyop.kube.persistence import until_answered
from anyop.kube.resources import Resource
from anyop.kube.watch import Watcher, WatchEvent
from anyop.peering import (
    Verdict,
    judge,
    keepalive_interval,
    keepalive_patch,
    parse_peers,
    peer_identity,
    peering_resources,
    removal_patch,
    transition_messages,
)
from anyop.settings import PeeringSettings

__all__ = ["PeeringKeeper", "describe", "find_peering", "freeze", "hold_peering", "thaw"]

logger = logging.getLogger("anyop.peering")

ABSENT_RECHECK = 5.0
"""Seconds between looks for a mandatory peering object that does not exist yet."""

GOODBYE_TIMEOUT = 5.0
"""Seconds the removal of our record may take at exit."""

RETRY_PERIOD = 1.0
"""Seconds until a failed write of whether we serve is tried again."""


def _now() -> datetime.datetime:
    return utcnow()


def describe(name: str, namespace: str | None) -> str:
    """A peering object as log lines name it."""
    return f"{name!r} in {namespace!r}" if namespace else f"{name!r} (cluster-wide)"


async def find_peering(
    client: KubeClient, name: str, namespace: str | None
) -> tuple[Resource, dict[str, Any]] | None:
    """The peering object of this name: anyop's kind first, then Kopf's; ``None`` if neither.

    A kind whose CRD is absent, or that we may not read, counts as having no such object.
    """
    for resource in peering_resources(clusterwide=namespace is None):
        try:
            return resource, await client.get(resource, name=name, namespace=namespace)
        except NotFoundError:
            continue
        except ForbiddenError as e:
            logger.debug(f"No access to {resource!r}: {e}")
    return None


class PeeringKeeper:
    """Our membership in one peering object.

    Args:
        client: The API client.
        settings: Our priority, lifetime, and whether to log keep-alives.
        resource: The peering object's resource (anyop's or Kopf's kind).
        namespace: Its namespace, or ``None`` for the cluster-wide one.
        identity: Our key in its ``status``.
        gate: Paused while we must pause.
    """

    def __init__(
        self,
        client: KubeClient,
        settings: PeeringSettings,
        resource: Resource,
        *,
        namespace: str | None,
        identity: str,
        gate: Gate,
    ) -> None:
        self.client, self.settings, self.resource = client, settings, resource
        self.namespace, self.identity, self.gate = namespace, identity, gate
        self.status: dict[str, Any] = {}
        self.paused = False
        self.serving: bool | None = False
        """What our record says: ``True`` from before the gate opens until after it is closed
        and idle; ``None`` after a write of it failed (it may have landed or not)."""
        self._waiting: tuple[str, ...] = ()
        self._unsaid = False  # a write of whether we serve failed: retry soon
        self._gone = False  # the peering object was deleted: nobody can peer in it
        self._changed = anyio.Event()
        self._key = f"peering:{namespace or ''}/{settings.name}"

    @property
    def where(self) -> str:
        """The peering object, for log messages."""
        return describe(self.settings.name, self.namespace)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Keep our record alive and act on the others' until cancelled; then say goodbye."""
        watcher = Watcher(
            self.client,
            self.resource,
            namespace=self.namespace,
            field_selector=f"metadata.name={self.settings.name}",
        )
        self.gate.pause(self._key, "joining the peering")  # until our record says we serve
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(watcher.run, self._seen)
                await self._keep_alive()
                changed, verdict = self._changed, await self._judge()
                task_status.started()
                await self._serve_forever(changed, verdict)
        finally:
            self.gate.resume(self._key)  # this namespace is no longer served: it pauses nothing
            with anyio.move_on_after(GOODBYE_TIMEOUT, shield=True):
                await self._patch(removal_patch([self.identity]), quiet=True)

    async def _serve_forever(self, changed: anyio.Event, verdict: Verdict) -> None:
        """Remove dead peers, wait for a change (ours, the peers', or the gate's), an expiry or
        the keep-alive; judge again."""
        next_keepalive = anyio.current_time() + keepalive_interval(self.settings.lifetime)
        while True:
            if verdict.dead:
                await self._patch(removal_patch(verdict.dead))
            wake = next_keepalive
            if self._unsaid:
                wake = min(wake, anyio.current_time() + RETRY_PERIOD)
            if verdict.next_expiry is not None:
                left = (verdict.next_expiry - _now()).total_seconds()
                wake = min(wake, anyio.current_time() + max(left, 0) + 0.1)
            with anyio.move_on_after(max(0.0, wake - anyio.current_time())):
                await first_of(changed.wait, self.gate.changed.wait)
            if anyio.current_time() >= next_keepalive:
                if await self._keep_alive():
                    interval = keepalive_interval(self.settings.lifetime)
                else:  # our record may expire before the next one: a peer would take over
                    self._fence()
                    interval = RETRY_PERIOD
                next_keepalive = anyio.current_time() + interval
            changed, verdict = self._changed, await self._judge()

    def _fence(self) -> None:
        """Stop serving after a keep-alive that failed, until one is written again: our record
        expires a few seconds later (the keep-alive comes 5-10 s before), and then a peer may
        remove it and serve; our handlers in flight have those seconds to end. Serving again
        takes a write of ``serving: true`` whose answer lets us serve (see :meth:`_judge`)."""
        if self.serving is not False:
            self.serving = None  # (peers may have taken over meanwhile: asked again)
        self.gate.pause(self._key, "our keep-alive failed; serving again once it is written")

    async def _seen(self, event: WatchEvent) -> None:
        self._gone = event.type == "DELETED"
        self.status = {} if self._gone else dict(event.object.get("status") or {})
        self._wake()

    async def _keep_alive(self, serving: bool | None = None) -> bool:
        """Renew our record, saying ``serving`` (or what it says now, if known); whether it
        was written."""
        serving = self.serving if serving is None else serving
        patch = keepalive_patch(
            self.identity,
            priority=self.settings.priority,
            lifetime=self.settings.lifetime,
            now=_now(),
            serving=serving,
        )
        written = await self._patch(patch)
        if written and not self.settings.stealth:
            logger.debug(f"Keep-alive in {self.where}: ok.")
        return written

    async def _patch(self, patch: dict[str, Any], *, quiet: bool = False) -> bool:
        try:
            body = await self.client.patch(
                self.resource, patch, name=self.settings.name, namespace=self.namespace
            )
        except AnyopError as e:
            self._gone = self._gone or isinstance(e, NotFoundError)
            if not quiet:
                logger.warning(f"Peering in {self.where} failed; will retry: {e}")
            return False
        self.status, self._gone = dict(body.get("status") or {}), False
        self._wake()
        return True

    async def _judge(self) -> Verdict:
        """Judge the records; pause or open the gate; say whether we serve where that changed.

        The gate opens only after a write of ``serving: true`` whose answer (the object's status
        right after it) still lets us serve: a peer that wrote its record before that write is
        in the answer, and one that writes after it sees that we serve and waits for our
        ``serving: false``, which we write only once the gate is closed and idle.
        """
        self._unsaid = False
        while True:
            if self._gone:  # no peer can see us, nor we them: as in the standalone mode
                self.serving = None  # whatever a new object says, it is said at the next write
                self.gate.resume(self._key)
                return Verdict()
            verdict = judge(
                parse_peers(self.status),
                identity=self.identity,
                priority=self.settings.priority,
                now=_now(),
                shared=self.settings.shared,
            )
            for warning, message in transition_messages(self.paused, verdict):
                logger.log(logging.WARNING if warning else logging.INFO, message)
            self.paused = verdict.paused
            if verdict.serving_lower != self._waiting and verdict.serving_lower:
                waited = list(verdict.serving_lower)
                logger.info(f"Waiting for lower-priority peers to pause: {waited}.")
            self._waiting = verdict.serving_lower
            if not verdict.may_serve:
                self.gate.pause(self._key, _why(verdict))
                if self.serving is False or not self.gate.idle:
                    return verdict
                said = await self._keep_alive(serving=False)
                self.serving, self._unsaid = (False, False) if said else (None, True)
                if not said:
                    return verdict
            elif self.serving is not True:
                said = await self._keep_alive(serving=True)
                self.serving, self._unsaid = (True, False) if said else (None, True)
                if not said:
                    return verdict
                # judged again on the answer, before the gate opens
            else:
                self.gate.resume(self._key)
                return verdict

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()


def _why(verdict: Verdict) -> str:
    """The gate's reason to pause for a verdict that does not let us serve."""
    if verdict.paused:
        return f"peers {[*verdict.higher, *verdict.same]}"
    return f"lower-priority peers still serving: {list(verdict.serving_lower)}"


async def hold_peering(
    client: KubeClient,
    settings: PeeringSettings,
    namespaces: Sequence[str] | None,
    *,
    gate: Gate,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Peer in the cluster-wide object (``namespaces=None``) or in one object per namespace.

    Returns at once in the standalone mode, and when no peering object exists unless peering is
    mandatory (then the gate stays paused until the object appears). Otherwise runs until
    cancelled and removes our records on the way out.
    """
    if settings.standalone:
        logger.debug("Standalone mode: no peering.")
        task_status.started()
        return
    identity = settings.identity or peer_identity()
    async with anyio.create_task_group() as tg:
        for namespace in namespaces if namespaces is not None else [None]:
            peer = functools.partial(
                _peer_in, client, settings, namespace, identity=identity, gate=gate
            )
            await tg.start(peer)
        task_status.started()


async def _peer_in(
    client: KubeClient,
    settings: PeeringSettings,
    namespace: str | None,
    *,
    identity: str,
    gate: Gate,
    task_status: anyio.abc.TaskStatus[None],
) -> None:
    where = describe(settings.name, namespace)
    found = await _first_look(client, settings, namespace, where)
    if found is None and not settings.mandatory:
        what = "Default peering object" if settings.name == "default" else f"Peering object {where}"
        logger.warning(f"{what} is not found, falling back to the standalone mode.")
        task_status.started()
        return
    key = f"peering:{namespace or ''}/{settings.name}:absent"
    while found is None:
        logger.warning(f"Peering object {where} is not found; pausing until it exists.")
        gate.pause(key, f"no peering object {where}")
        task_status.started()
        task_status = anyio.TASK_STATUS_IGNORED
        await anyio.sleep(ABSENT_RECHECK)
        try:
            found = await find_peering(client, settings.name, namespace)
        except AnyopError as e:
            logger.warning(f"Looking for the peering object {where} failed; will retry: {e}")
    gate.resume(key)
    resource = found[0]
    logger.debug(f"Peering in {where} via {resource!r} as {identity!r}.")
    keeper = PeeringKeeper(
        client, settings, resource, namespace=namespace, identity=identity, gate=gate
    )
    await keeper.run(task_status=task_status)


async def _first_look(
    client: KubeClient, settings: PeeringSettings, namespace: str | None, where: str
) -> tuple[Resource, dict[str, Any]] | None:
    """The peering object, looked for until the API server answers: a throttled or failing
    server (after the client's own retries) delays the start, which serves nothing meanwhile,
    instead of ending the operator. Other errors (a malformed name, 401) end it."""
    return await until_answered(
        functools.partial(find_peering, client, settings.name, namespace),
        what=f"Looking for the peering object {where}",
        logger=logger,
    )


async def freeze(
    client: KubeClient,
    name: str,
    namespace: str | None,
    *,
    identity: str,
    priority: int,
    lifetime: float,
) -> None:
    """Pause the operators of a peering (``anyop freeze``): a fake peer for ``lifetime`` s.

    Raises:
        ConfigError: There is no such peering object.
    """
    resource = await _existing(client, name, namespace)
    patch = keepalive_patch(identity, priority=priority, lifetime=lifetime, now=_now())
    await client.patch(resource, patch, name=name, namespace=namespace)


async def thaw(client: KubeClient, name: str, namespace: str | None, *, identity: str) -> None:
    """Remove the fake peer of :func:`freeze` (``anyop resume``).

    Raises:
        ConfigError: There is no such peering object.
    """
    resource = await _existing(client, name, namespace)
    await client.patch(resource, removal_patch([identity]), name=name, namespace=namespace)


async def _existing(client: KubeClient, name: str, namespace: str | None) -> Resource:
    found = await find_peering(client, name, namespace)
    if found is None:
        raise ConfigError(f"Peering object {describe(name, namespace)} is not found.")
    return found[0]
