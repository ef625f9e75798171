"""The Swagger 2.0 document of ``/openapi/v2``, in JSON and in gnostic's protobuf encoding.

Pure. kubectl reads ``/openapi/v2`` (asking for protobuf) only where the v3 documents do not
serve it: to validate the objects of a ``kind: List`` file on the client, to find the patch
type of a kind its v3 documents do not cover. The fake's document has the definitions of the
built-in kinds (the vendored v3 schemas, with their descriptions, written as Swagger 2.0
writes them) and of the custom kinds (as apiextensions-apiserver writes them for v2); it has
no paths. The protobuf encoding is gnostic's
``openapi.v2.Document`` (``OpenAPIv2.proto``): the fields a schema has, extensions and
defaults as YAML.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from anyop.testing.fake.openapi_catalog import catalog

__all__ = ["PROTOBUF", "v2_document"]

PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_REFS = "#/components/schemas/"
_STRINGS = {"format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_DOUBLES = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_BOOLS = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_INTS = {"maxLength": 11, "minLength": 12, "maxItems": 14, "minItems": 15,
         "maxProperties": 17, "minProperties": 18}  # fmt: skip


def v2_document(media_type: str, custom: Mapping[str, Any]) -> bytes:
    """The document, encoded as ``media_type`` (JSON or :data:`PROTOBUF`).

    Args:
        media_type: JSON or :data:`PROTOBUF`.
        custom: The v3 schemas of the custom kinds and their lists, by name (as the CRDs'
            documents have them).
    """
    definitions = {name: _custom(schema) for name, schema in sorted(custom.items())}
    if media_type == PROTOBUF:
        named = _named(1, ((name, _schema(schema)) for name, schema in definitions.items()))
        return _head() + _bytes(9, _builtin_proto() + named)
    document = {**_builtin_document(), "definitions": {**_builtin_definitions(), **definitions}}
    return json.dumps(document, separators=(",", ":")).encode()


@functools.cache
def _builtin_definitions() -> dict[str, Any]:
    schemas = catalog().data["schemas"]
    return {name: _v2(schema) for name, schema in sorted(schemas.items())}


def _builtin_document() -> dict[str, Any]:
    return {"swagger": "2.0", "info": dict(catalog().data["info"]), "paths": {}}


@functools.cache
def _builtin_proto() -> bytes:
    """The built-in definitions' entries of the encoded ``Definitions`` (the same for every
    document: encoded once)."""
    items = _builtin_definitions().items()
    return _named(1, ((name, _schema(schema)) for name, schema in items))


def _head() -> bytes:
    info = catalog().data["info"]
    return _text(1, "2.0") + _bytes(2, _text(1, info["title"]) + _text(2, info["version"]))


def _custom(schema: Mapping[str, Any]) -> Any:
    """A custom kind's schema as apiextensions-apiserver publishes it in v2: a nullable field
    without its type and structure (and not required), a field that keeps unknown fields
    without its structure, no ``allOf``/``anyOf``/``oneOf``/``not``, no defaults; the kind
    itself reduced to ``type: object`` when it keeps unknown fields."""
    converted = _v2(schema)
    if converted.get("x-kubernetes-preserve-unknown-fields"):
        kinds = converted.get("x-kubernetes-group-version-kind")
        return {"type": "object", "x-kubernetes-group-version-kind": kinds}
    return _structural(converted)


def _structural(node: Mapping[str, Any]) -> dict[str, Any]:
    result = {key: value for key, value in node.items() if key not in ("allOf", "nullable")}
    if node.get("nullable"):
        result.pop("type", None)
    if result.get("x-kubernetes-preserve-unknown-fields") or node.get("nullable"):
        result.pop("items", None)
        result.pop("properties", None)
    if result.get("type") == "array" and "items" not in result:
        result.pop("type")
    if result.get("x-kubernetes-preserve-unknown-fields") and result.get("type") == "object":
        result.pop("type")
    properties = result.get("properties")
    if isinstance(properties, Mapping):
        nullable = {name for name, sub in properties.items() if sub.get("nullable")}
        if nullable and result.get("required"):
            result["required"] = [name for name in result["required"] if name not in nullable]
            if not result["required"]:
                del result["required"]
        result["properties"] = {k: _structural(v) for k, v in properties.items()}
    for key in ("items", "additionalProperties"):
        if isinstance(result.get(key), Mapping):
            result[key] = _structural(result[key])
    return result


def _v2(node: Any) -> Any:
    """A v3 schema as Swagger 2.0 writes it: refs into ``#/definitions/``, a lone ``allOf``
    reference as the reference itself, none of v3's own keywords, and no defaults (the API
    server prunes them from its v2 document)."""
    if isinstance(node, Mapping):
        refs = node.get("allOf")
        if isinstance(refs, (list, tuple)) and len(refs) == 1 and "$ref" in refs[0]:
            node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": refs[0]["$ref"]}
        result: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("anyOf", "oneOf", "not", "default"):
                continue
            if key == "$ref" and isinstance(value, str):
                result[key] = value.replace(_V3_REFS, "#/definitions/")
            elif key == "properties" and isinstance(value, Mapping):
                result[key] = {name: _v2(sub) for name, sub in value.items()}
            else:
                result[key] = _v2(value)
        return result
    if isinstance(node, (list, tuple)):
        return [_v2(item) for item in node]
    return node


# -- protobuf -----------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as their two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, text: str) -> bytes:
    return _bytes(number, text.encode())


def _any(value: Any) -> bytes:
    """gnostic's ``Any``: the value as YAML."""
    return _text(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=False))


def _named(number: int, items: Iterable[tuple[str, bytes]]) -> bytes:
    return b"".join(_bytes(number, _text(1, name) + _bytes(2, value)) for name, value in items)


def _schema(schema: Mapping[str, Any]) -> bytes:
    out = bytearray()
    if isinstance(schema.get("$ref"), str):
        out += _text(1, schema["$ref"])
    for key, number in _STRINGS.items():
        if isinstance(schema.get(key), str):
            out += _text(number, schema[key])
    if "default" in schema:
        out += _bytes(5, _any(schema["default"]))
    for key, number in _DOUBLES.items():
        if isinstance(schema.get(key), (int, float)):
            out += _varint(number << 3 | 1) + struct.pack("<d", float(schema[key]))
    for key, number in _BOOLS.items():
        if schema.get(key):
            out += _varint(number << 3) + b"\x01"
    for key, number in _INTS.items():
        if isinstance(schema.get(key), int):
            out += _varint(number << 3) + _varint(schema[key])
    out += _structure(schema)
    extensions = [(key, _any(value)) for key, value in schema.items() if key.startswith("x-")]
    out += _named(31, extensions)
    return bytes(out)


def _structure(schema: Mapping[str, Any]) -> bytes:
    out = bytearray()
    for name in schema.get("required") or ():
        out += _text(19, str(name))
    for value in schema.get("enum") or ():
        out += _bytes(20, _any(value))
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        out += _bytes(21, _bytes(1, _schema(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"))
    if isinstance(schema.get("type"), str):
        out += _bytes(22, _text(1, schema["type"]))
    if isinstance(schema.get("items"), Mapping):
        out += _bytes(23, _bytes(1, _schema(schema["items"])))
    for part in schema.get("allOf") or ():
        out += _bytes(24, _schema(part))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        named = ((name, _schema(sub)) for name, sub in properties.items())
        out += _bytes(25, _named(1, named))
    return bytes(out)
