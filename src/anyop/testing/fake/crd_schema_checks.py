"""The checks of a CRD's schemas, as apiextensions-apiserver's ``ValidateCustomResourceDefinition``
makes them (``pkg/apis/apiextensions/validation``): each version's schema is required; a schema
must be structural (:mod:`.crd_structural`), its defaults valid for it, and its keywords ones a
CRD may use (``ValidateCustomResourceDefinitionOpenAPISchema``: ``uniqueItems``, the list and map
types, the rules' ``reason`` and ``fieldPath``...).

Pure. Paths are those of the internal version: ``spec.validation.openAPIV3Schema`` where every
version has the same schema (the conversion moves it there), else
``spec.versions[<i>].schema.openAPIV3Schema``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from anyop.testing.fake.crd_defaults import default_causes
from anyop.testing.fake.crd_structural import (
    field_invalid,
    shown,
    structural_causes,
    unsupported,
)
from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.statuses import Cause

__all__ = ["crd_schema_causes", "schema_has", "valid_field_path"]

Causes = list[tuple[str, Cause]]

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_META_FIELDS = ("metadata", "kind", "apiVersion")
_ROOT_ALLOWED = ("description", "type", "format", "title", "maximum", "exclusiveMaximum",
                 "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
                 "minItems", "uniqueItems", "multipleOf", "required", "items", "properties",
                 "externalDocs", "example", "x-kubernetes-preserve-unknown-fields",
                 "x-kubernetes-validations")  # fmt: skip
"""``allowedFieldsAtRootSchema`` (with the status subresource), as JSON names."""


@dataclass(frozen=True)
class _Options:
    valid_types: bool = True
    atomic_sets: bool = True
    map_list_keys: bool = True
    structural: bool = True
    defaults: str | None = None  # why defaults are forbidden here, if they are
    inside_meta: bool = False


def crd_schema_causes(crd: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> Causes:
    """The errors of a CRD's schemas (``old``: the stored CRD of an update, whose schemas relax
    the checks they would fail, as ``ValidateCustomResourceDefinitionUpdate`` does)."""
    spec = crd.get("spec") or {}
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    options = _Options()
    if old is not None:
        olds = [s for s in _schemas(old) if isinstance(s, Mapping)]
        options = _Options(
            valid_types=not any(schema_has(s, _invalid_type) for s in olds),
            atomic_sets=not any(schema_has(s, _non_atomic_set) for s in olds),
            map_list_keys=not any(
                schema_has(s, lambda n: bool(_map_list_keys(n, ""))) for s in olds
            ),
            structural=not any(_non_structural(s) for s in olds),
        )
    causes: Causes = []
    schemas = [v.get("schema") for v in versions]
    identical = bool(versions) and all(s == schemas[0] for s in schemas)
    for index, version in enumerate(versions):
        wrapper = version.get("schema")
        if not isinstance(wrapper, Mapping) or wrapper.get("openAPIV3Schema") is None:
            where = f"spec.versions[{index}].schema.openAPIV3Schema"
            causes.append((where, {"reason": "FieldValueRequired", "message": "Required value"}))
    if identical:
        status = any(_status_enabled(v) for v in versions)
        causes += _validation(schemas[0], status, options, "spec.validation")
    else:
        for index, version in enumerate(versions):
            at = f"spec.versions[{index}].schema"
            causes += _validation(version.get("schema"), _status_enabled(version), options, at)
    return causes


def _schemas(crd: Mapping[str, Any]) -> list[Any]:
    versions = (crd.get("spec") or {}).get("versions") or ()
    return [
        (v.get("schema") or {}).get("openAPIV3Schema") for v in versions if isinstance(v, Mapping)
    ]


def _status_enabled(version: Mapping[str, Any]) -> bool:
    return isinstance((version.get("subresources") or {}).get("status"), Mapping)


def _non_structural(schema: Mapping[str, Any]) -> bool:
    return unsupported(schema) is not None or bool(structural_causes(schema, ""))


def _validation(wrapper: Any, status: bool, options: _Options, path: str) -> Causes:
    """``validateCustomResourceDefinitionValidation``."""
    if not isinstance(wrapper, Mapping) or not isinstance(wrapper.get("openAPIV3Schema"), Mapping):
        return []
    schema: Mapping[str, Any] = wrapper["openAPIV3Schema"]
    at = f"{path}.openAPIV3Schema"
    causes: Causes = []
    if status:
        for key, value in schema.items():
            if value in (None, False, "", [], {}, 0) and key != "type":
                continue
            if key == "type":
                if value != "object":
                    detail = ('only "object" is allowed as the type at the root of the schema if '
                              "the status subresource is enabled")  # fmt: skip
                    causes.append(field_invalid(f"{at}.type", value, detail))
                    break
                continue
            if key not in _ROOT_ALLOWED:
                allowed = "[" + " ".join(_GO_NAMES) + "]"
                detail = (f"only {allowed} fields are allowed at the root of the schema if the "
                          "status subresource is enabled")  # fmt: skip
                causes.append(field_invalid(at, dict(schema), detail))
                break
    if schema.get("nullable"):
        causes.append(forbidden(f"{at}.nullable", "nullable cannot be true at the root"))
    init_error = unsupported(schema) if options.structural else None
    if options.structural and init_error is None:
        found = structural_causes(schema, at)
        causes += found or default_causes(schema, at)  # the defaults of a structural schema
    causes += _openapi(schema, at, options, root=True)
    if not causes and init_error is not None:
        causes.append(field_invalid(at, "", init_error))
    return causes


_GO_NAMES = ("Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
             "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
             "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs",
             "Example", "XPreserveUnknownFields", "XValidations")  # fmt: skip


def _openapi(
    schema: Mapping[str, Any], path: str, options: _Options, *, root: bool = False
) -> Causes:
    """``ValidateCustomResourceDefinitionOpenAPISchema``, its schema errors (not CEL's)."""
    causes = list(_standard(schema, path, options))
    if schema.get("uniqueItems"):
        causes.append(forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since "
                                "the runtime complexity becomes quadratic"))  # fmt: skip
    properties: Mapping[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if additional is not None:
        if properties and (additional is False or isinstance(additional, Mapping)):
            causes.append(
                forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        if isinstance(additional, Mapping):
            sub = options
            if options.inside_meta:
                why = "inside additionalProperties applying to object metadata"
                sub = replace(options, defaults=why)
            causes += _openapi(additional, f"{path}.additionalProperties", sub)
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for key in sorted(properties):
        sub = options
        if (root or embedded) and key in _META_FIELDS:
            sub = replace(sub, inside_meta=True)
            if root:
                sub = replace(sub, defaults=f"in top-level {key}")
        if isinstance(properties[key], Mapping):
            causes += _openapi(properties[key], f"{path}.properties[{key}]", sub)
    for key in ("not",):
        if isinstance(schema.get(key), Mapping):
            causes += _openapi(schema[key], f"{path}.{key}", options)
    for key in ("allOf", "oneOf", "anyOf"):
        for index, clause in enumerate(schema.get(key) or ()):
            if isinstance(clause, Mapping):
                causes += _openapi(clause, f"{path}.{key}[{index}]", options)
    for name, sub_schema in sorted((schema.get("definitions") or {}).items()):
        causes += _openapi(sub_schema, f"{path}.definitions[{name}]", options)
    items = schema.get("items")
    if isinstance(items, Mapping):
        causes += _openapi(items, f"{path}.items", options)
    elif isinstance(items, list):
        for index, item in enumerate(items):
            causes += _openapi(item, f"{path}.items[{index}]", options)
    for name, dependency in sorted((schema.get("dependencies") or {}).items()):
        if isinstance(dependency, Mapping):
            causes += _openapi(dependency, f"{path}.dependencies[{name}]", options)
    causes += _extensions(schema, path, options)
    causes += _rules(schema, path)
    return causes


def _standard(
    schema: Mapping[str, Any], path: str, options: _Options
) -> Iterator[tuple[str, Cause]]:
    """``specStandardValidatorV3.validate``."""
    kind = schema.get("type") or ""
    if options.valid_types and kind and kind not in _TYPES:
        yield _not_supported(f"{path}.type", kind, _TYPES)
    if "default" in schema and options.defaults is not None:
        yield forbidden(f"{path}.default", f"must not be set {options.defaults}")
    for key, name in (("id", "id"), ("additionalItems", "additionalItems"),
                      ("patternProperties", "patternProperties"),
                      ("definitions", "definitions"), ("dependencies", "dependencies"),
                      ("$ref", "$ref")):  # fmt: skip
        if schema.get(key) not in (None, "", {}) or (key == "additionalItems" and key in schema):
            yield forbidden(f"{path}.{name}", f"{name} is not supported")
    if kind == "null":
        yield forbidden(
            f"{path}.type", "type cannot be set to null, use nullable as an alternative"
        )
    if isinstance(schema.get("items"), list) and schema["items"]:
        yield forbidden(f"{path}.items", "items must be a schema object and not an array")
    if options.inside_meta and schema.get("x-kubernetes-embedded-resource"):
        yield forbidden(f"{path}.x-kubernetes-embedded-resource",
                        "must not be used inside of resource meta")  # fmt: skip


def _not_supported(path: str, value: Any, choices: tuple[str, ...]) -> tuple[str, Cause]:
    listed = ", ".join(f'"{choice}"' for choice in choices)
    message = f"Unsupported value: {shown(value)}: supported values: {listed}"
    return path, {"reason": "FieldValueNotSupported", "message": message}


def _extensions(schema: Mapping[str, Any], path: str, options: _Options) -> Causes:
    causes: Causes = []
    kind = schema.get("type") or ""
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(field_invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False,
                                    "must be true or undefined"))  # fmt: skip
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        causes.append(field_invalid(f"{path}.type", kind, detail) if kind
                      else required_because(f"{path}.type", detail))  # fmt: skip
    if map_type is not None and map_type not in ("atomic", "granular"):
        causes.append(
            _not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular"))
        )
    list_type = schema.get("x-kubernetes-list-type")
    items = schema.get("items")
    if list_type is not None and kind != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        causes.append(field_invalid(f"{path}.type", kind, detail) if kind
                      else required_because(f"{path}.type", detail))  # fmt: skip
    elif options.atomic_sets and list_type == "set" and isinstance(items, Mapping):
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (
            None,
            "atomic",
        ):
            at = f"{path}.items.x-kubernetes-list-type"
            causes.append(field_invalid(at, items["x-kubernetes-list-type"], detail))
        elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            at = f"{path}.items.x-kubernetes-map-type"  # (Go shows the items' list type here)
            causes.append(field_invalid(at, items.get("x-kubernetes-list-type"), detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        choices = ("atomic", "set", "map")
        causes.append(_not_supported(f"{path}.x-kubernetes-list-type", list_type, choices))
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            causes.append(required_because(f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            causes.append(field_invalid(f"{path}.x-kubernetes-list-type", list_type, detail))
    if list_type == "map":
        causes += _map_list(schema, path)
    if options.map_list_keys:
        causes += _map_list_keys(schema, path)
    return causes


def _map_list(schema: Mapping[str, Any], path: str) -> Causes:
    causes: Causes = []
    keys = list(schema.get("x-kubernetes-list-map-keys") or [])
    items = schema.get("items")
    if not keys:
        detail = "must not be empty if x-kubernetes-list-type is map"
        causes.append(required_because(f"{path}.x-kubernetes-list-map-keys", detail))
    if items is None:
        detail = "must have a schema if x-kubernetes-list-type is map"
        causes.append(required_because(f"{path}.items", detail))
    elif not isinstance(items, Mapping):
        detail = "must only have a single schema if x-kubernetes-list-type is map"
        causes.append(field_invalid(f"{path}.items", items, detail))
    elif items.get("type") != "object":
        detail = "must be object if parent array's x-kubernetes-list-type is map"
        causes.append(field_invalid(f"{path}.items.type", items.get("type") or "", detail))
    else:
        seen: set[str] = set()
        properties = items.get("properties") or {}
        for key in keys:
            if key in properties:
                if properties[key].get("type") in ("array", "object"):
                    detail = "must be a scalar type if parent array's x-kubernetes-list-type is map"
                    at = f"{path}.items.properties[{key}].type"
                    causes.append(field_invalid(at, items.get("type") or "", detail))
            else:
                detail = "entries must all be names of item properties"
                causes.append(field_invalid(f"{path}.x-kubernetes-list-map-keys", keys, detail))
            if key in seen:
                detail = "must not contain duplicate entries"
                causes.append(field_invalid(f"{path}.x-kubernetes-list-map-keys", keys, detail))
            seen.add(key)
    return causes


def _map_list_keys(schema: Mapping[str, Any], path: str) -> Causes:
    """``validateMapListKeysMapSet``."""
    items = schema.get("items")
    list_type = schema.get("x-kubernetes-list-type")
    if not isinstance(items, Mapping) or list_type not in ("set", "map"):
        return []
    causes: Causes = []
    if items.get("nullable"):
        causes.append(
            forbidden(
                f"{path}.items.nullable",
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    if list_type == "map":
        required = set(items.get("required") or ())
        properties = items.get("properties") or {}
        for key in schema.get("x-kubernetes-list-map-keys") or ():
            if not isinstance(properties.get(key), Mapping):
                continue
            at = f"{path}.items.properties[{key}]"
            if key not in required and "default" not in properties[key]:
                causes.append(required_because(f"{at}.default", "this property is in "
                              "x-kubernetes-list-map-keys, so it must have a default or be a "
                              "required property"))  # fmt: skip
            if properties[key].get("nullable"):
                causes.append(
                    forbidden(
                        f"{at}.nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return causes


def _rules(schema: Mapping[str, Any], path: str) -> Causes:
    """The static checks of ``x-kubernetes-validations`` (not their compilation nor cost)."""
    causes: Causes = []
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or ()):
        at = f"{path}.x-kubernetes-validations[{index}]"
        text, message = str(rule.get("rule") or ""), str(rule.get("message") or "")
        expression = str(rule.get("messageExpression") or "")
        if not text.strip():
            causes.append(required_because(f"{at}.rule", "rule is not specified"))
        elif message and not message.strip():
            causes.append(field_invalid(f"{at}.message", message, "must be non-empty if specified"))
        elif _lines(message.strip()):
            causes.append(field_invalid(f"{at}.message", message, "must not contain line breaks"))
        elif _lines(text.strip()) and not message.strip():
            detail = "message must be specified if rule contains line breaks"
            causes.append(required_because(f"{at}.message", detail))
        if expression and not expression.strip():
            detail = "messageExpression must be non-empty if specified"
            causes.append(required_because(f"{at}.messageExpression", detail))
        reason = rule.get("reason")
        if reason is not None and reason not in _REASONS:
            causes.append(_not_supported(f"{at}.reason", reason, _REASONS))
        field_path = str(rule.get("fieldPath") or "")
        if field_path and not field_path.strip():
            causes.append(
                field_invalid(f"{at}.fieldPath", field_path, "must be non-empty if specified")
            )
        if _lines(field_path):
            causes.append(
                field_invalid(f"{at}.fieldPath", field_path, "must not contain line breaks")
            )
        if field_path and unsupported(schema) is None and not valid_field_path(field_path, schema):
            causes.append(field_invalid(f"{at}.fieldPath", field_path, "must be a valid path"))
    return causes


def _lines(text: str) -> bool:
    return "\n" in text or "\r" in text


def valid_field_path(path: str, schema: Mapping[str, Any]) -> bool:
    """``cel.ValidFieldPath``: ``.a.b`` and ``['a.b']`` steps through properties or a map's
    additionalProperties."""
    tokens = _tokens(path)
    if tokens is None:
        return False
    node: Any = schema
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token == "[":
            if position + 2 >= len(tokens) or tokens[position + 2] != "]":
                return False
            quoted = tokens[position + 1]
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                return False
            name, position = quoted[1:-1].replace("\\'", "'"), position + 3
        elif token == ".":
            if position + 1 >= len(tokens):
                return False
            name, position = tokens[position + 1], position + 2
        else:
            return False
        if not isinstance(node, Mapping):
            return False
        if node.get("properties"):
            if name not in node["properties"]:
                return False
            node = node["properties"][name]
        elif node.get("additionalProperties") is not None:
            additional = node["additionalProperties"]
            node = additional if isinstance(additional, Mapping) else None
        else:
            return False
    return True


def _tokens(path: str) -> list[str] | None:
    tokens: list[str] = []
    index = 0
    while index < len(path):
        char = path[index]
        if char == "'":
            end = index + 1
            while end < len(path) and not (path[end] == "'" and path[end - 1] != "\\"):
                end += 1
            if end >= len(path):
                tokens.append(path[index:])
                return tokens
            tokens.append(path[index : end + 1])
            index = end + 1
        elif char in ".[]":
            tokens.append(char)
            index += 1
        else:
            end = index
            while end < len(path) and path[end] not in ".[]":
                end += 1
            tokens.append(path[index:end])
            index = end
    return tokens


def schema_has(schema: Any, test: Any) -> bool:
    """``SchemaHas``: a node of the schema passes ``test``."""
    if not isinstance(schema, Mapping):
        return False
    if test(schema):
        return True
    children: list[Any] = [
        schema.get("items"),
        schema.get("not"),
        schema.get("additionalProperties"),
    ]
    for key in ("allOf", "anyOf", "oneOf"):
        children += list(schema.get(key) or ())
    if isinstance(schema.get("items"), list):
        children += schema["items"]
    for key in ("properties", "patternProperties", "definitions", "dependencies"):
        children += list((schema.get(key) or {}).values())
    return any(schema_has(child, test) for child in children)


def _invalid_type(schema: Mapping[str, Any]) -> bool:
    return bool(schema.get("type")) and schema.get("type") not in _TYPES


def _non_atomic_set(schema: Mapping[str, Any]) -> bool:
    items = schema.get("items")
    if schema.get("x-kubernetes-list-type") != "set" or not isinstance(items, Mapping):
        return False
    if items.get("type") == "array":
        return items.get("x-kubernetes-list-type") not in (None, "atomic")
    if items.get("type") == "object":
        return items.get("x-kubernetes-map-type") != "atomic"
    return False
