"""Conformance: the OpenAPI documents (``/openapi/v3`` and its group versions, built-in and
CRD) and server-side field validation (``fieldValidation``) of writes.

A built-in group version's document is compared whole; a CRD group version's in its
scenarios' kinds (other CRDs of the group come and go), but for ``DeleteOptions``' list of
every group's kinds (the fake's names the groups of its vendored documents).
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target

pytestmark = pytest.mark.anyio

KINDS = ("Widget", "Gadget", "Sprocket", "Gizmo")
MODEL = ".".join(reversed(GROUP.split("."))) + ".v1"
_HASH = re.compile(r"\?hash=[0-9A-F]{128}$")


def _operations(item: dict[str, Any]) -> Any:
    """What kubectl reads of a path's operations: actions, kinds, parameters, request types."""
    shown: dict[str, Any] = {"parameters": [p["name"] for p in item.get("parameters", [])]}
    for method, operation in item.items():
        if method == "parameters":
            continue
        shown[method] = {
            "id": operation["operationId"],
            "action": operation["x-kubernetes-action"],
            "gvk": operation["x-kubernetes-group-version-kind"],
            "parameters": [p["name"] for p in operation.get("parameters", [])],
            "body": sorted((operation.get("requestBody") or {}).get("content", {})),
            "responses": sorted(operation["responses"]),
        }
    return shown


def _index(document: Any) -> Any:
    """The index's entries for the documents the fake serves, and whether each has a hash."""
    names = ("api", "apis", "api/v1", "apis/apps", "apis/apps/v1", f"apis/{GROUP}/v1")
    paths = document["paths"]
    return {name: bool(_HASH.search(paths[name]["serverRelativeURL"])) for name in names}


def _custom(document: Any) -> Any:
    """The scenarios' CRDs' paths and schemas, whole (other CRDs of the group may come and go)."""
    paths = {
        path: item
        for path, item in document["paths"].items()
        if any(f"/{kind.lower()}s" in path for kind in KINDS)
    }
    schemas = dict(document["components"]["schemas"])
    schemas.pop("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")
    kept = {
        name: schema
        for name, schema in schemas.items()
        if not name.startswith(MODEL)
        or name.removeprefix(f"{MODEL}.").removesuffix("List") in KINDS
    }
    return {"info": document["info"], "paths": paths, "schemas": kept}


async def test_the_openapi_v3_index_names_each_group_version_with_a_hash(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get("/openapi/v3", record=_index)

    await conform(scenario)


async def test_a_built_in_group_version_document_has_operations_and_described_schemas(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        await t.get("/openapi/v3/apis/apps/v1")
        await t.get("/openapi/v3/api/v1", record=lambda d: _operations(d["paths"][
            "/api/v1/namespaces/{namespace}/configmaps/{name}"]))  # fmt: skip

    await conform(scenario)


async def test_a_crd_group_version_document_is_built_from_its_crds(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(f"/openapi/v3/apis/{GROUP}/v1", record=_custom)

    await conform(scenario)


async def test_openapi_documents_refuse_unknown_names_stale_hashes_and_media_types(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        index = await t.api.get("/openapi/v3")
        url = index.json()["paths"]["apis/apps/v1"]["serverRelativeURL"]
        fresh = await t.api.get(url)
        t.note("fresh", (fresh.status_code, fresh.headers.get("cache-control")))
        stale = await t.api.get("/openapi/v3/apis/apps/v1?hash=ABC")
        t.note("stale", (stale.status_code, stale.headers.get("location") == url))
        for path, accept in (
            ("/openapi/v3/apis/apps/v1", "application/xml"),
            ("/openapi/v3/apis/nothing.example.com/v1", "application/json"),
            ("/openapi/v2", "application/xml"),
        ):
            answer = await t.api.get(path, headers={"Accept": accept})
            t.note(path, (answer.status_code, answer.text))
        v2 = await t.api.get("/openapi/v2", headers={"Accept": "application/json"})
        definitions = v2.json()["definitions"]
        replicas = definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
        t.note("v2", (v2.json()["swagger"], replicas))
        for name in ("io.k8s.api.core.v1.ConfigMap", "io.k8s.api.apps.v1.DeploymentSpec",
                     "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                     "io.k8s.api.core.v1.Container"):  # fmt: skip
            t.note(name, definitions[name])
        for kind in KINDS:
            t.note(kind, (definitions[f"{MODEL}.{kind}"], definitions[f"{MODEL}.{kind}List"]))

    await conform(scenario)


def _configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


async def test_field_validation_refuses_warns_about_or_ignores_unknown_fields(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        odd = _configmap("odd", data={"a": "1"}, bogus=1, metadata={"name": "odd", "zz": 1})
        for directive in ("Strict", "Warn", "Ignore", ""):
            params = {"fieldValidation": directive} if directive else {}
            name = f"odd-{directive.lower() or 'default'}"
            body = {**odd, "metadata": {**odd["metadata"], "name": name}}
            answer = await t.api.post(t.cm(), json=body, params=params)
            t.note(directive, (answer.status_code, answer.headers.get("warning"),
                               answer.json().get("message")))  # fmt: skip
        doubled = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"twice"},'
        doubled += b'"data":{},"data":{}}'
        answer = await t.api.post(t.cm(), content=doubled, params={"fieldValidation": "Strict"},
                                  headers={"Content-Type": "application/json"})  # fmt: skip
        t.note("duplicate", (answer.status_code, answer.json().get("message")))
        both = b'{"apiVersion":"v1","kind":"ConfigMap","bogus":1,"metadata":{"name":"both",'
        both += b'"labels":{"a":"1","a":"2"},"name":"both"},"data":{"k":"v"},"zz":[1]}'
        for directive in ("Strict", "Warn"):
            answer = await t.api.post(t.cm(), content=both, params={"fieldValidation": directive},
                                      headers={"Content-Type": "application/json"})  # fmt: skip
            t.note(f"both {directive}", (answer.status_code, answer.headers.get("warning"),
                                         answer.json().get("message")))  # fmt: skip
        spec = {"size": 1, "extra": 2, "free": {"any": 1}, "nested": {"key": "k", "x": 1}}
        widget = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"},
                  "spec": spec, "other": 3}  # fmt: skip
        for directive in ("Strict", "Warn"):
            answer = await t.api.post(t.widgets(), json=widget,
                                      params={"fieldValidation": directive})  # fmt: skip
            t.note(f"widget {directive}", (answer.status_code, answer.headers.get("warning"),
                                           answer.json().get("message")))  # fmt: skip
        await t.post(t.cm(), _configmap("any"), params={"fieldValidation": "Sometimes"})
        await t.post(t.cm(), _configmap("lower"), params={"fieldValidation": "strict"})
        stored = await t.get(t.cm("odd-warn"), record=lambda d: d.get("data"))
        stored["bogus"] = 2
        await t.put(t.cm("odd-warn"), stored, params={"fieldValidation": "Strict"})

    await conform(scenario)


def _message(document: Any, content_type: str) -> Any:
    """A patch's refusal, without the patched object it shows: a built-in one's untouched
    parts keep Go's field order, which the fake does not keep, and the times in it are the
    fake's clock's."""
    message = document.get("message")
    if not isinstance(message, str) or content_type.startswith("application/strategic"):
        return message
    return re.sub(r'Invalid value: ".*": strict', "Invalid value: <object>: strict", message)


async def test_field_validation_of_patches_and_nested_built_in_fields(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        container = {"name": "c", "image": "nginx", "oops": True}
        deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [container]}}},
        }  # fmt: skip
        for directive in ("Strict", "Warn"):
            answer = await t.api.post(t.apis("apps/v1", "deployments"), json=deployment,
                                      params={"fieldValidation": directive})  # fmt: skip
            t.note(f"deployment {directive}", (answer.status_code, answer.headers.get("warning"),
                                               answer.json().get("message")))  # fmt: skip
        await t.post(t.cm(), _configmap("patched", data={"a": "1"}))
        for ct in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            for directive in ("Strict", "Warn"):
                answer = await t.api.patch(
                    t.cm("patched"),
                    content=b'{"data":{"b":"2"},"bogus":1,"metadata":{"zz":2}}',
                    params={"fieldValidation": directive},
                    headers={"Content-Type": ct},
                )
                t.note(f"{ct} {directive}", (answer.status_code, answer.headers.get("warning"),
                                             _message(answer.json(), ct)))  # fmt: skip
        containers = {"$setElementOrder/containers": [{"name": "c"}],
                      "containers": [{"name": "c", "image": "nginx:2"}]}  # fmt: skip
        answer = await t.api.patch(
            t.apis("apps/v1", "deployments", "d"),
            json={"spec": {"template": {"spec": containers}}},
            params={"fieldValidation": "Strict"},
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        )
        t.note("directives", (answer.status_code, answer.headers.get("warning")))
        for ct in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            answer = await t.api.patch(
                t.cm("patched"),
                content=b'{"data":{"x":"1"},"data":{"y":"2"},"metadata":{"labels":{"a":"b"}}}',
                params={"fieldValidation": "Warn"},
                headers={"Content-Type": ct},
            )
            t.note(f"{ct} duplicate", (answer.status_code, answer.headers.get("warning")))
        await t.patch(t.cm("patched"), {"data": {"c": "3"}}, params={"fieldValidation": "no"})
        await t.patch(t.cm("patched"), {"data": {"c": "3"}}, ct="application/apply-patch+yaml",
                      params={"fieldValidation": "no", "fieldManager": "m"})  # fmt: skip
        answer = await t.api.patch(
            t.cm("patched"),
            content=b'[{"op":"add","path":"/bogus","value":1}]',
            params={"fieldValidation": "Strict"},
            headers={"Content-Type": "application/json-patch+json"},
        )
        t.note("json patch", (answer.status_code, answer.headers.get("warning"),
                              _message(answer.json(), "application/json-patch+json")))  # fmt: skip
        widget = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "pw"},
                  "spec": {"size": 1}}  # fmt: skip
        await t.post(t.widgets(), widget)
        answer = await t.api.patch(
            t.widgets("pw"),
            content=b'{"spec":{"extra":1},"other":2}',
            params={"fieldValidation": "Strict"},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        shown = _message(answer.json(), "application/merge-patch+json")
        t.note("widget patch", (answer.status_code, answer.headers.get("warning"), shown))

    await conform(scenario)


async def test_server_side_apply_refuses_fields_its_schema_does_not_declare(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        config = _configmap("applied", data={"a": "1"}, bogus=1)
        config["metadata"]["namespace"] = t.namespace
        containers = [{"name": "c", "image": "nginx", "oops": True}]
        deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": t.namespace},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
                "metadata": {"labels": {"app": "d"}}, "spec": {"containers": containers}}},
        }  # fmt: skip
        widget = {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                  "metadata": {"name": "aw", "namespace": t.namespace},
                  "spec": {"size": 1, "extra": 2}}  # fmt: skip
        targets = ((t.cm("applied"), config), (t.apis("apps/v1", "deployments", "d"), deployment),
                   (t.widgets("aw"), widget))  # fmt: skip
        for path, body in targets:
            for directive in ("Strict", "Warn", "Ignore"):
                params = {"fieldManager": "test", "fieldValidation": directive}
                headers = {"Content-Type": "application/apply-patch+yaml"}
                answer = await t.api.patch(path, json=body, params=params, headers=headers)
                shown = answer.json()
                keys = ("kind", "reason", "message", "details", "code")
                t.note(f"{path.rsplit('/', 2)[-2]} {directive}", (
                    answer.status_code, answer.headers.get("warning"),
                    {key: shown.get(key) for key in keys},
                ))  # fmt: skip

    await conform(scenario)


async def _index_url(t: Target, name: str, *, other_than: str | None = None) -> str | None:
    """The index's URL of a document, once it is not ``other_than`` (the API server updates
    the index a moment after a CRD changes); ``None`` once the document is gone."""
    with anyio.fail_after(30):
        while True:
            paths = (await t.api.get("/openapi/v3")).json()["paths"]
            url = paths.get(name, {}).get("serverRelativeURL")
            if url != other_than:
                return url
            await anyio.sleep(0.1)


async def test_a_crd_change_changes_its_documents_hash(conform: Conform) -> None:
    group = "hashes.anyop.dev"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {"group": group, "scope": "Cluster",
                 "names": {"kind": "Thing", "plural": "things"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "selectableFields": [{"jsonPath": ".spec.a"}], "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}]},
    }  # fmt: skip
    name = f"apis/{group}/v1"
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

    async def scenario(t: Target) -> None:
        await t.post(crds, crd, record=lambda d: d["metadata"]["name"])
        try:
            first = await _index_url(t, name)
            assert first is not None
            fields = {"a": {"type": "string"}, "b": {"type": "integer"}}
            schema = {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": fields}}}}  # fmt: skip
            version = {**crd["spec"]["versions"][0], "schema": schema}
            patch = {"spec": {"versions": [version]}}
            await t.patch(f"{crds}/things.{group}", patch, record=lambda d: d["spec"]["versions"])
            second = await _index_url(t, name, other_than=first)
            assert second is not None
            old = await t.api.get(first, follow_redirects=False)
            t.note("old hash", (old.status_code, old.headers.get("location") == second))
            new = await t.api.get(second)
            schemas = new.json()["components"]["schemas"]
            t.note(
                "new schemas", [schemas[f"dev.anyop.hashes.v1.{k}"] for k in ("Thing", "ThingList")]
            )
        finally:
            await t.api.delete(f"{crds}/things.{group}")
        t.note("gone", await _index_url(t, name, other_than=second))

    await conform(scenario)
