"""Server-side field validation: ``fieldValidation=Strict|Warn|Ignore`` on writes.

Pure. kube-apiserver decodes a request's object strictly and, by the directive (``Warn`` when
none is given), refuses it for its unknown and duplicate fields (400, ``<Kind> in version
"<v>" cannot be handled as a <Kind>: strict decoding error: unknown field "spec.x"``), warns
about each (``Warning: 299 - "unknown field \\"spec.x\\""``), or ignores them. Unknown fields are
those the kind's schema does not have: a built-in kind's Go type (its vendored schema), a custom
resource's structural schema (where ``x-kubernetes-preserve-unknown-fields`` keeps everything).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import (
    go_printed,
    refuse_constant,
    surrogates_replaced,
)
from anyop.testing.fake.json_copy import is_map
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import Catalog, Schema, catalog
from anyop.testing.fake.smd_typing import LEAVES, schema_node
from anyop.testing.fake.statuses import StatusError, bad_request, status_body
from anyop.testing.fake.writes import JSON_PATCH, STRATEGIC, patched

__all__ = ["checked_fields", "checked_patch"]

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
    _, properties, extra, items = schema_node(books, schema)
    if isinstance(value, list):
        if items is None:
            return False
        return any(type(i) not in LEAVES and _has_unknown(books, i, items) for i in value)
    if (not properties and extra is None) or not is_map(value):
        return False
    for key, item in value.items():
        if key[:1] == "$":
            continue
        if properties and key not in properties:
            return True
        sub = properties[key] if properties else extra
        if type(item) not in LEAVES and _has_unknown(books, item, sub or {}):
            return True
    return False


def _without_directives(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_directives(item) for item in value]
    if type(value) in LEAVES or not is_map(value):
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
    _, properties, extra, items = schema_node(books, schema)
    if isinstance(value, list):
        if items is not None:
            for index, item in enumerate(value):
                if type(item) not in LEAVES and (isinstance(item, list) or is_map(item)):
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
        elif type(item) not in LEAVES and (isinstance(item, list) or is_map(item)):
            sub = properties[key] if properties else extra
            _collect(books, item, sub or {}, f"{path}.{key}" if path else key, found)


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
    if isinstance(value, list) and (
        isinstance(schema.get("items"), Mapping)
        or not schema.get("x-kubernetes-preserve-unknown-fields")
    ):  # (a list where the schema has none: each of its objects' fields is unknown)
        items = schema.get("items")
        for index, item in enumerate(value):
            yield from _structural(item, items if isinstance(items, Mapping) else {},
                                   f"{path}[{index}]")  # fmt: skip
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
