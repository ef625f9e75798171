"""FakeCluster's OpenAPI documents and field validation, in-process (the comparisons with
kube-apiserver are in ``tests/conformance/test_openapi.py``)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from anyop.testing.fake import FakeCluster
from anyop.testing.fake.go_json import go_float as _go_float
from anyop.testing.fake.openapi_catalog import catalog
from anyop.testing.fake.openapi_v2 import PROTOBUF

pytestmark = pytest.mark.anyio

GROUP = "unit.anyop.dev"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"things.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"kind": "Thing", "plural": "things"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                "type": "object", "description": "The thing.",
                "properties": {"size": {"type": "integer"}}}}}}}],
    },
}  # fmt: skip


async def _index(api: httpx.AsyncClient) -> dict[str, str]:
    paths = (await api.get("/openapi/v3")).json()["paths"]
    return {name: entry["serverRelativeURL"] for name, entry in paths.items()}


async def test_the_index_names_the_served_group_versions_and_a_crds_once_created() -> None:
    fake = FakeCluster()
    async with fake.client() as api:
        before = await _index(api)
        fake.create(CRD)
        after = await _index(api)
    assert {"api", "apis", "api/v1", "apis/apps", "apis/apps/v1"} <= set(before)
    assert f"apis/{GROUP}/v1" not in before
    assert after[f"apis/{GROUP}/v1"].startswith(f"/openapi/v3/apis/{GROUP}/v1?hash=")
    assert after["apis/apps/v1"] == before["apis/apps/v1"]


async def test_a_crds_change_changes_its_hash_and_the_old_url_redirects() -> None:
    fake = FakeCluster()
    fake.create(CRD)
    async with fake.client() as api:
        first = (await _index(api))[f"apis/{GROUP}/v1"]
        changed = copy.deepcopy(CRD)
        changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "description"
        ] = "Another thing."
        stored = (
            await api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{GROUP}")
        ).json()
        changed["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        put = await api.put(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{GROUP}", json=changed
        )
        second = (await _index(api))[f"apis/{GROUP}/v1"]
        stale = await api.get(first)
        fresh = await api.get(second)
    assert put.status_code == 200
    assert first != second
    assert (stale.status_code, stale.headers["location"]) == (301, second)
    spec = fresh.json()["components"]["schemas"]["dev.anyop.unit.v1.Thing"]["properties"]["spec"]
    assert spec["description"] == "Another thing."


async def test_unknown_documents_and_media_types_are_refused() -> None:
    async with FakeCluster().client() as api:
        unknown = await api.get("/openapi/v3/apis/nothing.example.com/v1")
        xml = await api.get("/openapi/v3/api/v1", headers={"Accept": "application/xml"})
        v2_xml = await api.get("/openapi/v2", headers={"Accept": "application/xml"})
    assert [unknown.status_code, xml.status_code, v2_xml.status_code] == [404, 406, 406]


def _fields(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The length-delimited fields of a protobuf message (the only wire type the test reads;
    others are skipped)."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 2:
            length, position = _varint(data, position)
            yield number, data[position : position + length]
            position += length
        elif wire == 0:
            _, position = _varint(data, position)
        elif wire == 1:
            position += 8
        else:
            raise AssertionError(f"unexpected wire type {wire}")


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


async def test_the_v2_protobuf_document_has_the_json_documents_definitions() -> None:
    fake = FakeCluster()
    fake.create(CRD)
    async with fake.client() as api:
        as_json = (await api.get("/openapi/v2", headers={"Accept": "application/json"})).json()
        answer = await api.get("/openapi/v2", headers={"Accept": PROTOBUF})
    assert answer.headers["content-type"] == PROTOBUF
    top = list(_fields(answer.content))
    assert top[0] == (1, b"2.0")
    (definitions,) = [value for number, value in top if number == 9]
    names = [dict(_fields(named))[1].decode() for _, named in _fields(definitions)]
    assert names == list(as_json["definitions"])
    assert "dev.anyop.unit.v1.Thing" in names


async def test_a_strict_create_names_every_unknown_and_duplicate_field() -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"a"},"x":1}'
    async with FakeCluster().client() as api:
        answer = await api.post(
            "/api/v1/namespaces/default/configmaps",
            content=body,
            params={"fieldValidation": "Strict"},
            headers={"Content-Type": "application/json"},
        )
        warned = await api.post(
            "/api/v1/namespaces/default/configmaps",
            content=body.replace(b'"a"', b'"b"'),
            headers={"Content-Type": "application/json"},
        )
    assert answer.status_code == 400
    assert answer.json()["message"].endswith(
        'strict decoding error: duplicate field "metadata.name", unknown field "x"'
    )
    assert warned.status_code == 201
    assert warned.headers["warning"] == (
        '299 - "duplicate field \\"metadata.name\\"", 299 - "unknown field \\"x\\""'
    )


async def test_an_unsupported_field_validation_is_refused() -> None:
    async with FakeCluster().client() as api:
        answer = await api.post(
            "/api/v1/namespaces/default/configmaps",
            json={"metadata": {"name": "a"}},
            params={"fieldValidation": "Loose"},
        )
    assert answer.status_code == 422
    assert answer.json()["details"]["kind"] == "CreateOptions"


@pytest.mark.parametrize(
    ("number", "printed"),
    [(1, "1"), (123456, "123456"), (1000000, "1e+06"), (0.5, "0.5"), (1.5e-5, "1.5e-05"),
     (-2e21, "-2e+21"), (1234567, "1.234567e+06")],
)  # fmt: skip
def test_numbers_print_as_gos_percent_v_prints_a_float64(number: float, printed: str) -> None:
    assert _go_float(number) == printed


def test_the_catalog_keeps_fields_named_like_the_keywords_it_drops() -> None:
    props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    assert {"description", "example"} <= set(catalog().schemas[props]["properties"])
