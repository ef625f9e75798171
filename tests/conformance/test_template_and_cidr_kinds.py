"""Conformance: the checks of the kinds operators create less often, PodTemplates,
ReplicationControllers, ControllerRevisions, ServiceCIDRs and IPAddresses: a create of each
that is refused (its own fields' errors, in Go's words) or written (dry runs), and updates of
what may not change.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target
from tests.conformance.test_crd_cel_limits import _shown

pytestmark = pytest.mark.anyio

Body = dict[str, Any]
DRY = {"dryRun": "All"}
POD = {"containers": [{"name": "c", "image": "nginx"}]}
NETWORKING = "/apis/networking.k8s.io/v1"


def _template(labels: Body | None = None, **spec: Any) -> Body:
    return {"metadata": {"labels": labels or {"app": "a"}}, "spec": {**POD, **spec}}


TEMPLATES: list[Body] = [
    {},
    {"template": _template()},
    {"template": _template({"bad label": "x"})},
    {"template": {"spec": {"containers": []}}},
]
CONTROLLERS: list[Body] = [
    {},
    {"selector": {"app": "a"}, "template": _template()},
    {"selector": {"app": "b"}, "template": _template()},
    {"template": _template(restartPolicy="Never", activeDeadlineSeconds=5)},
    {"replicas": -1, "minReadySeconds": -2, "template": _template()},
]
REVISIONS: list[Body] = [
    {},
    {"revision": 1, "data": {"spec": {"x": 1}}},
    {"revision": 1, "data": "x"},
    {"revision": 1, "data": [1]},
    {"revision": -1, "data": {}},
]


async def test_pod_templates_controllers_and_revisions_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        core = f"/api/v1/namespaces/{t.namespace}"
        apps = f"/apis/apps/v1/namespaces/{t.namespace}"
        for index, body in enumerate(TEMPLATES):
            template = {"metadata": {"name": f"t{index}"}, **body}
            await t.post(f"{core}/podtemplates", template, params=DRY, record=_shown)
        for index, spec in enumerate(CONTROLLERS):
            controller = {"metadata": {"name": f"c{index}"}, "spec": spec}
            await t.post(f"{core}/replicationcontrollers", controller, params=DRY, record=_shown)
        for index, body in enumerate(REVISIONS):
            revision = {"metadata": {"name": f"r{index}"}, **body}
            await t.post(f"{apps}/controllerrevisions", revision, params=DRY, record=_shown)
        # updates: a template made invalid, a revision's data and number changed
        made = {"metadata": {"name": "kept"}, "template": _template()}
        await t.post(f"{core}/podtemplates", made, record=_shown)
        await t.patch(f"{core}/podtemplates/kept", {"template": {"spec": {"containers": None}}},
                      record=_shown)  # fmt: skip
        kept = {"metadata": {"name": "kept"}, "revision": 1, "data": {"a": 1}}
        await t.post(f"{apps}/controllerrevisions", kept, record=_shown)
        await t.patch(f"{apps}/controllerrevisions/kept", {"data": {"a": 2}, "revision": -3},
                      record=_shown)  # fmt: skip
        # (Not a change of the revision alone: kube-apiserver compares the data's bytes as
        # sent, and this client's JSON has spaces that a patch's result has not.)

    await conform(scenario)


def _ref(**more: Any) -> Body:
    return {"parentRef": {"group": "", "resource": "services", "name": "s", "namespace": "d",
                          **more}}  # fmt: skip


ADDRESSES: list[tuple[str, Body | None]] = [
    ("192.0.2.10", _ref()),
    ("192.0.2.011", _ref()),
    ("2001:DB8::1", _ref()),
    ("x", None),
    ("192.0.2.12", _ref(resource="a/b", name="", group="Bad_Group")),
    ("192.0.2.13", {"parentRef": {"resource": "..", "name": "n", "namespace": "a%b"}}),
]
CIDRS: list[list[str]] = [
    [],
    ["10.0.0.0/8", "fd00::/108", "10.1.0.0/16"],
    ["10.0.0.0/8", "10.1.0.0/16"],
    ["10.0.0.1/8"],
    ["2001:DB8::/64"],
    ["010.0.0.0/8"],
    ["10.96.0.0/16", "fd00::/108"],
]


async def test_service_cidrs_and_ip_addresses_are_checked(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for name, spec in ADDRESSES:
            address = {"metadata": {"name": name}, **({"spec": spec} if spec else {})}
            await t.post(f"{NETWORKING}/ipaddresses", address, params=DRY, record=_shown)
        for index, cidrs in enumerate(CIDRS):
            cidr = {"metadata": {"name": f"{t.namespace}-{index}"}, "spec": {"cidrs": cidrs}}
            await t.post(f"{NETWORKING}/servicecidrs", cidr, params=DRY, record=_shown)
        # updates: an address's parent, a range's CIDRs changed, added, removed
        octet = zlib.crc32(t.namespace.encode()) % 250 + 2
        address = {"metadata": {"name": f"198.51.100.{octet}"}, "spec": _ref()}
        cidr_path = f"{NETWORKING}/servicecidrs/{t.namespace}-u"
        address_path = f"{NETWORKING}/ipaddresses/198.51.100.{octet}"
        try:
            await t.post(f"{NETWORKING}/ipaddresses", address, record=_shown)
            await t.patch(address_path, {"spec": {"parentRef": {"name": "other"}}}, record=_shown)
            cidr = {"metadata": {"name": f"{t.namespace}-u"}, "spec": {"cidrs": ["10.200.0.0/16"]}}
            await t.post(f"{NETWORKING}/servicecidrs", cidr, record=_shown)
            for cidrs in (["10.201.0.0/16"], ["10.200.0.0/16", "10.202.0.0/16"],
                          ["10.200.0.0/16", "fd01::/108"], ["10.200.0.0/16"]):  # fmt: skip
                await t.patch(cidr_path, {"spec": {"cidrs": cidrs}}, record=_shown)
        finally:
            await t.api.delete(address_path)
            await t.api.delete(cidr_path)

    await conform(scenario)


_BAD_META = {"labels": {"app": "a", "bad label": "x", "v": "bad value!"},
             "annotations": {"Bad Key": "x"}}  # fmt: skip


async def test_a_workload_s_template_labels_and_annotations_are_checked(conform: Conform) -> None:
    """A pod template's labels and annotations, in each kind that has one."""

    async def scenario(t: Target) -> None:
        template = {"metadata": _BAD_META, "spec": POD}
        selector = {"matchLabels": {"app": "a"}}
        apps = f"/apis/apps/v1/namespaces/{t.namespace}"
        batch = f"/apis/batch/v1/namespaces/{t.namespace}"
        job = {"template": {**template, "spec": {**POD, "restartPolicy": "Never"}}}
        for path, spec in (
            (f"{apps}/deployments", {"selector": selector, "template": template}),
            (f"{apps}/statefulsets", {"selector": selector, "template": template}),
            (f"{apps}/daemonsets", {"selector": selector, "template": template}),
            (f"{batch}/jobs", job),
            (f"{batch}/cronjobs", {"schedule": "* * * * *", "jobTemplate": {"spec": job}}),
            (f"/api/v1/namespaces/{t.namespace}/replicationcontrollers", {"template": template}),
        ):
            await t.post(path, {"metadata": {"name": "w"}, "spec": spec}, params=DRY,
                         record=_shown)  # fmt: skip
        pods = f"/api/v1/namespaces/{t.namespace}/podtemplates"
        await t.post(pods, {"metadata": {"name": "w"}, "template": template}, params=DRY,
                     record=_shown)  # fmt: skip

    await conform(scenario)
