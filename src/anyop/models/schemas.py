"""From a typed resource's pydantic JSON schema to a CRD's structural OpenAPI v3 schema.

pydantic writes JSON Schema 2020-12: references to ``$defs``, ``anyOf [X, null]`` for optional
fields, ``const``, numeric ``exclusiveMinimum``. Kubernetes wants a *structural* schema in
OpenAPI v3.0 terms: every node typed and self-contained, ``nullable: true``, boolean exclusive
bounds, free-form objects marked ``x-kubernetes-preserve-unknown-fields``. :func:`resource_schema`
translates one into the other, and raises :class:`SchemaError` naming the field it cannot express.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from anyop.errors import ConfigError
from anyop.models.resources import CustomResource

__all__ = ["SchemaError", "resource_schema", "structural_schema"]

_COPIED = (
    "description",
    "default",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "format",
)
"""Keywords that mean the same in both dialects."""

_FORMATS = frozenset(
    {
        "int32",
        "int64",
        "float",
        "double",
        "byte",
        "date",
        "date-time",
        "password",
        "uri",
        "email",
        "uuid",
        "hostname",
        "ipv4",
        "ipv6",
        "duration",
    }
)
"""The formats that Kubernetes validates; pydantic's others are left out of the schema."""

_TYPES_OF_VALUES = {bool: "boolean", int: "integer", float: "number", str: "string"}


class _FactoryDefaults(GenerateJsonSchema):
    """pydantic's JSON schema, with the values of ``default_factory`` as defaults too: the API
    server then stores what the model would make of a missing field (``[]``, ``{}``)."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        factory = schema.get("default_factory")
        of_data = schema.get("default_factory_takes_data")  # made of other fields: no default
        if factory is not None and not of_data and "default" not in schema:
            schema = {**schema, "default": factory()}  # type: ignore[call-arg]
        return super().default_schema(schema)


class SchemaError(ConfigError):
    """A model has a field that a structural schema cannot express; the message names it."""


def resource_schema(cls: type[CustomResource]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a typed resource's CRD version.

    ``spec`` and ``status`` come from the model; ``apiVersion``, ``kind`` and ``metadata`` are
    the API server's. The status keeps unknown fields: handlers' results land there.

    Raises:
        SchemaError: A field cannot be expressed structurally.
    """
    document = cls.model_json_schema(
        by_alias=True, mode="validation", schema_generator=_FactoryDefaults
    )
    converter = _Converter(document.get("$defs", {}), cls.__qualname__)
    root = converter.node(document, ())
    properties = {
        key: value for key, value in root["properties"].items() if key in ("spec", "status")
    }
    if "status" in properties:
        properties["status"] = {
            **properties["status"],
            "x-kubernetes-preserve-unknown-fields": True,
        }
        properties["status"].pop("nullable", None)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [key for key in root.get("required", ()) if key in properties]
    if required:
        schema["required"] = required
    if cls.__doc__ and cls.__doc__ is not CustomResource.__doc__:
        schema["description"] = _cleandoc(cls.__doc__)
    return schema


def structural_schema(document: Mapping[str, Any], *, culprit: str = "schema") -> dict[str, Any]:
    """Translate one pydantic JSON schema (with its ``$defs``) into a structural schema."""
    return _Converter(document.get("$defs", {}), culprit).node(document, ())


class _Converter:
    """Walks a JSON schema, resolving references, and emits structural nodes."""

    def __init__(self, defs: Mapping[str, Any], culprit: str) -> None:
        self.defs = defs
        self.culprit = culprit
        self.resolving: list[str] = []

    def fail(self, path: tuple[str, ...], why: str) -> SchemaError:
        where = ".".join(path).replace(".[]", "[]") or "(root)"
        return SchemaError(f"{self.culprit}: the field {where} {why}")

    def node(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        if "$ref" in source:
            return self._referenced(source, path)
        if "anyOf" in source or "oneOf" in source:
            return self._union(source, path)
        if "allOf" in source and len(source["allOf"]) == 1:
            return self._merged(source["allOf"][0], source, path)
        if "allOf" in source or "not" in source or "prefixItems" in source:
            raise self.fail(path, "has a type that a structural schema cannot express.")
        return self._typed(source, path)

    def _referenced(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        name = str(source["$ref"]).rsplit("/", 1)[-1]
        if name in self.resolving:
            raise self.fail(path, f"refers to {name} recursively; a CRD schema cannot recurse.")
        if name not in self.defs:
            raise self.fail(path, f"refers to an unknown definition {name!r}.")
        self.resolving.append(name)
        try:
            return self._merged(self.defs[name], source, path)
        finally:
            self.resolving.pop()

    def _merged(
        self, target: Mapping[str, Any], source: Mapping[str, Any], path: tuple[str, ...]
    ) -> dict[str, Any]:
        """The target's node with the referring node's own keywords (description, default)."""
        node = self.node(target, path)
        extra = {key: value for key, value in source.items() if key not in ("$ref", "allOf")}
        return {**node, **self._typed_keywords(extra, path, node.get("type"))}

    def _union(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        options = list(source.get("anyOf") or source.get("oneOf") or ())
        nullable = any(option.get("type") == "null" for option in options)
        options = [option for option in options if option.get("type") != "null"]
        if sorted(option.get("type", "") for option in options) == ["integer", "string"]:
            node: dict[str, Any] = {"x-kubernetes-int-or-string": True}
        elif len(options) == 1:
            node = self.node(options[0], path)
        else:
            raise self.fail(path, "is a union of several types; use one type (or int | str).")
        rest = {key: value for key, value in source.items() if key not in ("anyOf", "oneOf")}
        node.update(self._typed_keywords(rest, path, node.get("type")))
        if nullable:
            node["nullable"] = True
            if node.get("default", ...) is None:
                del node["default"]
        return node

    def _typed(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        kind = source.get("type") or _type_of_values(source)
        if kind is None:
            if "properties" in source:
                kind = "object"
            else:
                return {
                    "x-kubernetes-preserve-unknown-fields": True,
                    **self._typed_keywords(source, path, None),
                }
        if isinstance(kind, list):
            raise self.fail(path, f"has several types {kind}; use one type (or int | str).")
        node: dict[str, Any] = {"type": kind}
        if kind == "object":
            node.update(self._object(source, path))
        elif kind == "array":
            node.update(self._array(source, path))
        node.update(self._typed_keywords(source, path, kind))
        return node

    def _object(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        node: dict[str, Any] = {}
        properties = source.get("properties") or {}
        extra = source.get("additionalProperties")
        if properties:
            node["properties"] = {
                key: self.node(value, (*path, key)) for key, value in properties.items()
            }
            if source.get("required"):
                node["required"] = list(source["required"])
            if isinstance(extra, Mapping) or extra is True:
                node["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, Mapping) and extra:
            node["additionalProperties"] = self.node(extra, (*path, "*"))
        elif extra is not False:
            node["x-kubernetes-preserve-unknown-fields"] = True
        return node

    def _array(self, source: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        items = source.get("items")
        node: dict[str, Any] = {
            "items": self.node(items, (*path, "[]"))
            if isinstance(items, Mapping)
            else {"x-kubernetes-preserve-unknown-fields": True}
        }
        if source.get("uniqueItems"):
            if node["items"].get("type") not in ("string", "integer", "number", "boolean"):
                raise self.fail(path, "is a set of non-scalar items; a CRD sets only scalars.")
            node["x-kubernetes-list-type"] = "set"
        return node

    def _typed_keywords(
        self, source: Mapping[str, Any], path: tuple[str, ...], kind: object
    ) -> dict[str, Any]:
        """The validation keywords of a node, in OpenAPI v3.0's spelling."""
        node = {key: source[key] for key in _COPIED if key in source}
        if "const" in source:
            node["enum"] = [source["const"]]
        if "exclusiveMinimum" in source:
            node.update(minimum=source["exclusiveMinimum"], exclusiveMinimum=True)
        if "exclusiveMaximum" in source:
            node.update(maximum=source["exclusiveMaximum"], exclusiveMaximum=True)
        if node.get("format") not in _FORMATS:
            node.pop("format", None)
        if "description" in node:
            node["description"] = _cleandoc(str(node["description"]))
        if kind in ("object", None) and node.get("default") is None:
            node.pop("default", None)
        for key, value in source.items():
            if key.startswith("x-kubernetes-"):
                node[key] = value
        return node


def _type_of_values(source: Mapping[str, Any]) -> str | None:
    """The type of an ``enum`` or ``const`` node that pydantic left untyped."""
    values = source.get("enum") or ([source["const"]] if "const" in source else [])
    kinds = {_TYPES_OF_VALUES.get(type(value)) for value in values}
    if len(kinds) == 1 and None not in kinds:
        return kinds.pop()
    return None


def _cleandoc(text: str) -> str:
    return inspect.cleandoc(text)
