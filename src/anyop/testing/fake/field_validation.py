"""Server-side field validation: ``fieldValidation=Strict|Warn|Ignore`` on writes.

Pure. kube-apiserver decodes a request's object strictly and, by the directive (``Warn`` when
none is given), refuses it for its unknown and duplicate fields (400, ``<Kind> in version
"<v>" cannot be handled as a <Kind>: strict decoding error: unknown field "spec.x"``), warns
about each (``Warning: 299 - "unknown field \\"spec.x\\""``), or ignores them. Unknown fields are
those the kind's schema does not have: a built-in kind's Go type (its vendored schema), a custom
resource's structural schema (where ``x-kubernetes-preserve-unknown-fields`` keeps everything).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import (
    go_printed,
    go_syntax,
    go_value_type,
    refuse_constant,
    surrogates_replaced,
)
from anyop.testing.fake.go_yaml import GoYAMLError
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import Catalog, Schema, catalog
from anyop.testing.fake.request_bodies import applied_document
from anyop.testing.fake.statuses import StatusError, bad_request, status_body
from anyop.testing.fake.writes import JSON_PATCH, STRATEGIC, patched

__all__ = ["checked_fields", "checked_patch", "undeclared_applied_field"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DIRECTIVES = ("Strict", "Warn", "Ignore")


def checked_fields(kind: Kind, body: bytes, directive: str) -> tuple[list[str], Any]:
    """The warnings of a write's JSON object under ``directive`` (``Strict``, ``Warn`` or
    ``Ignore``), and the object as read for them: a plain JSON object, as the request's body
    decodes (or ``None``: not read, or not as the body decodes; the caller decodes it).

    Raises:
        StatusError: 400, ``Strict`` and the object has unknown or duplicate fields.
    """
    if directive == "Ignore":
        return [], None
    problems, document = _problems(kind, body)
    if problems and directive == "Strict":
        found = ", ".join(problems)
        raise _refused(kind, f"strict decoding error: {found}")
    return problems, document


def checked_patch(
    kind: Kind,
    stored: dict[str, Any],
    *,
    content_type: str,
    document: bytes,
    directive: str,
) -> list[str]:
    """The warnings of a patch under ``directive`` (``Strict``, ``Warn`` or ``Ignore``): the
    patch's duplicate fields, then the unknown fields of the object it makes.

    Raises:
        StatusError: 422, ``Strict`` and there are such fields (kube-apiserver's message shows
            the patched object, or the patch itself for a strategic merge patch).
    """
    if directive == "Ignore":
        return []
    try:
        patch = _parsed(document)
    except ValueError:
        return []  # the patch fails as it does without validation
    problems = [f'duplicate field "{path}"' for path in _duplicated(patch, "")]
    result: Any = None
    if content_type == JSON_PATCH or _may_add_unknown(kind, patch):
        try:
            result = _sorted(patched(kind, stored, content_type=content_type, document=document))
        except StatusError:
            return []
        if isinstance(result, Mapping):
            problems += [f'unknown field "{path}"' for path in _unknown_in(kind, result)]
    if problems and directive == "Strict":
        if result is None:
            result = _sorted(patched(kind, stored, content_type=content_type, document=document))
        shown = go_printed(patch) if content_type == STRATEGIC else _json(kind, result)
        raise _invalid_patch(shown, problems)
    return problems


def _may_add_unknown(kind: Kind, patch: Any) -> bool:
    """Whether a merge or strategic merge patch has fields the kind does not (besides the
    directives of strategic merge patches): only then can the object it makes have them, as
    the stored object has none."""
    if not isinstance(patch, Mapping):
        return False
    if kind.custom:
        return any(True for _ in _unknown_in(kind, _without_directives(patch)))
    name = catalog().schema_name(kind.group, kind.version, kind.kind)
    return name is not None and _has_unknown(catalog(), patch, {"$ref": name})


def _has_unknown(books: Catalog, value: Any, schema: Schema) -> bool:
    """Whether a built-in object's patch has a field its schema does not (directives, the
    members named ``$...``, aside): what :func:`_collect` finds first, found sooner."""
    _, properties, extra, items = _node(books, schema)
    if isinstance(value, list):
        if items is None:
            return False
        return any(type(i) not in _LEAVES and _has_unknown(books, i, items) for i in value)
    if (not properties and extra is None) or not is_map(value):
        return False
    for key, item in value.items():
        if key[:1] == "$":
            continue
        if properties and key not in properties:
            return True
        sub = properties[key] if properties else extra
        if type(item) not in _LEAVES and _has_unknown(books, item, sub or {}):
            return True
    return False


def _without_directives(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_directives(item) for item in value]
    if type(value) in _LEAVES or not is_map(value):
        return value
    return {k: _without_directives(v) for k, v in value.items() if not k.startswith("$")}


def _invalid_patch(shown: str, problems: list[str]) -> StatusError:
    error = f"strict decoding error: {', '.join(problems)}"
    message = f"Invalid value: {json.dumps(shown)}: {error}"
    cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
    body = status_body(422, "Invalid", f' "" is invalid: patch: {message}')
    return StatusError({**body, "details": {"causes": [cause]}})


def _sorted(value: Any) -> Any:
    """A patch, or a patched object, as the API server's maps hold it: keys sorted (the
    stored object's untouched parts have no unknown fields, their order does not matter)."""
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_sorted(item) for item in value]
    return value


def _json(kind: Kind, value: Any) -> str:
    """The patched object as Go encodes it: a custom resource's map with sorted keys; a built-in
    one's untouched parts keep their Go types' field order, which is not kept here."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=kind.custom)


def _refused(kind: Kind, error: str) -> StatusError:
    return bad_request(
        f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: {error}'
    )


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers its members as they came, duplicates too."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _object(items: list[tuple[str, Any]]) -> _Object:
    return _Object(items)


class _Duplicates(Exception):
    """A JSON object has a member twice."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Duplicates
    return found


_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique, parse_constant=refuse_constant)
_KEEPING = json.JSONDecoder(object_pairs_hook=_object, parse_constant=refuse_constant)
"""The decoders, made once (``json.loads`` with a hook makes one per call: half its time on a
small patch)."""


def _parsed(document: bytes | str) -> Any:
    """A JSON document: plain dicts where no object repeats a member (most documents, at half
    the cost), else :class:`_Object` maps that keep every member.

    Raises:
        ValueError: It is not JSON.
    """
    if isinstance(document, bytes):  # as json.loads reads bytes: UTF-8, -16 or -32
        document = document.decode(json.detect_encoding(document), "surrogatepass")
    try:
        return _UNIQUE.decode(document)
    except _Duplicates:
        return _KEEPING.decode(document)


def _problems(kind: Kind, body: bytes) -> tuple[list[str], Any]:
    """A JSON object's duplicate fields, then its unknown ones, as Go's strict decoder names
    them; and the object, if it is a plain one (no member twice) of UTF-8 text."""
    try:
        document = _parsed(body.decode())  # UTF-8 only: what the body decodes as otherwise
    except ValueError:
        return [], None
    if not isinstance(document, Mapping):
        return [], None
    if kind.custom:  # the decoder's duplicates, then what pruning drops
        found = [("duplicate", path) for path in _duplicated(document, "")]
        found += [("unknown", path) for path in _unknown_in(kind, document)]
    else:
        name = catalog().schema_name(kind.group, kind.version, kind.kind)
        found = list(_builtin(document, {"$ref": name}, "")) if name else []
    plain = None
    if type(document) is dict and not any(p == "duplicate" for p, _ in found):
        plain = surrogates_replaced(body, document)
    return [f'{problem} field "{path}"' for problem, path in found], plain


def _duplicated(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, _Object):
        seen: set[str] = set()
        for key, item in value.pairs:
            where = f"{path}.{key}" if path else key
            if key in seen:
                yield where
            seen.add(key)
            yield from _duplicated(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _duplicated(item, f"{path}[{index}]")


def _unknown_in(kind: Kind, document: Mapping[str, Any]) -> Iterator[str]:
    if kind.custom:  # pruning collects them, and they come sorted
        return iter(sorted(_custom(document, kind.schema or {})))
    name = catalog().schema_name(kind.group, kind.version, kind.kind)
    found = _builtin(document, {"$ref": name}, "") if name else iter(())
    return (path for problem, path in found if problem == "unknown")


def _builtin(value: Any, schema: Schema, path: str) -> Iterator[tuple[str, str]]:
    """The unknown and duplicate fields of a built-in object, as ``("unknown"|"duplicate",
    path)``, in the order Go's decoder meets them (a duplicate at its second occurrence)."""
    found: list[tuple[str, str]] = []
    _collect(catalog(), value, schema, path, found)
    return iter(found)


def _collect(
    books: Catalog, value: Any, schema: Schema, path: str, found: list[tuple[str, str]]
) -> None:
    _, properties, extra, items = _node(books, schema)
    if isinstance(value, list):
        if items is not None:
            for index, item in enumerate(value):
                if type(item) not in _LEAVES and (isinstance(item, list) or is_map(item)):
                    _collect(books, item, items, f"{path}[{index}]", found)
        return
    if (not properties and extra is None) or not is_map(value):
        return  # free-form, or not an object
    repeats = isinstance(value, _Object)  # only these can have a member twice
    pairs = value.pairs if repeats else value.items()
    seen: set[str] = set()
    for key, item in pairs:
        if repeats:
            if key in seen:
                found.append(("duplicate", f"{path}.{key}" if path else key))
            seen.add(key)
        if properties and key not in properties:
            found.append(("unknown", f"{path}.{key}" if path else key))
        elif type(item) not in _LEAVES and (isinstance(item, list) or is_map(item)):
            sub = properties[key] if properties else extra
            _collect(books, item, sub or {}, f"{path}.{key}" if path else key, found)


_LEAVES = frozenset((str, int, float, bool, type(None)))
_Node = tuple[Schema, Mapping[str, Any], "Schema | None", "Schema | None"]
"""A schema resolved, and its properties, value schema and items schema."""
_NODES: dict[int, _Node] = {}
"""Each (catalog) schema's node, by the resolved schema's id: the catalog's schemas live as long
as the process."""


def _node(books: Catalog, schema: Schema) -> _Node:
    """A catalog schema's node, read once."""
    resolved, _ = books.resolve(schema)
    found = _NODES.get(id(resolved))
    if found is None:
        found = _NODES[id(resolved)] = _read_node(resolved)
    return found


def _read_node(resolved: Schema) -> _Node:
    extra, items = resolved.get("additionalProperties"), resolved.get("items")
    return (
        resolved,
        resolved.get("properties") or {},
        extra if isinstance(extra, Mapping) else None,
        items if isinstance(items, Mapping) else None,
    )


def _custom(document: Mapping[str, Any], schema: Schema) -> Iterator[str]:
    for key, item in document.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            found = _builtin(item, {"$ref": _META}, "metadata")
            yield from (path for problem, path in found if problem == "unknown")
            continue
        yield from _structural(item, schema, key, root=True)


def _structural(value: Any, schema: Schema, path: str, *, root: bool = False) -> Iterator[str]:
    """The unknown fields under ``path`` (the value of the key ``path`` names, in ``schema``'s
    parent object when ``root``, else of ``schema`` itself)."""
    if root:
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            properties = schema.get("properties") or {}
            if path in properties:
                yield from _structural(value, properties[path], path)
            return
        properties = schema.get("properties") or {}
        if path not in properties:
            yield path
            return
        schema = properties[path]
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _structural(item, schema["items"], f"{path}[{index}]")
        return
    if not isinstance(value, Mapping) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in properties:
            yield from _structural(item, properties[key], f"{path}.{key}")
        elif isinstance(extra, Mapping):
            yield from _structural(item, extra, f"{path}[{key}]")
        elif extra is not True:
            yield f"{path}.{key}"


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
    if kind.custom:
        found = sorted(_custom_smd(config, kind.schema or {}))
    else:
        name = catalog().schema_name(kind.group, kind.version, kind.kind)
        found = sorted(_builtin_smd(config, {"$ref": name}, "")) if name else []
    if found:
        gvk = f"{kind.api_version if kind.group else '/' + kind.version}, Kind={kind.kind}"
        # The typed object is the configuration: its own namespace and name (the URL's not).
        metadata = config.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        where = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
        # Several come in the order of Go's map iteration, which varies: sorted here.
        error = found[0] if len(found) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in found)
        message = f"failed to create typed patch object ({where}; {gvk}): {error}"
        raise StatusError(status_body(500, "", message, details=None))


def _custom_smd(config: Mapping[str, Any], schema: Schema) -> Iterator[str]:
    for key, item in config.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata":
            yield from _builtin_smd(item, {"$ref": _META}, ".metadata")
            continue
        properties = schema.get("properties") or {}
        if key in properties:
            yield from _smd(item, properties[key], f".{key}", lambda s: s)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            yield f".{key}{_UNDECLARED}"


def _builtin_smd(value: Any, schema: Schema, path: str) -> Iterator[str]:
    """:func:`_smd` for a built-in kind's (catalog) schema, by its nodes read once."""
    found: list[str] = []
    _undeclared(value, schema, path, functools.partial(_node, catalog()), found, typed=True)
    return iter(found)


def _smd(
    value: Any, schema: Schema, path: str, resolve: Callable[[Schema], Schema]
) -> Iterator[str]:
    """The errors of a configuration's fields that ``schema`` does not declare (``resolve``
    follows a ``$ref``), each at its path in structured merge's syntax."""
    found: list[str] = []
    _undeclared(value, schema, path, lambda node: _read_node(resolve(node)), found)
    return iter(found)


_UNDECLARED = ": field not declared in schema"


def _undeclared(
    value: Any,
    schema: Schema,
    path: str,
    node_of: Callable[[Schema], _Node],
    found: list[str],
    *,
    typed: bool = False,
) -> None:
    """Add the errors of ``value`` at ``path``: fields ``schema`` does not declare, and with
    ``typed``, values of another type than its scalar's."""
    resolved, properties, extra, items = node_of(schema)
    if typed and (problem := _mistyped(resolved.get("type"), value)):
        found.append(f"{path}: {problem}")
        return
    if isinstance(value, list):
        if items is not None:
            for index, item in enumerate(value):
                if type(item) not in _LEAVES or typed:
                    where = path + _element(resolved, item, index)
                    _undeclared(item, items, where, node_of, found, typed=typed)
        return
    if (not properties and extra is None) or not is_map(value):
        return  # free-form, or not an object
    if resolved.get("x-kubernetes-preserve-unknown-fields"):
        return
    for key, item in value.items():
        sub = properties.get(key) or extra
        if sub is None:
            found.append(f"{path}.{key}{_UNDECLARED}")
        elif type(item) not in _LEAVES or typed:
            _undeclared(item, sub, f"{path}.{key}", node_of, found, typed=typed)


def _mistyped(wanted: Any, value: Any) -> str | None:
    """Structured merge's error for a value of another type than the schema's scalar."""
    if value is None:
        return None
    if wanted == "string" and not isinstance(value, str):
        return f"expected string, got &value.valueUnstructured{{Value:{go_syntax(value)}}}"
    if wanted in ("integer", "number") and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return f"expected numeric (int or float), got {go_value_type(value)}"
    return None


def _element(schema: Schema, item: Any, index: int) -> str:
    """A list element's path element: its keys in a map-list, its value in a set, else its
    index."""
    kind = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if kind == "map" and keys and isinstance(item, Mapping):
        return "[" + ",".join(f"{key}={json.dumps(item.get(key))}" for key in keys) + "]"
    if kind == "set":
        return f"[={json.dumps(item)}]"
    return f"[{index}]"
