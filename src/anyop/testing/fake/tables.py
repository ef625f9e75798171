"""Server-side Table views of objects and lists (``Accept: application/json;as=Table;...``).

Pure. A :class:`TablePrinter` holds a resource's column definitions and computes each object's
cells: built-in kinds with the real server's columns (from ``data/tables.json``, which
``scripts/fake_tables.py`` asks of a real kube-apiserver) and cells from
:mod:`~anyop.testing.fake.printers`; custom resources with their CRD's
``additionalPrinterColumns`` (JSONPath, typed cells) or the implicit ``Age`` column. Ages are
counted on the fake's own clock (``now``), as the real server counts them on its.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from anyop.testing.fake.ages import ager
from anyop.testing.fake.column_paths import first_value, go_text
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.more_printers import MORE_PRINTERS
from anyop.testing.fake.network_printers import NETWORK_PRINTERS
from anyop.testing.fake.pod_printer import print_pod
from anyop.testing.fake.printers import PRINTERS, Age, Printed
from anyop.testing.fake.storage_printers import STORAGE_PRINTERS

__all__ = [
    "TablePrinter",
    "TableRequest",
    "go_type",
    "include_option",
    "partial",
    "printer_of",
    "table_of",
]

_INCLUDE = ("Metadata", "Object", "None", "")
_PRINTERS = {**PRINTERS, **MORE_PRINTERS, **NETWORK_PRINTERS, **STORAGE_PRINTERS,
             ("", "pods"): print_pod}  # fmt: skip
_Cells = Callable[[Mapping[str, Any], Age], Printed]


@functools.cache
def _catalog() -> dict[str, Any]:
    text = resources.files("anyop.testing.fake").joinpath("data/tables.json").read_text()
    found: dict[str, Any] = json.loads(text)["resources"]
    return found


def _meta_description(name: str) -> str:
    """An ``ObjectMeta`` field's description, as the default columns carry it."""
    defaults = _catalog()["apiextensions.k8s.io/v1/customresourcedefinitions"]["columns"]
    return str({"name": defaults[0], "creationTimestamp": defaults[1]}[name]["description"])


@dataclasses.dataclass(frozen=True, slots=True)
class TablePrinter:
    """The columns of a resource's Tables and how each object fills them."""

    columns: tuple[dict[str, Any], ...]
    cells: _Cells
    default: bool = False  # the default convertor's (its empty lists have no rows at all)


def _custom_cell(column: Mapping[str, Any], obj: Mapping[str, Any], age: Age) -> Any:
    value = first_value(obj, column.get("jsonPath", ""))
    match column.get("type"):
        case "string":
            return None if value is None else go_text(value)
        case "integer" if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        case "number" if isinstance(value, int | float) and not isinstance(value, bool):
            whole = isinstance(value, float) and value.is_integer() and abs(value) < 1e21
            return int(value) if whole else value  # Go writes a float64 2.0 as 2
        case "boolean" if isinstance(value, bool):
            return value
        case "date" if isinstance(value, str):
            return age(value)
    return None


def _custom_printer(crd_columns: list[Mapping[str, Any]]) -> TablePrinter:
    columns = crd_columns or [{"name": "Age", "type": "date", "jsonPath":
                               ".metadata.creationTimestamp",
                               "description": _meta_description("creationTimestamp")}]  # fmt: skip
    definitions = [_name_column()]
    for column in columns:
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {column.get('jsonPath')}"
        )
        definitions.append({"name": column.get("name", ""), "type": column.get("type", ""),
                            "format": column.get("format", ""), "description": description,
                            "priority": int(column.get("priority") or 0)})  # fmt: skip

    def cells(obj: Mapping[str, Any], age: Age) -> Printed:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(_custom_cell(column, obj, age) for column in columns)], []

    return TablePrinter(tuple(definitions), cells)


def _name_column() -> dict[str, Any]:
    return {"name": "Name", "type": "string", "format": "name",
            "description": _meta_description("name"), "priority": 0}  # fmt: skip


def _unprinted(columns: list[Mapping[str, Any]]) -> _Cells:
    """Cells for a kind whose printer the fake lacks: its name and age, the others unset."""

    def cells(obj: Mapping[str, Any], age: Age) -> Printed:
        metadata = obj.get("metadata") or {}
        found = {"Name": metadata.get("name", ""), "Age": age(metadata.get("creationTimestamp"))}
        return [found.get(str(column.get("name"))) for column in columns], []

    return cells


def printer_of(kind: Kind, crd: Mapping[str, Any] | None = None) -> TablePrinter:
    """How a resource's objects are printed.

    Args:
        kind: The resource.
        crd: The CustomResourceDefinition of a custom resource (its printer columns).
    """
    if kind.custom:
        versions = ((crd or {}).get("spec") or {}).get("versions") or ()
        served: Mapping[str, Any] = next((v for v in versions if v.get("name") == kind.version), {})
        return _custom_printer(list(served.get("additionalPrinterColumns") or ()))
    entry = _catalog().get(f"{kind.group}/{kind.version}/{kind.plural}")
    columns = list(entry["columns"]) if entry else [_name_column(), _created_column()]
    default = [c["name"] for c in columns] == ["Name", "Created At"]
    if default:
        return TablePrinter(tuple(columns), PRINTERS[("", "default")], default=True)
    found = _PRINTERS.get((kind.group, kind.plural))
    return TablePrinter(tuple(columns), found or _unprinted(columns))


def _created_column() -> dict[str, Any]:
    return {"name": "Created At", "type": "date", "format": "",
            "description": _meta_description("creationTimestamp"), "priority": 0}  # fmt: skip


def go_type(kind: Kind, *, listed: bool) -> str:
    """The Go type kube-apiserver names in its refusals (``*core.ConfigMapList``)."""
    if kind.custom:
        return "*unstructured.UnstructuredList" if listed else "*unstructured.Unstructured"
    entry = _catalog().get(f"{kind.group}/{kind.version}/{kind.plural}")
    list_type = str(entry["listType"]) if entry else f"*{kind.group or 'core'}.{kind.kind}List"
    return list_type if listed else list_type.removesuffix("List")


def include_option(query: Mapping[str, str]) -> str:
    """The ``includeObject`` option.

    Raises:
        ValueError: An unknown value, with the real server's message.
    """
    value = query.get("includeObject", "")
    if value not in _INCLUDE:
        raise ValueError(
            f"Unable to convert to Table as requested: includeObject: Invalid value: "
            f"{go_quoted(value)}: must be 'Metadata', 'Object', 'None', or empty"
        )
    return value


def partial(obj: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """An object's ``PartialObjectMetadata``."""
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": dict(obj.get("metadata") or {})}  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class TableRequest:
    """What a Table is made for: its ``meta.k8s.io`` version, ``includeObject``, whether the
    column definitions are left out (every watch event but the first), and the time."""

    api_version: str
    include: str
    now: str
    headers: bool = True


def _row(kind: Kind, printed: Printed, obj: Mapping[str, Any], ask: TableRequest) -> dict[str, Any]:
    cells, conditions = printed
    row: dict[str, Any] = {"cells": cells}
    if conditions:
        row["conditions"] = conditions
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if ask.include == "Object" and "k8s.io/initial-events-end" not in annotations:
        row["object"] = {"kind": kind.kind, "apiVersion": kind.api_version, **obj}
    elif ask.include == "None" and "k8s.io/initial-events-end" not in annotations:
        row["object"] = None
    else:
        row["object"] = partial(obj, ask.api_version)
    return row


def table_of(
    kind: Kind, printer: TablePrinter, document: Mapping[str, Any], ask: TableRequest
) -> dict[str, Any]:
    """The Table of an object or a list (``items``) of ``kind``."""
    listed = "items" in document
    objects = list(document.get("items") or ()) if listed else [document]
    metadata = document.get("metadata") or {}
    table_meta: dict[str, Any] = {"resourceVersion": metadata.get("resourceVersion", "")}
    for key in ("continue", "remainingItemCount"):
        if listed and metadata.get(key):
            table_meta[key] = metadata[key]
    age = ager(ask.now)
    rows = [_row(kind, printer.cells(obj, age), obj, ask) for obj in objects]
    return {
        "kind": "Table",
        "apiVersion": ask.api_version,
        "metadata": table_meta,
        "columnDefinitions": list(printer.columns) if ask.headers else None,
        "rows": None if printer.default and not rows else rows,
    }
