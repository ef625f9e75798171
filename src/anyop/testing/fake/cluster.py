"""FakeCluster: a deterministic, in-process Kubernetes API for tests of operators.

It keeps objects in memory with one resourceVersion counter and serves them with the API
server's semantics (see ``tests/conformance``, which checks it against the real one): in-process
through an httpx transport, or over a loopback socket for subprocesses and other clients.
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import sniffio
from anyio.abc import TaskStatus

from anyop.testing.fake import writes
from anyop.testing.fake.api import ApiRequest, ApiResponse, WatchPlan, handle
from anyop.testing.fake.inprocess_transport import FakeTransport
from anyop.testing.fake.loopback_server import serve_loopback
from anyop.testing.fake.store import Store
from anyop.testing.fake.watches import WatchStream

__all__ = ["FakeCluster"]

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
"""The fake clock's time when a FakeCluster is created (on a fake clock, times repeat)."""
BASE_URL = "http://fake-cluster.invalid"
"""The base URL of in-process clients (no name is resolved: requests never leave the process)."""


class FakeCluster:
    """An in-memory Kubernetes API: namespaces, built-in kinds, CRDs and their objects, watches.

    Args:
        seed: Seeds uids, generated names and the watch timeouts the server picks, so that the
            same test makes the same objects.
        history_limit: How many recent changes watches and paginated lists can go back to;
            older resourceVersions get 410 Expired (see also :meth:`compact`).
        epoch: The time of the first timestamps; later ones add AnyIO's clock (virtual under
            Trio's ``MockClock``).

    Guarantees:
        Usable on Trio and asyncio from any task; every request is answered in the caller's own
        task (in-process) or in the task group that runs :meth:`serve`. Timestamps and uids
        depend only on the seed and the (virtual) clock.

    Caveats:
        No controllers run unless stated: namespaces stay Terminating after deletion, owner
        references are not acted upon, pods get no defaults and stay Pending (as a bare
        kube-apiserver). No admission webhooks, no server-side apply (415), no authorization.
    """

    def __init__(
        self, *, seed: int = 0, history_limit: int = 10_000, epoch: datetime.datetime = EPOCH
    ) -> None:
        self._epoch = epoch
        self._started: float | None = None
        self._rng = random.Random(seed + 1)
        self.store = Store(seed=seed, history_limit=history_limit, clock=self._now)
        self.server_url: str | None = None
        """The loopback URL while :meth:`serve` runs."""

    def _now(self) -> str:
        try:
            now = anyio.current_time()
        except sniffio.AsyncLibraryNotFoundError:
            now = self._started or 0.0
        if self._started is None:
            self._started = now
        moment = self._epoch + datetime.timedelta(seconds=int(now - self._started))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- requests -------------------------------------------------------------------------------

    def respond(self, request: ApiRequest) -> ApiResponse | AsyncIterator[bytes]:
        """Answer one request: a whole response, or a watch's lines (close them when done)."""
        address = (self.server_url or BASE_URL).split("://", 1)[1]
        answer = handle(self.store, request, address)
        if isinstance(answer, WatchPlan):
            return WatchStream(self.store, answer, self._rng)
        return answer

    def transport(self) -> httpx.AsyncBaseTransport:
        """An httpx transport to this cluster, without sockets."""
        return FakeTransport(self.respond)

    def transport_factory(self, info: Any, ssl_context: Any) -> httpx.AsyncBaseTransport:
        """For ``anyop.kube.open_client(..., transport_factory=fake.transport_factory)``."""
        return self.transport()

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` of this cluster (in-process); keyword args go to httpx."""
        return httpx.AsyncClient(base_url=BASE_URL, transport=self.transport(), **kwargs)

    # -- serving over a socket ------------------------------------------------------------------

    async def serve(
        self, *, port: int = 0, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve the API on 127.0.0.1 until cancelled: ``url = await tg.start(fake.serve)``."""

        async def ready(*, task_status: TaskStatus[int]) -> None:
            await serve_loopback(self.respond, port=port, task_status=task_status)

        async with anyio.create_task_group() as tg:
            bound = await tg.start(ready)
            self.server_url = f"http://127.0.0.1:{bound}"
            task_status.started(self.server_url)

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for the loopback server (while :meth:`serve` runs); return it.

        Raises:
            RuntimeError: The cluster is not served on a socket.
        """
        if self.server_url is None:
            raise RuntimeError("FakeCluster.serve() is not running: there is nothing to point to.")
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.server_url}}],
            "users": [{"name": "fake", "user": {"token": "fake"}}],
            "contexts": [
                {"name": "fake", "context": {"cluster": "fake", "user": "fake"}},
            ],
            "current-context": "fake",
        }
        target = Path(path)
        target.write_text(json.dumps(config, indent=2))
        return target

    # -- direct access, for tests ---------------------------------------------------------------

    def compact(self) -> None:
        """Forget the history up to now, as etcd's compaction does: later watches and lists from
        older resourceVersions get 410 Expired."""
        self.store.history.compact(self.store.rv)

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion."""
        return str(self.store.rv)

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object from a manifest (its apiVersion, kind and metadata say where).

        Raises:
            StatusError: As the API would answer it, e.g. 409 AlreadyExists.
            LookupError: The kind is not served.
        """
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
        return writes.create(self.store, kind, namespace, body)
