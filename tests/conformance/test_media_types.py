"""Conformance: the media types of request bodies, as kubectl and Go clients send them.

Built-in kinds take JSON, YAML and Kubernetes' protobuf encoding (kubectl's ``create`` sends
protobuf); custom resources take JSON and YAML, and refuse protobuf with 415. The protobuf bodies
here are made with the fake's vendored descriptors, and the real API server decodes them with its
own Go types: the objects both store must be the same.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

from anyop.testing.fake.protobuf_bodies import PROTOBUF, encoded, message_class

pytestmark = pytest.mark.anyio

_YAML = "application/yaml"


def _protobuf(message: str, api_version: str, kind: str, document: dict[str, Any]) -> bytes:
    instance = json_format.ParseDict(document, message_class(message)())
    return encoded(instance, api_version=api_version, kind=kind)


async def test_built_in_kinds_take_protobuf_bodies(conform: Conform) -> None:
    configmap = {"metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"x": "1"},
                 "binaryData": {"b": "AAE="}, "immutable": False}  # fmt: skip
    secret = {"metadata": {"name": "s"}, "data": {"p": "cQ=="}, "type": ""}
    deployment = {
        "metadata": {"name": "d", "generateName": ""},
        "spec": {
            "replicas": 0,
            "minReadySeconds": 0,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"rollingUpdate": {"maxSurge": {"type": 1, "strVal": "50%"},
                                           "maxUnavailable": {"type": 0, "intVal": 0}}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{
                    "name": "c", "image": "nginx", "stdin": False, "workingDir": "",
                    "resources": {"limits": {"cpu": {"string": "500m"}}},
                    "ports": [{"containerPort": 80, "hostPort": 0}],
                    "readinessProbe": {"handler": {"httpGet": {
                        "port": {"type": 1, "strVal": "http"}}}, "periodSeconds": 3},
                    "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {
                        "localObjectReference": {"name": "c"}, "key": "x"}}}],
                }],
                "volumes": [{"name": "v", "volumeSource": {"configMap": {
                    "localObjectReference": {"name": "c"}, "defaultMode": 420}}}]},
            },
        },
    }  # fmt: skip

    async def scenario(t: Target) -> None:
        body = _protobuf("k8s.io.api.core.v1.ConfigMap", "v1", "ConfigMap", configmap)
        await t.post(t.cm(), body, ct=PROTOBUF)
        body = _protobuf("k8s.io.api.core.v1.Secret", "v1", "Secret", secret)
        await t.post(t.core("secrets"), body, ct=PROTOBUF)
        body = _protobuf("k8s.io.api.apps.v1.Deployment", "apps/v1", "Deployment", deployment)
        await t.post(t.apis("apps/v1", "deployments"), body, ct=PROTOBUF)
        changed = {**configmap, "data": {"x": "2"}}
        body = _protobuf("k8s.io.api.core.v1.ConfigMap", "v1", "ConfigMap", changed)
        await t.put(t.cm("c"), body, ct=PROTOBUF)
        options = {"propagationPolicy": "Background", "gracePeriodSeconds": 0}
        body = _protobuf("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions", "v1",
                         "DeleteOptions", options)  # fmt: skip
        await t.delete(t.cm("c"), body, ct=PROTOBUF)

    await conform(scenario)


async def test_unknown_media_types_are_415_and_protobuf_breaks_custom_resources(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        body = _protobuf("k8s.io.api.core.v1.ConfigMap", "v1", "ConfigMap", {"metadata": {}})
        # kube-apiserver's handler of custom resources panics on protobuf: no answer at all.
        try:
            await t.post(t.widgets(), body, ct=PROTOBUF)
        except httpx.RemoteProtocolError:
            t.note("protobuf to a custom resource", "connection dropped")
        await t.post(t.cm(), b"x: 1", ct="text/plain")
        await t.post(t.widgets(), b"{}", ct="application/xml")

    await conform(scenario)


async def test_a_patch_of_no_patch_type_is_415_before_its_object_is_looked_for(
    conform: Conform,
) -> None:
    """A patch whose ``Content-Type`` is no patch type, of an object that exists and of one
    that does not, of a built-in and of a custom resource; a strategic merge patch of a custom
    resource that does not exist."""

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), {"metadata": {"name": "p"}})
        for path in (t.cm("p"), t.cm("missing"), t.widgets("missing")):
            for kind in ("text/plain", "application/json"):
                await t.patch(path, b"{}", ct=kind)
        await t.patch(t.widgets("missing"), b"{}", ct="application/strategic-merge-patch+json")

    await conform(scenario)


async def test_yaml_bodies_are_taken_as_go_reads_yaml(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.cm(), b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", ct=_YAML)
        widget = f"apiVersion: {GROUP}/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {{size: 3}}\n"
        await t.post(t.widgets(), widget.encode(), ct=_YAML)
        await t.put(t.cm("a"), b"metadata: {name: a}\ndata: {x: 'on'}\n", ct=_YAML)
        # YAML 1.1, as Go reads it: y, n, on, off are booleans.
        await t.post(t.cm(), b"metadata: {name: y}", ct=_YAML)
        await t.post(t.cm(), b"metadata: {name: b}\ndata: {x: off}", ct=_YAML)
        await t.post(t.cm(), b"- a", ct=_YAML)
        await t.delete(t.cm("a"), b"{propagationPolicy: Orphan}", ct=_YAML)

    await conform(scenario)


async def test_malformed_bodies_are_400(conform: Conform) -> None:
    def reason(status: Any) -> Any:
        return status["code"], status["reason"], status["message"].split(":")[0]

    async def scenario(t: Target) -> None:
        await t.post(t.cm(), b'{"metadata": {"name": "j"}}', ct=PROTOBUF)
        await t.post(t.cm(), b"k8s\x00", ct=PROTOBUF)
        await t.post(t.cm(), b"k8s\x00\x0a\x05garbage", ct=PROTOBUF, record=reason)
        await t.post(t.cm(), b"metadata: [", ct=_YAML, record=reason)
        for body in (b"{", b"[1]", b"", b"nope", b'{"metadata": 5}'):
            await t.post(t.cm(), body)
            await t.put(t.cm("a"), body)
        await t.post(t.cm(), {"metadata": {"name": "a"}})
        for body in (b"{", b"[1]", b"nope"):
            await t.delete(t.cm("a"), body)

    await conform(scenario)
