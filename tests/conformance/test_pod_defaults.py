"""Conformance: the defaults of pod specs (a Pod's and a workload template's: probes, handlers,
environment field references, volumes, pod-level resources), a ReplicationController's, a
scheduled Pod's graceful deletion, and Services' node ports."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown, without_ips

pytestmark = pytest.mark.anyio

_PROBE = {"httpGet": {"port": 8080}, "timeoutSeconds": 0, "periodSeconds": 0}
_VOLUMES = [
    {"name": "empty"},
    {"name": "host", "hostPath": {"path": "/tmp/x"}},
    {"name": "projected", "projected": {"sources": [
        {"downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"configMap": {"name": "c"}}]}},
    {"name": "ephemeral", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
    {"name": "image", "image": {"reference": "busybox:latest"}},
    {"name": "image2", "image": {"reference": "registry.k8s.io/pause:3.10"}},
    {"name": "secret", "secret": {"secretName": "s", "defaultMode": 256}},
]  # fmt: skip
_CONTAINER = {
    "name": "c", "image": "nginx:1.27",
    "livenessProbe": _PROBE,
    "readinessProbe": {"grpc": {"port": 9000}},
    "startupProbe": {"exec": {"command": ["true"]}, "failureThreshold": 30},
    "lifecycle": {"preStop": {"httpGet": {"port": 80}},
                  "postStart": {"exec": {"command": ["true"]}}},
    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}],
    "resources": {"limits": {"cpu": "1", "memory": "64Mi"}, "requests": {"cpu": "100m"}},
}  # fmt: skip


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return without_ips(document)


def _spec(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return document["spec"]


async def test_a_pods_volumes_handlers_and_environment_are_defaulted(conform: Conform) -> None:
    """Every volume source's defaults (none is an emptyDir; hostPath's type, projections'
    modes, a token's expiry, an ephemeral claim's volume mode, an image's pull policy), probes'
    zero numbers, handlers' HTTP paths, a gRPC probe's service, field references' version; an
    init container's requests taken from its limits."""

    async def scenario(t: Target) -> None:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i", "image": "busybox",
                                "resources": {"limits": {"memory": "32Mi"}}}],
            "containers": [_CONTAINER], "volumes": _VOLUMES}}  # fmt: skip
        await t.post(t.core("pods"), body, record=_spec)
        token = {
            "name": "t",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token"}},
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "m",
                                    "resourceFieldRef": {
                                        "containerName": "c",
                                        "resource": "requests.memory",
                                    },
                                }
                            ]
                        }
                    },
                ]
            },
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "t"},
            "spec": {
                "serviceAccountName": "default",
                "containers": [{"name": "c", "image": "nginx"}],
                "volumes": [token],
            },
        }
        await t.post(t.core("pods"), body, record=lambda d: _spec(d)["volumes"])

    await conform(scenario)


async def test_pod_templates_get_pod_spec_defaults_but_not_a_pods_own(conform: Conform) -> None:
    """A Deployment's, a Job's and a PodTemplate's pod specs get the same defaults but a Pod's
    own: no requests from limits, no ``enableServiceLinks``."""

    async def scenario(t: Target) -> None:
        template = {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [_CONTAINER], "volumes": _VOLUMES},
        }
        selector = {"matchLabels": {"app": "d"}}
        await t.post(
            t.apis("apps/v1", "deployments"),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {"selector": selector, "template": template},
            },
            record=lambda d: _spec(d) if d.get("kind") == "Status" else d["spec"]["template"],
        )
        job_template = {"spec": {**template["spec"], "restartPolicy": "Never"}}
        await t.post(
            t.apis("batch/v1", "jobs"),
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j"},
                "spec": {"template": job_template},
            },
            record=lambda d: (
                _spec(d) if d.get("kind") == "Status" else d["spec"]["template"]["spec"]
            ),
        )
        await t.post(
            t.core("podtemplates"),
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "pt"},
                "template": template,
            },
            record=lambda d: d.get("template", d.get("code")),
        )

    await conform(scenario)


async def test_host_network_ports_and_pod_level_resources_are_defaulted(conform: Conform) -> None:
    """A host-network Pod's container ports get their host ports; pod-level limits give the
    pod-level requests where no container requests the resource."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "h"},
            "spec": {
                "hostNetwork": True,
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "ports": [
                            {"containerPort": 8080},
                            {"containerPort": 53, "protocol": "UDP"},
                        ],
                    }
                ],
            },
        }
        await t.post(t.core("pods"), body, record=_spec)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "r"},
            "spec": {
                "resources": {"limits": {"cpu": "1", "memory": "100Mi"}},
                "containers": [{"name": "c", "image": "nginx"}],
            },
        }
        await t.post(t.core("pods"), body, record=_spec)

    await conform(scenario)


def _pod_resources(document: Any) -> Any:
    spec = _spec(document)
    return spec.get("resources") if isinstance(spec, dict) and "containers" in spec else spec


async def test_pod_level_requests_add_up_the_containers_sidecars_and_init_containers(
    conform: Conform,
) -> None:
    """Where pod-level limits are set, a resource's pod-level request is what the containers
    request in all: the containers' and sidecars' requests added up (the first one's format
    kept), or an init container's with the sidecars before it where that is more; huge pages
    and extended resources are not added up."""

    def container(name: str, **requests: str) -> dict[str, Any]:
        return {"name": name, "image": "nginx", "resources": {"requests": requests}}

    async def scenario(t: Target) -> None:
        pods = {
            "sum": (
                [
                    container("a", cpu="100m", memory="1Gi"),
                    container("b", cpu="0.25", memory="512Mi"),
                ],
                [],
            ),
            "formats": ([container("a", memory="1G"), container("b", memory="1Gi")], []),
            "init-more": ([container("a", cpu="100m")], [container("i", cpu="2")]),
            "sidecars": (
                [container("a", cpu="100m", memory="10Mi")],
                [
                    {**container("s", cpu="200m"), "restartPolicy": "Always"},
                    container("i", cpu="250m", memory="100Mi"),
                    {**container("t", memory="5Mi"), "restartPolicy": "Always"},
                ],
            ),
            "partly": ([container("a", memory="64Mi")], []),
        }
        for name, (containers, inits) in pods.items():
            limits = {"cpu": "4", "memory": "4Gi"}
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {"resources": {"limits": limits}, "containers": containers},
            }
            if inits:
                body["spec"]["initContainers"] = inits
            await t.post(t.core("pods"), body, record=_pod_resources)

    await conform(scenario)


async def test_a_replication_controllers_selector_and_labels_come_from_its_template(
    conform: Conform,
) -> None:
    """A ReplicationController without a selector or labels takes its template's."""

    async def scenario(t: Target) -> None:
        template = {
            "metadata": {"labels": {"app": "rc"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        body = {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "rc"},
            "spec": {"template": template},
        }
        await t.post(
            t.core("replicationcontrollers"),
            body,
            record=lambda d: (
                _shown(d)
                if d.get("kind") == "Status"
                else (d["metadata"].get("labels"), d["spec"]["selector"], d["spec"]["replicas"])
            ),
        )
        body = {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "rc2", "labels": {"own": "x"}},
            "spec": {"selector": {"app": "rc"}, "replicas": 0, "template": template},
        }
        await t.post(
            t.core("replicationcontrollers"),
            body,
            record=lambda d: (
                _shown(d)
                if d.get("kind") == "Status"
                else (d["metadata"].get("labels"), d["spec"]["selector"], d["spec"]["replicas"])
            ),
        )

    await conform(scenario)


def _deleting(document: Any) -> Any:
    if not isinstance(document, dict) or document.get("kind") != "Pod":
        return _shown(document) if isinstance(document, dict) else document
    metadata = document["metadata"]
    return {key: metadata.get(key) for key in (
        "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers")}  # fmt: skip


async def test_a_scheduled_pods_grace_period_may_only_shorten(conform: Conform) -> None:
    """A graceful deletion: a longer grace changes nothing, a shorter one shortens it, 0 ends
    it; a finalizer keeps the Pod (with its grace) and an update that removes it does not end
    the grace period; a terminated Pod goes at once."""

    async def scenario(t: Target) -> None:
        spec = {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1"}
        for name, extra in (("a", {}), ("b", {"finalizers": ["x.dev/keep"]})):
            await t.post(t.core("pods"), {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": name, **extra}, "spec": spec},
                         record=lambda d: d.get("kind"))  # fmt: skip
        await t.delete(t.core("pods", "a"), params={"gracePeriodSeconds": "20"},
                       record=_deleting)  # fmt: skip
        await t.delete(t.core("pods", "a"), params={"gracePeriodSeconds": "60"},
                       record=_deleting)  # fmt: skip
        await t.delete(
            t.core("pods", "a"),
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 10},
            record=_deleting,
        )
        await t.get(t.core("pods", "a"), record=_deleting)
        await t.delete(t.core("pods", "a"), params={"gracePeriodSeconds": "0"},
                       record=_deleting)  # fmt: skip
        await t.get(t.core("pods", "a"), record=lambda d: d.get("code"))
        await t.delete(t.core("pods", "b"), record=_deleting)
        await t.patch(t.core("pods", "b"), {"metadata": {"finalizers": None}}, record=_deleting)
        await t.delete(t.core("pods", "b"), params={"gracePeriodSeconds": "0"},
                       record=_deleting)  # fmt: skip
        await t.get(t.core("pods", "b"), record=lambda d: d.get("code"))
        await t.post(t.core("pods"), {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": "c"}, "spec": spec},
                     record=lambda d: d.get("kind"))  # fmt: skip
        await t.patch(f"{t.core('pods', 'c')}/status", {"status": {"phase": "Succeeded"}},
                      record=lambda d: d.get("kind"))  # fmt: skip
        await t.delete(t.core("pods", "c"), record=_deleting)
        await t.get(t.core("pods", "c"), record=lambda d: d.get("code"))

    await conform(scenario)


def _ports(document: Any) -> Any:
    if document.get("kind") == "Status":
        return status_shown(document)
    spec = document["spec"]
    return {
        "ports": [
            (
                p.get("port"),
                p.get("protocol"),
                p.get("nodePort") if p.get("nodePort") in (31871, 31872, None) else "<n>",
            )
            for p in spec.get("ports", [])
        ],
        "healthCheckNodePort": "<n>" if spec.get("healthCheckNodePort") else None,
        "externalTrafficPolicy": spec.get("externalTrafficPolicy"),
        "allocateLoadBalancerNodePorts": spec.get("allocateLoadBalancerNodePorts"),
    }


async def test_node_ports_asked_for_taken_shared_and_dropped(conform: Conform) -> None:
    """A node port asked for is kept, a taken one or one out of the range refused; a TCP and a
    UDP port of one number share a node port; a LoadBalancer without node ports gets none;
    Local to Cluster drops the health check node port."""

    async def scenario(t: Target) -> None:
        def service(name: str, **spec: Any) -> dict[str, Any]:
            return {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {"selector": {"a": "b"}, **spec},
            }

        ports = [
            {"name": "t", "port": 53, "nodePort": 31871},
            {"name": "u", "port": 53, "protocol": "UDP"},
            {"name": "h", "port": 80},
        ]
        await t.post(t.core("services"), service("a", type="NodePort", ports=ports), record=_ports)
        await t.post(
            t.core("services"),
            service("b", type="NodePort", ports=[{"port": 80, "nodePort": 31871}]),
            record=_ports,
        )
        await t.post(
            t.core("services"),
            service("c", type="NodePort", ports=[{"port": 80, "nodePort": 80}]),
            record=_ports,
        )
        await t.post(
            t.core("services"),
            service(
                "d",
                type="LoadBalancer",
                allocateLoadBalancerNodePorts=False,
                externalTrafficPolicy="Local",
                ports=[{"port": 80}],
            ),
            record=_ports,
        )
        await t.patch(
            t.core("services", "d"), {"spec": {"externalTrafficPolicy": "Cluster"}}, record=_ports
        )
        await t.patch(
            t.core("services", "a"),
            {"spec": {"ports": [{"name": "t", "port": 53, "nodePort": 31872}]}},
            record=_ports,
        )
        await t.put(
            t.core("services", "a"),
            service("a", type="NodePort", ports=[{"name": "t", "port": 53}]),
            record=_ports,
        )
        await t.patch(
            t.core("services", "a"),
            {
                "spec": {
                    "type": "ClusterIP",
                    "ports": [{"name": "t", "port": 53, "nodePort": 31871}],
                }
            },
            record=_ports,
        )

    await conform(scenario)
