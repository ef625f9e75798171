"""APIServices' rules and kube-apiserver's APIService controllers in FakeCluster (compared with
the real server in tests/conformance/test_apiservices.py)."""

from __future__ import annotations

from typing import Any

import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.apiservice_rules import (
    AUTOMANAGED,
    CREATES,
    available_status,
    registered,
    registration,
)

pytestmark = pytest.mark.anyio

KEY = ("apiregistration.k8s.io", "APIService")
PATH = "/apis/apiregistration.k8s.io/v1/apiservices"
NOW = "2026-01-01T00:00:00Z"


def _crd(*versions: tuple[str, bool]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.probe.dev"},
        "spec": {
            "group": "probe.dev",
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [
                {
                    "name": name,
                    "served": served,
                    "storage": index == 0,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for index, (name, served) in enumerate(versions)
            ],
        },
    }


def test_a_remote_api_service_is_checked_in_go_order() -> None:
    spec = {"group": "", "version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1,
            "service": {"port": 0}, "insecureSkipTLSVerify": True, "caBundle": "AAEC"}  # fmt: skip
    causes = list(CREATES[KEY]({"spec": spec}))
    assert [field for field, _ in causes] == [
        "spec.group",
        "spec.service.namespace",
        "spec.service.name",
        "spec.service.port",
        "spec.insecureSkipTLSVerify",
    ]
    assert causes[3][1]["message"] == (
        "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"
    )


def test_the_remote_checks_stop_at_the_first_that_fails() -> None:
    api_service = {"spec": {"service": {"namespace": "ns", "name": "s", "port": 443}}}
    service = {"spec": {"ports": [{"port": 443, "name": "https"}]}}
    ready = {"endpoints": [{"conditions": {}}], "ports": [{"name": "https", "port": 8443}]}
    missing = available_status(api_service, service=None, slices=[], now=NOW)
    assert missing is not None
    assert missing["conditions"][0]["reason"] == "ServiceNotFound"
    empty = available_status(api_service, service=service, slices=[], now=NOW)
    assert empty is not None
    assert empty["conditions"][0]["reason"] == "EndpointsNotFound"
    # Past every check, the real controller asks the service: the fake writes nothing.
    assert available_status(api_service, service=service, slices=[ready], now=NOW) is None


def test_only_managed_api_services_are_changed() -> None:
    wanted = registered([_crd(("v1", True), ("v2", False))], ["v1.probe.dev", "v2.probe.dev"])
    assert list(wanted) == ["v1.probe.dev"]
    desired = wanted["v1.probe.dev"]
    mine = {"metadata": {"labels": {}}, "spec": {"group": "probe.dev"}}
    built_in = {"metadata": {"labels": {AUTOMANAGED: "onstart"}}, "spec": {}}
    changed = {"metadata": {"labels": {AUTOMANAGED: "true"}}, "spec": {"group": "probe.dev"}}
    assert registration(None, desired) == "create"
    assert registration(mine, desired) == ""
    assert registration(built_in, None) == ""
    assert registration(changed, desired) == "update"
    assert registration(changed, None) == "delete"
    assert registration(desired, desired) == ""


@pytest.mark.parametrize("controllers", [True, False])
async def test_a_crd_gets_its_api_services_with_or_without_controllers(controllers: bool) -> None:
    fake = FakeCluster(controllers=controllers)
    fake.create(_crd(("v1", True), ("v2beta1", True)))
    async with fake.client() as api:
        listed = (await api.get(PATH, params={"labelSelector": f"{AUTOMANAGED}=true"})).json()
        names = [item["metadata"]["name"] for item in listed["items"]]
        status = listed["items"][0]["status"]["conditions"][0]
        await api.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.probe.dev")
        after = (await api.get(PATH, params={"labelSelector": f"{AUTOMANAGED}=true"})).json()
    assert names == ["v1.probe.dev", "v2beta1.probe.dev"]
    assert (status["reason"], status["status"]) == ("Local", "True")
    assert after["items"] == []


async def test_a_dry_run_registers_nothing() -> None:
    async with FakeCluster().client() as api:
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        answer = await api.post(crds, json=_crd(("v1", True)), params={"dryRun": "All"})
        found = await api.get(f"{PATH}/v1.probe.dev")
    assert answer.status_code == 201
    assert found.status_code == 404
