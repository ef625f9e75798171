"""Kubernetes' own definitions of the built-in kinds, from its OpenAPI v3 documents.

Pure (after one read of the vendored file). ``data/openapi.json.xz`` is made by
``scripts/fake_openapi.py`` from ``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module the
local control plane is built from: the documents kube-apiserver serves at ``/openapi/v3`` for
the group versions the fake serves, with their schemas stored once. From their paths come each
resource's kind, scope, verbs and subresources; from their schemas (read here without their
descriptions) the fake checks and prunes objects and merges strategic patches by their
``x-kubernetes-patch-*`` extensions; :mod:`~anyop.testing.fake.served_openapi` serves them whole.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import json
import lzma
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

__all__ = ["Catalog", "Resource", "catalog"]

Schema = Mapping[str, Any]
_DROPPED = ("description", "example")
_MEMBER = re.compile(
    r"^(?P<base>.*?)(?:/namespaces/\{namespace\})?/(?P<plural>[^/{]+)"
    r"(?:/\{name\}(?:/(?P<sub>[^/{]+))?)?$"
)
_REF_PREFIX = "#/components/schemas/"


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    """One resource of a group version as the API paths define it.

    Attributes:
        group: The API group (``""`` for the core group).
        version: The version.
        plural: The resource name in URLs.
        kind: The kind of its objects.
        namespaced: Objects live in namespaces.
        verbs: The verbs of the resource itself (``watch`` with ``list``).
        subresources: The subresources of an object: name to the verbs they take.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: Mapping[str, tuple[str, ...]]


class _Stripped(Mapping[str, Schema]):
    """The schemas without descriptions, ``allOf: [$ref]`` as ``$ref``, and ``$ref`` by bare
    name: what the fake's checks read. Each is made on its first use."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw
        self._made: dict[str, Schema] = {}

    def __getitem__(self, name: str) -> Schema:
        found = self._made.get(name)
        if found is None:
            found = self._made[name] = _stripped(self._raw[name])
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def _stripped(node: Any) -> Any:
    if isinstance(node, Mapping):
        refs = node.get("allOf")
        if isinstance(refs, (list, tuple)) and len(refs) == 1 and "$ref" in refs[0]:
            node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": refs[0]["$ref"]}
        result = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "$ref" and isinstance(value, str):
                value = value.removeprefix(_REF_PREFIX)
            if key == "properties" and isinstance(value, Mapping):
                # Fields named like the dropped keywords (JSONSchemaProps' own "description")
                # stay: only the schemas' keywords go.
                result[key] = {name: _stripped(sub) for name, sub in value.items()}
                continue
            result[key] = _stripped(value)
        return result
    if isinstance(node, (list, tuple)):
        return tuple(_stripped(item) for item in node)
    return node


class Catalog:
    """The vendored OpenAPI documents, and the resources and schemas they define."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.source = str(document.get("source", ""))
        self.data = document
        """The vendored documents as stored (see ``scripts/fake_openapi.py``)."""
        self.schemas: Mapping[str, Schema] = _Stripped(document["schemas"])
        self.resources: list[Resource] = [
            resource
            for prefix, entry in document["documents"].items()
            for resource in _resources(entry["paths"], prefix)
        ]
        self._merged: dict[int, tuple[Schema, str]] = {}
        self._targets: dict[str, Schema] = {}
        self._by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in document["schemas"].items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                key = (str(gvk.get("group", "")), str(gvk["version"]), str(gvk["kind"]))
                self._by_kind.setdefault(key, name)

    def schema_name(self, group: str, version: str, kind: str) -> str | None:
        """The name of the schema of a kind (e.g. ``io.k8s.api.core.v1.Pod``), if known."""
        return self._by_kind.get((group, version, kind))

    def resolve(self, schema: Schema) -> tuple[Schema, str]:
        """The schema itself, or what its ``$ref`` names (with the referring keys over it), and
        that name (``""`` for an inline schema)."""
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema, ""
        target = self._targets.get(ref)
        if target is None:
            target = self._targets[ref] = self.schemas.get(ref, {})
        if len(schema) == 1:
            return target, ref
        key = id(schema)  # the catalog's schemas live as long as it does
        found = self._merged.get(key)
        if found is None:
            extra = {name: value for name, value in schema.items() if name != "$ref"}
            found = self._merged[key] = ({**target, **extra}, ref)
        return found


def _resources(paths: Mapping[str, Any], prefix: str) -> Iterator[Resource]:
    """The resources of one group version's document, from its paths' operations."""
    group_version = prefix.removeprefix("api/").removeprefix("apis/")
    group, _, version = group_version.rpartition("/")
    entries: dict[str, dict[str, Any]] = {}
    watched = set()  # (a list is no watch: componentstatuses' has no watch path)
    for path, item in paths.items():
        match = _MEMBER.match(path.replace("/watch/", "/", 1))
        if match is None or match["base"] != f"/{prefix}":
            continue
        if "/watch/" in path:
            watched.add(match["plural"])
            continue
        for operation in item.values():
            if isinstance(operation, Mapping) and "x-kubernetes-action" in operation:
                entry = entries.setdefault(
                    match["plural"],
                    {"kind": "", "namespaced": False, "verbs": set(), "subresources": {}},
                )
                _add_operation(entry, operation, match["sub"], namespaced="{namespace}" in path)
    for plural, entry in entries.items():
        subresources = {name: tuple(sorted(verbs)) for name, verbs in entry["subresources"].items()}
        verbs = tuple(sorted(entry["verbs"] | ({"watch"} if plural in watched else set())))
        yield Resource(
            group, version, plural, entry["kind"], entry["namespaced"], verbs, subresources
        )


def _add_operation(
    entry: dict[str, Any], operation: Mapping[str, Any], sub: str | None, *, namespaced: bool
) -> None:
    gvk = operation.get("x-kubernetes-group-version-kind") or {}
    entry["namespaced"] |= namespaced
    action = operation["x-kubernetes-action"]
    if sub:
        entry["subresources"].setdefault(sub, set()).add(action)
        return
    entry["kind"] = entry["kind"] or gvk.get("kind", "")
    verb = {"put": "update", "post": "create"}.get(action, action)
    entry["verbs"].add(verb)


@functools.cache
def catalog() -> Catalog:
    """The vendored catalog, read once per process.

    Its lists are tuples: then the garbage collector stops tracking the catalog's tens of
    thousands of containers (they hold nothing it could collect), instead of walking them at
    every full collection of the process.
    """
    data = resources.files("anyop.testing.fake").joinpath("data/openapi.json.xz").read_bytes()
    document = json.loads(lzma.decompress(data), object_pairs_hook=_frozen_lists)
    catalog = Catalog(document)
    gc.collect()  # untracks the catalog's containers now, bottom up, not during requests
    return catalog


def _frozen_lists(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {key: tuple(value) if isinstance(value, list) else value for key, value in pairs}
