"""The checks of a CRD version's subresources, printer columns and selectable fields, as
apiextensions-apiserver's ``ValidateCustomResourceDefinition`` makes them (for
:mod:`.crd_checks`, which says where they come among the CRD's errors).

Pure. ``at`` is the path of what is checked in the internal version: a version's
(``spec.versions[<i>]``), or the spec's where every version has it alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.field_errors import duplicate, required_because
from anyop.testing.fake.statuses import Cause

__all__ = ["MAX_SELECTABLE", "column_causes", "selectable_causes", "subresource_causes"]

Causes = list[tuple[str, Cause]]

_COLUMN_TYPES = "boolean,date,integer,number,string"
_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
MAX_SELECTABLE = 8
"""How many selectable fields a version may have."""
_SELECTABLE_TYPES = ("string", "boolean", "integer")
_SELECTABLE_TYPE = ("must point to a field of type string, boolean or integer. Enum string "
                    "fields and strings with formats are allowed.")  # fmt: skip


def subresource_causes(value: Any, at: str) -> Causes:
    """``ValidateCustomResourceDefinitionSubresources``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("scale"), Mapping):
        return []
    scale = value["scale"]
    causes: Causes = []
    for key, under in (("specReplicasPath", "spec"), ("statusReplicasPath", "status")):
        path, given = f"{at}.scale.{key}", scale.get(key) or ""
        if not given:
            causes.append(required_because(path))
        elif errors := _simple_path(str(given), path):
            causes += errors
        elif not str(given).startswith(f".{under}."):
            causes.append(field_invalid(path, given, f"should be a json path under .{under}"))
    selector = scale.get("labelSelectorPath")
    if isinstance(selector, str) and selector:
        path = f"{at}.scale.labelSelectorPath"
        if errors := _simple_path(selector, path):
            causes += errors
        elif not selector.startswith((".spec.", ".status.")):
            detail = "should be a json path under either .spec or .status"
            causes.append(field_invalid(path, selector, detail))
    return causes


def _simple_path(text: str, path: str) -> Causes:
    """``validateSimpleJSONPath``."""
    if not text.startswith("."):
        return [field_invalid(path, text, "must be a simple json path starting with .")]
    return []


def column_causes(value: Any, at: str) -> Causes:
    """``ValidateCustomResourceColumnDefinition`` of each printer column."""
    causes: Causes = []
    for index, column in enumerate(value or ()):
        if not isinstance(column, Mapping):
            continue
        path = f"{at}.additionalPrinterColumns[{index}]"
        if not column.get("name"):
            causes.append(required_because(f"{path}.name"))
        kind = column.get("type") or ""
        if not kind:
            causes.append(required_because(f"{path}.type", f"must be one of {_COLUMN_TYPES}"))
        elif kind not in _COLUMN_TYPES.split(","):
            causes.append(field_invalid(f"{path}.type", kind, f"must be one of {_COLUMN_TYPES}"))
        form = column.get("format") or ""
        if form and form not in _COLUMN_FORMATS.split(","):
            detail = f"must be one of {_COLUMN_FORMATS}"
            causes.append(field_invalid(f"{path}.format", form, detail))
        json_path = column.get("jsonPath") or ""
        if not json_path:
            causes.append(required_because(f"{path}.JSONPath"))
        else:
            causes += _simple_path(str(json_path), f"{path}.JSONPath")
    return causes


def selectable_causes(
    fields: Any, wrapper: Any, at: str, allowed: bool, *, per_version: bool
) -> Causes:
    """A version's (or the spec's) selectable fields, which need its schema."""
    schema = wrapper.get("openAPIV3Schema") if isinstance(wrapper, Mapping) else None
    if not isinstance(schema, Mapping):
        detail = (
            "may only be set when `version.schema.openAPIV3Schema` is not included"
            if per_version
            else "may only be set when validations.schema is included"
        )
        return [field_invalid(f"{at}.selectableFields", "", detail)]  # fmt: skip
    return _selectable(fields, schema, f"{at}.selectableFields", allowed)


def _selectable(fields: Any, schema: Mapping[str, Any], at: str, allowed: bool) -> Causes:
    """``ValidateCustomResourceSelectableFields``."""
    causes: Causes = []
    unique: set[str] = set()
    for index, entry in enumerate(fields or ()):
        path = f"{at}[{index}].jsonPath"
        json_path = str((entry or {}).get("jsonPath") or "") if isinstance(entry, Mapping) else ""
        if not json_path:
            causes.append(required_because(path))
            continue
        found = _field_path(json_path, schema)
        if isinstance(found, str):
            causes.append(field_invalid(path, json_path, f"is an invalid path: {found}"))
            continue
        steps, node = found
        if steps and steps[0] == "metadata":
            causes.append(field_invalid(path, json_path, "must not point to fields in metadata"))
        if not isinstance(node, Mapping) or node.get("type") not in _SELECTABLE_TYPES:
            causes.append(field_invalid(path, json_path, _SELECTABLE_TYPE))
        key = "\0".join(steps)
        if key in unique:
            causes.append(duplicate(path, json_path))
        else:
            unique.add(key)
    if len(unique) > MAX_SELECTABLE and not allowed:
        message = f"Too many: {len(unique)}: must have at most {MAX_SELECTABLE} items"
        causes.append((at, {"reason": "FieldValueTooMany", "message": message}))
    return causes


def _field_path(text: str, schema: Mapping[str, Any]) -> tuple[list[str], Any] | str:
    """``cel.ValidFieldPath`` without the array notation: the steps and the schema found, or
    the error."""
    tokens = re.findall(r"[.\[\]]|[^.\[\]]+", text)
    steps: list[str] = []
    node: Any = schema
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token == "[":
            return "array notation is not allowed"
        if token != ".":
            return f"expected [ or . but got: {token}"
        if position + 1 >= len(tokens):
            return "unexpected end of JSON path"
        name = tokens[position + 1]
        position += 2
        properties = node.get("properties") if isinstance(node, Mapping) else None
        additional = node.get("additionalProperties") if isinstance(node, Mapping) else None
        if isinstance(properties, Mapping):
            if name not in properties:
                return "does not refer to a valid field"
            node = properties[name]
        elif isinstance(additional, Mapping):
            node = additional
        else:
            return "does not refer to a valid field"
        steps.append(name)
    return steps, node
