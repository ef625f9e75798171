"""What structured merge can type: a server-side apply's configuration, a live object.

Pure. kube-apiserver converts both to structured merge's typed values by the kind's schema
(kube-openapi's ``schemaconv``); a field the schema does not declare, or a value of another
type, refuses the apply with a 500 naming each at its path in structured merge's syntax. The
schemas' nodes are read here once, for this and for :mod:`anyop.testing.fake.field_validation`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_printed, go_syntax, go_value_type
from anyop.testing.fake.go_yaml import GoYAMLError
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import Catalog, Schema, catalog
from anyop.testing.fake.request_bodies import applied_document
from anyop.testing.fake.statuses import StatusError, status_body

__all__ = [
    "LEAVES",
    "Node",
    "read_node",
    "schema_node",
    "smd_errors",
    "smd_failure",
    "undeclared_applied_field",
]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

LEAVES = frozenset((str, int, float, bool, type(None)))
Node = tuple[Schema, Mapping[str, Any], "Schema | None", "Schema | None"]
"""A schema resolved, and its properties, value schema and items schema."""
_NODES: dict[int, Node] = {}
"""Each (catalog) schema's node, by the resolved schema's id: the catalog's schemas live as long
as the process."""


def schema_node(books: Catalog, schema: Schema) -> Node:
    """A catalog schema's node, read once."""
    resolved, _ = books.resolve(schema)
    found = _NODES.get(id(resolved))
    if found is None:
        found = _NODES[id(resolved)] = read_node(resolved)
    return found


def read_node(resolved: Schema) -> Node:
    """A resolved schema's node."""
    extra, items = resolved.get("additionalProperties"), resolved.get("items")
    return (
        resolved,
        resolved.get("properties") or {},
        extra if isinstance(extra, Mapping) else None,
        items if isinstance(items, Mapping) else None,
    )


def undeclared_applied_field(kind: Kind, body: bytes) -> None:
    """Refuse a server-side apply configuration with a field its schema does not declare, or
    (of a built-in kind) a value of another type than its schema's scalar.

    Whatever the ``fieldValidation``, the structured merge cannot type such a configuration:
    500, naming each such field in structured merge's path syntax
    (``.spec.containers[name="c"].oops``).

    Raises:
        StatusError: 500, the configuration has such a field.
    """
    try:
        config = applied_document(body)
    except GoYAMLError:
        return
    if not isinstance(config, Mapping):
        return
    if found := smd_errors(kind, config):
        raise smd_failure("failed to create typed patch object", kind, config, found)


def smd_errors(kind: Kind, obj: Mapping[str, Any], *, duplicates: bool = True) -> list[str]:
    """What structured merge refuses to type in an object (a configuration, or with
    ``duplicates=False`` a live object, whose set items may repeat): sorted, as Go's map
    iteration gives them in an order that varies."""
    if kind.custom:
        return sorted(_custom_smd(obj, kind.schema or {}, duplicates))
    name = catalog().schema_name(kind.group, kind.version, kind.kind)
    return sorted(_builtin_smd(obj, {"$ref": name}, "", duplicates)) if name else []


def smd_failure(
    what: str, kind: Kind, obj: Mapping[str, Any], found: list[str], *, then: str = ""
) -> StatusError:
    """500 for an object structured merge cannot type: ``<what> (<ns>/<name>; <gvk>)<then>:
    ...``, naming the object's own namespace and name (a configuration's, not the URL's)."""
    gvk = f"{kind.api_version if kind.group else '/' + kind.version}, Kind={kind.kind}"
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    where = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
    error = found[0] if len(found) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in found)
    message = f"{what} ({where}; {gvk}){then}: {error}"
    return StatusError(status_body(500, "", message, details=None))


def _custom_smd(config: Mapping[str, Any], schema: Schema, duplicates: bool) -> Iterator[str]:
    for key, item in config.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            yield from _builtin_smd(item, {"$ref": _META}, ".metadata", duplicates)
            continue
        properties = schema.get("properties") or {}
        if key in properties:
            yield from _smd(item, properties[key], f".{key}", lambda s: s, duplicates)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            yield f".{key}{_UNDECLARED}"


def _builtin_smd(value: Any, schema: Schema, path: str, duplicates: bool) -> Iterator[str]:
    """:func:`_smd` for a built-in kind's (catalog) schema, by its nodes read once."""
    found: list[str] = []
    node_of = functools.partial(schema_node, catalog())
    _undeclared(value, schema, path, node_of, found, typed=True, duplicates=duplicates)
    return iter(found)


def _smd(
    value: Any, schema: Schema, path: str, resolve: Callable[[Schema], Schema], duplicates: bool
) -> Iterator[str]:
    """The errors of a configuration's fields that ``schema`` does not declare (``resolve``
    follows a ``$ref``) and of its values of another type, each at its path in structured
    merge's syntax."""
    found: list[str] = []
    node_of = lambda node: read_node(resolve(node))  # noqa: E731
    _undeclared(value, schema, path, node_of, found, typed=True, duplicates=duplicates)
    return iter(found)


_UNDECLARED = ": field not declared in schema"


def _undeclared(
    value: Any,
    schema: Schema,
    path: str,
    node_of: Callable[[Schema], Node],
    found: list[str],
    *,
    typed: bool = False,
    duplicates: bool = True,
) -> None:
    """Add the errors of ``value`` at ``path``: fields ``schema`` does not declare, and with
    ``typed``, values of another type than its scalar's (and ``duplicates``: a set's or
    map-list's items that repeat)."""
    resolved, properties, extra, items = node_of(schema)
    if typed and (problem := _mistyped(resolved, value)):
        found.append(f"{path}: {problem}")
        return
    if isinstance(value, list):
        defaults = _key_defaults(resolved, items, node_of)
        if typed and resolved.get("x-kubernetes-list-type") in ("set", "map"):
            _associative(value, resolved, items, path, node_of, found, defaults, duplicates)
            return
        if items is not None:
            for index, item in enumerate(value):
                if type(item) not in LEAVES or typed:
                    where = path + _element(resolved, item, index, defaults)
                    _undeclared(item, items, where, node_of, found, typed=typed,
                                duplicates=duplicates)  # fmt: skip
        return
    if (not properties and extra is None) or not is_map(value):
        return  # free-form, or not an object
    if resolved.get("x-kubernetes-preserve-unknown-fields"):
        return
    for key, item in value.items():
        sub = properties.get(key) or extra
        if sub is None:
            found.append(f"{path}.{key}{_UNDECLARED}")
        elif type(item) not in LEAVES or typed:
            _undeclared(item, sub, f"{path}.{key}", node_of, found, typed=typed,
                        duplicates=duplicates)  # fmt: skip


def _associative(
    value: list[Any],
    schema: Schema,
    items: Schema | None,
    path: str,
    node_of: Callable[[Schema], Node],
    found: list[str],
    defaults: Mapping[str, Any],
    duplicates: bool,
) -> None:
    """A set's or map-list's items as structured merge's ``visitListItems`` walks them: each
    item's path element (an item it cannot key ends the list's walk), its repeat, its fields."""
    seen: list[str] = []
    for index, item in enumerate(value):
        if problem := _unkeyable(schema, item, defaults):
            found.append(f"{path}: element {index}: {problem}")
            return
        element = _element(schema, item, index, defaults)
        if duplicates and element in seen:
            found.append(f"{path}: duplicate entries for key {element}")
        seen.append(element)
        if items is not None:
            _undeclared(item, items, path + element, node_of, found, typed=True,
                        duplicates=duplicates)  # fmt: skip


def _unkeyable(schema: Schema, item: Any, defaults: Mapping[str, Any]) -> str | None:
    """Why structured merge cannot make an item's path element (``listItemToPathElement``):
    a set's item must be a scalar; a map-list's a map with at least one key field (or its
    default)."""
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        if item is None:
            return "associative list with keys may not have a null element"
        if not is_map(item):
            return "associative list with keys may not have non-map elements"
        if not any(key in item or key in defaults for key in keys):
            listed = " ".join(f'"{key}"' for key in keys)
            return (f"associative list with keys has an element that omits all key fields "
                    f"[{listed}] (and doesn't have default values for any key fields)")  # fmt: skip
        return None
    if is_map(item):
        return "associative list without keys has an element that's a map type"
    if isinstance(item, list):
        return "not supported: associative list with lists as elements"
    if item is None:
        return "associative list without keys has an element that's an explicit null"
    return None


def _show(value: Any) -> str:
    """A value as structured merge's errors show it: ``&{...}``."""
    return f"&{{{go_printed(value)}}}"


def _mistyped(schema: Schema, value: Any) -> str | None:
    """Structured merge's error for a value of another type than the schema's (kube-openapi's
    ``schemaconv``: a string with a format but ``byte`` is any scalar, as is a built-in
    int-or-string; a custom resource's int-or-string, without a type, takes anything; objects
    are maps, arrays lists)."""
    if value is None:
        return None
    wanted = schema.get("type")
    scalar = not isinstance(value, (list, dict)) and not is_map(value)
    untyped = wanted == "string" and schema.get("format") not in (None, "", "byte")
    if wanted is None and schema.get("format") == "int-or-string":
        return None  # a built-in IntOrString has no type: any scalar, list or map
    if untyped or (wanted is None and ("oneOf" in schema or "anyOf" in schema)):
        return None if scalar else f"expected any scalar, got {_show(value)}"
    match wanted:
        case "string" if not isinstance(value, str):
            return f"expected string, got &value.valueUnstructured{{Value:{go_syntax(value)}}}"
        case "integer" | "number" if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected numeric (int or float), got {go_value_type(value)}"
        case "boolean" if not isinstance(value, bool):
            return f"expected boolean, got {_show(value)}"
        case "array" if not isinstance(value, list):
            return f"expected list, got {_show(value)}"
        case "object" if not is_map(value):
            return f"expected map, got {_show(value)}"
    return None


def _key_value(value: Any) -> str:
    """A map-list key's value as structured merge prints it: a scalar as JSON, a map as its
    ``field=value`` pairs."""
    if isinstance(value, Mapping):
        return ",".join(f"{key}={_key_value(value[key])}" for key in sorted(value))
    return json.dumps(value)


def _key_defaults(
    schema: Schema, items: Schema | None, node_of: Callable[[Schema], Node]
) -> Mapping[str, Any]:
    """A map-list's key fields' defaults (structured merge keys an item without one by it)."""
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if not keys or items is None:
        return {}
    fields = node_of(items)[1]
    return {key: fields[key]["default"] for key in keys if "default" in (fields.get(key) or {})}


def _element(schema: Schema, item: Any, index: int, defaults: Mapping[str, Any]) -> str:
    """A list element's path element: its keys in a map-list (a missing one by its default),
    its value in a set, else its index."""
    kind = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if kind == "map" and keys and isinstance(item, Mapping):
        keyed = {**defaults, **item} if defaults else item
        return "[" + ",".join(f"{key}={_key_value(keyed.get(key))}" for key in keys) + "]"
    if kind == "set":
        return f"[={json.dumps(item)}]"
    return f"[{index}]"
