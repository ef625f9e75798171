"""Conformance: the ``Warning`` headers of each kind's own (its strategy's ``WarningsOnCreate``
and ``WarningsOnUpdate``, and ``core/v1`` Endpoints' deprecation), on creates, updates, patches
and applies, with unknown fields' warnings and after a refusal, on a dry run and on an update
that changes nothing.

Each write is recorded as its status and its ``Warning`` header (bodies are not: other
scenarios compare them). Cluster-scoped objects are named for their scenario and deleted at
its end, unrecorded.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import MERGE, Target

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
APPLY = "application/apply-patch+yaml"
STRATEGIC = "application/strategic-merge-patch+json"


async def _write(
    t: Target,
    label: str,
    method: str,
    path: str,
    body: Any,
    *,
    ct: str = "application/json",
    params: dict[str, str] | None = None,
) -> Any:
    """Send a write; note its status and ``Warning`` header (and the refusal's message).

    An update first lists its collection, unrecorded: kube-apiserver's watch cache has then
    caught up, and its update starts from the stored object (a stale one's first attempt,
    retried, would leave its warnings behind)."""
    import json

    if method in ("PUT", "PATCH"):
        await t.api.get(path.rsplit("/", 1)[0])
    answer = await t.api.request(
        method, path, content=json.dumps(body), headers={"Content-Type": ct}, params=params
    )
    document = answer.json()
    message = document.get("message") if document.get("kind") == "Status" else None
    t.note(label, (answer.status_code, answer.headers.get("warning"), message))
    return document


def _container(**extra: Any) -> Body:
    return {"name": "c", "image": "busybox", **extra}


_DEPRECATED_SPEC: Body = {
    "nodeSelector": {"beta.kubernetes.io/arch": "amd64"},
    "terminationGracePeriodSeconds": -5,
    "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}, {"ip": "10.0.0.1", "hostnames": ["b"]}],
    "imagePullSecrets": [{"name": "s"}, {"name": "s"}, {"name": ""}],
    "dnsConfig": {"nameservers": ["2001:DB8::1"]},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "failure-domain.beta.kubernetes.io/zone",
                                       "operator": "In", "values": ["a"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
                "matchExpressions": [{"key": "beta.kubernetes.io/os", "operator": "In",
                                      "values": ["a b"]}]}}],
        },
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname"}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]},
    },
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "beta.kubernetes.io/instance-type",
                                   "whenUnsatisfiable": "DoNotSchedule"}],
    "volumes": [
        {"name": "cm", "configMap": {"name": "x", "items": [
            {"key": "a", "path": "p"}, {"key": "b", "path": "p/q"}]}},
        {"name": "pr", "projected": {"sources": [
            {}, {"secret": {"name": "s", "items": [{"key": "a", "path": "t"}]}},
            {"downwardAPI": {"items": [{"path": "t/",
                                        "fieldRef": {"fieldPath": "metadata.name"}}]}},
        ]}},
        {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0.5"}}}}}},
    ],
    "initContainers": [_container(name="i", ports=[{"containerPort": 80, "name": "web"}])],
    "containers": [
        _container(
            env=[{"name": "A", "value": "1"}, {"name": "A", "value": "$(A)2"},
                 {"name": "A", "value": "3"}],
            resources={"limits": {"memory": "1.5"}, "requests": {"memory": "1.5"}},
            ports=[{"containerPort": 80, "name": "web"}, {"containerPort": 81, "hostIP": "1.2.3.4"},
                   {"containerPort": 80, "hostPort": 8080}],
        ),
    ],
}  # fmt: skip
"""A pod spec with one of nearly each thing ``warningsForPodSpecAndMeta`` warns of."""

_DEPRECATED_META: Body = {
    "annotations": {
        "scheduler.alpha.kubernetes.io/critical-pod": "",
        "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
        "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "runtime/default",
    },
    "labels": {"app": "w"},
}


def _template() -> Body:
    return {"metadata": dict(_DEPRECATED_META), "spec": dict(_DEPRECATED_SPEC)}


async def test_a_pods_spec_and_metadata_are_warned_of_on_create_only(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        meta = {k: v for k, v in _DEPRECATED_META.items() if k != "annotations"}
        annotations = {k: v for k, v in _DEPRECATED_META["annotations"].items()
                       if "apparmor" not in k}  # fmt: skip
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {**meta, "name": "pod.one", "annotations": annotations},
               "spec": _DEPRECATED_SPEC}  # fmt: skip
        await _write(t, "create", "POST", t.core("pods"), pod)
        await _write(t, "again", "POST", t.core("pods"), pod)  # 409, warned all the same
        await _write(t, "dry run", "POST", t.core("pods"), {**pod, "metadata": {
            **pod["metadata"], "name": "pod.two"}}, params={"dryRun": "All"})  # fmt: skip
        patch = {"metadata": {"labels": {"b": "2"}}}
        await _write(t, "patch", "PATCH", t.core("pods", "pod.one"), patch, ct=MERGE)
        bad = {**pod, "spec": {**_DEPRECATED_SPEC, "containers": []}}
        bad = {**bad, "metadata": {**pod["metadata"], "name": "pod-bad"}}
        await _write(t, "invalid", "POST", t.core("pods"), bad)  # refused: no warning

    await conform(scenario)


async def test_pod_templates_and_controllers_warn_of_their_template_when_it_changes(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        template = _template()
        body = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt.one"},
                "template": template}  # fmt: skip
        created = await _write(t, "template", "POST", t.core("podtemplates"), body)
        path = t.core("podtemplates", "pt.one")
        await _write(
            t, "labels only", "PATCH", path, {"metadata": {"labels": {"a": "1"}}}, ct=MERGE
        )
        created["template"]["spec"]["activeDeadlineSeconds"] = 5
        created["metadata"].pop("resourceVersion", None)
        await _write(t, "template changed", "PUT", path, created)
        await _write(t, "no change", "PUT", path, created)
        rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc.one"},
              "spec": {"replicas": 1, "selector": {"app": "w"}, "template": template}}  # fmt: skip
        await _write(t, "rc", "POST", t.core("replicationcontrollers"), rc)
        path = t.core("replicationcontrollers", "rc.one")
        clean = {"metadata": {"labels": {"app": "w"}},
                 "spec": {"containers": [_container()]}}  # fmt: skip
        change = [{"op": "replace", "path": "/spec/template", "value": clean}]
        await _write(t, "rc cleaned", "PATCH", path, change, ct="application/json-patch+json")
        await _write(t, "rc scaled", "PATCH", path, {"spec": {"replicas": 2}}, ct=MERGE)

    await conform(scenario)


async def test_workloads_warn_of_their_name_and_template(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        template = _template()
        selector = {"matchLabels": {"app": "w"}}
        spec = {"replicas": 1, "selector": selector, "template": template}
        for plural, kind in (("deployments", "Deployment"), ("replicasets", "ReplicaSet"),
                             ("daemonsets", "DaemonSet")):  # fmt: skip
            body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w.one"},
                    "spec": {k: v for k, v in spec.items()
                             if kind != "DaemonSet" or k != "replicas"}}  # fmt: skip
            await _write(t, plural, "POST", t.apis("apps/v1", plural), body)
            path = t.apis("apps/v1", plural, "w.one")
            await _write(t, f"{plural} labels", "PATCH", path, {"metadata": {"labels": {"x": "1"}}},
                         ct=STRATEGIC)  # fmt: skip
            change = {"spec": {"template": {"metadata": {"labels": {"y": "1"}}}}}
            await _write(t, f"{plural} template", "PATCH", path, change, ct=STRATEGIC)
            if kind != "DaemonSet":
                await _write(t, f"{plural} scale", "PATCH", path, {"spec": {"replicas": 3}},
                             ct=MERGE)  # fmt: skip
        claims = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1.5"}, "limits": {"storage": "2.5"}},
                },
            }
        ]
        body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s.one"},
                "spec": {**spec, "serviceName": "s", "revisionHistoryLimit": -1,
                         "volumeClaimTemplates": claims}}  # fmt: skip
        await _write(t, "statefulset", "POST", t.apis("apps/v1", "statefulsets"), body)
        path = t.apis("apps/v1", "statefulsets", "s.one")
        await _write(t, "statefulset labels", "PATCH", path, {"metadata": {"labels": {"x": "1"}}},
                     ct=MERGE)  # fmt: skip
        await _write(t, "statefulset scale", "PATCH", path, {"spec": {"replicas": 2}}, ct=MERGE)

    await conform(scenario)


async def test_jobs_and_cron_jobs_warn_of_their_name_and_job_spec(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        template = _template()
        template["spec"] = {**template["spec"], "restartPolicy": "Never"}
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job.one"},
               "spec": {"template": template}}  # fmt: skip
        await _write(t, "job", "POST", t.apis("batch/v1", "jobs"), job)
        big = {**job, "metadata": {"name": "job-big"}, "spec": {
            "template": template, "completionMode": "Indexed", "completions": 100_001,
            "parallelism": 10_001}}  # fmt: skip
        await _write(t, "indexed job", "POST", t.apis("batch/v1", "jobs"), big)
        path = t.apis("batch/v1", "jobs", "job.one")
        await _write(t, "job labels", "PATCH", path, {"metadata": {"labels": {"x": "1"}}}, ct=MERGE)
        await _write(t, "job parallelism", "PATCH", path, {"spec": {"parallelism": 2}}, ct=MERGE)
        cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj.one"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {
                    "template": template}}}}  # fmt: skip
        await _write(t, "cronjob", "POST", t.apis("batch/v1", "cronjobs"), cron)
        path = t.apis("batch/v1", "cronjobs", "cj.one")
        await _write(t, "cronjob suspend", "PATCH", path, {"spec": {"suspend": True}}, ct=MERGE)
        await _write(t, "cronjob labels", "PATCH", path, {"metadata": {"labels": {"x": "1"}}},
                     ct=MERGE)  # fmt: skip
        simple = {"spec": {"restartPolicy": "Never", "containers": [_container()],
                           "nodeSelector": {"beta.kubernetes.io/os": "linux"}}}  # fmt: skip
        applied = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "cj.two"},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": simple}}},
        }
        await _write(t, "cronjob applied", "PATCH", t.apis("batch/v1", "cronjobs", "cj.two"),
                     applied, ct=APPLY, params={"fieldManager": "me"})  # fmt: skip

    await conform(scenario)


async def test_services_secrets_and_service_accounts_warn_of_their_own(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        services = {
            "external": {"ports": [{"port": 80}], "externalIPs": ["2001:DB8::7"],
                         "externalName": "x.example", "trafficDistribution": "PreferClose"},
            "headless": {"clusterIP": "None", "ports": [{"port": 80}],
                         "sessionAffinity": "ClientIP"},
            "name": {"type": "ExternalName", "externalName": "x.example",
                     "externalIPs": ["1.2.3.4"]},
        }  # fmt: skip
        for name, spec in services.items():
            body = {"apiVersion": "v1", "kind": "Service", "metadata": {
                "name": name, "annotations": {
                "service.kubernetes.io/topology-aware-hints": "auto"}}, "spec": spec}  # fmt: skip
            await _write(
                t, name, "POST", t.core("services"), body, params={"fieldValidation": "Warn"}
            )
            await _write(t, f"{name} labels", "PATCH", t.core("services", name),
                         {"metadata": {"labels": {"a": "1"}}, "bogus": 1}, ct=MERGE)  # fmt: skip
        for name, data in {
            "garbage": {"tls.crt": "eA==", "tls.key": "eA=="},
            "switched": {"tls.crt": _PEM_KEY, "tls.key": _PEM_KEY},
        }.items():
            body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                    "type": "kubernetes.io/tls", "data": data}  # fmt: skip
            await _write(t, name, "POST", t.core("secrets"), body)
        annotated = {
            "name": "sa",
            "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"},
        }
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": annotated}
        await _write(t, "account", "POST", t.core("serviceaccounts"), body)
        path = t.core("serviceaccounts", "sa")
        await _write(
            t, "account again", "PATCH", path, {"metadata": {"labels": {"a": "1"}}}, ct=MERGE
        )
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sb"}}
        await _write(t, "plain account", "POST", t.core("serviceaccounts"), body)
        await _write(t, "account annotated", "PATCH", t.core("serviceaccounts", "sb"),
                     {"metadata": annotated | {"name": "sb"}}, ct=MERGE)  # fmt: skip

    await conform(scenario)


_PEM_KEY = (
    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1DNENBUUF3QlFZREsyVndCQ0lFSUNZdm9EODBGYkV2TnhqTFo0"
    "bVlhdE5CUE1CQ1JTOGp3QkkxQ1pqeUdvWUEKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo="
)
"""An Ed25519 private key in PEM, base64 (a Secret's data)."""


async def test_endpoints_are_deprecated_and_their_addresses_warned_of(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
                "subsets": [{"addresses": [{"ip": "2001:DB8::1"}],
                             "notReadyAddresses": [{"ip": "2001:db8:0:0:0:0:0:2"}],
                             "ports": [{"port": 80}]}]}  # fmt: skip
        await _write(
            t, "create", "POST", t.core("endpoints"), body, params={"fieldValidation": "Warn"}
        )
        answer = await t.api.get(t.core("endpoints"))
        t.note("list", (answer.status_code, answer.headers.get("warning")))
        answer = await t.api.get(t.core("endpoints", "missing"))
        t.note("missing", (answer.status_code, answer.headers.get("warning")))
        managed = {
            "metadata": {"labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}}
        }
        await _write(t, "managed", "PATCH", t.core("endpoints", "e"), managed, ct=MERGE)
        slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                  "metadata": {"name": "s"}, "addressType": "IPv6",
                  "endpoints": [{"addresses": ["2001:db8::3"]}]}  # fmt: skip
        await _write(t, "slice", "POST", t.apis("discovery.k8s.io/v1", "endpointslices"), slice_)
        fqdn = {**slice_, "metadata": {"name": "f"}, "addressType": "FQDN",
                "endpoints": [{"addresses": ["a.example"]}]}  # fmt: skip
        await _write(t, "fqdn", "POST", t.apis("discovery.k8s.io/v1", "endpointslices"), fqdn)

    await conform(scenario)


async def test_claims_ingresses_network_policies_and_quotas_warn_of_their_own(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
            "name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1.5"}}}}  # fmt: skip
        await _write(t, "claim", "POST", t.core("persistentvolumeclaims"), claim)
        await _write(t, "claim labels", "PATCH", t.core("persistentvolumeclaims", "c"),
                     {"metadata": {"labels": {"a": "1"}}}, ct=MERGE)  # fmt: skip
        rules = [
            {
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "s", "port": {"number": 80}}},
                        }
                    ]
                }
            }
        ]
        for name, spec in (
            ("i1", {"rules": rules}),
            ("i2", {"rules": rules, "ingressClassName": "x"}),
        ):
            body = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": name, "annotations": {"kubernetes.io/ingress.class": "x"}},
                "spec": spec,
            }
            await _write(t, name, "POST", t.apis("networking.k8s.io/v1", "ingresses"), body)
        ingress = t.apis("networking.k8s.io/v1", "ingresses", "i1")
        await _write(t, "ingress labels", "PATCH", ingress,
                     {"metadata": {"labels": {"a": "1"}}}, ct=MERGE)  # fmt: skip
        policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "p"}, "spec": {"podSelector": {}, "ingress": [{"from": [
                      {"ipBlock": {"cidr": "2001:DB8::/32", "except": ["2001:db8:0:0::/64"]}}]}],
                      "egress": [{"to": [{"ipBlock": {"cidr": "2001:Db8::/48"}}]}]}}  # fmt: skip
        await _write(t, "policy", "POST", t.apis("networking.k8s.io/v1", "networkpolicies"), policy)
        quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                 "spec": {"hard": {"cpu": "2", "limits.cpu": "1", "requests.memory": "2Gi",
                                   "limits.memory": "1Gi", "requests.storage": "1"}}}  # fmt: skip
        await _write(t, "quota", "POST", t.core("resourcequotas"), quota)
        await _write(t, "quota labels", "PATCH", t.core("resourcequotas", "q"),
                     {"metadata": {"labels": {"a": "1"}}}, ct=MERGE)  # fmt: skip

    await conform(scenario)


async def test_cluster_kinds_warn_of_their_own(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = f"anyop-conf-{t.namespace}"
        term = {"matchExpressions": [{"key": "beta.kubernetes.io/os", "operator": "In",
                                      "values": ["linux"]}]}  # fmt: skip
        objects = [
            ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                               "spec": {"externalID": "x", "podCIDRs": ["2001:DB8::/64"]}}),
            ("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume",
             "metadata": {"name": name, "annotations": {
                 "volume.beta.kubernetes.io/mount-options": "ro",
                 "volume.beta.kubernetes.io/storage-class": "x"}},
             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Recycle", "hostPath": {"path": "/tmp/x"},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}),
            ("/apis/storage.k8s.io/v1/storageclasses", {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name}, "provisioner": "x.example.com", "allowedTopologies": [
                    {"matchLabelExpressions": [{"key": "failure-domain.beta.kubernetes.io/zone",
                                                "values": ["a"]}]}]}),
            ("/apis/storage.k8s.io/v1/csidrivers", {
                "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                "spec": {"tokenRequests": [{"audience": "a"}]}}),
            ("/apis/node.k8s.io/v1/runtimeclasses", {
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                "handler": "h", "scheduling": {"nodeSelector": {"beta.kubernetes.io/os": "x"}}}),
            ("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": f"{name}.static.k8s.io"}, "webhooks": []}),
        ]  # fmt: skip
        for path, body in objects:
            kind = body["kind"]
            await _write(t, kind, "POST", path, body)
            named = f"{path}/{body['metadata']['name']}"
            await _write(t, f"{kind} labels", "PATCH", named, {"metadata": {"labels": {"a": "1"}}},
                         ct=MERGE)  # fmt: skip
        csi = "/apis/storage.k8s.io/v1/csidrivers"
        await _write(t, "CSIDriver tokens", "PATCH", f"{csi}/{name}",
                     {"spec": {"tokenRequests": [{"audience": "b"}]}}, ct=MERGE)  # fmt: skip
        capacity = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": "cap"}, "storageClassName": "x",
                    "nodeTopology": {"matchExpressions": [{"key": "beta.kubernetes.io/arch",
                                                           "operator": "Exists"}]}}  # fmt: skip
        await _write(t, "capacity", "POST", t.apis("storage.k8s.io/v1", "csistoragecapacities"),
                     capacity)  # fmt: skip
        for path, body in objects:  # a volume's protection finalizer first
            named = f"{path}/{body['metadata']['name']}"
            unfinalized = b'{"metadata":{"finalizers":null}}'
            await t.api.patch(named, content=unfinalized, headers={"Content-Type": MERGE})
            await t.api.delete(named)

    await conform(scenario)


async def test_a_status_patch_warns_of_the_unknown_fields_of_the_whole_object(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        gizmo = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Gizmo",
                 "metadata": {"name": "g1"}, "spec": {"plain": "x"}}  # fmt: skip
        await _write(t, "gizmo", "POST", t.gizmos(), gizmo)
        status = t.gizmos("g1", sub="status")
        await _write(t, "gizmo status", "PATCH", status, {"status": {"bogus": 1}}, ct=MERGE)
        await _write(t, "gizmo spec", "PATCH", status, {"spec": {"bogus": 1}}, ct=MERGE)
        await _write(t, "gizmo main", "PATCH", t.gizmos("g1"), {"status": {"bogus": 1}}, ct=MERGE)
        pod = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [_container()]}}
        spec = {"selector": {"matchLabels": {"a": "b"}}, "template": pod}
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                      "spec": spec}  # fmt: skip
        await _write(t, "deployment", "POST", t.apis("apps/v1", "deployments"), deployment)
        path = t.apis("apps/v1", "deployments", "d")
        await _write(t, "deployment main", "PATCH", path, {"status": {"bogus": 1}}, ct=MERGE)
        for body in ({"status": {"bogus": 1}}, {"spec": {"bogus": 1}}):
            await _write(t, "deployment status", "PATCH", f"{path}/status", body, ct=MERGE)

    await conform(scenario)
