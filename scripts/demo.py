"""The README's demo: a real control plane, an example operator, and a real object it handles.

Starts etcd + kube-apiserver on loopback, applies the KopfExample CRD, runs the operator as a
separate process (as you would), creates an object, shows what the operator did to it, deletes
it, and stops everything.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl, wait_for_crd

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "demo"


def say(text: str) -> None:
    print(f"\n=== {text}", flush=True)


def operator_command() -> list[str]:
    example = ROOT / "examples" / "01-minimal" / "example.py"
    return [
        sys.executable,
        "-m",
        "anyop",
        "run",
        str(example),
        "--namespace",
        NAMESPACE,
        "--verbose",
    ]


def wait_for(plane: LocalControlPlane, what: str, check: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = kubectl(
            plane,
            "get",
            "-n",
            NAMESPACE,
            "kopfexample",
            "kopf-example-1",
            "--ignore-not-found",
            "-o",
            "json",
        )
        if check in out or (check == "" and not out.strip()):
            return out
        time.sleep(0.2)
    raise SystemExit(f"The demo failed: {what} did not happen within {timeout:.0f}s.")


def main() -> None:
    say("Starting a local control plane (etcd + kube-apiserver on 127.0.0.1)")
    with LocalControlPlane() as plane:
        print(f"kube-apiserver {plane.server}, kubeconfig {plane.kubeconfig}")
        kubectl(plane, "apply", "-f", str(ROOT / "examples" / "crd.yaml"))
        wait_for_crd(plane, "kopfexamples.kopf.dev")
        kubectl(plane, "create", "namespace", NAMESPACE)

        say(f"Running the operator: anyop {' '.join(operator_command()[3:])}")
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "PYTHONUNBUFFERED": "1"}
        operator = subprocess.Popen(operator_command(), env=env)
        try:
            say("Creating KopfExample kopf-example-1")
            manifest = {
                "apiVersion": "kopf.dev/v1",
                "kind": "KopfExample",
                "metadata": {"name": "kopf-example-1"},
                "spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"]},
            }
            kubectl(plane, "apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(manifest))
            body = json.loads(wait_for(plane, "handling the object", '"create_fn"'))
            say("What the operator did: the object's status")
            print(json.dumps(body["status"], indent=2))
            print("status.create_fn.message =", body["status"]["create_fn"]["message"])

            say("Deleting kopf-example-1")
            kubectl(
                plane, "delete", "-n", NAMESPACE, "kopfexample", "kopf-example-1", "--wait=false"
            )
            wait_for(plane, "the deletion", "")
            print("deleted.")
        finally:
            operator.send_signal(signal.SIGINT)
            try:
                operator.wait(timeout=15)
            except subprocess.TimeoutExpired:
                operator.kill()
        say("Stopping the control plane")
    print("Done.")


if __name__ == "__main__":
    main()
