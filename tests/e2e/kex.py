"""Sync helpers for tests that drive KopfExample objects through kubectl."""

from __future__ import annotations

import json
import time
from typing import Any

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.pytest_plugin import kubectl


def apply_kex(plane: LocalControlPlane, namespace: str, name: str, **spec: Any) -> None:
    """Create (or update) a KopfExample with this spec."""
    body = {"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip
    kubectl(plane, "apply", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def wait_for_status(
    plane: LocalControlPlane, namespace: str, name: str, key: str = "create_fn"
) -> dict[str, Any]:
    """Poll the object until ``status.<key>`` appears; return the status (60 s at most)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = json.loads(kubectl(plane, "get", "-n", namespace, "kex", name, "-o", "json"))
        if key in (body.get("status") or {}):
            return dict(body["status"])
        time.sleep(0.2)
    raise AssertionError(f"{name} got no status.{key} within 60 s")
