"""Leader election among replicas with a Lease: only the leader serves; the others stand by.

:func:`hold_leadership` runs beside the serving rounds (see
:mod:`anyop.engine.coordination.pause_gate`): it keeps the gate paused while this replica stands by,
and while it leads it moves the gate's fence to the start of its last successful renewal plus
``renew_deadline`` (the pure rules are in :mod:`anyop.leadership`). On a graceful exit it releases
the Lease so a standby takes over at once.
"""

from __future__ import annotations

import datetime
import logging
import math

import anyio
import anyio.abc

from anyop.clock import utcnow
from anyop.engine.coordination.pause_gate import Gate
from anyop.engine.coordination.renewals import RELEASE_TIMEOUT, renew_until_cancelled
from anyop.errors import AnyopError, ConflictError, NotFoundError
from anyop.kube.client import KubeClient
from anyop.leadership import (
    LEASES,
    Action,
    LeaseRecord,
    Observation,
    decide,
    default_identity,
    lease_body,
    observe,
    release_body,
)
from anyop.settings import LeadershipSettings

__all__ = ["RELEASE_ATTEMPTS", "RELEASE_TIMEOUT", "LeaseKeeper", "hold_leadership"]

logger = logging.getLogger("anyop.leadership")

RELEASE_ATTEMPTS = 3
"""How many times a release is tried again after a conflict (with the Lease read anew)."""

HOLDER = "leadership"
"""The gate's key for this holder."""


def _now() -> datetime.datetime:
    return utcnow()


class LeaseKeeper:
    """One replica's side of the election: reads the Lease, acts on :func:`decide`.

    Args:
        client: The API client.
        settings: The durations, the Lease's name, this replica's identity.
        namespace: The Lease's namespace.
        gate: Paused while standing by; fenced while leading.
    """

    def __init__(
        self, client: KubeClient, settings: LeadershipSettings, namespace: str, *, gate: Gate
    ) -> None:
        self.client = client
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self.gate = gate
        self.name = LeaseRecord(settings.lease_name, namespace, None, settings.lease_duration)
        self.last: LeaseRecord | None = None  # what we last read or wrote
        self.leading = False
        self._observation: Observation | None = None
        self._holder_logged: str | None = None

    @property
    def where(self) -> str:
        """The Lease, for log messages."""
        return f"{self.name.namespace}/{self.name.name}"

    async def step(self) -> None:
        """One attempt: read the Lease, then create, take, renew, or wait."""
        started = anyio.current_time()
        record = await self._read()
        read_at = anyio.current_time()  # a change is timed from here, expiries from `started`
        self._observation = observe(self._observation, record, read_at)
        action = decide(record, identity=self.identity, observation=self._observation, now=started)
        if action is Action.WAIT:
            self._standing_by(record.holder if record else None)
            return
        body = lease_body(
            action,
            record or self.name,
            identity=self.identity,
            duration=self.settings.lease_duration,
            now=_now(),
        )
        if action is Action.CREATE:
            written = await self.client.create(LEASES, body, namespace=self.name.namespace)
        else:
            written = await self.client.replace(LEASES, body)
        self.last = LeaseRecord.from_body(written)
        self._observation = observe(self._observation, self.last, started)
        self._renewed(started)

    def conflicted(self) -> None:
        """The Lease changed meanwhile: the next step reads it anew."""
        logger.debug(f"The Lease {self.where} changed meanwhile; will retry.")

    def failed(self, error: AnyopError) -> None:
        """A step failed: the next one tries again."""
        logger.warning(f"Leader election on {self.where} failed; will retry: {error}")

    def check_fence(self) -> None:
        """Step down if the fence has passed without a renewal."""
        if self.leading and anyio.current_time() >= self.gate.fence:
            self.leading = False
            self.pause("the Lease was not renewed in time")
            logger.warning(
                f"Lost the leadership of {self.where}: not renewed within "
                f"{self.settings.renew_deadline} s. All work is stopped."
            )

    async def release(self) -> None:
        """Give the Lease up (holder cleared, 1 s duration) if we hold it; errors are logged.

        A conflict means our last record is stale (e.g. a renewal landed, but its step was
        cancelled before it could note the answer): the Lease is read again and, if it is still
        ours, released from there.
        """
        if not self.leading or self.last is None:
            return
        self.leading = False
        record: LeaseRecord | None = self.last
        try:
            for _ in range(RELEASE_ATTEMPTS):
                if record is None or record.holder != self.identity:
                    logger.info(f"The Lease {self.where} is not ours any more: nothing to release.")
                    return
                try:
                    await self.client.replace(LEASES, release_body(record, now=_now()))
                except ConflictError:
                    record = await self._read()
                    continue
                logger.info(f"Released the Lease {self.where}.")
                return
            logger.warning(f"Could not release the Lease {self.where}: it keeps changing.")
        except AnyopError as e:
            logger.warning(f"Could not release the Lease {self.where}: {e}")

    async def _read(self) -> LeaseRecord | None:
        try:
            body = await self.client.get(LEASES, name=self.name.name, namespace=self.name.namespace)
        except NotFoundError:
            return None
        self.last = LeaseRecord.from_body(body)
        return self.last

    def _renewed(self, started: float) -> None:
        self.gate.fence_until(started + self.settings.renew_deadline)
        if not self.leading:
            self.leading = True
            self._holder_logged = None
            self.gate.resume(HOLDER)
            logger.info(f"Became the leader of {self.where} as {self.identity!r}.")

    def pause(self, why: str) -> None:
        """Pause serving, unless standbys keep watching (then the fence alone holds handling)."""
        if not self.gate.warm:
            self.gate.pause(HOLDER, why)

    def _standing_by(self, holder: str | None) -> None:
        if self.leading:  # someone took it: we are past our fence already
            self.check_fence()
        self.pause(f"standing by for {holder}")
        if holder != self._holder_logged:
            self._holder_logged = holder
            logger.info(f"Standing by: the Lease {self.where} is held by {holder!r}.")


async def hold_leadership(
    client: KubeClient,
    settings: LeadershipSettings,
    namespace: str,
    *,
    gate: Gate,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Take part in the election until cancelled; release the Lease then.

    Guarantees:
        The gate is paused from the start until this replica holds the Lease, and the fence
        always ends its serving ``renew_deadline`` seconds after the start of its last
        successful renewal.
    """
    settings.check()
    keeper = LeaseKeeper(client, settings, namespace, gate=gate)
    keeper.pause("waiting for the Lease")
    gate.fence_until(-math.inf)
    task_status.started()
    await renew_until_cancelled(
        keeper, renew_deadline=settings.renew_deadline, period=lambda: settings.retry_period
    )
