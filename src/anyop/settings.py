"""Operator settings: every Kopf setting with Kopf's names and defaults, plus anyop's own.

Settings are pydantic models, validated on construction and on every assignment, so a startup
handler that sets ``settings.watching.inactivity_timeout = -1`` fails at once with a message naming
the field. They can also come from environment variables: ``ANYOP_<GROUP>__<FIELD>``, e.g.
``ANYOP_NETWORKING__REQUEST_TIMEOUT=30`` (see :func:`settings_from_environ`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError

from anyop.errors import ConfigError

__all__ = [
    "AdmissionSettings",
    "BackgroundSettings",
    "ExecutionSettings",
    "LeadershipSettings",
    "NetworkingSettings",
    "OperatorSettings",
    "PeeringSettings",
    "PersistenceSettings",
    "PostingSettings",
    "ProcessSettings",
    "QueueingSettings",
    "ReconcilingSettings",
    "ScanningSettings",
    "ServerSettings",
    "ShardingSettings",
    "WatchingSettings",
    "settings_from_environ",
]

Seconds = float
_MODEL = ConfigDict(validate_assignment=True, extra="forbid", arbitrary_types_allowed=True)


class ProcessSettings(BaseModel):
    """The operator process as a whole."""

    model_config = _MODEL
    ultimate_exiting_timeout: PositiveFloat | None = 600
    """Seconds after a signal before the process exits even if something still runs."""


class PostingSettings(BaseModel):
    """Kubernetes Events posted about objects."""

    model_config = _MODEL
    enabled: bool = True
    loggers: bool = False
    """Also post records of the per-object loggers as Events."""
    level: int = Field(default=logging.INFO, ge=0)
    reporting_component: str = "anyop"
    reporting_instance: str = "dev"
    event_name_prefix: str = "anyop-event-"


class PeeringSettings(BaseModel):
    """Kopf-style peering between operators that serve the same resources."""

    model_config = _MODEL
    name: str = "default"
    stealth: bool = False
    priority: int = 0
    lifetime: int = Field(default=60, ge=1)
    mandatory: bool = False
    standalone: bool = False
    clusterwide: bool = False
    identity: str | None = None
    """This operator's name among its peers; ``None``: ``$POD_ID``, else the user, the host, the
    start time and a random suffix (Kopf's ``identity=`` of ``operator()``)."""
    shared: bool = False
    """anyop: peers of the same priority are replicas that share the work: they neither pause
    each other nor are they reported as conflicting. Set by ``sharding.enabled``."""

    @property
    def namespaced(self) -> bool:
        """The inverse of ``clusterwide``."""
        return not self.clusterwide


def _check_lease_timings(group: LeadershipSettings | ShardingSettings, name: str, why: str) -> None:
    """``renew_deadline`` below ``lease_duration`` (for ``why``), ``retry_period`` below that."""
    if not group.renew_deadline < group.lease_duration:
        raise ConfigError(
            f"settings.{name}.renew_deadline ({group.renew_deadline}) must be below "
            f"lease_duration ({group.lease_duration}): {why}."
        )
    if not group.retry_period < group.renew_deadline:
        raise ConfigError(
            f"settings.{name}.retry_period ({group.retry_period}) must be below "
            f"renew_deadline ({group.renew_deadline})."
        )


class LeadershipSettings(BaseModel):
    """anyop: Lease-based leader election, so that only one of several replicas is active.

    The active replica renews a ``coordination.k8s.io/v1`` Lease every ``retry_period`` seconds;
    if it has not renewed it for ``renew_deadline`` seconds, it stops all its work at once. The
    others take the Lease ``lease_duration`` seconds after they last saw it change.
    """

    model_config = _MODEL
    enabled: bool = False
    lease_name: str = "anyop-leader"
    lease_namespace: str | None = None
    """``None``: the pod's namespace (in a cluster), else the first served namespace, else
    ``default``."""
    lease_duration: int = Field(default=15, ge=1)
    """Seconds a standby waits after the Lease last changed before it takes it."""
    renew_deadline: PositiveFloat = 10.0
    """Seconds the leader keeps working without a successful renewal; below ``lease_duration``."""
    retry_period: PositiveFloat = 2.0
    """Seconds between attempts to acquire or renew; below ``renew_deadline``."""
    identity: str | None = None
    """This replica's name in the Lease; ``None``: the host name and the process id."""
    keep_watching: bool = False
    """Standbys keep their watches and indexes synced (but run no handlers), so a takeover
    needs no new listing."""

    def check(self) -> None:
        """Check that the three durations fit together (checked when the operator starts,
        so that a startup handler may set them in any order).

        Raises:
            ConfigError: ``renew_deadline`` is not below ``lease_duration``, or ``retry_period``
                is not below ``renew_deadline``.
        """
        _check_lease_timings(
            self, "leadership", "a leader must stop before a standby may take the Lease"
        )


class ShardingSettings(BaseModel):
    """anyop: active-active sharding, so that several replicas share the objects.

    Every replica keeps a Lease of its own in ``lease_namespace``, labelled with ``group``, and
    renews it every ``retry_period`` seconds; the live members split the objects of every served
    resource by a hash of their uids (see :mod:`anyop.sharding`). A replica that has not renewed
    its Lease for ``renew_deadline`` seconds stops all its work at once; the others take its
    objects over once they have seen its Lease unchanged for ``lease_duration`` seconds.
    """

    model_config = _MODEL
    enabled: bool = False
    """Share the objects with the other replicas of the same ``group`` (``anyop run --shards
    auto``). Not together with ``leadership.enabled``."""
    group: str = Field(default="anyop-shards", min_length=1, max_length=63)
    """The shard group's name: the replicas of one operator share it; its members' Leases are
    named after it."""
    lease_namespace: str | None = None
    """``None``: the pod's namespace (in a cluster), else the first served namespace, else
    ``default``."""
    lease_duration: int = Field(default=15, ge=1)
    """Seconds after a member's Lease last changed before the others count it out."""
    renew_deadline: PositiveFloat = 10.0
    """Seconds a member keeps working without a successful renewal; below ``lease_duration``."""
    retry_period: PositiveFloat = 2.0
    """Seconds between renewals (and listings of the members); below ``renew_deadline``."""
    identity: str | None = None
    """This replica's name in its Lease; ``None``: the host name and the process id."""

    def check(self) -> None:
        """Check that the three durations fit together (checked when the operator starts).

        Raises:
            ConfigError: ``renew_deadline`` is not below ``lease_duration``, or ``retry_period``
                is not below ``renew_deadline``.
        """
        _check_lease_timings(
            self, "sharding", "a member must stop before the others take its objects"
        )


class WatchingSettings(BaseModel):
    """The list-then-watch streams."""

    model_config = _MODEL
    server_timeout: PositiveFloat | None = None
    """``timeoutSeconds`` of watch requests; ``None``: anyop picks 240-290 s (always sent)."""
    client_timeout: PositiveFloat | None = None
    """A hard limit on one watch request's duration on the client side: lines read ahead past it
    are dropped, to come again in the next request from the last version seen."""
    connect_timeout: PositiveFloat | None = None
    reconnect_backoff: Seconds = Field(default=0.1, ge=0)
    inactivity_timeout: PositiveFloat | None = 70.0
    """Watch again after this long without any event or bookmark (kube-apiserver sends a
    bookmark about every minute, though not while the resource's version stands still): a
    warning says the silence was a stall if changes then come at once. From a server that has
    sent no bookmark and left two watch-streams silent this long, a quiet watch-stream is
    awaited until its own timeout."""
    streaming_lists: bool = False
    """anyop: list with a watch (``sendInitialEvents``) instead of pages: the API server streams
    the objects from its cache instead of building list pages. Servers that refuse it are listed
    page by page instead, once and for all."""


class QueueingSettings(BaseModel):
    """Per-object workers."""

    model_config = _MODEL
    worker_limit: int | None = Field(default=None, ge=1)
    """How many objects of one watch are handled at once; ``None``: unlimited."""
    idle_timeout: Seconds = Field(default=5.0, ge=0)
    exit_timeout: Seconds = Field(default=2.0, ge=0)
    max_requests_in_flight: int | None = Field(default=64, ge=1)
    """anyop: backpressure. While this many API requests are in flight (or waiting for a
    connection or a retry), objects with no worker yet wait in order, as bodies, before their
    handling starts; objects seen before go first. Running cycles are not held up, nor are the
    objects of resources with daemons or timers: their daemons start at once, and a cycle that
    would only add the finalizer leaves it to the queue instead of waiting to write. ``None``:
    every object's handling starts at once (Kopf's way, with memory growing with the backlog)."""
    error_delays: tuple[Seconds, ...] = (1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)
    """Throttling of an object after a framework error; the last value repeats."""
    batch_window: Seconds = 0.1
    """Deprecated in Kopf; no effect."""


class ScanningSettings(BaseModel):
    """Runtime discovery of CRDs and namespaces."""

    model_config = _MODEL
    disabled: bool = False
    """Discover nothing while running: CRDs created later are not served, and namespace
    patterns are ignored (only the exact names among them are served)."""


class AdmissionSettings(BaseModel):
    """Admission and conversion webhooks."""

    model_config = _MODEL
    server: Any = None
    """A webhook server or tunnel (e.g. ``anyop.WebhookServer()``)."""
    managed: str | None = None
    """The name of the Validating/MutatingWebhookConfiguration to keep up to date."""
    managed_conversion: bool = False
    """anyop: point the ``spec.conversion`` of the CRDs with ``@on.convert`` functions to the
    webhook server at startup (and check their versions against the CRDs themselves)."""


class ExecutionSettings(BaseModel):
    """Running sync handlers in threads, and noticing async code that blocks the event loop."""

    model_config = _MODEL
    executor: Executor | None = None
    """Where sync handlers, daemons, timers and activities run (Kopf's setting): a
    ``concurrent.futures`` executor. ``None``: anyop's own pool of daemon threads, which never
    keeps the process alive after the operator has exited (an executor's threads may). Read at
    each call: a call that has started finishes where it started."""
    max_workers: int | None = Field(default=None, ge=1)
    """How many sync handlers run at once (threads); ``None``: 40. Sync daemons do not count."""
    default_backoff: Seconds = Field(default=60, ge=0)
    """Seconds before a handler is retried after an arbitrary error, when it has no
    ``backoff=`` of its own."""
    loop_lag_threshold: PositiveFloat | None = 5.0
    """anyop: seconds the event loop may stand still (a sync call in an async handler) before a
    watchdog thread warns, naming the code that blocks it, and says when it runs again;
    ``None``: no watchdog. Read once the startup handlers are done."""


class NetworkingSettings(BaseModel):
    """Requests to the Kubernetes API."""

    model_config = _MODEL
    request_timeout: PositiveFloat | None = 300
    connect_timeout: PositiveFloat | None = None
    error_backoffs: tuple[Seconds, ...] = (1, 1, 2, 3, 5, 8, 13, 21)
    """Delays between retries of failed requests (connection errors, 5xx, 429, timeouts)."""
    enforce_retry_after: bool = False
    """Always wait exactly ``Retry-After``; otherwise wait the longer of it and the backoff."""
    trust_env: bool = False
    """Use the proxy environment variables (``HTTPS_PROXY``, ``NO_PROXY``...); unlike Kopf's
    aiohttp session, anyop's client never reads ``.netrc``."""
    qps: PositiveFloat | None = None
    """anyop: client-side requests per second for the whole operator; ``None``: unlimited."""
    burst: int = Field(default=100, ge=1)
    """anyop: how many requests may go at once above ``qps``."""
    max_retry_after: PositiveFloat = 60
    """anyop: the cap on a server-requested ``Retry-After``."""


class PersistenceSettings(BaseModel):
    """What anyop stores on the objects it handles."""

    model_config = _MODEL
    finalizer: str = "anyop.dev/finalizer"
    progress_storage: Any = None
    """``None``: anyop's default storage (see ``anyop.storage``)."""
    diffbase_storage: Any = None
    consistency_timeout: Seconds = Field(default=5.0, ge=0)


class BackgroundSettings(BaseModel):
    """Daemons and timers."""

    model_config = _MODEL
    cancellation_polling: Seconds = Field(default=60, gt=0)
    instant_exit_timeout: Seconds | None = None
    """How long a deletion's cycle waits for the daemons and timers it stopped to exit, before
    it leaves the release of the finalizer to a later cycle; ``None``: see the next one."""
    instant_exit_zero_time_cycles: int = Field(default=10, ge=0)
    """Without ``instant_exit_timeout``: how many turns of the event loop it waits instead."""


class ReconcilingSettings(BaseModel):
    """anyop: the reconcilers (``@anyop.reconcile``)."""

    model_config = _MODEL
    backoff_base: Seconds = Field(default=0.5, gt=0)
    """The delay after an object's first failed call; it doubles with every failure in a row,
    up to ``backoff_cap``, with up to half of it taken off at random (jitter)."""
    backoff_cap: Seconds = Field(default=300.0, gt=0)
    writes_timeout: Seconds = Field(default=10.0, ge=0)
    """How long a call waits for the watch to show the children that the previous call created,
    patched or deleted through ``api``; after that, the children are read from the API."""
    finalizer: str = "reconcile.anyop.dev/finalizer"
    """What ``finalizer=True`` reconcilers put on their objects."""


class ServerSettings(BaseModel):
    """anyop: the HTTP endpoints of the operator itself."""

    model_config = _MODEL
    liveness_endpoint: str | None = None
    """E.g. ``http://0.0.0.0:8080/healthz``; ``/readyz`` is served beside it (plain HTTP, health
    only)."""
    metrics_endpoint: str | None = None
    """E.g. ``https://0.0.0.0:8443/metrics``: the Prometheus metrics on an address of their own,
    over HTTPS, to readers whose bearer token the API server authorises for ``get`` on the path
    (a non-resource URL). ``http://`` needs ``metrics_insecure``."""
    metrics_insecure: bool = False
    """Serve the metrics over plain HTTP to anyone who reaches them (``--metrics-insecure``);
    the endpoint must then be ``http://`` (or have no scheme)."""
    metrics_certfile: str | None = None
    """The metrics server's certificate (PEM), reloaded when it changes; without it (and
    ``metrics_keyfile``), a self-signed certificate is made at start-up."""
    metrics_keyfile: str | None = None
    """The private key of ``metrics_certfile`` (PEM, unencrypted)."""
    metrics_cert_check_interval: Seconds = Field(default=10.0, gt=0)
    """Seconds between checks whether the certificate files changed."""
    metrics_allow_ttl: Seconds = Field(default=60.0, ge=0)
    """Seconds a reader's token, once authorised, is not reviewed again (0: every request)."""
    metrics_deny_ttl: Seconds = Field(default=10.0, ge=0)
    """Seconds a refused token (401, 403) is refused again without a review (0: never kept)."""
    backend: Literal["asyncio", "trio"] = "asyncio"
    """The backend of :func:`anyop.run` and ``anyop run`` when they are given none."""


class OperatorSettings(BaseModel):
    """All settings of one operator, grouped as Kopf groups them (``settings.watching...``)."""

    model_config = _MODEL
    process: ProcessSettings = Field(default_factory=ProcessSettings)
    posting: PostingSettings = Field(default_factory=PostingSettings)
    peering: PeeringSettings = Field(default_factory=PeeringSettings)
    leadership: LeadershipSettings = Field(default_factory=LeadershipSettings)
    sharding: ShardingSettings = Field(default_factory=ShardingSettings)
    watching: WatchingSettings = Field(default_factory=WatchingSettings)
    queueing: QueueingSettings = Field(default_factory=QueueingSettings)
    scanning: ScanningSettings = Field(default_factory=ScanningSettings)
    admission: AdmissionSettings = Field(default_factory=AdmissionSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    networking: NetworkingSettings = Field(default_factory=NetworkingSettings)
    persistence: PersistenceSettings = Field(default_factory=PersistenceSettings)
    background: BackgroundSettings = Field(default_factory=BackgroundSettings)
    reconciling: ReconcilingSettings = Field(default_factory=ReconcilingSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @property
    def batching(self) -> QueueingSettings:
        """Kopf's deprecated alias of ``queueing``."""
        return self.queueing


ENV_PREFIX = "ANYOP_"


def _from_env_values(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    groups: dict[str, dict[str, str]] = {}
    for key, value in environ.items():
        if key.startswith(ENV_PREFIX) and "__" in key:
            group, _, field = key[len(ENV_PREFIX) :].lower().partition("__")
            if group in OperatorSettings.model_fields:
                groups.setdefault(group, {})[field] = value
    return groups


def settings_from_environ(environ: Mapping[str, str] | None = None) -> OperatorSettings:
    """Settings with defaults overridden by ``ANYOP_<GROUP>__<FIELD>`` environment variables.

    Tuple values are JSON lists (``ANYOP_NETWORKING__ERROR_BACKOFFS='[1, 2, 5]'``).

    Raises:
        ConfigError: A value has the wrong type or range, or names an unknown field; the message
            names the variable.
    """
    import json
    import os

    values = _from_env_values(os.environ if environ is None else environ)
    parsed: dict[str, dict[str, Any]] = {}
    for group, fields in values.items():
        for field, raw in fields.items():
            try:
                value: Any = json.loads(raw) if raw[:1] in "[{" else raw
            except ValueError:
                value = raw
            parsed.setdefault(group, {})[field] = value
    try:
        return OperatorSettings.model_validate(parsed)
    except ValidationError as e:
        problems = "; ".join(
            f"{ENV_PREFIX}{'__'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(f"Invalid settings from the environment: {problems}") from e
