"""Conformance: server-side Table views and content negotiation of reads.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io``; the server answers
with the columns of its printers (or a CRD's ``additionalPrinterColumns``) and computes the
cells itself, ages on its own clock. Ages of fresh objects become ``<fresh>`` (a few seconds on
both servers), other ages ``<age>``, absolute times ``<time>``.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from tests.conformance.conftest import CRDS, Conform
from tests.conformance.harness import MERGE, Target

from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

pytestmark = pytest.mark.anyio

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_BETA = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
KUBECTL = f"{TABLE},{TABLE_BETA},application/json"
PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
_AGE = re.compile(r"^(\d+)(s|m\d*s?|h\d*m?|d\d*h?|y\d*d?)$")
_AGO = re.compile(r"\((\S+) ago\)")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _cell(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if found := _AGE.match(value):
        fresh = found[2] == "s" and int(found[1]) < 120
        return "<fresh>" if fresh else "<age>"
    if _TIME.match(value):
        return "<time>"
    return _AGO.sub("(<age> ago)", value)


def _masked(node: Any) -> Any:
    """Every Table's cells masked (ages and times), anywhere in a record."""
    if isinstance(node, dict):
        masked = {key: _masked(value) for key, value in node.items()}
        if node.get("kind") == "Table":
            for row in masked.get("rows") or ():
                row["cells"] = [_cell(cell) for cell in row.get("cells") or ()]
        return masked
    if isinstance(node, list):
        return [_masked(item) for item in node]
    return node


async def _get(t: Target, path: str, accept: str = KUBECTL, **params: str) -> Any:
    return await t.get(path, headers={"Accept": accept}, params=params or None)


def _mask_records(t: Target) -> None:
    t.records[:] = [_masked(record) for record in t.records]


async def _quiet(t: Target, method: str, path: str, body: Any = None, ct: str = "") -> Any:
    """A request whose answer is not recorded (setup)."""
    headers = {"Content-Type": ct or "application/json"}
    response = await t.api.request(method, path, json=body, headers=headers)
    assert response.is_success, f"{method} {path}: {response.text}"
    return response.json()


WIDGET = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget", "metadata": {"name": "w"}}

# -- built-in kinds -------------------------------------------------------------------------------


def _pod(name: str, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"initContainers": [{"name": "init", "image": "busybox"}],
                     "containers": [{"name": "a", "image": "busybox"},
                                    {"name": "b", "image": "nginx"}],
                     "readinessGates": [{"conditionType": "example.com/gate"}]},
            "status": status}  # fmt: skip


_RUNNING = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
_POD_STATUSES = {
    "initializing": {"phase": "Pending", "initContainerStatuses": [
        {"name": "init", "image": "busybox", "imageID": "", "ready": False, "restartCount": 2,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:00Z"}}}]},
    "running": {"phase": "Running", "podIP": "10.0.1.5", "podIPs": [{"ip": "10.0.1.5"}],
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "example.com/gate", "status": "True"}],
                "containerStatuses": [
        {"name": "a", "image": "busybox", "imageID": "", "ready": True, "restartCount": 0,
         "state": _RUNNING},
        {"name": "b", "image": "nginx", "imageID": "", "ready": False, "restartCount": 1,
         "state": {"waiting": {"reason": "ImagePullBackOff"}}}]},
    "done": {"phase": "Succeeded", "containerStatuses": [
        {"name": "a", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "b", "image": "nginx", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]},
}  # fmt: skip


async def test_pods_print_ready_status_restarts_and_wide_columns(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for name, status in _POD_STATUSES.items():
            made = await _quiet(t, "POST", t.core("pods"), _pod(name))
            made["status"] = status
            await _quiet(t, "PUT", t.core("pods", name) + "/status", made)
        await _get(t, t.core("pods"), includeObject="None")
        await _get(t, t.core("pods", "running"), TABLE_BETA, includeObject="None")
        _mask_records(t)

    await conform(scenario)


def _workload(kind: str, name: str) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"},
                                        {"name": "d", "image": "nginx:1"}]}}  # fmt: skip
    selector = {"matchLabels": {"app": name},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["b", "a"]},
                                     {"key": "gone", "operator": "DoesNotExist"}]}  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": 3, "selector": selector, "template": template}}  # fmt: skip


async def test_deployments_and_replicasets_print_their_replicas(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        status = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 1, "availableReplicas": 2}
        for kind, plural in (("Deployment", "deployments"), ("ReplicaSet", "replicasets")):
            path = t.apis("apps/v1", plural)
            await _quiet(t, "POST", path, _workload(kind, "w"))
            patch = {"status": status}
            await _quiet(t, "PATCH", t.apis("apps/v1", plural, "w", sub="status"), patch, MERGE)
            await _get(t, path, includeObject="None")
        _mask_records(t)

    await conform(scenario)


async def test_configmaps_secrets_service_accounts_and_leases_print(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        cm = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"z": "AA=="}}
        await _quiet(t, "POST", t.cm(), cm)
        secrets = [{"metadata": {"name": "s"}, "data": {"k": "dg=="}},
                   {"metadata": {"name": "t"}, "type": "kubernetes.io/basic-auth",
                    "stringData": {"username": "u", "password": "p"}}]  # fmt: skip
        for secret in secrets:
            await _quiet(t, "POST", t.core("secrets"), secret)
        await _quiet(t, "POST", t.core("serviceaccounts"), {"metadata": {"name": "robot"}})
        leases = t.apis("coordination.k8s.io/v1", "leases")
        for name, spec in (("held", {"holderIdentity": "me"}), ("free", {})):
            await _quiet(t, "POST", leases, {"metadata": {"name": name}, "spec": spec})
        for path in (t.cm(), t.core("secrets"), t.core("serviceaccounts"), leases):
            await _get(t, path)
        await _get(t, t.cm("c"), includeObject="Object")
        _mask_records(t)

    await conform(scenario)


async def test_services_print_their_type_addresses_and_ports(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        services = [
            {"metadata": {"name": "a"}, "spec": {"clusterIP": "None", "selector": {"x": "1"},
                                                 "ports": [{"port": 80}]}},
            {"metadata": {"name": "b"}, "spec": {"type": "ExternalName",
                                                 "externalName": "example.com"}},
            {"metadata": {"name": "c"}, "spec": {"clusterIP": "None", "ports": [
                {"name": "p", "port": 53, "protocol": "UDP"},
                {"name": "q", "port": 54}], "externalIPs": ["192.0.2.1"]}},
        ]  # fmt: skip
        for service in services:
            await _quiet(t, "POST", t.core("services"), service)
        await _get(t, t.core("services"), includeObject="None")
        _mask_records(t)

    await conform(scenario)


async def _now(t: Target) -> str:
    """About now on the target's own clock (its namespace's creation)."""
    namespace = await _quiet(t, "GET", f"/api/v1/namespaces/{t.namespace}")
    return str(namespace["metadata"]["creationTimestamp"])


async def test_events_of_both_groups_print_alike(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        now = (await _now(t)).replace("Z", ".000000Z")
        core = {"metadata": {"name": "e1"}, "type": "Warning", "reason": "Boom",
                "message": " it broke \n", "count": 3, "source": {"component": "op", "host": "h"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": t.namespace,
                                   "fieldPath": "spec.containers{a}"}}  # fmt: skip
        await _quiet(t, "POST", t.core("events"), core)
        new = {"metadata": {"name": "e2"}, "type": "Normal", "reason": "Made", "note": "hi",
               "action": "Create", "eventTime": now, "series": {"count": 4,
                                                                "lastObservedTime": now},
               "reportingController": "ctl", "reportingInstance": "ctl-1",
               "regarding": {"kind": "ConfigMap", "name": "c",
                             "namespace": t.namespace}}  # fmt: skip
        await _quiet(t, "POST", t.apis("events.k8s.io/v1", "events"), new)
        # (one resource in two groups: the fake keeps them apart, so each is read in its own)
        await _get(t, t.core("events", "e1"), includeObject="None")
        await _get(t, t.apis("events.k8s.io/v1", "events", "e2"), includeObject="None")
        _mask_records(t)

    await conform(scenario)


async def test_namespaces_crds_and_nodes_print(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        node = f"{t.namespace}-node"
        body = {"metadata": {"name": node, "labels": {"node-role.kubernetes.io/worker": "",
                                                      "kubernetes.io/role": "edge"}},
                "spec": {"unschedulable": True}}  # fmt: skip
        made = await _quiet(t, "POST", "/api/v1/nodes", body)
        made["status"] = {"conditions": [{"type": "Ready", "status": "False"}],
                          "addresses": [{"type": "InternalIP", "address": "10.1.1.1"}],
                          "nodeInfo": {"kubeletVersion": "v1.36.3", "architecture": "amd64",
                                       "kernelVersion": "6.1", "osImage": "", "machineID": "",
                                       "systemUUID": "", "bootID": "", "kubeProxyVersion": "",
                                       "containerRuntimeVersion": "",
                                       "operatingSystem": ""}}  # fmt: skip
        await _quiet(t, "PUT", f"/api/v1/nodes/{node}/status", made)
        try:
            await _get(t, f"/api/v1/nodes/{node}", includeObject="None")
            await _get(t, f"/api/v1/namespaces/{t.namespace}", includeObject="None")
            crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            crd = f"{crds}/widgets.conformance.anyop.dev"
            await _get(t, crd, includeObject="None")
            roles = t.apis("rbac.authorization.k8s.io/v1", "roles")
            await _get(t, roles, labelSelector="none=here")
        finally:
            await t.api.delete(f"/api/v1/nodes/{node}")
        _mask_records(t)

    await conform(scenario)


def _template(name: str, restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": restart, "nodeSelector": {"disk": "ssd"},
                     "containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip


def _more_kinds(t: Target) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(collection path, object, status) of built-in kinds with printers of their own."""
    selector = {"matchLabels": {"app": "x"}}
    job = {"manualSelector": True, "selector": selector, "template": _template("x", "Never"),
           "parallelism": 2}  # fmt: skip
    job_status = {"startTime": "<now>", "succeeded": 1, "active": 1,
                  "conditions": [{"type": "Suspended", "status": "True"}]}  # fmt: skip
    subjects = [
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": t.namespace},
        {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
    ]
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
    hooks = {"name": "a.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"url": "https://example.com/a"}}  # fmt: skip
    return [
        (t.apis("batch/v1", "jobs"), {"metadata": {"name": "j"}, "spec": job}, job_status),
        (t.apis("batch/v1", "cronjobs"), {"metadata": {"name": "cj"}, "spec": {
            "schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "suspend": True,
            "jobTemplate": {"spec": {"template": _template("cj", "Never")}}}},
         {"lastScheduleTime": "<now>"}),
        (t.apis("apps/v1", "statefulsets"), {"metadata": {"name": "ss"}, "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": "ss"}}, "serviceName": "ss",
            "template": _template("ss")}}, {"replicas": 2, "readyReplicas": 1}),
        (t.apis("apps/v1", "daemonsets"), {"metadata": {"name": "ds"}, "spec": {
            "selector": {"matchLabels": {"app": "ds"}}, "template": _template("ds")}},
         {"desiredNumberScheduled": 3, "currentNumberScheduled": 2, "numberReady": 1,
          "numberMisscheduled": 0, "updatedNumberScheduled": 2, "numberAvailable": 1}),
        (t.core("replicationcontrollers"), {"metadata": {"name": "rc"}, "spec": {
            "replicas": 2, "selector": {"app": "rc"}, "template": _template("rc")}},
         {"replicas": 2, "readyReplicas": 1}),
        (t.core("podtemplates"), {"metadata": {"name": "pt"}, "template": _template("pt")}, None),
        (t.apis("rbac.authorization.k8s.io/v1", "rolebindings"),
         {"metadata": {"name": "rb"}, "roleRef": role, "subjects": subjects}, None),
        (t.apis("policy/v1", "poddisruptionbudgets"), {"metadata": {"name": "pdb"}, "spec": {
            "minAvailable": "50%", "selector": selector}}, None),
        (t.apis("networking.k8s.io/v1", "networkpolicies"), {"metadata": {"name": "np"},
            "spec": {"podSelector": {}}}, None),
        ("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
         {"metadata": {"name": f"{t.namespace}-hooks"}, "webhooks": [hooks]}, None),
    ]  # fmt: skip


async def test_more_built_in_kinds_print_their_own_columns(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        now = await _now(t)
        hooks = ""
        try:
            for path, obj, status in _more_kinds(t):
                made = await _quiet(t, "POST", path, obj)
                name = made["metadata"]["name"]
                if status is not None:
                    patch = json.loads(json.dumps({"status": status}).replace("<now>", now))
                    await _quiet(t, "PATCH", f"{path}/{name}/status", patch, MERGE)
                if "webhook" in path:
                    hooks = f"{path}/{name}"
                await _get(t, f"{path}/{name}", includeObject="None")
        finally:
            if hooks:
                await t.api.delete(hooks)
        _mask_records(t)

    await conform(scenario)


def _network_kinds(t: Target) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of network and admission kinds with printers of their own."""
    addresses = [{"ip": f"10.9.0.{n}"} for n in range(1, 5)]
    rules = [{"host": f"h{n}.example.com"} for n in range(4)] + [{}]
    policy = {"validations": [{"expression": "true"}], "failurePolicy": "Fail",
              "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
              "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                  "operations": ["CREATE"], "resources": ["configmaps"]}]}}  # fmt: skip
    # The binding denies ConfigMaps in this scenario's namespace only: a cluster-wide one lingers
    # in kube-apiserver's admission for a moment after its deletion, denying other scenarios'.
    scope = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.namespace}}}
    binding = {"policyName": f"{t.namespace}-policy", "validationActions": ["Deny"],
               "paramRef": {"name": "p", "parameterNotFoundAction": "Deny"},
               "matchResources": scope}  # fmt: skip
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss", "uid": "u",
             "controller": True}  # fmt: skip
    return [
        (t.core("endpoints"), {"metadata": {"name": "ep"}, "subsets": [
            {"addresses": addresses, "ports": [{"name": "a", "port": 80},
                                               {"name": "b", "port": 443}]},
            {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 8080}]}]}),
        (t.core("endpoints"), {"metadata": {"name": "empty"}}),
        (t.apis("discovery.k8s.io/v1", "endpointslices"), {"metadata": {"name": "es"},
            "addressType": "IPv4", "ports": [{"name": "w", "port": 80}, {"name": "x"}, {}],
            "endpoints": [{"addresses": ["10.9.0.1"]}, {"addresses": ["10.9.0.2"]}]}),
        (t.apis("networking.k8s.io/v1", "ingresses"), {"metadata": {"name": "in"}, "spec": {
            "ingressClassName": "nginx", "rules": rules, "tls": [{"hosts": ["h0.example.com"]}],
            "defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
        (t.apis("apps/v1", "controllerrevisions"), {"metadata": {"name": "cr",
            "ownerReferences": [owner]}, "revision": 3, "data": {}}),
        ("/apis/networking.k8s.io/v1/ingressclasses", {"metadata": {
            "name": f"{t.namespace}-class", "annotations": {
                "ingressclass.kubernetes.io/is-default-class": "true"}},
         "spec": {"controller": "example.com/ingress", "parameters": {
             "apiGroup": "example.com", "kind": "Params", "name": "p"}}}),
        # (volumes' defaults are set here: the fake lacks them, see docs/fake-cluster.md)
        (t.core("persistentvolumeclaims"), {"metadata": {"name": "pvc"}, "spec": {
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "storageClassName": "fast",
            "volumeMode": "Filesystem", "volumeName": "v",
            "resources": {"requests": {"storage": "1Gi"}}},
         "status": {"phase": "Bound", "capacity": {"storage": "3Gi"},
                    "accessModes": ["ReadWriteOncePod"]}}),
        ("/api/v1/persistentvolumes", {"metadata": {"name": f"{t.namespace}-pv"}, "spec": {
            "capacity": {"storage": "2Gi"}, "accessModes": ["ReadOnlyMany"],
            "hostPath": {"path": "/tmp"}, "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
            "claimRef": {"namespace": t.namespace, "name": "pvc"}},
         "status": {"phase": "Released", "reason": "gone"}}),
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
         {"metadata": {"name": f"{t.namespace}-policy"}, "spec": policy}),
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
         {"metadata": {"name": f"{t.namespace}-binding"}, "spec": binding}),
    ]  # fmt: skip


async def test_network_and_admission_kinds_print_their_own_columns(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        made: list[str] = []
        try:
            for path, obj in _network_kinds(t):
                name = (await _quiet(t, "POST", path, obj))["metadata"]["name"]
                made.append(f"{path}/{name}")
                if "status" in obj:
                    status = {"status": obj["status"]}
                    await _quiet(t, "PATCH", f"{path}/{name}/status", status, MERGE)
                await _get(t, f"{path}/{name}", includeObject="None")
        finally:
            for path in made:
                if "/namespaces/" not in path:
                    await t.api.delete(path)
        _mask_records(t)

    await conform(scenario)


# -- custom resources ----------------------------------------------------------------------------


def _gauge_crd(group: str) -> dict[str, Any]:
    columns = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        # (a column's description is left out: the fake's catalog prunes it, see the report)
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "format": "float"},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
        {"name": "When", "type": "date", "jsonPath": ".spec.whenTime"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "Obj", "type": "string", "jsonPath": ".spec.obj"},
        {"name": "Keys", "type": "string", "jsonPath": ".spec.items[*].key"},
        {"name": "Ready", "type": "string",
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "AsInt", "type": "integer", "jsonPath": ".spec.color"},
        {"name": "AsText", "type": "string", "jsonPath": ".spec.ratio"},
        {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]  # fmt: skip
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": columns,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"gauges.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "versions": [version],
                     "names": {"kind": "Gauge", "plural": "gauges"}}}  # fmt: skip


async def _served(t: Target, path: str) -> None:
    with anyio.fail_after(60):
        while (await t.api.get(path)).status_code != 200:
            await anyio.sleep(0.1)


_GAUGES = [
    {"metadata": {"name": "a"}, "spec": {
        "size": 3, "color": "red", "ratio": 0.5, "on": True, "whenTime": "<now>",
        "tags": ["x", "y"], "obj": {"k": "v", "n": 1}, "items": [{"key": "p"}, {"key": "q"}]},
     "status": {"conditions": [{"type": "Synced", "status": "False"},
                               {"type": "Ready", "status": "True"}]}},
    {"metadata": {"name": "b"}, "spec": {"size": 3.7, "ratio": 2, "whenTime": "bad", "on": "yes",
                                         "color": 5}},
    {"metadata": {"name": "c"}, "spec": {"ratio": 1234567.5}},
    {"metadata": {"name": "d"}, "spec": {"ratio": 2.0, "size": 4.0, "color": 2.5}},
]  # fmt: skip


async def test_custom_resources_print_their_printer_columns(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        group = f"{t.namespace}.tables.anyop.dev"
        crd = _gauge_crd(group)
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        await _quiet(t, "POST", crds, crd)
        path = f"/apis/{group}/v1/namespaces/{t.namespace}/gauges"
        try:
            await _served(t, path)
            now = await _now(t)
            for gauge in _GAUGES:
                body = {"apiVersion": f"{group}/v1", "kind": "Gauge", **gauge}
                await _quiet(t, "POST", path, json.loads(json.dumps(body).replace("<now>", now)))
            await _get(t, path, includeObject="None")
            await _get(t, f"{path}/a", TABLE_BETA)
            await _get(t, f"{path}/a", includeObject="Object")
        finally:
            await t.api.delete(f"{crds}/gauges.{group}")
        _mask_records(t)

    await conform(scenario)


async def test_custom_resources_without_columns_print_their_age(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _quiet(t, "POST", t.widgets(), WIDGET)
        await _get(t, t.widgets())
        await _get(t, t.widgets(), limit="1")
        await _get(t, t.widgets(), labelSelector="none=here")
        _mask_records(t)

    await conform(scenario)


# -- negotiation ---------------------------------------------------------------------------------

_ACCEPTS = [
    "application/foo",
    "text/*",
    "*/*",
    "application/*;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Foo;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v2;g=meta.k8s.io",
    "application/json;as=Table",
    "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
    "application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/foo,application/json;as=Table;v=v1beta1;g=meta.k8s.io;foo=bar",
    "application/json;stream=watch;as=Table;v=v1;g=meta.k8s.io",
    PARTIAL,
    PARTIAL_LIST,
    "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io",
]


@pytest.mark.parametrize("accept", _ACCEPTS)
async def test_reads_are_negotiated_by_their_accept_header(accept: str, conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _quiet(t, "POST", t.cm(), {"metadata": {"name": "c"}, "data": {"a": "b"}})
        await _quiet(t, "POST", t.widgets(), WIDGET)
        for path in (t.cm(), t.cm("c"), t.widgets(), t.widgets("w")):
            await _get(t, path, accept)
        _mask_records(t)

    await conform(scenario)


async def test_table_options_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _quiet(t, "POST", t.cm(), {"metadata": {"name": "c"}})
        await _get(t, t.cm("c"), includeObject="Everything")
        await _get(t, t.cm("missing"), includeObject="Everything")
        await _get(t, t.cm(), PARTIAL_LIST, includeObject="Everything")
        await _get(t, t.cm("missing"))
        await _get(t, t.widgets("missing"), PARTIAL_LIST)
        _mask_records(t)

    await conform(scenario)


# -- watches -------------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [TABLE, PARTIAL])
async def test_watch_events_carry_tables_with_columns_only_in_the_first(
    accept: str, conform: Conform
) -> None:
    async def scenario(t: Target) -> None:
        await _quiet(t, "POST", t.cm(), {"metadata": {"name": "old"}, "data": {"a": "b"}})

        async def actions() -> None:
            await _quiet(t, "POST", t.cm(), {"metadata": {"name": "new"}})
            await _quiet(t, "DELETE", t.cm("new"))

        params = {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
                  "resourceVersionMatch": "NotOlderThan"}  # fmt: skip
        events = await t.watch(t.cm(), params, actions=actions, headers={"Accept": accept},
                               until=lambda events: len(_first_bookmark(events)) >= 4)  # fmt: skip
        events = _first_bookmark(events)
        t.note("objects", [_masked(event["object"]) for event in events[:4]])
        t.note("headers", [event["object"].get("columnDefinitions") is not None
                           for event in events[:4]])  # fmt: skip
        _mask_records(t)

    await conform(scenario)


def _first_bookmark(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events without the bookmarks after the first (the end of the initial events): the
    API server sends more when it likes."""
    bookmarks = [i for i, event in enumerate(events) if event.get("type") == "BOOKMARK"]
    return [event for i, event in enumerate(events) if i not in bookmarks[1:]]


async def test_a_watch_with_bad_table_options_is_refused(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _get(t, t.cm(), TABLE, watch="true", includeObject="All")
        yaml = {"Accept": "application/yaml"}  # (the real server answers in YAML, the fake JSON)
        await t.get(t.cm(), headers=yaml, params={"watch": "true"}, record=lambda _: "<yaml>")
        await _get(t, t.cm(), "application/yaml;stream=watch", watch="true")

    await conform(scenario)


# -- kubectl get -----------------------------------------------------------------------------------


def _objects(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) of what ``kubectl get`` lists in the kubectl test."""
    core = f"/api/v1/namespaces/{namespace}"
    deployment = _workload("Deployment", "web")
    return [
        (f"{core}/configmaps", {"metadata": {"name": "settings"}, "data": {"a": "1"}}),
        (f"{core}/secrets", {"metadata": {"name": "token"}, "stringData": {"t": "x"}}),
        (f"{core}/serviceaccounts", {"metadata": {"name": "robot"}}),
        (f"{core}/services", {"metadata": {"name": "db"}, "spec": {
            "clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}}),
        (f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment),
        (f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
         {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "pod-1"}}),
        (f"/apis/conformance.anyop.dev/v1/namespaces/{namespace}/widgets", WIDGET),
    ]  # fmt: skip


def _printed(output: str) -> list[list[str]]:
    """``kubectl get``'s lines as cells (split at runs of spaces), ages and times masked."""
    return [[str(_cell(cell)) for cell in re.split(r"\s{2,}", line.strip())]
            for line in output.splitlines() if line.strip()]  # fmt: skip


async def _kubectl_gets(kubectl: str, kubeconfig: str, namespace: str) -> list[list[list[str]]]:
    gets = [
        ["get", "configmaps,secrets,serviceaccounts,services,deployments,leases,widgets"],
        ["get", "deployments", "-o", "wide"],
        ["get", "secrets", "--sort-by=.metadata.name", "--show-labels"],
        ["get", "namespace", namespace],
        ["get", "crd", "widgets.conformance.anyop.dev"],
    ]
    outputs = []
    for args in gets:
        command = [kubectl, f"--kubeconfig={kubeconfig}", "-n", namespace, *args]
        done = await anyio.run_process(command, check=False)
        assert done.returncode == 0, done.stderr.decode()
        outputs.append(_printed(done.stdout.decode().replace(namespace, "<ns>")))
    return outputs


async def _populate(api: httpx.AsyncClient, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    (await api.post("/api/v1/namespaces", json=body)).raise_for_status()
    for path, obj in _objects(namespace):
        (await api.post(path, json=obj)).raise_for_status()


async def test_kubectl_get_prints_the_same_columns_and_rows(
    bare_controlplane: LocalControlPlane, real_api: httpx.AsyncClient, tmp_path: Path
) -> None:
    kubectl = str(bare_controlplane.assets.kubectl)
    namespace = f"conf-{uuid.uuid4().hex[:8]}"
    await _populate(real_api, namespace)
    real = await _kubectl_gets(kubectl, str(bare_controlplane.kubeconfig), namespace)
    fake = FakeCluster(controllers=False)
    for crd in CRDS:
        fake.create(crd)
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        kubeconfig = fake.write_kubeconfig(tmp_path / "kubeconfig")
        async with fake.client() as api:
            await _populate(api, namespace)
        faked = await _kubectl_gets(kubectl, str(kubeconfig), namespace)
        tg.cancel_scope.cancel()
    assert faked == real


async def _kubectl_watch(kubectl: str, kubeconfig: str, api: httpx.AsyncClient, ns: str) -> str:
    """``kubectl get configmaps -w`` while one is changed and deleted: its first four lines."""
    command = [kubectl, f"--kubeconfig={kubeconfig}", "-n", ns, "get", "configmaps", "-w",
               "--output-watch-events"]  # fmt: skip
    path = f"/api/v1/namespaces/{ns}/configmaps/settings"
    output = b""
    async with await anyio.open_process(command) as process:
        assert process.stdout is not None
        try:
            with anyio.move_on_after(30):
                async for chunk in process.stdout:
                    before, output = output.count(b"\n"), output + chunk
                    if before < 2 <= output.count(b"\n"):  # the header and the first ADDED
                        body = {"metadata": {"name": "settings"}}
                        (await api.put(path, json=body)).raise_for_status()
                        (await api.delete(path)).raise_for_status()
                    if output.count(b"\n") >= 4:
                        break
        finally:
            process.terminate()
    return output.decode()


async def test_kubectl_get_watch_prints_the_same_events(
    bare_controlplane: LocalControlPlane, real_api: httpx.AsyncClient, tmp_path: Path
) -> None:
    kubectl = str(bare_controlplane.assets.kubectl)
    namespace = f"conf-{uuid.uuid4().hex[:8]}"
    await _populate(real_api, namespace)
    real = await _kubectl_watch(kubectl, str(bare_controlplane.kubeconfig), real_api, namespace)
    fake = FakeCluster(controllers=False)
    for crd in CRDS:
        fake.create(crd)
    async with anyio.create_task_group() as tg:
        await tg.start(fake.serve)
        kubeconfig = str(fake.write_kubeconfig(tmp_path / "kubeconfig"))
        async with fake.client() as api:
            await _populate(api, namespace)
            faked = await _kubectl_watch(kubectl, kubeconfig, api, namespace)
        tg.cancel_scope.cancel()
    assert len(_printed(real)) == 4, real
    assert _printed(faked) == _printed(real)
