"""``anyop run`` as in a cluster: the ServiceAccount of manifests/rbac.yaml and nothing more.

The operator gets what a Pod of manifests/deployment.yaml gets: a token from the TokenRequest API,
the namespace's ``kube-root-ca.crt`` (published by kube-controller-manager) as ``ca.crt``, both
mounted at ``/var/run/secrets/kubernetes.io/serviceaccount`` (in a mount namespace of its own, so
that nothing on the machine changes), and ``KUBERNETES_SERVICE_HOST``/``_PORT``. No kubeconfig.
It serves Kopf's handlers example with peering and leader election, in one namespace (the Role as
the manifest has it) and in the whole cluster (the Role's rules moved into the ClusterRole, as the
manifest's header says), and must handle every object without a single 403.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from tests.e2e.conftest import EXAMPLES, MANIFESTS
from tests.e2e.kex import wait_for_status
from tests.e2e.test_examples_more_e2e import BACKENDS, Output, apply, find, get, kex, until

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl

ACCOUNT = "anyop-operator"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# A private /run (where /var/run points) with the token folder bound into it: the Pod's view.
IN_POD = (
    'mount -t tmpfs tmpfs /run && mkdir -p "$1" && mount --bind "$0" "$1" && shift && exec "$@"'
)


def rbac_documents(namespace: str, *, cluster_wide: bool) -> list[dict[str, Any]]:
    """manifests/rbac.yaml for this namespace; cluster-wide: the Role's rules in the ClusterRole.

    The cluster-scoped objects get the namespace in their names, so tests do not share them.
    """
    text = (MANIFESTS / "rbac.yaml").read_text().replace("anyop-example", namespace)
    text = text.replace("anyop-operator-cluster", f"anyop-operator-cluster-{namespace}")
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    if not cluster_wide:
        return docs
    role = next(doc for doc in docs if doc["kind"] == "Role")
    cluster_role = next(doc for doc in docs if doc["kind"] == "ClusterRole")
    cluster_role["rules"] += role["rules"]
    return [doc for doc in docs if doc["kind"] not in ("Role", "RoleBinding")]


def service_account_folder(
    plane: LocalControlPlane, namespace: str, folder: Path, account: str = ACCOUNT
) -> Path:
    """What the kubelet mounts: a TokenRequest token, the cluster's CA, the namespace."""
    with httpx.Client(base_url=plane.server, verify=plane.ssl_context()) as admin:
        response = admin.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            json={"spec": {"expirationSeconds": 3600}},
        )
    response.raise_for_status()
    root_ca = until(lambda: find(plane, namespace, "configmap", "kube-root-ca.crt"), "root CA")
    folder.mkdir()
    (folder / "token").write_text(response.json()["status"]["token"])
    (folder / "ca.crt").write_text(root_ca["data"]["ca.crt"])
    (folder / "namespace").write_text(namespace)
    return folder


def install_operator(
    plane: LocalControlPlane, namespace: str, docs: list[dict[str, Any]], folder: Path
) -> tuple[Path, list[str]]:
    """Apply the RBAC documents and a peering object; return the account's folder and the
    arguments of ``anyop run`` (Kopf's handlers example, peering, leader election).

    Documents without a RoleBinding are the cluster-wide variant (``-A``).
    """
    cluster_wide = not any(doc["kind"] == "RoleBinding" for doc in docs)
    listed = {"apiVersion": "v1", "kind": "List", "items": docs}
    kubectl(plane, "apply", "-f", "-", stdin=json.dumps(listed))
    kind = "ClusterAnyopPeering" if cluster_wide else "AnyopPeering"
    name = f"peers-{namespace}"
    peering = {"apiVersion": "anyop.dev/v1", "kind": kind, "metadata": {"name": name}}
    apply(plane, namespace, peering)
    account = service_account_folder(plane, namespace, folder)
    where = ["-A"] if cluster_wide else ["-n", namespace]
    example = str(EXAMPLES / "02-handlers" / "example.py")
    options = ["-P", name, "--leader-election", "--lease-name", ACCOUNT]
    return account, [example, *where, *options]


@contextmanager
def operator_in_pod(
    plane: LocalControlPlane,
    folder: Path,
    *args: str,
    backend: str,
    check: bool = True,
    events: bool = False,
) -> Iterator[Output]:
    """``anyop run ARGS`` with the Pod's environment and mounts, and no kubeconfig anywhere.

    With ``check``, it must exit with 0 on SIGTERM; without, it is killed if it does not exit.
    With ``events``, the handlers' log lines become Events too (``posting.loggers``).
    """
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    env.update(
        HOME=str(folder.parent),  # no ~/.kube/config to fall back to
        KUBERNETES_SERVICE_HOST="127.0.0.1",
        KUBERNETES_SERVICE_PORT=str(plane.port),
        POD_ID="anyop-operator-0",
        ANYOP_LEADERSHIP__IDENTITY="anyop-operator-0",
        ANYOP_POSTING__LOGGERS="true" if events else "false",
    )
    command = [
        *("unshare", "--mount", "--propagation", "private", "sh", "-c", IN_POD),
        *(str(folder), MOUNT, sys.executable, "-m", "anyop", "run", *args),
        *("--backend", backend, "--log-format", "plain", "--verbose"),
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = Output(process)
    try:
        yield output
    except BaseException:
        _stop(process, output)  # the test's own failure is the one to report
        raise
    stopped = _stop(process, output)
    if check:
        tail = "\n".join(output.lines[-60:])
        assert stopped, f"It did not stop on SIGTERM; its last lines:\n{tail}"
        assert process.returncode == 0, output.text


def _stop(process: subprocess.Popen[str], output: Output) -> bool:
    """SIGTERM, then a kill if it does not exit in time; whether it exited by itself."""
    try:
        output.stop()
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False
    return True


def logged_about(plane: LocalControlPlane, namespace: str) -> set[str]:
    """The objects that the operator's log lines were posted about as Events."""
    events = json.loads(kubectl(plane, "get", "-n", namespace, "events", "-o", "json"))["items"]
    return {e["involvedObject"]["name"] for e in events if e.get("reason") == "Logging"}


@BACKENDS
@pytest.mark.parametrize("scope", ["namespaced", "cluster-wide"])
def test_the_operator_as_its_service_account_handles_everything_without_a_403(
    anyop_controlplane: LocalControlPlane,
    pod_namespace: str,
    backend: str,
    scope: str,
    tmp_path: Path,
) -> None:
    plane, ns = anyop_controlplane, pod_namespace
    cluster_wide = scope == "cluster-wide"
    docs = rbac_documents(ns, cluster_wide=cluster_wide)
    folder, args = install_operator(plane, ns, docs, tmp_path / "serviceaccount")
    # With posting.loggers, every log line of the handlers (sync ones in threads) is an Event too:
    # the Events rule is used, not only proven by taking it away (test_least_privilege_e2e.py).
    with operator_in_pod(plane, folder, *args, backend=backend, events=True) as output:
        for name in ("kex-1", "kex-2", "kex-3"):
            apply(plane, ns, kex(name, {"field": "a", "items": ["x"]}))
        for name in ("kex-1", "kex-2", "kex-3"):
            wait_for_status(plane, ns, name)
            output.wait_for(f"[{ns}/{name}] Creation is processed: 2 succeeded; 0 failed.")
        kubectl(
            plane,
            "patch",
            "-n",
            ns,
            "kex",
            "kex-2",
            "--type=merge",
            "-p",
            '{"spec": {"field": "b"}}',
        )
        output.wait_for(f"[{ns}/kex-2] Handler 'field_fn/spec.field' succeeded.")
        kubectl(plane, "delete", "-n", ns, "kex", "kex-3", "--timeout=60s")
        output.wait_for(f"[{ns}/kex-3] Cleaning up after kex-3.")
        lease = get(plane, ns, "lease", "anyop-operator")
        scope_of_peering = ["clusteranyoppeering"] if cluster_wide else ["-n", ns, "anyoppeering"]
        peers = json.loads(kubectl(plane, "get", *scope_of_peering, f"peers-{ns}", "-o", "json"))
        # Posted in the background (cluster-wide, among the Events of other tests' objects).
        wanted = {"kex-1", "kex-2", "kex-3"}
        logged = until(lambda: logged_about(plane, ns) >= wanted, "a Logging Event per object")
    assert logged
    assert lease["spec"]["holderIdentity"] == "anyop-operator-0"
    assert "anyop-operator-0" in peers["status"]  # its keep-alive, written while it ran
    assert {"old": "a", "new": "b"} in get(plane, ns, "kex", "kex-2")["status"].values()
    text = output.text
    # Not RBAC's: the cluster-wide operator also serves other tests' namespaces, and an Event
    # about an object in a namespace being deleted is refused ("it is being terminated").
    refusals = [
        line
        for line in text.splitlines()
        if ("403 Forbidden" in line or "forbidden:" in line) and "being terminated" not in line
    ]
    assert not refusals, refusals
    assert "Traceback" not in text, text
