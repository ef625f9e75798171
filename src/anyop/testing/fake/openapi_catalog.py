"""Kubernetes' own definitions of the built-in kinds, from its OpenAPI v3 documents.

Pure (after one read of the vendored file). ``data/openapi.json.gz`` is made by
``scripts/fake_openapi.py`` from ``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` module the
local control plane is built from: for each group version operators meet, each resource's kind,
scope, verbs and subresources (from the API paths) and the schemas of the kinds (without their
descriptions). The fake serves those resources, checks and prunes their objects by those schemas,
and merges strategic patches by their ``x-kubernetes-patch-*`` extensions.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import gzip
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

__all__ = ["Catalog", "Resource", "catalog"]

Schema = Mapping[str, Any]


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


class Catalog:
    """The resources and the schemas of the vendored OpenAPI documents."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.source = str(document.get("source", ""))
        self.schemas: Mapping[str, Schema] = document["schemas"]
        self.resources: list[Resource] = []
        for group_version, entries in document["groupVersions"].items():
            group, _, version = str(group_version).rpartition("/")
            for plural, entry in entries.items():
                subresources = {
                    name: tuple(sub.get("verbs") or ())
                    for name, sub in (entry.get("subresources") or {}).items()
                }
                self.resources.append(
                    Resource(
                        group,
                        version,
                        plural,
                        entry["kind"],
                        bool(entry["namespaced"]),
                        tuple(entry["verbs"]),
                        subresources,
                    )
                )
        self._merged: dict[int, tuple[Schema, str]] = {}
        self._by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in self.schemas.items():
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
        target = self.schemas.get(ref, {})
        if len(schema) == 1:
            return target, ref
        key = id(schema)  # the catalog's schemas live as long as it does
        found = self._merged.get(key)
        if found is None:
            extra = {name: value for name, value in schema.items() if name != "$ref"}
            found = self._merged[key] = ({**target, **extra}, ref)
        return found


@functools.cache
def catalog() -> Catalog:
    """The vendored catalog, read once per process.

    Its lists are tuples: then the garbage collector stops tracking the catalog's tens of
    thousands of containers (they hold nothing it could collect), instead of walking them at
    every full collection of the process.
    """
    data = resources.files("anyop.testing.fake").joinpath("data/openapi.json.gz").read_bytes()
    document = json.loads(gzip.decompress(data), object_pairs_hook=_frozen_lists)
    catalog = Catalog(document)
    gc.collect()  # untracks the catalog's containers now, bottom up, not during requests
    return catalog


def _frozen_lists(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {key: tuple(value) if isinstance(value, list) else value for key, value in pairs}
