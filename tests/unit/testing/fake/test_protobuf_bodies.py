"""Protobuf request bodies read into the JSON that Go's types would hold (pure; the same bodies
against the real API server are in tests/conformance/test_media_types.py)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.protobuf_bodies import (
    PROTOBUF,
    ProtobufError,
    decode,
    encoded,
    go_duration,
    message_class,
)
from anyop.testing.fake.request_bodies import decode_body
from anyop.testing.fake.statuses import StatusError


def _body(message: str, api_version: str, kind: str, document: dict[str, Any]) -> bytes:
    instance = json_format.ParseDict(document, message_class(message)())
    return encoded(instance, api_version=api_version, kind=kind)


def test_names_and_zero_values_follow_go_json() -> None:
    body = _body("k8s.io.api.apps.v1.Deployment", "apps/v1", "Deployment", {
        "metadata": {"name": "d", "generateName": "", "labels": {"a": "b"}},
        "spec": {"replicas": 0, "minReadySeconds": 0, "paused": False,
                 "template": {"spec": {"containers": [{"name": "", "image": "nginx"}]}}},
    })  # fmt: skip
    document = decode(body, group="apps", version="v1")
    assert (document["apiVersion"], document["kind"]) == ("apps/v1", "Deployment")
    assert document["metadata"] == {"name": "d", "labels": {"a": "b"}}
    spec = document["spec"]
    assert spec["replicas"] == 0  # a pointer: its zero is a value
    assert {"minReadySeconds", "paused"}.isdisjoint(spec)  # omitempty, not pointers
    assert spec["template"]["spec"]["containers"] == [{"name": "", "image": "nginx"}]


def test_wrapper_types_become_their_json_forms() -> None:
    body = _body("k8s.io.api.core.v1.Pod", "v1", "Pod", {
        "metadata": {"name": "p", "creationTimestamp": {"seconds": 1767225600, "nanos": 5},
                     "deletionTimestamp": {}},
        "spec": {"containers": [{
            "name": "c",
            "resources": {"limits": {"cpu": {"string": "500m"}}},
            "readinessProbe": {"handler": {"httpGet": {"port": {"type": 1, "strVal": "http"}}},
                               "periodSeconds": 3},
            "livenessProbe": {"handler": {"httpGet": {"port": {"type": 0, "intVal": 8080}}}},
        }]},
    })  # fmt: skip
    document = decode(body, group="", version="v1")
    assert document["metadata"] == {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"}
    container = document["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "500m"}}
    # Probe embeds ProbeHandler: JSON inlines its fields.
    assert container["readinessProbe"] == {"httpGet": {"port": "http"}, "periodSeconds": 3}
    assert container["livenessProbe"]["httpGet"]["port"] == 8080


def test_bytes_are_base64_and_raw_json_is_json() -> None:
    body = _body("k8s.io.api.core.v1.Secret", "v1", "Secret",
                 {"metadata": {"name": "s"}, "data": {"p": "cQ=="}})  # fmt: skip
    assert decode(body, group="", version="v1")["data"] == {"p": "cQ=="}
    revision = {"metadata": {"name": "r"}, "data": {"raw": "eyJhIjogWzFdfQ=="}, "revision": 2}
    body = _body("k8s.io.api.apps.v1.ControllerRevision", "apps/v1", "ControllerRevision", revision)
    assert decode(body, group="apps", version="v1")["data"] == {"a": [1]}


def test_json_schema_props_keep_their_json_names() -> None:
    schema = {
        "type": "object",
        "xKubernetesPreserveUnknownFields": True,
        "properties": {"size": {"type": "integer", "default": {"raw": "Mw=="}}},
        "additionalProperties": {"allows": False},
        "items": {"schema": {"type": "string"}},
    }
    body = _body(
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        "apiextensions.k8s.io/v1", "CustomResourceDefinition",
        {"metadata": {"name": "x"}, "spec": {"versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": schema}}]}},
    )  # fmt: skip
    crd = decode(body, group="apiextensions.k8s.io", version="v1")
    decoded = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert decoded == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"size": {"type": "integer", "default": 3}},
        "additionalProperties": False,
        "items": {"type": "string"},
    }


def test_delete_options_decode_in_any_group() -> None:
    body = _body("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions", "v1", "DeleteOptions",
                 {"propagationPolicy": "Orphan", "gracePeriodSeconds": 0})  # fmt: skip
    assert decode(body, group="apps", version="v1") == {
        "apiVersion": "v1", "kind": "DeleteOptions",
        "propagationPolicy": "Orphan", "gracePeriodSeconds": 0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [(0, "0s"), (1, "1ns"), (1500, "1.5µs"), (1_500_000, "1.5ms"), (90_000_000_000, "1m30s"),
     (3_600_000_000_000, "1h0m0s"), (3_723_500_000_000, "1h2m3.5s"), (-2_000_000_000, "-2s")],
)  # fmt: skip
def test_durations_read_as_go_writes_them(nanoseconds: int, text: str) -> None:
    assert go_duration(nanoseconds) == text


def test_an_envelope_without_an_api_version_takes_the_resources() -> None:
    body = _body("k8s.io.api.core.v1.ConfigMap", "", "ConfigMap", {"metadata": {"name": "c"}})
    assert decode(body, group="", version="v1")["apiVersion"] == "v1"


def test_bodies_that_are_not_kubernetes_protobuf_are_refused() -> None:
    with pytest.raises(ProtobufError, match=r"expected prefix \[107 56 115 0\]"):
        decode(b"{}", group="", version="v1")
    with pytest.raises(ProtobufError, match="empty body"):
        decode(b"k8s\x00", group="", version="v1")
    stranger = _body("k8s.io.api.core.v1.ConfigMap", "v1", "Stranger", {})
    with pytest.raises(ProtobufError, match="no kind 'Stranger'"):
        decode(stranger, group="", version="v1")


_CONFIGMAPS = Kind("", "v1", "configmaps", "configmap", "ConfigMap", namespaced=True)


def test_undecodable_bodies_are_quoted_as_the_server_quotes_them() -> None:
    with pytest.raises(StatusError) as caught:
        decode_body(_CONFIGMAPS, PROTOBUF, b"k8s\x00")
    assert caught.value.body["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"
    )
    with pytest.raises(StatusError) as caught:
        decode_body(_CONFIGMAPS, "application/json", b'{"metadata": {"name": "a-rather-long-name"}')
    assert caught.value.body["message"].endswith(
        'unexpected end of JSON input ({"metadata": {"name": "a-rathe ...)'
    )
    with pytest.raises(StatusError) as caught:
        decode_body(_CONFIGMAPS, "application/json", b"[1]", options=True)
    assert caught.value.body["message"].startswith(
        "couldn't get version/kind; json parse error: json: cannot unmarshal array"
    )


def test_yaml_is_read_as_go_reads_it() -> None:
    document = decode_body(_CONFIGMAPS, "application/yaml", b"a: y\nb: n\nc: 'y'\nd: on\ne: yes")
    assert document == {"a": True, "b": False, "c": "y", "d": True, "e": True}


def test_other_media_types_are_415() -> None:
    with pytest.raises(StatusError) as caught:
        decode_body(_CONFIGMAPS, "text/plain", b"x")
    assert caught.value.code == 415
    assert caught.value.body["message"].endswith(
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
