"""The operator's own objects: its ServiceAccount, its Deployment, and a Service for webhooks."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from anyop.manifests.options import ManifestOptions

__all__ = ["command_line", "deployment", "service", "service_account"]

SOURCE_FOLDER = "/src"
"""Where the image keeps the operator's files (``anyop run /src/app.py``)."""


def service_account(options: ManifestOptions) -> dict[str, Any]:
    """The ServiceAccount that the roles are bound to."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": options.name, "namespace": options.namespace},
    }


def command_line(options: ManifestOptions) -> list[str]:
    """``anyop run`` with the options that the manifests assume."""
    files = [str(PurePosixPath(SOURCE_FOLDER) / PurePosixPath(s).name) for s in options.sources]
    command = ["anyop", "run", *files, *(f"--module={module}" for module in options.modules)]
    if options.clusterwide:
        command.append("--all-namespaces")
    command += [f"--namespace={namespace}" for namespace in options.namespaces]
    if not options.peering:
        command.append("--standalone")
    if options.leader_election:
        command += ["--leader-election", f"--lease-name={options.name}"]
    if options.sharding:
        command += ["--shards=auto", f"--lease-name={options.name}"]
    if options.probes_port is not None:
        command.append(f"--liveness=http://0.0.0.0:{options.probes_port}/healthz")
    if options.metrics_port is not None:
        scheme = "http" if options.metrics_insecure else "https"
        command.append(f"--metrics={scheme}://0.0.0.0:{options.metrics_port}/metrics")
        if options.metrics_insecure:
            command.append("--metrics-insecure")
    command.append("--log-format=json")
    return command


def deployment(options: ManifestOptions) -> dict[str, Any]:
    """The Deployment: the command line, the ports, and probes on the health endpoints."""
    labels = {"app.kubernetes.io/name": options.name}
    container: dict[str, Any] = {
        "name": "operator",
        "image": options.image,
        "command": command_line(options),
        "env": [_from_pod_name("POD_ID"), _from_pod_name("ANYOP_LEADERSHIP__IDENTITY")],
    }
    ports = _ports(options)
    if ports:
        container["ports"] = ports
    if options.probes_port is not None:
        container["livenessProbe"] = _probe("/healthz", period=10)
        container["readinessProbe"] = _probe("/readyz", period=5)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": options.name, "namespace": options.namespace, "labels": labels},
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": options.name,
                    "terminationGracePeriodSeconds": 60,
                    "containers": [container],
                },
            },
        },
    }


def service(options: ManifestOptions) -> dict[str, Any] | None:
    """The Service in front of the webhook server, or ``None`` without webhooks."""
    if options.webhook_port is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": options.name, "namespace": options.namespace},
        "spec": {
            "selector": {"app.kubernetes.io/name": options.name},
            "ports": [{"name": "webhooks", "port": 443, "targetPort": "webhooks"}],
        },
    }


def _ports(options: ManifestOptions) -> list[dict[str, Any]]:
    named = [
        ("probes", options.probes_port),
        ("metrics", options.metrics_port),
        ("webhooks", options.webhook_port),
    ]
    return [{"name": n, "containerPort": p} for n, p in named if p is not None]


def _probe(path: str, *, period: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "probes"}, "periodSeconds": period}


def _from_pod_name(variable: str) -> dict[str, Any]:
    return {"name": variable, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
