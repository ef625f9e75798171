"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and, by default, the rest.

No Docker and no kubelet: the API server with its storage, RBAC authorization and an admin client
certificate; by default also kube-controller-manager (garbage collection, namespace lifecycle,
service accounts and their tokens, Deployments, Jobs ...), kube-scheduler, and KWOK with one fake
node, so that Pods are scheduled and become Running (or Succeeded, for Jobs) without containers.
Usable from sync code (``with``), from async code on Trio or asyncio (``async with``), and from the
CLI (``anyop controlplane up``).

WARNING: with ``controllers=False`` (the bare API server, as controller-runtime's envtest), deleted
namespaces stay Terminating and owner references are not acted upon; with ``nodes=False``, Pods stay
Pending.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import ssl
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio
import httpx

from anyop.errors import ControlPlaneError
from anyop.testing.assets import Assets, ensure_assets, kwok_stages
from anyop.testing.controlplane_files import write_kubeconfig, write_pki
from anyop.testing.processes import ChildProcess

__all__ = ["NODE_NAME", "PID_VARIABLES", "LocalControlPlane", "free_port"]

logger = logging.getLogger("anyop.testing")

PID_VARIABLES = {
    "ANYOP_ETCD_PID": "etcd",
    "ANYOP_APISERVER_PID": "kube-apiserver",
    "ANYOP_CONTROLLER_MANAGER_PID": "kube-controller-manager",
    "ANYOP_SCHEDULER_PID": "kube-scheduler",
    "ANYOP_KWOK_PID": "kwok",
}
"""The variables of :meth:`LocalControlPlane.env` that hold process ids, and their binaries."""
_PID_NAMES = {
    binary: key.removeprefix("ANYOP_").removesuffix("_PID") for key, binary in PID_VARIABLES.items()
}
_SERVICE_RANGE = "10.0.0.0/24"
_ADVERTISE = "10.0.0.1"  # the API server refuses a loopback advertise address
_COMPONENT_RESTARTS = 3
"""How often a cluster component that exits during start-up is started again."""
_COMPONENT_REVIVALS = 10
"""How often :meth:`LocalControlPlane.revive` starts again a cluster component that exited."""

_READY_PATHS = ("/readyz", "/api/v1/namespaces/default")
_POD_CIDR = "10.0.1.0/24"  # KWOK's fake Pod IPs: addresses nothing listens on
NODE_NAME = "anyop-node"
"""The fake node that KWOK keeps Ready (with ``nodes=True``)."""
_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": NODE_NAME,
        "annotations": {"kwok.x-k8s.io/node": "fake"},
        "labels": {
            "kubernetes.io/hostname": NODE_NAME,
            "kubernetes.io/os": "linux",
            "type": "kwok",
        },
    },
    "status": {
        "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
    },
}


def _node_is_ready(node: Any) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_port(args: list[str], port: int) -> list[str]:
    """A cluster component's command line with its own HTTPS on ``port`` instead (a component
    started again after it exited: the port it had may be someone else's by now)."""
    return [f"--secure-port={port}" if arg.startswith("--secure-port=") else arg for arg in args]


def _start_again(proc: ChildProcess) -> None:
    """Start a cluster component that exited again, on a port of its own that is free now."""
    proc.args = with_port(proc.args, free_port())
    proc.start()


class LocalControlPlane:
    """etcd + kube-apiserver on 127.0.0.1, with a self-made PKI and an admin kubeconfig.

    Args:
        workdir: Where certificates, etcd data, logs and the kubeconfig go (a new temp folder if
            ``None``; removed on stop unless given).
        assets: The binaries; found or built into the cache if ``None``.
        apiserver_flags: Extra kube-apiserver flags, e.g. ``["--watch-cache=false"]``.
        etcd_flags: Extra etcd flags.
        startup_timeout: Seconds to wait for readiness before giving up.
        detached: Let the processes outlive this Python process (``anyop controlplane up``).
        port: The API server's port on 127.0.0.1; ``0`` picks a free one.
        etcd_port: etcd's client port on 127.0.0.1; ``0`` picks a free one.
        controllers: Also run kube-controller-manager (garbage collection, namespaces, service
            accounts and their tokens, the workload controllers); ``False`` for the fastest start.
        nodes: Also run kube-scheduler and KWOK with one fake node (:data:`NODE_NAME`), so that
            Pods are scheduled and become Running without containers.

    Guarantees:
        Processes that are not detached die with the Python process that started them, even if
        it is killed. A failed start stops whatever it had started.
    """

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        assets: Assets | None = None,
        apiserver_flags: Sequence[str] = (),
        etcd_flags: Sequence[str] = (),
        startup_timeout: float = 90.0,
        detached: bool = False,
        port: int = 0,
        etcd_port: int = 0,
        controllers: bool = True,
        nodes: bool = True,
    ) -> None:
        self._owns_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="anyop-controlplane-"))
        self._assets = assets
        self._apiserver_flags = list(apiserver_flags)
        self._etcd_flags = list(etcd_flags)
        self.startup_timeout = startup_timeout
        self.detached = detached
        self.etcd: ChildProcess | None = None
        self.apiserver: ChildProcess | None = None
        self.port = port
        self.etcd_port = etcd_port
        self.controllers = controllers
        self.nodes = nodes
        self.controller_manager: ChildProcess | None = None
        self._restarts: dict[str, int] = {}
        self._revivals: dict[str, int] = {}
        self.scheduler: ChildProcess | None = None
        self.kwok: ChildProcess | None = None

    # -- public facts -------------------------------------------------------------------------

    @property
    def server(self) -> str:
        """The API server's URL, e.g. ``https://127.0.0.1:41234``."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (user ``anyop-admin`` in group ``system:masters``)."""
        return self.workdir / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        """The CA that signed the API server's serving certificate and the client certificates."""
        return self.workdir / "pki" / "ca.crt"

    @property
    def client_cert_path(self) -> Path:
        """The admin client certificate."""
        return self.workdir / "pki" / "admin.crt"

    @property
    def client_key_path(self) -> Path:
        """The admin client key."""
        return self.workdir / "pki" / "admin.key"

    @property
    def assets(self) -> Assets:
        """The binaries in use (found or built on first access)."""
        if self._assets is None:
            self._assets = ensure_assets(cluster=self.controllers or self.nodes)
        return self._assets

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context trusting the CA and presenting the admin certificate."""
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        ctx.load_cert_chain(str(self.client_cert_path), str(self.client_key_path))
        return ctx

    def env(self) -> dict[str, str]:
        """Environment variables for tools and tests: KUBECONFIG and the processes' ids
        (``ANYOP_APISERVER_PID``, ``ANYOP_ETCD_PID``, ``ANYOP_CONTROLLER_MANAGER_PID``,
        ``ANYOP_SCHEDULER_PID``, ``ANYOP_KWOK_PID``, for those that run)."""
        env = {"KUBECONFIG": str(self.kubeconfig)}
        for proc in self._processes():
            if proc.pid is not None:
                env[f"ANYOP_{_PID_NAMES[proc.name]}_PID"] = str(proc.pid)
        return env

    def _processes(self) -> list[ChildProcess]:
        """The processes in the order of starting (stop them in reverse)."""
        procs = (self.etcd, self.apiserver, self.controller_manager, self.scheduler, self.kwok)
        return [proc for proc in procs if proc is not None]

    # -- the command lines ------------------------------------------------------------------

    def _etcd_args(self) -> list[str]:
        peer = f"http://127.0.0.1:{free_port()}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        return [
            str(self.assets.etcd),
            "--name=anyop",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=anyop={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
            *self._etcd_flags,
        ]

    def _apiserver_args(self) -> list[str]:
        pki = self.workdir / "pki"
        return [
            str(self.assets.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--advertise-address={_ADVERTISE}",
            f"--service-cluster-ip-range={_SERVICE_RANGE}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={self.ca_path}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--feature-gates=ShardedListAndWatch=true",  # shardSelector (alpha in 1.36)
            "--v=1",
            *self._apiserver_flags,
        ]

    def _component_args(self, binary: Path) -> list[str]:
        """What kube-controller-manager and kube-scheduler share: the admin's kubeconfig, a free
        port on loopback for their own HTTPS, no leader election."""
        kubeconfig = str(self.kubeconfig)
        return [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--cert-dir={self.workdir / 'pki' / binary.name}",
            "--leader-elect=false",
            "--v=1",
        ]

    def _controller_manager_args(self, binary: Path) -> list[str]:
        pki = self.workdir / "pki"
        return [
            *self._component_args(binary),
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={self.ca_path}",
            f"--cluster-signing-cert-file={self.ca_path}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={_SERVICE_RANGE}",
            "--cluster-name=anyop",
        ]

    def _kwok_args(self, binary: Path) -> list[str]:
        return [
            str(binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--config={kwok_stages(binary)}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--cidr={_POD_CIDR}",
            "--node-ip=10.0.1.1",
            "--v=INFO",
        ]

    def _cluster_processes(self) -> list[ChildProcess]:
        """kube-controller-manager, kube-scheduler and KWOK, as far as they are asked for."""
        assets, wanted = self.assets, []
        if self.controllers:
            wanted.append(("kube-controller-manager", assets.kube_controller_manager))
        if self.nodes:
            wanted += [("kube-scheduler", assets.kube_scheduler), ("kwok", assets.kwok)]
        makers = {
            "kube-controller-manager": self._controller_manager_args,
            "kube-scheduler": self._component_args,
            "kwok": self._kwok_args,
        }
        procs = []
        for name, binary in wanted:
            if binary is None or name in assets.missing_cluster():
                raise ControlPlaneError(
                    f"{name} is asked for but not among the binaries ({binary or 'unset'}); "
                    "build it (`anyop controlplane build`) or start with "
                    f"{'controllers' if name.endswith('manager') else 'nodes'}=False."
                )
            log = self.workdir / f"{name}.log"
            procs.append(ChildProcess(name, makers[name](binary), log, detached=self.detached))
        return procs

    # -- lifecycle ------------------------------------------------------------------------------

    def _spawn(self) -> None:
        self._restarts = {}
        self._revivals = {}
        self.workdir.mkdir(parents=True, exist_ok=True)
        write_pki(self.workdir / "pki", advertise=_ADVERTISE)
        self.port = self.port or free_port()
        self.etcd_port = self.etcd_port or free_port()
        write_kubeconfig(self.kubeconfig, server=self.server, pki=self.workdir / "pki")
        logs = self.workdir
        self.etcd = ChildProcess(
            "etcd", self._etcd_args(), logs / "etcd.log", detached=self.detached
        )
        self.apiserver = ChildProcess(
            "kube-apiserver",
            self._apiserver_args(),
            logs / "kube-apiserver.log",
            detached=self.detached,
        )
        self.etcd.start()
        self.apiserver.start()
        cluster = {proc.name: proc for proc in self._cluster_processes()}
        self.controller_manager = cluster.get("kube-controller-manager")
        self.scheduler = cluster.get("kube-scheduler")
        self.kwok = cluster.get("kwok")
        for proc in cluster.values():  # they wait for the API server by themselves
            proc.start()

    def _check_alive(self) -> None:
        """Fail if etcd or the API server exited; start again a cluster component that exited
        (as a kubelet restarts a static Pod), a few times: on a loaded machine,
        kube-controller-manager gives up when its first TLS handshake with a busy API server
        times out."""
        for proc in self._processes():
            if proc.exited() is None:
                continue
            restarts = self._restarts.get(proc.name, 0)
            if proc in (self.etcd, self.apiserver) or restarts >= _COMPONENT_RESTARTS:
                raise ControlPlaneError(proc.failure("stopped during start-up"))
            self._restarts[proc.name] = restarts + 1
            _start_again(proc)

    def revive(self) -> list[str]:
        """Start again the cluster components that have exited since (as a kubelet restarts a
        static Pod), at most :data:`_COMPONENT_REVIVALS` times each; return their names.

        kube-controller-manager exits when it loses its way to a busy API server, and namespaces
        then stay without their ``kube-root-ca.crt``, the garbage stays uncollected. etcd and
        kube-apiserver are not started again: tests stop them on purpose.
        """
        revived: list[str] = []
        for proc in self._processes():
            if proc in (self.etcd, self.apiserver) or proc.exited() is None:
                continue
            revivals = self._revivals.get(proc.name, 0)
            if revivals >= _COMPONENT_REVIVALS:
                continue
            self._revivals[proc.name] = revivals + 1
            logger.warning(proc.failure("exited; starting it again"))
            _start_again(proc)
            revived.append(proc.name)
        return revived

    def _not_ready(self, waited: float, last: str) -> ControlPlaneError:
        logs = "\n".join(proc.failure("log") for proc in self._processes())
        return ControlPlaneError(
            f"The control plane did not become ready within {waited:.0f}s (last: {last}).\n{logs}"
        )

    def _ready_paths(self) -> list[str]:
        """What must answer well: the API server; the service-account controller's work (the
        namespace's ``default`` account); KWOK's fake node."""
        paths = list(_READY_PATHS)
        if self.controllers and self.controller_manager is not None:
            paths.append("/api/v1/namespaces/default/serviceaccounts/default")
        if self.nodes and self.kwok is not None:
            paths.append(f"/api/v1/nodes/{NODE_NAME}")
        return paths

    @staticmethod
    def _verdict(responses: Sequence[httpx.Response]) -> str | None:
        """``None`` if all readiness answers are good, else what is not ready yet."""
        for response in responses:
            path = response.request.url.path
            if response.status_code == 404 and path == f"/api/v1/nodes/{NODE_NAME}":
                return "the fake node is being registered"
            if response.status_code != 200:
                return f"{path}: {response.status_code} {response.text[:200]}"
            if path.startswith("/api/v1/nodes/") and not _node_is_ready(response.json()):
                return f"the node {NODE_NAME} is not Ready yet"
        return None

    def _register_node(self, client: httpx.Client) -> None:
        """Create the fake node for KWOK (once the API server answers); an existing one stays."""
        response = client.post("/api/v1/nodes", json=_NODE)
        if response.status_code not in (201, 409):
            raise ControlPlaneError(f"Cannot create the fake node: {response.text[:300]}")

    def _wait_ready(self) -> None:
        started = time.monotonic()
        last = "no answer yet"
        with httpx.Client(base_url=self.server, verify=self.ssl_context(), timeout=5) as client:
            while time.monotonic() - started < self.startup_timeout:
                self._check_alive()
                try:
                    verdict = self._verdict([client.get(path) for path in self._ready_paths()])
                    if verdict == "the fake node is being registered":
                        self._register_node(client)
                except httpx.HTTPError as e:
                    verdict = f"{type(e).__name__}: {e}"
                if verdict is None:
                    return
                last = verdict
                time.sleep(0.2)
        raise self._not_ready(time.monotonic() - started, last)

    async def _await_ready(self) -> None:
        # The waits are short requests on loopback: a thread keeps one readiness loop for both.
        await anyio.to_thread.run_sync(self._wait_ready, abandon_on_cancel=True)

    def start(self) -> None:
        """Start etcd and kube-apiserver and wait until the API server is ready.

        Raises:
            ControlPlaneError: The binaries are missing and cannot be built, a process died, or
                readiness was not reached in time (with the last lines of both logs).
        """
        _ = self.assets  # find or build before starting anything
        try:
            self._spawn()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    async def astart(self) -> None:
        """Like :meth:`start`, but waits for readiness without blocking the event loop."""
        if self._assets is None:
            self._assets = await anyio.to_thread.run_sync(ensure_assets)
        try:
            self._spawn()  # WARNING: in this thread, so that the processes are tied to it
            await self._await_ready()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.stop)
            raise

    def stop(self) -> None:
        """Stop the processes (the last started first) and remove a temporary workdir."""
        for proc in reversed(self._processes()):
            proc.stop()
        if self._owns_workdir and not self.detached:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- fault injection ------------------------------------------------------------------------

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver alone; etcd and the data stay."""
        if self.apiserver is not None:
            self.apiserver.stop()

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port and wait until it is ready."""
        if self.apiserver is None:
            raise ControlPlaneError("The control plane was never started.")
        self.apiserver.start()
        self._wait_ready()

    async def astart_apiserver(self) -> None:
        """Like :meth:`start_apiserver`, but waits for readiness without blocking the event loop
        (the operator under test keeps running meanwhile)."""
        if self.apiserver is None:
            raise ControlPlaneError("The control plane was never started.")
        self.apiserver.start()  # WARNING: in this thread, so that the process is tied to it
        await self._await_ready()

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver, keeping its port and etcd's data."""
        self.stop_apiserver()
        self.start_apiserver()

    def restart_etcd(self) -> None:
        """Stop and start etcd, keeping its data and port."""
        if self.etcd is None:
            raise ControlPlaneError("The control plane was never started.")
        self.etcd.stop()
        self.etcd.start()
        self._wait_ready()

    def pause_apiserver(self) -> None:
        """SIGSTOP kube-apiserver: connections stay open and go silent."""
        if self.apiserver is not None:
            self.apiserver.send(signal.SIGSTOP)

    def resume_apiserver(self) -> None:
        """SIGCONT kube-apiserver after :meth:`pause_apiserver`."""
        if self.apiserver is not None:
            self.apiserver.send(signal.SIGCONT)

    # -- context managers -----------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await self.astart()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.stop)
