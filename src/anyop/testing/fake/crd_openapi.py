"""The OpenAPI v3 document of a CRD group version, as apiextensions-apiserver builds it.

Pure. Each served version of each CRD of the group version adds its paths (the list, object,
``status`` and ``scale`` routes with their operations, parameters, request bodies and
responses) and two schemas: the kind's, named like ``dev.anyop.conformance.v1.Widget`` (its
``openAPIV3Schema`` with ``apiVersion``, ``kind`` and an ``ObjectMeta`` ``metadata``) and its
list kind's. The built-in schemas they refer to come from the vendored documents, with their
descriptions; so do the parameters' descriptions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.openapi_catalog import catalog

__all__ = ["crd_document", "model_name"]

Json = dict[str, Any]
_SCHEMAS = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_DOCS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
_OBJECT_META = f"Standard object's metadata. More info: {_DOCS}#metadata"
_LIST_META = f"Standard list metadata. More info: {_DOCS}#types-kinds"
_EMBEDDED_API_VERSION = (
    "apiVersion defines the versioned schema of this representation of an object. "
    f"More info: {_DOCS}#resources"
)
_EMBEDDED_KIND = (
    "kind is a string value representing the type of this object. In CamelCase. "
    f"More info: {_DOCS}#types-kinds"
)
_LIST = (
    "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
    "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "shardSelector",
    "timeoutSeconds", "watch",
)  # fmt: skip
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_PARAMETERS: Mapping[str, tuple[str, ...]] = {
    "list": _LIST,
    "deletecollection": _LIST,
    "get": ("resourceVersion",),
    "post": _WRITE,
    "put": _WRITE,
    "patch": (*_WRITE, "force"),
    "delete": (
        "dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
        "orphanDependents", "propagationPolicy",
    ),
}  # fmt: skip
"""The query parameters of each action: the fields of its options type (``ListOptions``,
``GetOptions``, ``CreateOptions``...), as apiextensions-apiserver adds them to its routes."""
_CODES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "post": (("200", "OK"), ("201", "Created"), ("202", "Accepted")),
    "put": (("200", "OK"), ("201", "Created")),
    "delete": (("200", "OK"), ("202", "Accepted")),
}
_PATCHES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_OPERATIONS = ("get", "put", "post", "delete", "patch")


def model_name(group: str, version: str, kind: str) -> str:
    """The schema name of a custom kind, its group reversed: ``dev.anyop.conformance.v1.Widget``."""
    return ".".join([*reversed(group.split(".")), version, kind])


def crd_document(group: str, version: str, crds: list[Mapping[str, Any]]) -> Json:
    """The document of ``/openapi/v3/apis/<group>/<version>`` for the CRDs serving it."""
    paths: Json = {}
    schemas: Json = {}
    for crd in crds:
        spec = crd.get("spec") or {}
        for served in spec.get("versions") or ():
            if served.get("name") == version and served.get("served"):
                _Builder(group, version, spec, served).add(paths, schemas)
    for name in sorted(_referenced(paths, schemas)):
        schemas.setdefault(name, _builtin_schema(name))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


class _Builder:
    """The routes and schemas of one served version of one CRD."""

    def __init__(
        self, group: str, version: str, spec: Mapping[str, Any], served: Mapping[str, Any]
    ) -> None:
        names = spec.get("names") or {}
        self.group, self.version = group, version
        self.kind = str(names.get("kind", ""))
        self.list_kind = str(names.get("listKind") or f"{self.kind}List")
        self.plural = str(names.get("plural", ""))
        self.namespaced = spec.get("scope") == "Namespaced"
        self.served = served
        self.gvk = {"group": group, "version": version, "kind": self.kind}
        trimmed = group.removesuffix(".k8s.io")
        self.tag = f"{_operation_id(trimmed, capital=False)}_{version}"
        self.infix = _operation_id(trimmed, capital=True) + _operation_id(version, capital=True)

    def add(self, paths: Json, schemas: Json) -> None:
        model = model_name(self.group, self.version, self.kind)
        schemas[model] = self._kind_schema()
        schemas[model_name(self.group, self.version, self.list_kind)] = self._list_schema(model)
        for path, routes in self._routes(model):
            paths[path] = _path_item(routes)

    def _routes(self, model: str) -> Iterator[tuple[str, list[Json]]]:
        base = f"/apis/{self.group}/{self.version}"
        root = f"{base}/{self.plural}"
        listed = _SCHEMAS + model_name(self.group, self.version, self.list_kind)
        sample, status = _SCHEMAS + model, _SCHEMAS + _META + "Status"
        if self.namespaced:
            everywhere = self._route(root, "", ("GET", "list", "list"), listed)
            everywhere["operationId"] = f"list{self.infix}{self.kind}ForAllNamespaces"
            yield root, [everywhere]
            root = f"{base}/namespaces/{{namespace}}/{self.plural}"
        yield (
            root,
            [
                self._route(root, "", ("GET", "list", "list"), listed),
                self._route(root, "", ("POST", "post", "create"), sample, sample),
                self._route(root, "", ("DELETE", "deletecollection", "deletecollection"), status),
            ],
        )
        yield f"{root}/{{name}}", self._object_routes(root, "", sample)
        subresources = self.served.get("subresources") or {}
        if "status" in subresources:
            yield f"{root}/{{name}}/status", self._object_routes(root, "status", sample)
        if "scale" in subresources:
            scale = _SCHEMAS + "io.k8s.api.autoscaling.v1.Scale"
            yield f"{root}/{{name}}/scale", self._object_routes(root, "scale", scale)

    def _object_routes(self, root: str, sub: str, sample: str) -> list[Json]:
        patch = _SCHEMAS + _META + "Patch"
        status = _SCHEMAS + _META + "Status"
        routes = [
            self._route(root, sub, ("GET", "get", "read"), sample),
            self._route(root, sub, ("PUT", "put", "replace"), sample, sample),
            self._route(root, sub, ("PATCH", "patch", "patch"), sample, patch),
        ]
        if not sub:
            options = _SCHEMAS + _META + "DeleteOptions"
            routes.insert(
                2, self._route(root, sub, ("DELETE", "delete", "delete"), status, options)
            )
        return routes

    def _route(
        self, root: str, sub: str, verbs: tuple[str, str, str], sample: str, body: str = ""
    ) -> Json:
        method, action, operation = verbs
        path = (
            f"{root}/{{name}}" if operation not in ("list", "create", "deletecollection") else root
        )
        parameters = [_parameter("pretty")]
        if "{namespace}" in path:
            parameters.append(_parameter("namespace"))
        if "{name}" in path:
            parameters.append({**_parameter("name"), "description": f"name of the {self.kind}"})
        parameters += [_parameter(name, method.lower()) for name in _PARAMETERS[action]]
        route: Json = {
            "method": method.lower(),
            "tags": [self.tag],
            "description": self._description(sub, operation),
            "operationId": self._operation(sub, operation),
            "parameters": parameters,
        }
        if body:
            route["requestBody"] = _request_body(body, patch=method == "PATCH")
            if action == "delete":
                del route["requestBody"]["required"]
        codes = _CODES.get(action, (("200", "OK"),))
        route["responses"] = {code: _response(text, sample) for code, text in codes}
        route["responses"]["401"] = {"description": "Unauthorized"}
        route["x-kubernetes-action"] = action
        route["x-kubernetes-group-version-kind"] = dict(self.gvk)
        return route

    def _description(self, sub: str, operation: str) -> str:
        article = {"list": " objects of kind ", "read": " the specified "}.get(operation, "")
        article = " the specified " if operation in ("replace", "patch") else article
        if operation in ("create", "delete"):
            article = _article(self.kind)
        of = f" {sub} of" if sub else ""
        if operation == "patch":
            return f"partially update{of}{article}{self.kind}"
        if operation == "deletecollection":
            return f"delete collection of{of + ' a' if of else ''} {self.kind}"
        return f"{operation}{of}{article}{self.kind}"

    def _operation(self, sub: str, operation: str) -> str:
        scope = "Namespaced" if self.namespaced else ""
        verb, rest = operation, ""
        if operation == "deletecollection":
            verb, rest = "delete", "Collection"
        return f"{verb}{self.infix}{rest}{scope}{self.kind}{sub.title()}"

    def _kind_schema(self) -> Json:
        raw = (self.served.get("schema") or {}).get("openAPIV3Schema")
        schema: Json = _unfolded(raw) if isinstance(raw, Mapping) else {"type": "object"}
        if isinstance(raw, Mapping):
            properties = schema.setdefault("properties", {})
            properties["metadata"] = _ref(_META + "ObjectMeta", _OBJECT_META)
            properties.update(_type_meta())
            schema["properties"] = dict(sorted(properties.items()))
        schema["x-kubernetes-group-version-kind"] = [dict(sorted(self.gvk.items()))]
        return schema | self._selectable()

    def _selectable(self) -> Json:
        """The version's ``selectableFields``, as the kind's and its list's schemas name them."""
        fields = self.served.get("selectableFields") or ()
        paths = [
            {"fieldPath": str(field.get("jsonPath", "")).removeprefix(".")} for field in fields
        ]
        return {"x-kubernetes-selectable-fields": paths} if paths else {}

    def _list_schema(self, model: str) -> Json:
        items = f"List of {self.plural}. More info: {_DOCS}"
        properties = {
            **_type_meta(),
            "items": {"description": items, "type": "array", "items": {"$ref": _SCHEMAS + model}},
            "metadata": _ref(_META + "ListMeta", _LIST_META),
        }
        gvk = {"group": self.group, "kind": self.list_kind, "version": self.version}
        return {
            "description": f"{self.list_kind} is a list of {self.kind}",
            "type": "object",
            "required": ["items"],
            "properties": dict(sorted(properties.items())),
            "x-kubernetes-group-version-kind": [gvk],
        } | self._selectable()


def _path_item(routes: list[Json]) -> Json:
    """The operations of one path; the parameters all of them take are the path's, as
    kube-openapi's builder hoists them."""
    names = [{(p["name"], p["in"]) for p in route["parameters"]} for route in routes]
    shared = set.intersection(*names)
    item: Json = {}
    common: dict[tuple[str, str], Json] = {}
    for method in _OPERATIONS:
        for route in routes:
            if route["method"] != method:
                continue
            operation = {key: value for key, value in route.items() if key != "method"}
            own = []
            for parameter in route["parameters"]:
                key = (parameter["name"], parameter["in"])
                if key in shared:
                    common[key] = parameter
                else:
                    own.append(parameter)
            operation["parameters"] = sorted(own, key=_by_name)
            if not own:
                del operation["parameters"]
            item[method] = _ordered(operation)
    item["parameters"] = sorted(common.values(), key=_by_name)
    return item


def _ordered(operation: Json) -> Json:
    order = ("tags", "description", "operationId", "parameters", "requestBody", "responses")
    return {key: operation[key] for key in (*order, *operation) if key in operation}


def _by_name(parameter: Json) -> tuple[str, str]:
    return (str(parameter["name"]), str(parameter["in"]))


def _request_body(ref: str, *, patch: bool) -> Json:
    types = _PATCHES if patch else ("application/json", "application/yaml")
    return {"content": {kind: {"schema": {"$ref": ref}} for kind in types}, "required": True}


def _response(description: str, ref: str) -> Json:
    content = {kind: {"schema": {"$ref": ref}} for kind in ("application/json", "application/yaml")}
    return {"description": description, "content": content}


def _article(noun: str) -> str:
    if noun.endswith("s") and not noun.endswith("ss"):
        return " "
    return " an " if noun[:1].lower() in "aeiou" and noun else " a "


def _operation_id(text: str, *, capital: bool) -> str:
    words = [word for word in re.split(r"[^A-Za-z0-9]+", text) if word]
    joined = "".join(word[:1].upper() + word[1:] for word in words)
    return joined if capital else joined[:1].lower() + joined[1:]


def _ref(name: str, description: str) -> Json:
    return {"description": description, "allOf": [{"$ref": _SCHEMAS + name}]}


def _type_meta() -> Json:
    """``apiVersion`` and ``kind`` as ``TypeMeta`` documents them (any built-in kind has them)."""
    properties = catalog().data["schemas"]["io.k8s.api.core.v1.ConfigMap"]["properties"]
    return {key: dict(properties[key]) for key in ("apiVersion", "kind")}


def _unfolded(node: Any) -> Any:
    """A structural schema as the API server publishes it: ``x-kubernetes-int-or-string`` as
    an ``anyOf`` of integer and string, embedded resources with their type and object meta."""
    if isinstance(node, (list, tuple)):
        return [_unfolded(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    result = {key: _unfolded(value) for key, value in node.items()}
    if result.get("x-kubernetes-int-or-string") and "anyOf" not in result:
        result["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if result.get("x-kubernetes-embedded-resource"):
        properties = result.setdefault("properties", {})
        meta = _type_meta()
        properties["apiVersion"] = {**meta["apiVersion"], "description": _EMBEDDED_API_VERSION}
        properties["kind"] = {**meta["kind"], "description": _EMBEDDED_KIND}
        properties["metadata"] = _ref(_META + "ObjectMeta", _OBJECT_META)
        required = list(result.get("required") or ())
        result["required"] = required + [k for k in ("kind", "apiVersion") if k not in required]
    return result


def _referenced(paths: Json, schemas: Json) -> set[str]:
    """The built-in schemas the document refers to, and those they refer to."""
    raw = catalog().data["schemas"]
    found: set[str] = set()
    pending = [*_refs(paths), *_refs(schemas)]
    while pending:
        name = pending.pop()
        if name in found or name in schemas or name not in raw:
            continue
        found.add(name)
        pending.extend(_refs(raw[name]))
    return found


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(_SCHEMAS)
            else:
                yield from _refs(value)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _refs(item)


@functools.cache
def _parameters() -> Mapping[tuple[str, str], Json]:
    """Every parameter of the built-in documents' paths, by name and the method of its
    operation (``""`` for a path's), the first one met: a patch's ``fieldManager`` says
    more than others'."""
    found: dict[tuple[str, str], Json] = {}
    for document in catalog().data["documents"].values():
        for item in document["paths"].values():
            operations = [("", item)]
            operations += [(m, op) for m, op in item.items() if isinstance(op, Mapping)]
            for method, operation in operations:
                for parameter in operation.get("parameters") or ():
                    found.setdefault((str(parameter["name"]), method), parameter)
                    found.setdefault((str(parameter["name"]), ""), parameter)
    return found


def _parameter(name: str, method: str = "") -> Json:
    found = _parameters()
    return dict(found.get((name, method)) or found[(name, "")])


def _builtin_schema(name: str) -> Any:
    data = catalog().data
    if name in _VARIANTS:
        return _merged_variants(name)
    return data["schemas"][name]


_VARIANTS = (_META + "DeleteOptions", _META + "WatchEvent")
"""Schemas whose ``x-kubernetes-group-version-kind`` lists every group: here, the groups of all
vendored documents."""


@functools.cache
def _merged_variants(name: str) -> Json:
    data = catalog().data
    variants = [data["schemas"][name]] + [
        document["own"][name] for document in data["documents"].values() if name in document["own"]
    ]
    kinds = {
        (gvk["group"], gvk["version"]): gvk
        for variant in variants
        for gvk in variant.get("x-kubernetes-group-version-kind") or ()
    }
    return {**variants[0], "x-kubernetes-group-version-kind": [kinds[k] for k in sorted(kinds)]}
