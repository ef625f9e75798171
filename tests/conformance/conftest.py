"""Fixtures of the conformance suite: each scenario runs on the real control plane and on
FakeCluster, and what they answered must be the same (after normalisation)."""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conformance.harness import GROUP, Scenario, Target, normalise

from anyop.kube.transport import KubeTransport
from anyop.testing.controlplane import LocalControlPlane
from anyop.testing.fake import FakeCluster

Conform = Callable[[Scenario], Awaitable[None]]
WALL_TIMES: dict[str, float] = defaultdict(float)

_STATUS_SCHEMA = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                  "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer"},
                    "color": {"type": "string", "enum": ["red", "blue"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "nested": {"type": "object", "required": ["key"],
                               "properties": {"key": {"type": "string"}}},
                }},
                "status": _STATUS_SCHEMA,
            }}},
        }],
    },
}  # fmt: skip
# Rules whose messages are CEL expressions (``messageExpression``): a string, trimmed; an
# empty one, one with a line break, or one that fails to evaluate falls back to ``message``.
_WORDED: dict[str, Any] = {"type": "object", "properties": {
    "a": {"type": "integer"}, **{key: {"type": "string", "maxLength": 8} for key in "bcdefg"},
}, "x-kubernetes-validations": [
    {"rule": "!has(self.a) || self.a < 10",
     "messageExpression": "has(self.e) ? 'a is above 9, e is ' + self.e : 'a is above 9'"},
    {"rule": "!has(self.b) || self.b != 'x'", "message": "b must not be x",
     "messageExpression": "self.b == 'x' ? '' : 'never'"},
    {"rule": "!has(self.c) || self.c != 'y'",
     "messageExpression": "'two\\nlines'"},
    {"rule": "!has(self.d) || self.d != 'z'", "message": "d must not be z",
     "messageExpression": "'d is ' + self.e"},
    {"rule": "!has(self.f) || self.f.size() < 3", "reason": "FieldValueForbidden",
     "fieldPath": ".f", "messageExpression": "'  f is too long: ' + self.f + '  '"},
    {"rule": "!has(self.g) || self.g != oldSelf.g",
     "messageExpression": "'g must change, still ' + oldSelf.g"},
]}  # fmt: skip
GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Cluster",
        "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}  # fmt: skip
SPROCKET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"sprockets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Sprocket", "plural": "sprockets"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}},
            "schema": {"openAPIV3Schema": {"type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}  # fmt: skip
GIZMO_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Gizmo", "plural": "gizmos"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-validations": [
                    {"rule": "!has(self.low) || !has(self.high) || self.low <= self.high",
                     "message": "low must not exceed high"},
                    {"rule": "!has(self.high) || self.high < 1000"},
                ], "properties": {
                    "low": {"type": "integer"},
                    "high": {"type": "integer"},
                    "fixed": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "fixed is immutable"}]},
                    "replicas": {"type": "integer", "minimum": 0},
                    "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                    "ratio": {"type": "number", "minimum": 0, "maximum": 1,
                              "exclusiveMinimum": True, "exclusiveMaximum": True},
                    "name": {"type": "string", "minLength": 3, "maxLength": 8,
                             "pattern": "^[a-z]+$"},
                    "tags": {"type": "array", "minItems": 1, "maxItems": 3,
                             "items": {"type": "string"}},
                    "labels": {"type": "array", "x-kubernetes-list-type": "set",
                               "items": {"type": "string"}},
                    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                    "port": {"x-kubernetes-int-or-string": True},
                    "when": {"type": "string", "format": "date-time"},
                    "note": {"type": "string", "nullable": True},
                    "plain": {"type": "string"},
                    "options": {"type": "object", "default": {},
                                "properties": {"retries": {"type": "integer", "default": 5},
                                               "verbose": {"type": "boolean"}}},
                    "items": {"type": "array", "items": {
                        "type": "object", "required": ["key"], "properties": {
                            "key": {"type": "string"},
                            "weight": {"type": "integer", "default": 1}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "worded": _WORDED,
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            }}},
        }],
    },
}  # fmt: skip
CRDS = (WIDGET_CRD, GADGET_CRD, SPROCKET_CRD, GIZMO_CRD)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "controllers: garbage collection and namespace deletion, compared with Kubernetes' "
        "documented behaviour and with the local control plane's kube-controller-manager "
        "(with --anyop-bare, with the documented behaviour only)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every conformance test needs the control plane too: mark it ``conformance`` and ``e2e``."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.conformance)
            item.add_marker(pytest.mark.e2e)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Report the wall time spent in each target."""
    if WALL_TIMES:
        times = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in sorted(WALL_TIMES.items()))
        terminalreporter.write_line(f"conformance wall time per target: {times}")


@pytest.fixture
def anyio_backend() -> str:
    """Conformance compares the API servers' answers, not anyop's backends (the client and the
    fake's transport run on both in the unit and end-to-end tests): one backend is enough."""
    return "trio"


@pytest.fixture(scope="session")
def bare_controlplane(request: pytest.FixtureRequest) -> Iterator[LocalControlPlane]:
    """The API server without controllers, as ``FakeCluster(controllers=False)``: the plugin's
    plane with ``--anyop-bare``, else one of our own (the plugin's runs the controllers)."""
    if request.config.getoption("--anyop-bare"):
        plane: LocalControlPlane = request.getfixturevalue("anyop_controlplane")
        yield plane
        return
    with LocalControlPlane(controllers=False, nodes=False) as bare:
        yield bare


@pytest.fixture(scope="session")
def conformance_crds(bare_controlplane: LocalControlPlane) -> None:
    """The scenarios' CRDs, applied once to the real control plane, Established, and in the
    discovery (which the API server updates a moment after the CRD is Established)."""
    import json
    import time

    from anyop.testing.pytest_plugin import kubectl, wait_for_crd

    for crd in CRDS:
        kubectl(bare_controlplane, "apply", "-f", "-", stdin=json.dumps(crd))
    for crd in CRDS:
        wait_for_crd(bare_controlplane, crd["metadata"]["name"])
    plurals = {crd["spec"]["names"]["plural"] for crd in CRDS}
    deadline = time.monotonic() + 60
    while True:
        found = json.loads(kubectl(bare_controlplane, "get", "--raw", f"/apis/{GROUP}/v1"))
        listed = {resource["name"] for resource in found.get("resources", [])}
        if plurals <= listed:
            return
        assert time.monotonic() < deadline, f"not in the discovery after 60 s: {plurals - listed}"
        time.sleep(0.1)


async def _new_namespace(api: httpx.AsyncClient, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    (await api.post("/api/v1/namespaces", json=body)).raise_for_status()


async def _cleanup_gadgets(api: httpx.AsyncClient) -> None:
    """Gadgets are cluster-scoped: remove those of earlier scenarios (finalizers included)."""
    listed = (await api.get(f"/apis/{GROUP}/v1/gadgets")).json()
    for item in listed.get("items", []):
        path = f"/apis/{GROUP}/v1/gadgets/{item['metadata']['name']}"
        if item["metadata"].get("finalizers"):
            patch = {"metadata": {"finalizers": None}}
            headers = {"Content-Type": "application/merge-patch+json"}
            await api.patch(path, json=patch, headers=headers)
        await api.delete(path)


@pytest.fixture
async def real_api(
    bare_controlplane: LocalControlPlane, conformance_crds: None
) -> AsyncIterator[httpx.AsyncClient]:
    """An admin client of the real control plane (without controllers)."""
    tls = bare_controlplane.ssl_context()
    transport = KubeTransport(tls)  # its bodies are plain iterators (see harness._raw_chunks)
    async with httpx.AsyncClient(
        base_url=bare_controlplane.server, transport=transport, timeout=30
    ) as api:
        await _cleanup_gadgets(api)
        yield api


async def run_on(
    name: str, api: httpx.AsyncClient, scenario: Scenario, *, namespace: str
) -> list[Any]:
    """Run a scenario on one target in a new namespace; return its normalised records."""
    started = time.monotonic()
    await _new_namespace(api, namespace)
    target = Target(name, api, namespace)
    await scenario(target)
    WALL_TIMES[name] += time.monotonic() - started
    return normalise(target.records, namespace)


def _diff(real: list[Any], fake: list[Any]) -> str:
    import difflib
    import json

    lines = [json.dumps(item, indent=1, sort_keys=True) for item in (real, fake)]
    diff = difflib.unified_diff(
        lines[0].splitlines(), lines[1].splitlines(), "real", "fake", lineterm="", n=4
    )
    return "\n" + "\n".join(diff)


@pytest.fixture
def conform(real_api: httpx.AsyncClient) -> Conform:
    """``await conform(scenario)``: run it on both targets and assert the same records."""

    async def run(scenario: Scenario) -> None:
        namespace = f"conf-{uuid.uuid4().hex[:8]}"
        real = await run_on("real", real_api, scenario, namespace=namespace)
        fake = FakeCluster(controllers=False)  # as the real plane: no controller-manager yet
        for crd in CRDS:
            fake.create(crd)
        async with fake.client(timeout=30) as api:
            faked = await run_on("fake", api, scenario, namespace=namespace)
        assert faked == real, _diff(real, faked)

    return run
