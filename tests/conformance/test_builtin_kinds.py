"""Conformance: built-in kinds as Kubernetes defines them: decoding, validation, defaults,
transformations, the kinds served, and routing by scope."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, STRATEGIC, Target, status_shown, without_ips

pytestmark = pytest.mark.anyio

COORDINATION = "coordination.k8s.io/v1"


def _cm(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def _lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": COORDINATION, "kind": "Lease", "metadata": {"name": name}, "spec": spec}


def _secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def _pod_spec(*containers: tuple[str, str]) -> dict[str, Any]:
    return {"containers": [{"name": name, "image": image} for name, image in containers]}


# -- class 4: decoding and validation of built-in kinds -------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [{"data": {"x": 1}}, {"data": ["x"]}, {"data": {"x": True}}, {"binaryData": {"x": "!!"}}],
    ids=["number", "list", "bool", "bad-base64"],
)
async def test_a_configmap_whose_data_is_not_strings_is_400(
    conform: Conform, fields: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", **fields))

    await conform(scenario)


async def test_a_configmap_key_must_be_a_valid_config_key(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", data={"bad key": "x"}))

    await conform(scenario)


@pytest.mark.parametrize(
    "spec",
    [
        {"renewTime": "2024-01-01T00:00:00Z"},
        {"acquireTime": "yesterday"},
        {"renewTime": "2024-13-01T00:00:00.000000Z"},
        {"leaseDurationSeconds": "15"},
        {"leaseDurationSeconds": 1.5},
        {"holderIdentity": 7},
    ],
    ids=["no-microseconds", "not-a-time", "month-13", "string-number", "fraction", "number-name"],
)
async def test_a_lease_with_a_field_of_the_wrong_type_or_format_is_400(
    conform: Conform, spec: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(COORDINATION, "leases"), _lease("l", **spec))

    await conform(scenario)


async def test_a_lease_with_microsecond_times_is_stored_as_sent(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        lease = _lease(
            "l",
            holderIdentity="me",
            leaseDurationSeconds=15,
            leaseTransitions=0,
            acquireTime="2024-01-01T00:00:00.000000Z",
            renewTime="2024-01-01T00:00:01.123456Z",
        )
        made = await t.post(t.apis(COORDINATION, "leases"), lease)
        t.note("times", made["spec"].get("renewTime"))

    await conform(scenario)


@pytest.mark.parametrize(
    "spec", [{"leaseDurationSeconds": 0}, {"leaseTransitions": -1}], ids=["duration", "transitions"]
)
async def test_a_lease_with_out_of_range_numbers_is_422(
    conform: Conform, spec: dict[str, Any]
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.apis(COORDINATION, "leases"), _lease("l", **spec))

    await conform(scenario)


async def test_an_immutable_configmap_refuses_changes_to_its_data(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a", data={"x": "1"}, immutable=True))
        await t.patch(t.cm("a"), {"data": {"x": "2"}})
        await t.patch(t.cm("a"), {"immutable": False})
        await t.patch(t.cm("a"), {"metadata": {"labels": {"ok": "yes"}}})

    await conform(scenario)


async def test_an_immutable_secret_refuses_changes_to_its_data(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("secrets"), _secret("s", data={"x": "MQ=="}, immutable=True))
        await t.patch(t.core("secrets", "s"), {"data": {"x": "Mg=="}})

    await conform(scenario)


async def test_an_immutable_object_without_data_refuses_data_sent_empty(
    conform: Conform,
) -> None:
    """An immutable ConfigMap or Secret stored without data (an empty map is not stored) is
    changed by a write that sends an empty map: Go compares the maps, not their contents."""

    async def scenario(t: Target) -> None:
        for path, body in ((t.cm(), _cm("a", data={}, immutable=True)),
                           (t.core("secrets"), _secret("s", data={}, immutable=True))):  # fmt: skip
            stored = await t.post(path, body)
            name = stored["metadata"]["name"]
            await t.put(f"{path}/{name}", {**stored, "data": {}, "binaryData": {}})
            await t.patch(f"{path}/{name}", {"data": {}})
            await t.patch(f"{path}/{name}", {"data": None, "metadata": {"labels": {"ok": "y"}}})

    await conform(scenario)


def _converter_error(document: Any) -> Any:
    """A refused patch's errors without the patched object that its message shows (Go's
    ``%v`` of a map, a known difference)."""
    causes = (document.get("details") or {}).get("causes") or []
    return [cause["message"].rpartition('": ')[2] for cause in causes]


async def test_a_patched_secret_or_configmap_reports_its_metadata_error_first(
    conform: Conform,
) -> None:
    """The unstructured converter meets the embedded metadata before the kind's own fields,
    whatever the table of field orders says of those."""

    async def scenario(t: Target) -> None:
        await t.post(t.core("secrets"), _secret("s", data={"x": "MQ=="}))
        await t.post(t.cm(), _cm("a", data={"x": "1"}))
        for path, data in ((t.core("secrets", "s"), {"a": 1}), (t.cm("a"), {"a": ["b"]})):
            patch = {"data": data, "metadata": {"labels": 1}, "immutable": "yes"}
            await t.patch(path, patch, ct=STRATEGIC, record=_converter_error)

    await conform(scenario)


async def test_a_claims_first_write_after_its_create_is_stored_whatever_it_changes(
    conform: Conform,
) -> None:
    """kube-apiserver writes a PersistentVolumeClaim's first update even if it changes nothing
    (a new ``resourceVersion``), and not the next; a deletion's mark is that write. So it does
    a Job's created without labels of its own or its template's (defaulted as it is read),
    not one with either, nor a CronJob's."""

    def version(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d.get("code")
        kept = ("name", "uid", "resourceVersion")
        return {"kind": d["kind"], "metadata": {k: d["metadata"][k] for k in kept}}

    async def scenario(t: Target) -> None:
        claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        pod = {"containers": [{"name": "app", "image": "busybox"}], "restartPolicy": "Never"}
        job = {"template": {"spec": pod}}
        labelled = {"template": {"metadata": {"labels": {"app": "d"}}, "spec": pod}}
        jobs = t.apis("batch/v1", "jobs")
        kinds = ((t.core("persistentvolumeclaims"), claim, None), (jobs, job, None),
                 (jobs, labelled, None), (jobs, job, {"a": "b"}),
                 (t.apis("batch/v1", "cronjobs"), {"schedule": "@hourly", "jobTemplate": {
                     "spec": job}}, None))  # fmt: skip
        for index, (path, spec, labels) in enumerate(kinds):
            for name, delete in ((f"a{index}", False), (f"b{index}", True)):
                meta = {"name": name, "finalizers": ["example.com/f"], "labels": labels}
                body = {"metadata": meta, "spec": spec}
                await t.post(path, body, record=version)
                if delete:
                    await t.delete(f"{path}/{name}", record=version)
                for _ in range(2):
                    await t.patch(f"{path}/{name}", {"metadata": {"labels": None}}, record=version)
                await t.patch(f"{path}/{name}", {"metadata": {"finalizers": None}})

    await conform(scenario)


async def test_a_pod_update_that_admission_undoes_keeps_its_generation(
    conform: Conform,
) -> None:
    """A Pod's generation counts its spec's changes after admission: a patch that drops the
    tolerations the DefaultTolerationSeconds plugin adds, which it adds again, changes none."""

    def shown(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        kept = ("name", "uid", "resourceVersion", "generation")
        meta = {key: d["metadata"].get(key) for key in kept}
        return {"kind": d["kind"], "metadata": meta, "tolerations": d["spec"].get("tolerations")}

    async def scenario(t: Target) -> None:
        mine = [{"key": "k", "operator": "Equal", "value": "v"}]
        spec = {"containers": [{"name": "app", "image": "nginx"}], "tolerations": mine}
        await t.post(t.core("pods"), {"metadata": {"name": "p"}, "spec": spec}, record=shown)
        await t.patch(t.core("pods", "p"), {"spec": {"tolerations": mine}}, ct=STRATEGIC,
                      record=shown)  # fmt: skip
        await t.patch(t.core("pods", "p"), {"spec": {"tolerations": [*mine, {"key": "x",
                      "operator": "Exists"}]}}, ct=STRATEGIC, record=shown)  # fmt: skip

    await conform(scenario)


async def test_a_secret_type_cannot_change(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core("secrets"), _secret("s", type="x.dev/one"))
        await t.patch(t.core("secrets", "s"), {"type": "x.dev/two"})

    await conform(scenario)


async def test_unknown_fields_of_built_in_kinds_are_dropped(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _cm("a", data={"x": "1"}, bogus={"y": 1})
        body["metadata"]["unknown"] = "z"
        await t.post(t.cm(), body)
        await t.patch(t.cm("a"), {"other": 1, "data": {"y": "2"}})

    await conform(scenario)


async def test_a_pod_spec_change_is_refused_but_its_image_may_change(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": _pod_spec(("main", "busybox:1.36")),
        }
        await t.post(t.core("pods"), body, record=lambda d: d.get("metadata", {}).get("name"))
        image = {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
        await t.patch(
            t.core("pods", "p"),
            image,
            ct=STRATEGIC,
            record=lambda d: d["spec"]["containers"][0]["image"],
        )
        await t.patch(
            t.core("pods", "p"),
            {"spec": {"hostname": "other"}},
            record=lambda d: (
                d.get("reason"),
                d.get("details", {}).get("causes", [{}])[0].get("field"),
            ),
        )

    await conform(scenario)


# -- class 5: the kinds served ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "group_version",
    [
        "apps/v1",
        "events.k8s.io/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "policy/v1",
        "networking.k8s.io/v1",
        "discovery.k8s.io/v1",
        "storage.k8s.io/v1",
        "node.k8s.io/v1",
    ],
)
async def test_a_group_version_operators_use_is_discovered(
    conform: Conform, group_version: str
) -> None:
    async def scenario(t: Target) -> None:
        def shown(d: Any) -> Any:
            return sorted(
                (r["name"], r["namespaced"], r["kind"], sorted(r["verbs"])) for r in d["resources"]
            )

        await t.get(f"/apis/{group_version}", record=shown)

    await conform(scenario)


async def test_a_deployment_is_stored_with_its_defaults(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": _pod_spec(("main", "nginx")),
                },
            },
        }
        await t.post(t.apis("apps/v1", "deployments"), body)
        await t.get(t.apis("apps/v1", "deployments", "d"))

    await conform(scenario)


@pytest.mark.parametrize("plural", ["statefulsets", "daemonsets", "replicasets"])
async def test_other_workloads_are_stored_with_their_defaults(
    conform: Conform, plural: str
) -> None:
    async def scenario(t: Target) -> None:
        kind = {
            "statefulsets": "StatefulSet",
            "daemonsets": "DaemonSet",
            "replicasets": "ReplicaSet",
        }[plural]
        spec: dict[str, Any] = {
            "selector": {"matchLabels": {"app": "w"}},
            "template": {
                "metadata": {"labels": {"app": "w"}},
                "spec": _pod_spec(("main", "nginx:1.27")),
            },
        }
        if plural == "statefulsets":
            spec["serviceName"] = "w"
        body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}
        await t.post(t.apis("apps/v1", plural), body)

    await conform(scenario)


async def test_a_cronjob_is_stored_with_its_defaults(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        template = {"spec": {"restartPolicy": "Never", **_pod_spec(("main", "busybox:1.36"))}}
        body = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}},
        }
        await t.post(t.apis("batch/v1", "cronjobs"), body)

    await conform(scenario)


async def test_an_events_k8s_io_event_is_served(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reason": "Tested",
            "action": "Testing",
            "reportingController": "x.dev/tester",
            "reportingInstance": "tester-1",
            "type": "Normal",
            "note": "hello",
            "regarding": {"kind": "ConfigMap", "name": "a", "apiVersion": "v1"},
        }
        await t.post(t.apis("events.k8s.io/v1", "events"), body)
        body["regarding"]["namespace"] = t.namespace
        await t.post(t.apis("events.k8s.io/v1", "events"), body)
        await t.get(t.apis("events.k8s.io/v1", "events", "e"))

    await conform(scenario)


async def test_rbac_roles_and_bindings_are_served(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        rbac = "rbac.authorization.k8s.io/v1"
        role = {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        }
        binding = {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": t.namespace}],
        }
        await t.post(t.apis(rbac, "roles"), role)
        await t.post(t.apis(rbac, "rolebindings"), binding)

    await conform(scenario)


# -- class 6: the API server's transformations and defaults ----------------------------------------


async def test_a_secrets_string_data_is_merged_into_its_data(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = _secret("s", data={"a": "MQ=="}, stringData={"a": "two", "b": "three"})
        await t.post(t.core("secrets"), body)
        await t.patch(t.core("secrets", "s"), {"stringData": {"c": "four"}})

    await conform(scenario)


async def test_a_service_gets_its_defaults_and_a_cluster_ip(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {
                "selector": {"app": "s"},
                "ports": [{"port": 80}, {"name": "b", "port": 81, "targetPort": "http"}],
            },
        }
        body["spec"]["ports"][0]["name"] = "a"
        made = await t.post(t.core("services"), body, record=without_ips)
        t.note("ip in range", made["spec"]["clusterIP"].startswith("10.0.0."))

    await conform(scenario)


async def test_a_cluster_ip_held_is_refused_but_in_a_dry_run(conform: Conform) -> None:
    """The kubernetes Service's address (held), asked for by a dry run (whose allocator checks
    the range only), by a create, and out of the range by a dry run."""

    async def scenario(t: Target) -> None:
        def service(ip: str) -> dict[str, Any]:
            return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "held"},
                    "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}  # fmt: skip

        await t.post(t.core("services"), service("10.0.0.1"), params={"dryRun": "All"},
                     record=lambda d: d.get("message") or d["spec"]["clusterIP"])  # fmt: skip
        await t.post(t.core("services"), service("10.0.0.1"), record=lambda d: d.get("message"))
        await t.post(t.core("services"), service("10.9.0.1"), params={"dryRun": "All"},
                     record=lambda d: d.get("message"))  # fmt: skip

    await conform(scenario)


async def test_a_service_turned_external_name_keeps_only_the_cluster_ips_it_sends(
    conform: Conform,
) -> None:
    """An update to ExternalName with a cluster IP of its own (``None``) but no list of them
    is not refused for the list: only a create makes a lone cluster IP the list's before its
    checks. Reads show the list (kube-apiserver's default on read), so the next write that
    starts from one is refused for it."""

    def outcome(d: Any) -> Any:
        if d.get("kind") == "Status":
            return status_shown(d)
        shown = {key: d["spec"].get(key) for key in ("type", "clusterIP", "externalName")}
        if shown["clusterIP"] not in (None, "", "None"):
            shown["clusterIP"] = "<allocated>"
        return shown

    async def scenario(t: Target) -> None:
        spec = {"selector": {"app": "s"}, "ports": [{"port": 80}]}
        await t.post(t.core("services"), {"metadata": {"name": "s"}, "spec": spec},
                     record=without_ips)  # fmt: skip
        external = {"type": "ExternalName", "externalName": "example.com", "ports": spec["ports"]}
        for extra in ({"clusterIP": "None"}, {"clusterIP": "None", "clusterIPs": ["None"]}, {}):
            body = {"metadata": {"name": "s"}, "spec": {**external, **extra}}
            await t.put(t.core("services", "s"), body, record=outcome)
            await t.patch(t.core("services", "s"), {"spec": {"ports": [{"port": 81}]}},
                          record=outcome)  # fmt: skip
        created = {"metadata": {"name": "e"}, "spec": {**external, "clusterIP": "None"}}
        await t.post(t.core("services"), created, record=outcome)
        await t.post(t.core("services"), {"metadata": {"name": "c"}, "spec": spec}, record=outcome)
        for change in ({"clusterIP": "10.0.0.250"}, {}):  # one of the two IP fields changed
            turned = {"spec": {"type": "ExternalName", "externalName": "example.com", **change}}
            await t.patch(t.core("services", "c"), turned, ct=STRATEGIC, record=outcome)

    await conform(scenario)


async def test_a_headless_service_keeps_no_cluster_ip(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "h"},
            "spec": {"clusterIP": "None", "selector": {"app": "h"}, "ports": [{"port": 80}]},
        }
        await t.post(t.core("services"), body)

    await conform(scenario)


async def test_a_pod_is_stored_with_its_defaults(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": _pod_spec(("main", "busybox:1.36"), ("side", "busybox")),
        }
        await t.post(t.core("pods"), body)

    await conform(scenario)


# -- class 7: routing by scope ---------------------------------------------------------------------


async def test_a_cluster_scoped_kind_under_a_namespace_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(f"/api/v1/namespaces/{t.namespace}/namespaces/{t.namespace}")
        await t.get(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{t.namespace}/clusterroles")
        await t.get(f"/apis/{GROUP}/v1/namespaces/{t.namespace}/gadgets")

    await conform(scenario)


async def test_a_namespaced_object_on_a_cluster_path_is_404(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.get("/api/v1/configmaps/a")
        await t.get(f"/apis/{GROUP}/v1/widgets/a")

    await conform(scenario)


async def test_writes_to_a_namespaced_kind_on_a_cluster_path_are_refused(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post("/api/v1/configmaps", _cm("a"))
        await t.delete("/api/v1/configmaps")
        body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        await t.post(f"/apis/{GROUP}/v1/widgets", body)

    await conform(scenario)


async def test_lists_of_namespaced_kinds_on_cluster_paths_span_namespaces(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), _cm("a"))
        await t.get(
            "/api/v1/configmaps",
            params={"fieldSelector": f"metadata.namespace={t.namespace}"},
            record=lambda d: [i["metadata"]["name"] for i in d["items"]],
        )

    await conform(scenario)
