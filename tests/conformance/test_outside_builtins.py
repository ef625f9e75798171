"""Conformance, as an outside tester writes it: built-in kinds operators write (their checks,
defaults and immutable fields), strategic merge patches, discovery and the server's bootstrap
objects, field selectors and error shapes."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, STRATEGIC, Target, status_shown, without_ips

pytestmark = pytest.mark.anyio


def shown(document: Any) -> Any:
    if not isinstance(document, dict):
        return document
    if document.get("kind") == "Status":
        return status_shown(document)
    return without_ips(document)


def code(document: Any) -> Any:
    if not isinstance(document, dict):
        return document
    if isinstance(document, dict) and document.get("kind") == "Status":
        return (document.get("code"), document.get("reason"))
    return "ok"


def spec_of(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return without_ips(document).get("spec")


def _deployment(name: str = "d", **pod: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "nginx"}], **pod}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def _template(document: Any) -> Any:
    if document.get("kind") == "Status":
        return status_shown(document)
    return document["spec"]["template"]["spec"]


# -- 3. strategic merge patches ------------------------------------------------------------------


async def test_smp_merges_volumes_mounts_and_env_by_their_keys(conform: Conform) -> None:
    """Volumes by name, volumeMounts by mountPath, env by name with a $patch: delete."""

    async def scenario(t: Target) -> None:
        body = _deployment(
            volumes=[{"name": "v1", "configMap": {"name": "c"}}, {"name": "v2", "emptyDir": {}}]
        )
        body["spec"]["template"]["spec"]["containers"][0] |= {
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "volumeMounts": [{"name": "v2", "mountPath": "/a"}],
        }
        await t.post(t.apis("apps/v1", "deployments"), body, record=code)
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "volumes": [
                            {"name": "v3", "secret": {"secretName": "s"}},
                            {"name": "v1", "$patch": "delete"},
                        ],
                        "containers": [
                            {
                                "name": "c",
                                "env": [
                                    {"name": "X", "$patch": "delete"},
                                    {"name": "Z", "value": "3"},
                                ],
                                "volumeMounts": [{"name": "v3", "mountPath": "/b"}],
                            }
                        ],
                    }
                }
            }
        }
        await t.patch(t.apis("apps/v1", "deployments", "d"), patch, ct=STRATEGIC,
                      record=_template)  # fmt: skip

    await conform(scenario)


async def test_smp_retain_keys_switches_a_volume_source_and_a_strategy(conform: Conform) -> None:
    """``$retainKeys`` as kubectl sends it: a volume from emptyDir to configMap, a Deployment's
    strategy from RollingUpdate to Recreate."""

    async def scenario(t: Target) -> None:
        body = _deployment(volumes=[{"name": "v", "emptyDir": {}}])
        await t.post(t.apis("apps/v1", "deployments"), body, record=code)
        patch = {"spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {"spec": {"volumes": [
                {"name": "v", "configMap": {"name": "c"}, "$retainKeys": ["configMap", "name"]}]}},
        }}  # fmt: skip
        await t.patch(
            t.apis("apps/v1", "deployments", "d"),
            patch,
            ct=STRATEGIC,
            record=lambda d: (
                shown(d)
                if d.get("kind") == "Status"
                else (d["spec"]["strategy"], d["spec"]["template"]["spec"]["volumes"])
            ),
        )

    await conform(scenario)


async def test_smp_replaces_lists_without_a_merge_key_and_merges_those_with_one(
    conform: Conform,
) -> None:
    """Tolerations and args are replaced; imagePullSecrets merge by name, hostAliases by ip;
    ``$patch: replace`` on containers."""

    async def scenario(t: Target) -> None:
        body = _deployment(
            tolerations=[{"key": "a", "operator": "Exists"}],
            imagePullSecrets=[{"name": "p1"}],
            hostAliases=[{"ip": "10.0.0.1", "hostnames": ["a"]}],
        )
        body["spec"]["template"]["spec"]["containers"][0]["args"] = ["x", "y"]
        path = t.apis("apps/v1", "deployments", "d")
        await t.post(t.apis("apps/v1", "deployments"), body, record=code)
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "tolerations": [{"key": "b", "operator": "Exists"}],
                        "imagePullSecrets": [{"name": "p2"}],
                        "hostAliases": [
                            {"ip": "10.0.0.1", "hostnames": ["b"]},
                            {"ip": "10.0.0.2", "hostnames": ["c"]},
                        ],
                        "containers": [{"name": "c", "args": ["z"]}],
                    }
                }
            }
        }
        await t.patch(path, patch, ct=STRATEGIC, record=_template)
        replace = {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "n", "image": "busybox"}, {"$patch": "replace"}]
                    }
                }
            }
        }
        await t.patch(path, replace, ct=STRATEGIC, record=_template)

    await conform(scenario)


async def test_smp_of_service_ports_merges_by_port_number(conform: Conform) -> None:
    """A Service's ports merge by ``port`` (kubectl's known pitfall with TCP and UDP on one
    port number)."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {
                "selector": {"app": "s"},
                "ports": [
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                    {"name": "dns-udp", "port": 53, "protocol": "UDP"},
                ],
            },
        }
        await t.post(t.core("services"), body, record=code)
        patch = {
            "spec": {
                "ports": [
                    {"port": 53, "protocol": "UDP", "targetPort": 5353},
                    {"name": "https", "port": 443},
                ]
            }
        }
        await t.patch(t.core("services", "s"), patch, ct=STRATEGIC,
                      record=lambda d: spec_of(d).get("ports") if d.get("kind") != "Status"
                      else status_shown(d))  # fmt: skip

    await conform(scenario)


async def test_smp_directives_on_maps_and_bad_directives(conform: Conform) -> None:
    """``$patch: delete`` on a map, an unknown ``$patch`` value, ``$setElementOrder`` naming
    an item the list lacks."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {"y": "2"}},
        }
        await t.post(t.cm(), body, record=code)

        def meta(d):
            return (
                shown(d)
                if d.get("kind") == "Status"
                else (
                    d["metadata"].get("labels"),
                    d["metadata"].get("annotations"),
                )
            )

        await t.patch(t.cm("a"), {"metadata": {"annotations": {"$patch": "delete"}}},
                      ct=STRATEGIC, record=meta)  # fmt: skip
        await t.patch(t.cm("a"), {"metadata": {"labels": {"$patch": "bogus"}}},
                      ct=STRATEGIC, record=meta)  # fmt: skip
        await t.post(t.apis("apps/v1", "deployments"), _deployment(), record=code)
        order = {
            "spec": {
                "template": {
                    "spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "missing"}]}
                }
            }
        }
        await t.patch(t.apis("apps/v1", "deployments", "d"), order, ct=STRATEGIC,
                      record=_template)  # fmt: skip

    await conform(scenario)


# -- 4. built-in kinds' checks --------------------------------------------------------------------


async def test_service_ports_are_checked(conform: Conform) -> None:
    """Ports without names when there are several, duplicate ports, a port out of range, a
    target port of 0, a missing protocol value."""

    async def scenario(t: Target) -> None:
        for name, ports in [
            ("unnamed", [{"port": 80}, {"port": 81}]),
            ("dup", [{"name": "a", "port": 80}, {"name": "b", "port": 80}]),
            ("dupname", [{"name": "a", "port": 80}, {"name": "a", "port": 81}]),
            ("range", [{"port": 70000}]),
            ("target", [{"port": 80, "targetPort": 0}]),
            ("proto", [{"port": 80, "protocol": "ICMP"}]),
            ("named", [{"port": 80, "targetPort": "Http_1"}]),
        ]:
            body = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {"ports": ports},
            }
            await t.post(t.core("services"), body, record=shown)

    await conform(scenario)


async def test_a_service_cluster_ip_may_not_change(conform: Conform) -> None:
    """A headless Service given an address, and a ClusterIP Service turned headless."""

    async def scenario(t: Target) -> None:
        for name, ip in (("h", "None"), ("c", "")):
            spec = {"ports": [{"port": 80}], **({"clusterIP": ip} if ip else {})}
            await t.post(t.core("services"), {"apiVersion": "v1", "kind": "Service",
                                              "metadata": {"name": name}, "spec": spec},
                         record=code)  # fmt: skip
        await t.patch(t.core("services", "h"), {"spec": {"clusterIP": "10.0.0.77",
                                                         "clusterIPs": ["10.0.0.77"]}},
                      record=shown)  # fmt: skip
        await t.patch(t.core("services", "c"), {"spec": {"clusterIP": "None",
                                                         "clusterIPs": ["None"]}},
                      record=lambda d: d.get("code"))  # fmt: skip

    await conform(scenario)


def _node_ports(document: Any) -> Any:
    if document.get("kind") == "Status":
        return status_shown(document)
    spec = dict(without_ips(document)["spec"])
    spec["ports"] = [
        {**p, "nodePort": "<n>" if p.get("nodePort") else p.get("nodePort")}
        for p in spec.get("ports", [])
    ]
    if spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = "<n>"
    return spec


async def test_node_port_and_load_balancer_services_are_defaulted(conform: Conform) -> None:
    """NodePort and LoadBalancer Services: node ports allocated, externalTrafficPolicy and
    allocateLoadBalancerNodePorts defaulted; turned back to ClusterIP, node ports dropped."""

    async def scenario(t: Target) -> None:
        for name, kind in (("np", "NodePort"), ("lb", "LoadBalancer")):
            body = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {"type": kind, "selector": {"a": "b"}, "ports": [{"port": 80}]},
            }
            await t.post(t.core("services"), body, record=_node_ports)
        await t.patch(t.core("services", "np"), {"spec": {"type": "ClusterIP"}},
                      record=_node_ports)  # fmt: skip
        local = {"spec": {"externalTrafficPolicy": "Local"}}
        await t.patch(t.core("services", "lb"), local, record=_node_ports)

    await conform(scenario)


async def test_a_service_asking_for_dual_stack_on_a_single_stack_cluster(
    conform: Conform,
) -> None:
    """ipFamilyPolicy RequireDualStack on a single-stack cluster, PreferDualStack, an IPv6
    family."""

    async def scenario(t: Target) -> None:
        for name, extra in [
            ("req", {"ipFamilyPolicy": "RequireDualStack"}),
            ("pref", {"ipFamilyPolicy": "PreferDualStack"}),
            ("six", {"ipFamilies": ["IPv6"]}),
        ]:
            body = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name},
                "spec": {"ports": [{"port": 80}], **extra},
            }
            await t.post(t.core("services"), body, record=spec_of)

    await conform(scenario)


async def test_secret_types_require_their_keys(conform: Conform) -> None:
    """Typed Secrets: TLS needs tls.crt and tls.key, docker config needs valid JSON, basic
    auth and ssh auth their keys; a service-account token needs its annotation."""

    async def scenario(t: Target) -> None:
        cases = [
            ("tls", "kubernetes.io/tls", {"tls.crt": "x"}, {}),
            ("docker", "kubernetes.io/dockerconfigjson", {".dockerconfigjson": "{"}, {}),
            ("dockercfg", "kubernetes.io/dockercfg", {}, {}),
            ("basic", "kubernetes.io/basic-auth", {"other": "x"}, {}),
            ("ssh", "kubernetes.io/ssh-auth", {}, {}),
            ("token", "kubernetes.io/service-account-token", {}, {}),
            (
                "token2",
                "kubernetes.io/service-account-token",
                {},
                {"kubernetes.io/service-account.name": "sa"},
            ),
            ("custom", "example.com/my-type", {"a": "b"}, {}),
            ("bad", "not a type!", {}, {}),
        ]
        for name, kind, string_data, notes in cases:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": kind,
                "metadata": {"name": name, "annotations": notes},
                "stringData": string_data,
            }
            await t.post(t.core("secrets"), body, record=shown)

    await conform(scenario)


async def test_label_and_annotation_syntax_is_checked(conform: Conform) -> None:
    """Label keys and values and annotation keys operators generate: a prefix too long, a name
    too long, a value with a slash, an empty prefix, annotations larger than 256 KiB."""

    async def scenario(t: Target) -> None:
        cases = [
            {"labels": {"a" * 254 + "/x": "v"}},
            {"labels": {"example.com/" + "n" * 64: "v"}},
            {"labels": {"k": "a/b"}},
            {"labels": {"/k": "v"}},
            {"labels": {"k": "-v"}},
            {"labels": {"K.Example.com/x": "v"}},
            {"annotations": {"bad key": "v"}},
            {"annotations": {"a": "x" * (256 * 1024)}},
            {"labels": {"app.kubernetes.io/name": "x" * 63, "k": ""}},
        ]
        for i, metadata in enumerate(cases):
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"c{i}", **metadata},
            }
            await t.post(t.cm(), body, record=code if i == len(cases) - 1 else shown)

    await conform(scenario)


async def test_a_long_generate_name_is_cut_to_fit(conform: Conform) -> None:
    """generateName longer than the name allows is cut to 58 characters before the random
    suffix (names stay within 63 characters)."""

    async def scenario(t: Target) -> None:
        await t.post(
            t.cm(),
            {"metadata": {"generateName": "c" * 70}},
            record=lambda d: (
                shown(d)
                if d.get("kind") == "Status"
                else (len(d["metadata"]["name"]), d["metadata"]["generateName"])
            ),
        )
        await t.post(
            t.core("services"),
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"generateName": "s" * 60},
                "spec": {"ports": [{"port": 80}]},
            },
            record=lambda d: code(d) if d.get("kind") == "Status" else len(d["metadata"]["name"]),
        )

    await conform(scenario)


async def test_a_namespace_keeps_its_name_label(conform: Conform) -> None:
    """The ``kubernetes.io/metadata.name`` label is put back whatever a write sends."""

    async def scenario(t: Target) -> None:
        path = f"/api/v1/namespaces/{t.namespace}"
        labels = lambda d: d["metadata"].get("labels")  # noqa: E731
        await t.patch(
            path,
            {"metadata": {"labels": {"kubernetes.io/metadata.name": "x", "a": "b"}}},
            record=labels,
        )
        await t.patch(path, {"metadata": {"labels": None}}, record=labels)
        await t.patch(path, {"status": {"phase": "Terminating"}}, record=lambda d: d["status"])
        await t.post("/api/v1/namespaces", {"metadata": {"name": "Bad.Name"}}, record=shown)
        await t.post("/api/v1/namespaces", {"metadata": {"name": "a.b"}}, record=shown)

    await conform(scenario)


async def test_a_role_bindings_role_ref_is_immutable(conform: Conform) -> None:
    """A RoleBinding's roleRef may not change; subjects are checked."""

    async def scenario(t: Target) -> None:
        path = t.apis("rbac.authorization.k8s.io/v1", "rolebindings")
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
        }
        await t.post(path, body, record=shown)
        patch = {
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            }
        }
        await t.patch(f"{path}/b", patch, record=shown)
        bad = {
            **body,
            "metadata": {"name": "c"},
            "subjects": [
                {"kind": "User", "name": ""},
                {"kind": "Robot", "name": "x"},
                {"kind": "Group", "name": "g", "apiGroup": "wrong"},
            ],
            "roleRef": {"apiGroup": "", "kind": "Secret", "name": "r"},
        }
        await t.post(path, bad, record=shown)

    await conform(scenario)


async def test_an_admin_may_create_roles_granting_anything(conform: Conform) -> None:
    """RBAC escalation checks do not stop the cluster admin: a Role with wildcards and a
    ClusterRole with non-resource URLs, and an aggregated ClusterRole."""

    async def scenario(t: Target) -> None:
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "all"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        }
        await t.post(t.apis("rbac.authorization.k8s.io/v1", "roles"), role, record=shown)
        cluster = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{t.namespace}-agg"},
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {f"{t.namespace}/agg": "true"}}]
            },
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }
        path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
        await t.post(path, cluster, record=shown)
        await t.delete(f"{path}/{t.namespace}-agg", record=code)
        role["rules"] = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
        role["metadata"]["name"] = "nonres"
        await t.post(t.apis("rbac.authorization.k8s.io/v1", "roles"), role, record=shown)

    await conform(scenario)


def _event(t: Target, name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": t.namespace},
            "reason": "Made", "message": "hello", "type": "Normal", **extra}  # fmt: skip


async def test_core_events_are_checked_and_read_in_both_groups(conform: Conform) -> None:
    """A core Event of another namespace's object, of a bad type; one read back through
    events.k8s.io/v1 (regarding, note, deprecated fields)."""

    async def scenario(t: Target) -> None:
        await t.post(
            t.core("events"),
            _event(
                t,
                "e1",
                source={"component": "op"},
                count=2,
                firstTimestamp="2024-01-01T00:00:00Z",
                lastTimestamp="2024-01-01T00:00:01Z",
            ),
            record=lambda d: {k: v for k, v in d.items() if k != "metadata"},
        )
        other = _event(t, "e2")
        other["involvedObject"]["namespace"] = "other"
        await t.post(t.core("events"), other, record=shown)
        await t.post(t.core("events"), _event(t, "e3", type="Bogus"), record=shown)
        await t.get(
            t.apis("events.k8s.io/v1", "events", "e1"),
            record=lambda d: {k: v for k, v in d.items() if k != "metadata"},
        )

    await conform(scenario)


async def test_events_k8s_io_events_need_their_reporting_fields(conform: Conform) -> None:
    """An events.k8s.io/v1 Event without eventTime, reportingController, action; and one read
    back through the core API."""

    async def scenario(t: Target) -> None:
        path = t.apis("events.k8s.io/v1", "events")
        base = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "reason": "Made",
            "regarding": {"kind": "ConfigMap", "name": "a", "namespace": t.namespace},
            "note": "hello",
            "type": "Normal",
        }
        await t.post(path, {**base, "metadata": {"name": "bare"}}, record=shown)
        good = {
            **base,
            "metadata": {"name": "good"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/op",
            "reportingInstance": "op-1",
            "action": "Create",
        }
        await t.post(path, good, record=code)
        await t.get(
            t.core("events", "good"),
            record=lambda d: {k: v for k, v in d.items() if k != "metadata"},
        )

    await conform(scenario)


async def test_a_persistent_volume_claims_spec_is_immutable_but_its_requests(
    conform: Conform,
) -> None:
    """A PVC is defaulted (volumeMode), its spec immutable except resources.requests (growing
    only with a class that allows expansion) and the volume name."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        await t.post(t.core("persistentvolumeclaims"), body, record=spec_of)
        await t.patch(
            t.core("persistentvolumeclaims", "c"),
            {"spec": {"accessModes": ["ReadWriteMany"]}},
            record=shown,
        )
        await t.patch(
            t.core("persistentvolumeclaims", "c"),
            {"spec": {"resources": {"requests": {"storage": "2Gi"}}}},
            record=shown,
        )
        await t.post(
            t.core("persistentvolumeclaims"),
            {**body, "metadata": {"name": "e"}, "spec": {}},
            record=shown,
        )

    await conform(scenario)


async def test_a_jobs_template_and_completions_are_immutable(conform: Conform) -> None:
    """A Job: selector and labels generated, template immutable, suspend may change,
    parallelism may change, completions may not."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {
                "completions": 2,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                },
            },
        }
        path = t.apis("batch/v1", "jobs")
        await t.post(
            path,
            body,
            record=lambda d: (
                {"uid": d["metadata"]["uid"]},
                d["spec"]["selector"],
                d["spec"]["template"]["metadata"],
            ),
        )
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "alpine"}]}}}}
        await t.patch(f"{path}/j", patch, ct=STRATEGIC, record=shown)
        await t.patch(
            f"{path}/j",
            {"spec": {"suspend": True, "parallelism": 3}},
            record=lambda d: (
                code(d)
                if d.get("kind") == "Status"
                else (d["spec"]["suspend"], d["spec"]["parallelism"])
            ),
        )
        await t.patch(f"{path}/j", {"spec": {"completions": 5}}, record=shown)

    await conform(scenario)


async def test_workload_selectors_and_stateful_set_fields_are_immutable(conform: Conform) -> None:
    """A Deployment's selector, a StatefulSet's serviceName and volumeClaimTemplates."""

    async def scenario(t: Target) -> None:
        await t.post(t.apis("apps/v1", "deployments"), _deployment(), record=code)
        patch = {
            "spec": {
                "selector": {"matchLabels": {"app": "d", "x": "y"}},
                "template": {"metadata": {"labels": {"app": "d", "x": "y"}}},
            }
        }
        await t.patch(t.apis("apps/v1", "deployments", "d"), patch, record=shown)
        sts = _deployment("s")
        sts["kind"] = "StatefulSet"
        sts["spec"]["serviceName"] = "s"
        await t.post(t.apis("apps/v1", "statefulsets"), sts, record=code)
        await t.patch(
            t.apis("apps/v1", "statefulsets", "s"),
            {"spec": {"serviceName": "other", "replicas": 3}},
            record=shown,
        )
        await t.patch(
            t.apis("apps/v1", "statefulsets", "s"),
            {"spec": {"replicas": 2, "minReadySeconds": 5}},
            record=lambda d: (
                code(d)
                if d.get("kind") == "Status"
                else (d["spec"]["replicas"], d["metadata"]["generation"])
            ),
        )

    await conform(scenario)


async def test_a_cron_jobs_schedule_and_time_zone_are_checked(conform: Conform) -> None:
    """CronJob schedules: a macro, a bad expression, TZ in the schedule, a bad time zone."""

    async def scenario(t: Target) -> None:
        job = {
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        }
        for name, extra in [
            ("macro", {"schedule": "@hourly"}),
            ("bad", {"schedule": "61 * * * *"}),
            ("tz", {"schedule": "TZ=UTC 0 * * * *"}),
            ("zone", {"schedule": "0 * * * *", "timeZone": "Mars/Olympus"}),
            ("okzone", {"schedule": "0 * * * *", "timeZone": "Europe/Paris"}),
        ]:
            body = {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": name},
                "spec": {"jobTemplate": {"spec": job}, **extra},
            }
            await t.post(
                t.apis("batch/v1", "cronjobs"),
                body,
                record=code if name in ("macro", "okzone") else shown,
            )

    await conform(scenario)


async def test_an_ingress_is_checked_and_defaulted(conform: Conform) -> None:
    """Ingress rules: pathType required, a backend with neither port name nor number, a
    wildcard host, and a valid one stored as sent."""

    async def scenario(t: Target) -> None:
        path = t.apis("networking.k8s.io/v1", "ingresses")
        backend = {"service": {"name": "s", "port": {"number": 80}}}
        for name, rule in [
            (
                "nopathtype",
                {"host": "a.example.com", "http": {"paths": [{"path": "/", "backend": backend}]}},
            ),
            (
                "noport",
                {
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "s"}},
                            }
                        ]
                    }
                },
            ),
            (
                "badpath",
                {"http": {"paths": [{"path": "rel", "pathType": "Exact", "backend": backend}]}},
            ),
            (
                "ok",
                {
                    "host": "*.example.com",
                    "http": {
                        "paths": [
                            {"path": "/", "pathType": "ImplementationSpecific", "backend": backend}
                        ]
                    },
                },
            ),
        ]:
            body = {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": name},
                "spec": {"rules": [rule]},
            }
            await t.post(path, body, record=spec_of)

    await conform(scenario)


async def test_a_validating_admission_policy_and_binding(conform: Conform) -> None:
    """A ValidatingAdmissionPolicy (defaults; a CEL expression that does not compile) and its
    binding."""

    async def scenario(t: Target) -> None:
        base = "/apis/admissionregistration.k8s.io/v1"
        name = f"{t.namespace}-p"
        policy = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["deployments"],
                        }
                    ]
                },
                "validations": [{"expression": "object.spec.replicas <= 5"}],
            },
        }
        try:
            await t.post(f"{base}/validatingadmissionpolicies", policy, record=spec_of)
            bad = {
                **policy,
                "metadata": {"name": f"{name}-bad"},
                "spec": {
                    **policy["spec"],
                    "validations": [{"expression": "object.spec.replicas <="}],
                },
            }
            await t.post(f"{base}/validatingadmissionpolicies", bad, record=shown)
            binding = {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {"policyName": name, "validationActions": ["Deny"]},
            }
            await t.post(f"{base}/validatingadmissionpolicybindings", binding, record=spec_of)
            nobind = {**binding, "metadata": {"name": f"{name}-x"}, "spec": {"policyName": name}}
            await t.post(f"{base}/validatingadmissionpolicybindings", nobind, record=shown)
        finally:
            await t.api.delete(f"{base}/validatingadmissionpolicybindings/{name}")
            await t.api.delete(f"{base}/validatingadmissionpolicies/{name}")

    await conform(scenario)


async def test_a_certificate_signing_request_is_checked(conform: Conform) -> None:
    """A CSR whose request is not a PEM certificate request, and one without signerName."""

    async def scenario(t: Target) -> None:
        path = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
        request = base64.b64encode(b"not a pem").decode()
        body = {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": f"{t.namespace}-csr"},
            "spec": {
                "request": request,
                "signerName": "example.com/signer",
                "usages": ["client auth"],
            },
        }
        await t.post(path, body, record=shown)
        await t.post(path, {**body, "spec": {"request": request}}, record=shown)

    await conform(scenario)


async def test_a_pod_may_gain_tolerations_but_not_lose_them(conform: Conform) -> None:
    """Pod updates: a toleration added is accepted, one removed is refused, labels may change,
    activeDeadlineSeconds may be set."""

    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "tolerations": [{"key": "a", "operator": "Exists"}],
            },
        }
        await t.post(t.core("pods"), body, record=code)
        added = {
            "spec": {
                "tolerations": [
                    {"key": "a", "operator": "Exists"},
                    {"key": "b", "operator": "Exists", "effect": "NoSchedule"},
                ]
            }
        }

        def tol(d):
            return shown(d) if d.get("kind") == "Status" else d["spec"]["tolerations"]

        await t.patch(t.core("pods", "p"), added, record=tol)
        await t.patch(t.core("pods", "p"), {"spec": {"tolerations": []}}, record=code)
        await t.patch(
            t.core("pods", "p"),
            {"spec": {"activeDeadlineSeconds": 30}, "metadata": {"labels": {"x": "y"}}},
            record=lambda d: (
                code(d)
                if d.get("kind") == "Status"
                else (d["spec"].get("activeDeadlineSeconds"), d["metadata"].get("labels"))
            ),
        )
        await t.patch(t.core("pods", "p"), {"spec": {"activeDeadlineSeconds": 60}}, record=code)

    await conform(scenario)


# -- 6. defaults -----------------------------------------------------------------------------------


async def test_a_pods_probes_and_resources_are_defaulted(conform: Conform) -> None:
    """Probe defaults (timeouts, thresholds), requests copied from limits, init container and
    ephemeral-volume defaults, a security context's defaults."""

    async def scenario(t: Target) -> None:
        probe = {"httpGet": {"path": "/healthz", "port": 8080}}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [{"name": "i", "image": "busybox"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx:1.27",
                        "livenessProbe": probe,
                        "readinessProbe": {"tcpSocket": {"port": 80}},
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                    }
                ],
                "volumes": [
                    {"name": "v", "configMap": {"name": "c"}},
                    {"name": "s", "secret": {"secretName": "s"}},
                    {
                        "name": "d",
                        "downwardAPI": {
                            "items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]
                        },
                    },
                ],
            },
        }
        await t.post(t.core("pods"), body, record=lambda d: (d["spec"], d["status"]))

    await conform(scenario)


async def test_more_kinds_are_stored_with_their_defaults(conform: Conform) -> None:
    """Defaults of a ReplicaSet, a NetworkPolicy, a PodDisruptionBudget, a ServiceAccount, a
    ControllerRevision and a ResourceQuota."""

    async def scenario(t: Target) -> None:
        template = {
            "metadata": {"labels": {"app": "r"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        bodies = [
            (
                "apps/v1",
                "replicasets",
                {
                    "kind": "ReplicaSet",
                    "spec": {"selector": {"matchLabels": {"app": "r"}}, "template": template},
                },
            ),
            (
                "networking.k8s.io/v1",
                "networkpolicies",
                {
                    "kind": "NetworkPolicy",
                    "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]},
                },
            ),
            (
                "policy/v1",
                "poddisruptionbudgets",
                {
                    "kind": "PodDisruptionBudget",
                    "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "r"}}},
                },
            ),
            (
                "apps/v1",
                "controllerrevisions",
                {"kind": "ControllerRevision", "revision": 1, "data": {"spec": {"x": 1}}},
            ),
            (
                "v1",
                "resourcequotas",
                {
                    "kind": "ResourceQuota",
                    "spec": {"hard": {"pods": "10", "requests.cpu": "1000m"}},
                },
            ),
        ]
        for group_version, plural, body in bodies:
            path = t.core(plural) if group_version == "v1" else t.apis(group_version, plural)
            body = {"apiVersion": group_version, "metadata": {"name": "r"}, **body}
            await t.post(
                path, body, record=lambda d: {k: v for k, v in d.items() if k != "metadata"}
            )

    await conform(scenario)


async def test_a_stateful_sets_claim_templates_are_defaulted(conform: Conform) -> None:
    """volumeClaimTemplates get their own defaults (volumeMode, status phase) and the retention
    policy's."""

    async def scenario(t: Target) -> None:
        sts = _deployment("s")
        sts["kind"] = "StatefulSet"
        sts["spec"]["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
        await t.post(t.apis("apps/v1", "statefulsets"), sts, record=spec_of)

    await conform(scenario)


# -- 5. discovery and bootstrap objects --------------------------------------------------------


async def test_every_discovered_group_version_lists_the_same_resources(conform: Conform) -> None:
    """Discovery walked as a client does: /api, /apis, then each group version's resources
    with their verbs, short names, categories and kinds."""

    async def scenario(t: Target) -> None:
        groups = await t.get(
            "/apis",
            record=lambda d: sorted(
                (
                    g["name"],
                    g["preferredVersion"]["groupVersion"],
                    [v["version"] for v in g["versions"]],
                )
                for g in d["groups"]
                if not g["name"].endswith(GROUP) and "anyop.dev" not in g["name"]
            ),
        )
        versions = ["v1"] + [
            v["groupVersion"]
            for g in groups["groups"]
            for v in g["versions"]
            if "anyop.dev" not in g["name"]
        ]
        for group_version in versions:
            path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            await t.get(
                path,
                record=lambda d: sorted(
                    (
                        r["name"],
                        r.get("kind"),
                        sorted(r.get("verbs", [])),
                        r.get("shortNames"),
                        r.get("categories"),
                        r.get("namespaced"),
                        r.get("group"),
                        r.get("version"),
                    )
                    for r in d.get("resources", [])
                ),
            )

    await conform(scenario)


UNSERVED = {"apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io",
            "bindings", "componentstatuses"}  # fmt: skip
"""The groups and core resources that the fake does not serve (the difference that
:func:`test_every_discovered_group_version_lists_the_same_resources` expects)."""


async def test_aggregated_discovery_as_kubectl_asks_for_it(conform: Conform) -> None:
    """``/apis`` and ``/api`` with the aggregated discovery media type (client-go and kubectl
    ask for it first), its ETag honoured; a version of it that is not served is refused. What
    the fake does not serve at all is left out here: the scenario above expects it."""

    async def scenario(t: Target) -> None:
        accept = (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
            "application/json;q=0.9"
        )

        def groups(document: Any) -> Any:
            if not isinstance(document, dict) or "items" not in document:
                return document
            return {
                "kind": document.get("kind"),
                "apiVersion": document.get("apiVersion"),
                "items": sorted(
                    (
                        g["metadata"].get("name", ""),
                        [
                            (
                                v["version"],
                                sorted(
                                    (
                                        r["resource"],
                                        r.get("scope"),
                                        r.get("responseKind", {}).get("kind"),
                                        sorted(r.get("verbs", [])),
                                        r.get("shortNames"),
                                        r.get("categories"),
                                        sorted(
                                            s["subresource"] for s in r.get("subresources") or []
                                        ),
                                    )
                                    for r in v.get("resources", [])
                                    if r["resource"] not in UNSERVED
                                ),
                                v.get("freshness"),
                            )
                            for v in g.get("versions", [])
                        ],
                    )
                    for g in document["items"]
                    if "anyop.dev" not in g["metadata"].get("name", "")
                    and g["metadata"].get("name", "") not in UNSERVED
                ),
            }

        for path in ("/api", "/apis"):
            await t.get(path, headers={"Accept": accept}, record=groups)
        answer = await t.api.get("/api", headers={"Accept": accept})  # (no CRD changes it)
        etag, head = answer.headers.get("etag", ""), answer.headers
        t.note("headers", [head.get("content-type"), head.get("vary"), head.get("cache-control"),
                           len(etag), etag.strip('"').isalnum()])  # fmt: skip
        cached = await t.api.get("/api", headers={"Accept": accept, "If-None-Match": etag})
        t.note("cached", [cached.status_code, cached.text])
        beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        await t.get("/apis", headers={"Accept": beta})

    await conform(scenario)


def _port_shown(port: Any) -> Any:
    """The API server's own port (each server its own) as whether it is one."""
    return isinstance(port, int) and 1 <= port <= 65535


def _kubernetes_service(d: Any) -> Any:
    if d.get("kind") == "Status":
        return shown(d)
    spec = without_ips(d)["spec"]
    ports = [{**port, "targetPort": _port_shown(port.get("targetPort"))} for port in spec["ports"]]
    owners = [
        (m.get("manager"), m.get("operation")) for m in d["metadata"].get("managedFields") or ()
    ]
    return d["metadata"].get("labels"), {**spec, "ports": ports}, owners


def _endpoint_ports(d: Any) -> Any:
    if d.get("kind") == "Status":
        return shown(d)
    if d.get("kind") == "Endpoints":
        subsets = [{**subset, "ports": [{**port, "port": _port_shown(port.get("port"))}
                                        for port in subset.get("ports") or ()]}
                   for subset in d.get("subsets") or ()]  # fmt: skip
        return d["metadata"].get("labels"), subsets
    ports = [{**port, "port": _port_shown(port.get("port"))} for port in d.get("ports") or ()]
    return d["metadata"].get("labels"), d.get("addressType"), d.get("endpoints"), ports


async def test_the_bootstrap_objects_operators_expect_exist(conform: Conform) -> None:
    """What a fresh API server makes for itself: the system namespaces, the kubernetes Service
    (its Endpoints, EndpointSlice, ServiceCIDR and IPAddress), the default RBAC roles and
    bindings (and their aggregation rules), priority classes. (Flow control's are not here: the
    fake does not serve that group, as the discovery scenario above expects.)"""

    async def scenario(t: Target) -> None:
        def names(d):
            return (
                sorted(i["metadata"]["name"] for i in d["items"]  # (not other scenarios')
                       if not i["metadata"]["name"].startswith(("conf-", "kubectl-")))
                if isinstance(d, dict) and "items" in d
                else shown(d)
            )  # fmt: skip

        def system_names(d):
            return sorted(
                (i["metadata"]["namespace"], i["metadata"]["name"])
                for i in d["items"]
                if i["metadata"]["namespace"] in ("kube-system", "kube-public", "default")
            )

        await t.get("/api/v1/namespaces", record=names)
        await t.get("/api/v1/namespaces/default/services/kubernetes", record=_kubernetes_service)
        await t.get("/api/v1/namespaces/default/endpoints/kubernetes", record=_endpoint_ports)
        await t.get(
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
            record=_endpoint_ports,
        )
        await t.get(
            "/apis/networking.k8s.io/v1/servicecidrs/kubernetes",
            record=lambda d: shown(d) if d.get("kind") == "Status" else (
                d["spec"], [(c["type"], c["status"], c.get("message"))
                            for c in d["status"]["conditions"]]),
        )  # fmt: skip
        await t.get(
            "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.1",
            record=lambda d: shown(d) if d.get("kind") == "Status" else (
                d["metadata"].get("labels"), d["spec"]),
        )  # fmt: skip
        await t.get(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            record=lambda d: [(i["metadata"]["name"], i["value"], i.get("preemptionPolicy"))
                              for i in d["items"] if not i["metadata"]["name"].startswith("conf-")],
        )  # fmt: skip
        await t.get("/apis/rbac.authorization.k8s.io/v1/clusterroles", record=names)
        for role in ("admin", "edit", "view", "cluster-admin", "system:aggregate-to-view"):
            await t.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}",
                        record=lambda d: shown(d) if d.get("kind") == "Status" else (
                            d.get("aggregationRule"), d["metadata"].get("labels"),
                            d["metadata"].get("annotations"),
                            len(d.get("rules") or []) > 0))  # fmt: skip
        await t.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", record=names)
        await t.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin",
                    record=lambda d: (d.get("roleRef"), d.get("subjects")))  # fmt: skip
        await t.get("/apis/rbac.authorization.k8s.io/v1/roles", record=system_names)
        await t.get("/apis/rbac.authorization.k8s.io/v1/rolebindings", record=system_names)

    await conform(scenario)


# -- 7. routing and field selectors ---------------------------------------------------------------


async def test_pods_are_selected_by_node_phase_and_service_account(conform: Conform) -> None:
    """Pod field selectors controllers use: spec.nodeName (empty and set), status.phase,
    spec.serviceAccountName, spec.restartPolicy, status.podIP, combined and negated."""

    async def scenario(t: Target) -> None:
        spec = {"containers": [{"name": "c", "image": "busybox"}]}
        for name, extra in (
            ("a", {"nodeName": "n1"}),
            ("b", {}),
            ("c", {"restartPolicy": "Never"}),
        ):
            await t.post(
                t.core("pods"),
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name},
                    "spec": {**spec, **extra},
                },
                record=code,
            )
        for selector in (
            "spec.nodeName=n1",
            "spec.nodeName=",
            "spec.nodeName!=",
            "status.phase=Pending,spec.restartPolicy=Never",
            "spec.serviceAccountName=default",
            "status.podIP=",
            "spec.schedulerName=default-scheduler",
            "status.nominatedNodeName=",
            "spec.hostNetwork=false",
            "metadata.name!=a,metadata.name!=b",
        ):
            await t.get(
                t.core("pods"),
                params={"fieldSelector": selector},
                record=lambda d: (
                    shown(d)
                    if d.get("kind") == "Status"
                    else sorted(i["metadata"]["name"] for i in d["items"])
                ),
            )

    await conform(scenario)


async def test_events_are_selected_by_their_involved_object(conform: Conform) -> None:
    """Event field selectors (what ``kubectl describe`` sends): involvedObject.* , reason,
    type, source, and the events.k8s.io names for them."""

    async def scenario(t: Target) -> None:
        await t.post(t.core("events"), _event(t, "e1", source={"component": "op"}), record=code)
        other = _event(t, "e2", reason="Other", type="Warning")
        other["involvedObject"] |= {"kind": "Pod", "name": "p", "uid": "u-1"}
        await t.post(t.core("events"), other, record=code)

        def names(d):
            return (
                shown(d)
                if d.get("kind") == "Status"
                else sorted(i["metadata"]["name"] for i in d["items"])
            )

        for selector in (
            "involvedObject.kind=Pod",
            "involvedObject.name=a",
            f"involvedObject.namespace={t.namespace}",
            "involvedObject.uid=u-1",
            "reason=Other",
            "type=Normal",
            "source=op",
            "involvedObject.fieldPath=",
            "reportingComponent=",
            "involvedObject.apiVersion=",
        ):
            await t.get(t.core("events"), params={"fieldSelector": selector}, record=names)
        for selector in (
            "regarding.kind=Pod",
            "reason=Made",
            "type=Warning",
            "involvedObject.kind=Pod",
            "reportingController=",
        ):
            await t.get(
                t.apis("events.k8s.io/v1", "events"),
                params={"fieldSelector": selector},
                record=names,
            )

    await conform(scenario)


async def test_kind_specific_field_selectors_of_other_kinds(conform: Conform) -> None:
    """Field selectors on namespaces (status.phase), nodes, jobs, replica sets, services,
    certificate signing requests and a custom resource's unsupported field."""

    async def scenario(t: Target) -> None:
        def count(d):
            return (
                shown(d)
                if not isinstance(d, dict) or d.get("kind") == "Status"
                else len(d["items"])
            )

        for path, selector in [
            ("/api/v1/namespaces", "status.phase=Active,metadata.name=" + t.namespace),
            ("/api/v1/nodes", "spec.unschedulable=false"),
            (t.apis("batch/v1", "jobs"), "status.successful=1"),
            (t.apis("apps/v1", "replicasets"), "status.replicas=0"),
            (t.apis("apps/v1", "deployments"), "status.replicas=0"),
            (t.core("services"), "spec.clusterIP=None"),
            (t.core("replicationcontrollers"), "status.replicas=0"),
            ("/apis/certificates.k8s.io/v1/certificatesigningrequests", "spec.signerName=x"),
            (t.widgets(), "spec.size=1"),
            (t.core("persistentvolumeclaims"), "spec.storageClassName=x"),
            ("/api/v1/persistentvolumes", "spec.storageClassName=x"),
        ]:
            await t.get(path, params={"fieldSelector": selector}, record=count)

    await conform(scenario)


async def test_methods_a_subresource_does_not_take(conform: Conform) -> None:
    """POST, DELETE and LIST on subresources; a pod's log of a missing pod; the binding and
    eviction subresources of a pod."""

    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}}, record=code)  # fmt: skip
        await t.delete(t.widgets("w", sub="status"), record=shown)
        await t.post(t.widgets("w", sub="status"), {}, record=shown)
        await t.get(t.core("pods", "missing") + "/log", record=shown)
        await t.post(t.core("pods", "missing") + "/eviction",
                     {"apiVersion": "policy/v1", "kind": "Eviction",
                      "metadata": {"name": "missing"}}, record=shown)  # fmt: skip
        await t.get(t.apis("apps/v1", "deployments", "missing", sub="scale"), record=shown)

    await conform(scenario)


# -- 8. error shapes -----------------------------------------------------------------------------


async def test_a_body_of_another_kind_or_group_on_a_built_in_url_is_400(
    conform: Conform,
) -> None:
    """A Secret posted to configmaps, an apps/v1 ConfigMap, a PUT of another kind, a
    Deployment of apps/v1beta1."""

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}},
                     record=shown)  # fmt: skip
        await t.post(t.cm(), {"apiVersion": "apps/v1", "kind": "ConfigMap",
                              "metadata": {"name": "a"}}, record=shown)  # fmt: skip
        await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "a"}}, record=code)  # fmt: skip
        await t.put(t.cm("a"), {"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": "a"}}, record=shown)  # fmt: skip
        dep = _deployment()
        dep["apiVersion"] = "apps/v1beta1"
        await t.post(t.apis("apps/v1", "deployments"), dep, record=shown)
        dep["apiVersion"] = "extensions/v1beta1"
        await t.post(t.apis("apps/v1", "deployments"), dep, record=shown)

    await conform(scenario)


async def test_a_put_into_another_namespace_is_400(conform: Conform) -> None:
    """A PUT whose body names another namespace, and a create on a cluster kind with a
    namespace in the body."""

    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "a"}}, record=code)  # fmt: skip
        made["metadata"]["namespace"] = "other"
        await t.put(t.cm("a"), made, record=shown)
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "value": 5,
            "metadata": {"name": f"{t.namespace}-pc", "namespace": t.namespace},
        }
        await t.post("/apis/scheduling.k8s.io/v1/priorityclasses", body,
                     record=lambda d: shown(d) if d.get("kind") == "Status" else d[
                         "metadata"].get("namespace"))  # fmt: skip
        await t.api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{t.namespace}-pc")

    await conform(scenario)


async def test_a_deployment_with_many_errors_reports_them_all(conform: Conform) -> None:
    """One invalid Deployment: the 422's causes (type, field, message) for every error."""

    async def scenario(t: Target) -> None:
        body = _deployment("Bad_Name", restartPolicy="Never")
        body["spec"]["replicas"] = -1
        body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
        body["spec"]["template"]["spec"]["containers"] = [
            {"name": "c", "image": ""},
            {"name": "c", "image": "x", "ports": [{"containerPort": 0}]},
        ]
        body["metadata"]["labels"] = {"bad key": "v"}
        await t.post(t.apis("apps/v1", "deployments"), body, record=shown)

    await conform(scenario)


async def test_a_conflict_and_an_already_exists_name_their_kind_and_group(
    conform: Conform,
) -> None:
    """409 bodies of a custom resource and of a cluster-scoped kind: details.group, kind,
    name, and the message text."""

    async def scenario(t: Target) -> None:
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        made = await t.post(t.widgets(), body, record=code)
        await t.post(t.widgets(), body)
        await t.patch(t.widgets("w"), {"spec": {"size": 1}}, record=code)
        await t.put(t.widgets("w"), made)
        await t.post(
            t.gadgets(),
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Gadget",
                "metadata": {"name": f"{t.namespace}-g"},
            },
            record=code,
        )
        await t.post(
            t.gadgets(),
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Gadget",
                "metadata": {"name": f"{t.namespace}-g"},
            },
        )
        await t.post(t.apis("apps/v1", "deployments"), _deployment(), record=code)
        await t.post(t.apis("apps/v1", "deployments"), _deployment())

    await conform(scenario)


async def test_a_list_with_limit_and_resource_version_match(conform: Conform) -> None:
    """Paging as informers do: limit with resourceVersion=0 (ignored), NotOlderThan with a
    limit, an exact resourceVersion with a limit and continue."""

    async def scenario(t: Target) -> None:
        made = None
        for name in ("a", "b", "c"):
            made = await t.post(
                t.cm(),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                record=code,
            )
        rv = made["metadata"]["resourceVersion"]

        def page(d):
            return (
                shown(d)
                if d.get("kind") == "Status"
                else (
                    [i["metadata"]["name"] for i in d["items"]],
                    bool(d["metadata"].get("continue")),
                    d["metadata"].get("remainingItemCount"),
                )
            )

        await t.get(t.cm(), params={"limit": "1", "resourceVersion": "0"}, record=page)
        await t.get(
            t.cm(),
            params={"limit": "1", "resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"},
            record=page,
        )
        first = await t.get(
            t.cm(),
            params={"limit": "2", "resourceVersion": rv, "resourceVersionMatch": "Exact"},
            record=page,
        )
        await t.get(t.cm(), params={"limit": "2", "continue": first["metadata"]["continue"]},
                    record=page)  # fmt: skip
        await t.get(t.cm(), params={"limit": "2", "continue": first["metadata"]["continue"],
                                    "resourceVersion": rv}, record=page)  # fmt: skip

    await conform(scenario)


async def test_a_strict_field_validation_reports_duplicate_and_unknown_fields(
    conform: Conform,
) -> None:
    """A body with a duplicate field and an unknown field: Strict refuses with both, Warn
    warns of both (its Warning headers), on a built-in kind and a custom resource."""

    async def scenario(t: Target) -> None:
        raw = (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},'
            b'"data":{"a":"1"},"data":{"b":"2"},"bogus":1}'
        )
        for mode, name in (("Strict", b"s"), ("Warn", b"w")):
            response = await t.api.post(
                t.cm(),
                content=raw % name,
                params={"fieldValidation": mode},
                headers={"Content-Type": "application/json"},
            )
            t.note(
                mode,
                (
                    response.status_code,
                    sorted(response.headers.get_list("warning")),
                    shown(response.json())
                    if response.status_code >= 400
                    else response.json().get("data"),
                ),
            )
        raw = (
            b'{"apiVersion":"%s/v1","kind":"Widget","metadata":{"name":"w"},'
            b'"spec":{"size":1,"size":2,"bogus":1}}' % GROUP.encode()
        )
        response = await t.api.post(
            t.widgets(),
            content=raw,
            params={"fieldValidation": "Warn"},
            headers={"Content-Type": "application/json"},
        )
        t.note(
            "cr",
            (
                response.status_code,
                sorted(response.headers.get_list("warning")),
                response.json().get("spec"),
            ),
        )

    await conform(scenario)
