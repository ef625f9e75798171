"""A sharded replica's membership: its own Lease, the others', the hand-over of objects.

:func:`hold_shard` runs beside the serving rounds (like leader election, see
:mod:`anyop.engine.coordination.lease_keeper`). At every step it lists the group's Leases, takes
the live members as the target view, sweeps the served resources until they hold nothing
outside this replica's share of it, renews its own Lease (with the view's digest as its
acknowledgement once the sweep is clean), and activates the view once every member acknowledges
it. Each successful renewal moves the gate's fence to the start of that step plus
``renew_deadline``: a replica cut off from the API server stops all its work before the others
count it out. The pure rules are in :mod:`anyop.sharding`.
"""

from __future__ import annotations

import datetime
import logging
import math
import secrets
from typing import Any

import anyio
import anyio.abc

from anyop.clock import utcnow
from anyop.engine.coordination.pause_gate import Gate
from anyop.engine.coordination.renewals import renew_until_cancelled
from anyop.engine.coordination.shards import Shard
from anyop.errors import AnyopError, ConflictError, NotFoundError
from anyop.kube.client import KubeClient
from anyop.leadership import Observation, default_identity
from anyop.settings import ShardingSettings
from anyop.sharding import (
    GROUP_LABEL,
    LEASES,
    Member,
    ShardState,
    lease_name,
    live_members,
    member_body,
    renewed_since,
)

__all__ = ["STALE_FACTOR", "ShardKeeper", "hold_shard", "new_incarnation"]

logger = logging.getLogger("anyop.sharding")

STALE_FACTOR = 4
"""A member's Lease unchanged for this many of its durations is deleted (a replica that died)."""


def _now() -> datetime.datetime:
    return utcnow()


def new_incarnation() -> str:
    """A token that no other incarnation of any member has drawn (see
    :data:`~anyop.sharding.INCARNATION_ANNOTATION`)."""
    return secrets.token_hex(8)


class ShardKeeper:
    """One replica's side of the shard group: its Lease, the others', the views.

    Args:
        client: The API client.
        settings: The durations, the group, this replica's identity.
        namespace: Where the members' Leases live.
        gate: Fenced by the renewals.
        shard: This replica's shard (its views and the served resources).
    """

    def __init__(
        self,
        client: KubeClient,
        settings: ShardingSettings,
        namespace: str,
        *,
        gate: Gate,
        shard: Shard,
    ) -> None:
        self.client = client
        self.settings = settings
        self.namespace = namespace
        self.gate = gate
        self.shard = shard
        self.name = lease_name(settings.group, shard.me)
        self.version: str | None = None  # of our own Lease, as last written
        self.ack: str | None = None  # what our Lease says, as last written
        self.members = 1
        self._seen: dict[str, Observation] = {}
        self._baseline: dict[str, str] | None = None  # the first listing after our write

    @property
    def where(self) -> str:
        """The shard group, for log messages."""
        return f"{self.namespace}/{self.settings.group}"

    async def step(self) -> None:
        """List the members, sweep, renew our Lease, and activate the view if all agree.

        A view is activated only from a listing that started after our Lease was written (a
        member that wrote its Lease before is in it), only once every other member has
        written its Lease since our first such listing (its acknowledgement was written after
        it could see us), and only while our fence lets us serve.
        """
        started = anyio.current_time()
        registered = self.version is not None  # our Lease exists since before this listing
        listed = await self.client.list(
            LEASES, namespace=self.namespace, label_selector=f"{GROUP_LABEL}={self.settings.group}"
        )
        returned = anyio.current_time()  # a change is timed from here, expiries from `started`
        members = [m for m in map(Member.from_body, listed.items) if m is not None]
        live, self._seen = live_members(members, self._seen, now=started, returned=returned)
        await self._forget_stale(members, started)
        fresh = self._fresh(live, members, registered=registered)
        others = {m.identity: m.ack for m in live if m.identity != self.shard.me}
        if self.shard.retarget({m.identity: m.incarnation for m in live}):
            view = self.shard.state.target
            logger.info(
                f"The shard group {self.where} has {len(view.members)} members now: "
                f"{', '.join(view.members)}. Handing over."
            )
        self.members = len(self.shard.state.target.members)
        clean = self.shard.sweep()
        ack = self.shard.state.target.digest if clean else self.ack
        await self._renew(ack)
        lapsed = self.gate.fence <= anyio.current_time()  # we may have been counted out
        if lapsed:
            self._lapsed()
        self.gate.fence_until(started + self.settings.renew_deadline)
        acks = {**others, self.shard.me: self.ack}
        if fresh and not lapsed and self.gate.leading() and self.shard.state.may_activate(acks):
            self.shard.activate()
            logger.info(
                f"Serving {self.shard.size} objects now as 1 of {self.members} members of "
                f"{self.where}."
            )

    def _fresh(self, live: list[Member], members: list[Member], *, registered: bool) -> bool:
        """Whether this listing may activate a view: see :meth:`step`."""
        if not registered:
            self._baseline = None
            return False
        if self._baseline is None:
            self._baseline = {m.name: m.resource_version for m in members}
            return False
        return renewed_since(live, self._baseline, me=self.shard.me)

    def _unregistered(self) -> None:
        """Our Lease must be written anew before a listing may activate a view again."""
        self.version = None
        self._baseline = None

    def conflicted(self) -> None:
        """Our Lease changed meanwhile: the next step reads it anew."""
        self._unregistered()
        logger.debug(f"The shard Lease of {self.shard.me!r} changed meanwhile; will retry.")

    def failed(self, error: AnyopError) -> None:
        """A step failed: the next one tries again."""
        logger.warning(f"The shard group {self.where} failed; will retry: {error}")

    def check_fence(self) -> None:
        """Once the fence has passed without a renewal (the gate stops the work itself), handle
        nothing until every member acknowledges a view again (see :meth:`_lapsed`); read our
        Lease anew at the next step."""
        if anyio.current_time() >= self.gate.fence:  # as the gate sees it: not leading
            self._lapsed()
            self._unregistered()

    def _lapsed(self) -> None:
        """Our fence passed: the others may have counted us out and taken our objects, so
        handle nothing until every member acknowledges a view again after our next write, one
        that names our new incarnation (an older acknowledgement may come from a member that
        has counted us out since)."""
        if self.shard.state.active is not None:  # said once per lapse
            logger.warning(
                f"The shard Lease {self.namespace}/{self.name} was not renewed within "
                f"{self.settings.renew_deadline} s. All work is stopped until it is."
            )
        self.shard.state.deactivate()
        if self.gate.fence > -math.inf:  # (before our first renewal, nobody could count us out)
            self.shard.state.reincarnate(new_incarnation())
        self._baseline = None

    async def release(self) -> None:
        """Delete our Lease (at exit, once nothing is served): the others take over at once."""
        try:
            await self.client.delete(LEASES, name=self.name, namespace=self.namespace)
            logger.info(f"Left the shard group {self.where}.")
        except NotFoundError:
            pass
        except AnyopError as e:
            logger.warning(f"Could not delete the shard Lease {self.namespace}/{self.name}: {e}")

    async def _renew(self, ack: str | None) -> None:
        body = member_body(
            group=self.settings.group,
            identity=self.shard.me,
            namespace=self.namespace,
            duration=self.settings.lease_duration,
            ack=ack,
            now=_now(),
            resource_version=self.version,
            incarnation=self.shard.state.incarnation,
        )
        if self.version is None:
            written = await self._create_or_read(body)
        else:
            try:
                written = await self.client.replace(LEASES, body)
            except NotFoundError:  # deleted as stale: we were counted out long ago
                self._unregistered()
                self._lapsed()
                raise
        self.version = str((written.get("metadata") or {}).get("resourceVersion") or "") or None
        self.ack = ack

    async def _create_or_read(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create our Lease; if it exists (a restart with the same identity), take it over."""
        try:
            created: dict[str, Any] = await self.client.create(
                LEASES, body, namespace=self.namespace
            )
            return created
        except ConflictError:
            current = await self.client.get(LEASES, name=self.name, namespace=self.namespace)
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            replaced: dict[str, Any] = await self.client.replace(LEASES, body)
            return replaced

    async def _forget_stale(self, members: list[Member], now: float) -> None:
        """Delete the Leases of members gone long ago (each only if unchanged since)."""
        for member in members:
            sighting = self._seen.get(member.name)
            if member.identity == self.shard.me or sighting is None:
                continue
            if now < sighting.since + STALE_FACTOR * max(member.duration, 1):
                continue
            try:
                await self.client.delete(
                    LEASES,
                    name=member.name,
                    namespace=self.namespace,
                    resource_version=member.resource_version,
                )
                logger.info(f"Deleted the stale shard Lease of {member.identity!r}.")
            except (NotFoundError, ConflictError):
                pass


async def hold_shard(
    client: KubeClient,
    settings: ShardingSettings,
    namespace: str,
    *,
    gate: Gate,
    shard: Shard | None = None,
    task_status: anyio.abc.TaskStatus[Shard] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Be a member of the shard group until cancelled; delete our Lease then.

    Args:
        client: The API client.
        settings: ``settings.sharding``.
        namespace: Where the members' Leases live.
        gate: Fenced from the start until the first renewal, then by every renewal.
        shard: This replica's shard; a new one with ``settings.identity`` if ``None``.
        task_status: Reported ``started`` with the shard, before the first step.
    """
    settings.check()
    shard = shard or Shard(ShardState.alone(settings.identity or default_identity()))
    shard.state.reincarnate(new_incarnation())
    keeper = ShardKeeper(client, settings, namespace, gate=gate, shard=shard)
    gate.fence_until(-math.inf)
    task_status.started(shard)
    logger.info(f"Joining the shard group {keeper.where} as {shard.me!r}.")

    def period() -> float:  # a hand-over in progress steps four times as often (acknowledgements)
        return settings.retry_period / (1 if shard.state.settled else 4)

    await renew_until_cancelled(keeper, renew_deadline=settings.renew_deadline, period=period)
