"""FakeCluster: a deterministic, in-process Kubernetes API for tests of operators.

It keeps objects in memory with one resourceVersion counter and serves them with the API
server's semantics (see ``tests/conformance``, which checks it against the real one): in-process
through an httpx transport, or over a loopback socket for subprocesses and other clients.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import functools
import json
import os
import random
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx
import sniffio
from anyio.abc import TaskStatus
from anyio.lowlevel import EventLoopToken

from anyop.kube.auth import Vault
from anyop.kube.connection import ConnectionInfo
from anyop.models.crds import crd_manifests
from anyop.models.resources import CustomResource
from anyop.testing.fake import apf_config_producer, go_yaml, writes
from anyop.testing.fake.admission_points import AdmissionPoints
from anyop.testing.fake.admission_rules import OPERATIONS
from anyop.testing.fake.apf_config_consumer import apf_config_consumer
from anyop.testing.fake.api import ApiRequest, ApiResponse, WatchPlan, handle, is_watch
from anyop.testing.fake.apiservice_controllers import apiservice_controllers
from anyop.testing.fake.clusterrole_aggregation import clusterrole_aggregator
from anyop.testing.fake.controllers import run_controllers
from anyop.testing.fake.fault_answers import answer_of_fault
from anyop.testing.fake.faults import FaultPlan
from anyop.testing.fake.history import Change
from anyop.testing.fake.inprocess_transport import FakeTransport
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.kind_warnings import warning_header
from anyop.testing.fake.loopback_server import serve_loopback
from anyop.testing.fake.loopback_tls import fake_authority, loopback_certificates
from anyop.testing.fake.pod_termination import Kubelet
from anyop.testing.fake.root_ca_publisher import publish_everywhere, root_ca_publisher
from anyop.testing.fake.routing import routed
from anyop.testing.fake.service_account_controller import (
    default_accounts_everywhere,
    service_account_controller,
)
from anyop.testing.fake.store import Store
from anyop.testing.fake.trace import Trace
from anyop.testing.fake.watches import WatchStream
from anyop.testing.fake.webhook_calls import Outcome, admit, has_webhooks

__all__ = ["FakeCluster"]

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""The fake clock's time when a FakeCluster is created (on a fake clock, times repeat)."""
BASE_URL = "http://fake-cluster.invalid"
"""The base URL of in-process clients (no name is resolved: requests never leave the process)."""


T = TypeVar("T")


@functools.lru_cache(maxsize=4)
def _stamp(epoch: datetime.datetime, seconds: int) -> str:
    """The RFC 3339 time ``seconds`` after ``epoch`` (one second's string made once)."""
    return (epoch + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeCluster:
    """An in-memory Kubernetes API: namespaces, built-in kinds, CRDs and their objects, watches.

    Args:
        seed: Seeds uids, generated names and the watch timeouts the server picks, so that the
            same test makes the same objects.
        history_limit: How many recent changes watches and paginated lists can go back to;
            older resourceVersions get 410 Expired (see also :meth:`compact`).
        trace_limit: How many of the latest lines :attr:`trace` keeps (its digest covers all).
        epoch: The time of the first timestamps; later ones add AnyIO's clock (virtual under
            Trio's ``MockClock``).
        controllers: Run the garbage collector, the namespace controller (see
            :mod:`anyop.testing.fake.controllers`), the root CA publisher (every namespace's
            ``kube-root-ca.crt``), the ClusterRole aggregation (``admin``, ``edit``, ``view``
            and any ClusterRole with an ``aggregationRule`` hold the rules it chooses, see
            :mod:`anyop.testing.fake.clusterrole_aggregation`) and, as nodes' kubelets, end
            gracefully deleted Pods once their grace period is over (see
            :mod:`anyop.testing.fake.pod_termination`); without them, as a bare
            kube-apiserver, namespaces stay Terminating, owner references are not acted upon,
            such Pods stay and aggregating ClusterRoles have no rules.

    Guarantees:
        Usable on Trio and asyncio from any task; every request is answered in the caller's own
        task (in-process) or in the task group that runs :meth:`serve`. Timestamps and uids
        depend only on the seed and the (virtual) clock; with the same seed, the same requests
        in the same order give the same :attr:`trace` (and faults drawn from a seed strike the
        same requests).

    Caveats:
        No other controllers: pods stay Pending, Deployments make no ReplicaSets. No
        authorization: every request is an admin's. ``docs/testing.md`` lists where it differs
        from a real cluster.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        history_limit: int = 10_000,
        trace_limit: int = 100_000,
        epoch: datetime.datetime = EPOCH,
        controllers: bool = True,
    ) -> None:
        self.seed = seed
        """The seed it was made with."""
        self._epoch = epoch
        self._started: float | None = None  # the event loop's time at the epoch
        self._elapsed = 0.0  # seconds since the epoch, as of the last timestamp
        self._answering: str | None = None  # the time of the request being answered
        self._producing = apf_config_producer.PERIOD  # the producer's next pass is due
        self._rng = random.Random(seed + 1)
        self.store = Store(seed=seed, history_limit=history_limit, clock=self._now,
                           aggregated=controllers)  # fmt: skip
        self.server_url: str | None = None
        """The loopback URL while :meth:`serve` runs."""
        self.certificate_authority: bytes | None = None
        """The PEM of the CA that signed the loopback server's certificate (``serve(tls=True)``);
        ``ssl.create_default_context(cadata=fake.certificate_authority.decode())`` trusts it."""
        self.url = BASE_URL
        """The URL of in-process clients (see :meth:`client` and :meth:`routed`)."""
        self.faults = FaultPlan()
        """The faults in force: ``fake.faults.script(Fault.throttle(), path="/configmaps")``
        or ``fake.faults.inject(seed=1, rate=0.05)`` (see :mod:`anyop.testing.fake.faults`)."""
        self.trace = Trace(trace_limit)
        """Every request, fault and change, in order (the latest ``trace_limit`` of them kept);
        ``fake.trace.digest()`` hashes them all."""
        self._loop: tuple[int, EventLoopToken] | None = None
        """The thread and event loop of the last request (see :meth:`_in_loop_thread`)."""
        self.store.listeners.append(self._traced)
        self._kubelet = Kubelet() if controllers else None
        if self._kubelet is not None:
            self.store.controllers.append(self._kubelet)
            self.store.controllers.append(run_controllers)
            self.store.controllers.append(root_ca_publisher(_root_ca))
            self.store.controllers.append(clusterrole_aggregator)
            self.store.controllers.append(service_account_controller)
            publish_everywhere(self.store, _root_ca())
            default_accounts_everywhere(self.store)
        self.store.controllers.append(apiservice_controllers)  # kube-apiserver's own: always
        self.store.controllers.append(apf_config_consumer)  # kube-apiserver's own too

    def _now(self) -> str:
        if self._answering is not None:  # one time for all of a request's timestamps
            return self._answering
        try:
            now = anyio.current_time()
        except (sniffio.AsyncLibraryNotFoundError, RuntimeError):  # no event loop runs here
            now = None
        if now is not None and self._started is None:
            self._started = now - self._elapsed
        if now is not None and self._started is not None:
            self._elapsed = now - self._started
        return _stamp(self._epoch, int(self._elapsed))

    def _produce_when_due(self) -> str:
        """API Priority and Fairness' config producer: its pass of each minute of the clock, at
        the first request after it (see :mod:`.apf_config_producer`). Returns the time read."""
        now = self._now()
        if self._elapsed >= self._producing:
            period = apf_config_producer.PERIOD
            self._producing = (self._elapsed // period + 1) * period
            apf_config_producer.produce(self.store)
        return now

    # -- requests -------------------------------------------------------------------------------

    def _traced(self, change: Change) -> None:
        self.trace.change(change.rv, change.type, obj=change.obj)

    async def respond(
        self, request: ApiRequest, *, faults: bool = True
    ) -> ApiResponse | AsyncIterator[bytes]:
        """Answer one request: a whole response, or a watch's lines (close them when done);
        ``faults=False``: no fault strikes it, and it counts for none.

        Raises:
            ConnectionDropped: A fault cuts the connection.
        """
        self._loop = (threading.get_ident(), anyio.lowlevel.current_token())
        if self._kubelet is not None:  # the Pods whose grace period has ended go first
            self._kubelet.reap(self.store)
        now = self._produce_when_due()
        self.trace.request(request.method, request.path, query=request.query)
        watch = is_watch(request)
        fault = self.faults.decide(request.method, request.path, watch=watch) if faults else None
        if fault is not None:
            self.trace.fault(fault.kind.value)
            replaced = await answer_of_fault(fault, request, current=self.store.rv)
            if replaced is not None:
                self.trace.answer(replaced.status if isinstance(replaced, ApiResponse) else 200)
                return replaced
            now = self._now()  # (a delay: the clock moved)
        address = (self.server_url or self.url).split("://", 1)[1]
        outcome = Outcome()
        dry_run = request.query.get("dryRun") == "All"
        if request.method in OPERATIONS and (dry_run or has_webhooks(self.store)):
            outcome = await admit(self.store, request, address, dry_run=dry_run)
            now = self._now()  # (the webhooks took their time)
        try:
            self._answering = now  # (handle is sync: no other request meanwhile)
            answer = outcome.answer or handle(self.store, request, address)
        finally:
            self._answering = None
            self.store.admission = AdmissionPoints()
        if isinstance(answer, WatchPlan):
            self.trace.answer(200)
            return WatchStream(self.store, answer, self._rng)
        self.trace.answer(answer.status)
        # The webhooks' warnings, quoted as the write's are, after the write's own (the
        # mutating webhooks' are among them).
        webhooks = outcome.warnings and warning_header(outcome.warnings).get("Warning")
        if webhooks:
            warnings = webhooks
            if answer.headers.get("Warning"):
                warnings = f"{answer.headers['Warning']}, {warnings}"
            answer = dataclasses.replace(answer, headers={**answer.headers, "Warning": warnings})
        return answer

    def transport(self, *, faults: bool = True) -> httpx.AsyncBaseTransport:
        """An httpx transport to this cluster, without sockets; with ``faults=False``, no fault
        of :attr:`faults` strikes its requests."""
        return FakeTransport(functools.partial(self.respond, faults=faults))

    def transport_factory(self, info: Any, ssl_context: Any) -> httpx.AsyncBaseTransport:
        """For ``anyop.kube.open_client(..., transport_factory=fake.transport_factory)``."""
        return self.transport()

    def client(self, *, faults: bool = True, **kwargs: Any) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` of this cluster (in-process); keyword args go to httpx.

        With ``faults=False``, no fault strikes its requests: a test's own view of the cluster
        while the operator meets the faults.
        """
        transport = self.transport(faults=faults)
        return httpx.AsyncClient(base_url=self.url, transport=transport, **kwargs)

    def routed(self) -> AbstractContextManager[None]:
        """Within the block, anyop's own clients whose server is :attr:`url` reach this cluster
        in-process: ``serve()`` with a vault or kubeconfig naming it (see
        :meth:`write_kubeconfig` and :meth:`vault`).

        Raises:
            ValueError: Another cluster is routed at the same :attr:`url`.
        """
        return routed(self.url, self.transport)

    async def vault(self) -> Vault:
        """A vault with one credential for :attr:`url` (give it to ``serve(vault=...)``)."""
        vault = Vault()
        await vault.populate({"fake": ConnectionInfo(server=self.url, token="fake")})
        return vault

    # -- serving over a socket ------------------------------------------------------------------

    async def serve(
        self,
        *,
        port: int = 0,
        tls: bool = False,
        task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the API on 127.0.0.1 until cancelled: ``url = await tg.start(fake.serve)``.

        With ``tls=True``, over HTTPS with a certificate of a new CA (see
        :attr:`certificate_authority`; :meth:`write_kubeconfig` puts it in the kubeconfig).
        """
        context = None
        if tls:
            certificates = loopback_certificates()
            self.certificate_authority = certificates.ca_pem
            context = certificates.server_context()

        async def ready(*, task_status: TaskStatus[int]) -> None:
            await serve_loopback(
                self.respond, port=port, ssl_context=context, task_status=task_status
            )

        async with anyio.create_task_group() as tg:
            bound = await tg.start(ready)
            scheme = "https" if tls else "http"
            self.server_url = f"{scheme}://127.0.0.1:{bound}"
            task_status.started(self.server_url)

    def write_kubeconfig(self, path: str | os.PathLike[str], *, in_process: bool = False) -> Path:
        """Write a kubeconfig for the loopback server (while :meth:`serve` runs); return it.

        With ``in_process=True``, it points to :attr:`url` instead: anyop's own client reaches
        the cluster through it without a socket while :meth:`routed` is in force (as
        ``tests/e2e/conftest.py`` does).

        Raises:
            RuntimeError: The cluster is not served on a socket (and ``in_process`` is false).
        """
        server = self.url if in_process else self.server_url
        if server is None:
            raise RuntimeError("FakeCluster.serve() is not running: there is nothing to point to.")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": self._kubeconfig_cluster(server)}],
            "users": [{"name": "fake", "user": {"token": "fake"}}],
            "contexts": [
                {"name": "fake", "context": {"cluster": "fake", "user": "fake"}},
            ],
            "current-context": "fake",
        }
        target = Path(path)
        target.write_text(json.dumps(config, indent=2))
        return target

    def _kubeconfig_cluster(self, server: str) -> dict[str, Any]:
        cluster: dict[str, Any] = {"server": server}
        if server.startswith("https:") and self.certificate_authority is not None:
            data = base64.b64encode(self.certificate_authority).decode()
            cluster["certificate-authority-data"] = data
        return cluster

    # -- direct access, for tests ---------------------------------------------------------------

    def compact(self) -> None:
        """Forget the history up to now, as etcd's compaction does: later watches and lists from
        older resourceVersions get 410 Expired."""
        self.store.history.compact(self.store.rv)

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion."""
        return str(self.store.rv)

    def apply(self, manifests: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """Create the objects of a YAML (or JSON) file or text, one document after another.

        The YAML is read as kubectl reads it (see :mod:`~anyop.testing.fake.go_yaml`: ``y`` is
        ``true``, a date stays a string).

        Raises:
            StatusError: One of them is refused (those before it stay created).
            LookupError: A kind is not served.
            GoYAMLError: The text is not YAML that kubectl reads.
        """
        text = _manifest_text(manifests)
        return [self.create(document) for document in go_yaml.load_all(text) if document]

    def install(self, *resources: type[CustomResource]) -> list[dict[str, Any]]:
        """Create the CRDs of typed resources, as ``anyop manifests`` writes them: objects are
        then validated, defaulted and pruned by the schemas that the models imply.

        Raises:
            SchemaError: A model cannot be expressed as a structural schema.
            StatusError: A CRD is refused (e.g. it exists already).
        """
        return [self.create(crd) for crd in crd_manifests(resources)]

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object from a manifest (its apiVersion, kind and metadata say where).

        Any thread may call it (a sync test beside an operator's thread, or an AnyIO worker
        thread that applies manifests as a blocking ``kubectl`` would): the change is made in
        the thread of the event loop that serves the fake's requests, where the watches that
        it wakes wait.

        Raises:
            StatusError: As the API would answer it, e.g. 409 AlreadyExists.
            LookupError: The kind is not served.
        """
        return self._in_loop_thread(functools.partial(self._create, body))

    def _in_loop_thread(self, change: Callable[[], T]) -> T:
        """Make a change in the thread of the event loop of the last request, if it runs in
        another thread (watches can only be woken from there); else here."""
        loop = self._loop
        if loop is None or loop[0] == threading.get_ident():
            return change()
        outcome: list[tuple[bool, Any]] = []

        def boxed() -> None:  # the change's own errors, apart from those of reaching the loop
            try:
                outcome.append((True, change()))
            except BaseException as exc:  # re-raised in the calling thread
                outcome.append((False, exc))

        try:
            anyio.from_thread.run_sync(boxed, token=loop[1])
        except RuntimeError:  # that event loop has ended: no watch waits for the change
            return change()
        succeeded, value = outcome[0]
        if not succeeded:
            raise value
        return cast(T, value)

    def _create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        api_version = str(body.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = next(
            (
                k
                for k in self.store.kinds.values()
                if (k.group, k.version, k.kind) == (group, version, body.get("kind"))
            ),
            None,
        )
        if kind is None:
            raise LookupError(f"No kind {body.get('kind')!r} is served in {api_version!r}.")
        namespace = (body.get("metadata") or {}).get("namespace") if kind.namespaced else None
        mine = json_copy(dict(body))  # the store's from here: the caller's stays the caller's
        return json_copy(writes.create(self.store, kind, mine, namespace=namespace))


def _root_ca() -> str:
    """What ``kube-root-ca.crt`` holds: the CA that signs the fake's serving certificates."""
    return fake_authority().cert_pem.decode()


def _manifest_text(manifests: str | os.PathLike[str]) -> str:
    if isinstance(manifests, os.PathLike):
        return Path(manifests).read_text()
    if "\n" not in manifests and manifests.endswith((".yaml", ".yml", ".json")):
        return Path(manifests).read_text()
    return manifests
