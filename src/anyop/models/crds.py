"""CustomResourceDefinitions from typed resources: one CRD per kind, one version per class.

Classes of the same group and plural are versions of one kind: exactly one of them is the
storage version (``storage=True``, or the only one). The schema of each version comes from
:func:`~anyop.models.schemas.resource_schema` and is checked by
:func:`~anyop.models.structural.structural_violations` before it is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from anyop.models.resources import CustomResource, ResourceInfo
from anyop.models.schemas import SchemaError, resource_schema
from anyop.models.structural import structural_violations

__all__ = ["crd_manifest", "crd_manifests"]


def crd_manifests(classes: Iterable[type[CustomResource]]) -> list[dict[str, Any]]:
    """One CRD per kind among ``classes``, sorted by the CRD's name.

    Raises:
        SchemaError: A model cannot be expressed structurally, or the versions of a kind
            disagree (kind, scope, names) or have no single storage version.
    """
    kinds: dict[str, list[type[CustomResource]]] = {}
    for cls in classes:
        versions = kinds.setdefault(cls.__resource__.crd_name, [])
        if cls not in versions:
            versions.append(cls)
    return [crd_manifest(kinds[name]) for name in sorted(kinds)]


def crd_manifest(versions: Sequence[type[CustomResource]]) -> dict[str, Any]:
    """The CRD of one kind, from the classes of its versions."""
    infos = [cls.__resource__ for cls in versions]
    first = infos[0]
    _check_agreement(infos)
    storage = _storage_version(infos)
    names: dict[str, Any] = {
        "kind": first.kind,
        "listKind": f"{first.kind}List",
        "plural": first.plural,
        "singular": first.singular,
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": first.crd_name},
        "spec": {
            "group": first.group,
            "names": names,
            "scope": first.scope,
            "versions": [
                _version(cls, storage=cls.__resource__.version == storage) for cls in versions
            ],
        },
    }


def _version(cls: type[CustomResource], *, storage: bool) -> dict[str, Any]:
    info = cls.__resource__
    schema = resource_schema(cls)
    violations = structural_violations(schema)
    if violations:
        raise SchemaError(f"{cls.__qualname__}: the schema is not structural: {violations}")
    version: dict[str, Any] = {
        "name": info.version,
        "served": info.served,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema},
    }
    subresources = _subresources(info, has_status="status" in schema["properties"])
    if subresources:
        version["subresources"] = subresources
    if info.printer_columns:
        version["additionalPrinterColumns"] = [dict(column) for column in info.printer_columns]
    return version


def _subresources(info: ResourceInfo, *, has_status: bool) -> dict[str, Any]:
    subresources: dict[str, Any] = {}
    if has_status:
        subresources["status"] = {}
    if info.scale is not None:
        subresources["scale"] = dict(info.scale)
    return subresources


def _check_agreement(infos: Sequence[ResourceInfo]) -> None:
    first = infos[0]
    seen: set[str] = set()
    for info in infos:
        if info.version in seen:
            raise SchemaError(f"{first.crd_name}: the version {info.version} is declared twice.")
        seen.add(info.version)
        same = (info.kind, info.scope, info.singular, info.short_names, info.categories)
        if same != (first.kind, first.scope, first.singular, first.short_names, first.categories):
            raise SchemaError(
                f"{first.crd_name}: the versions {first.version} and {info.version} disagree on "
                f"the kind, scope, singular, short names or categories."
            )


def _storage_version(infos: Sequence[ResourceInfo]) -> str:
    if len(infos) == 1:
        return infos[0].version
    marked = [info.version for info in infos if info.storage]
    if len(marked) != 1:
        versions = ", ".join(info.version for info in infos)
        raise SchemaError(
            f"{infos[0].crd_name}: exactly one of the versions {versions} must say storage=True; "
            f"{len(marked)} do."
        )
    return marked[0]
