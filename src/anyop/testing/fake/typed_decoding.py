"""Built-in objects decoded as kube-apiserver decodes them into its Go types.

Pure. The API server reads a built-in object's JSON into its kind's Go struct: a field of the
wrong JSON type or a timestamp Go cannot parse is a 400 in Go's words, fields the type has not
are dropped. :func:`decode` does both, by the kind's schema in the vendored OpenAPI catalog.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import marshal
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.go_structs import go_structs, struct_order
from anyop.testing.fake.go_times import RFC3339, RFC3339_MICRO, time_error
from anyop.testing.fake.json_copy import is_map, json_copy, sorted_keys
from anyop.testing.fake.openapi_catalog import Catalog, Schema, catalog
from anyop.testing.fake.quantities import QuantityError, canonical_quantity
from anyop.testing.fake.statuses import StatusError, bad_request

__all__ = ["decode", "decode_metadata", "object_shape", "value_plan"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_TIMES = {f"{_META}Time": RFC3339, f"{_META}MicroTime": RFC3339_MICRO}
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"  # (any JSON: Go keeps bytes)
_INT_LIMITS = {"int32": 2**31, "int64": 2**63}
_INT32 = _INT_LIMITS["int32"]


@dataclasses.dataclass(slots=True)
class _Context:
    """Go's decoder error context: the innermost struct and the JSON field names to here."""

    struct: str = ""
    fields: tuple[str, ...] = ()
    error: str = ""
    aborted: bool = False
    converter: bool = False
    """Converting an unstructured object (a patch's result), not decoding JSON: the errors
    are ``runtime.DefaultUnstructuredConverter``'s."""

    def type_error(self, got: str, go_type: str, value: Any = None) -> None:
        if self.error:
            return
        if self.converter:
            self.error = _converter_error(value, go_type)
            return
        self.error = self.type_message(got, go_type)

    def type_message(self, got: str, go_type: str) -> str:
        """Go's ``UnmarshalTypeError`` here, with the decoder's context (where it has one)."""
        if self.struct or self.fields:
            where = f"{self.struct}.{'.'.join(self.fields)}"
            return f"json: cannot unmarshal {got} into Go struct field {where} of type {go_type}"
        return f"json: cannot unmarshal {got} into Go value of type {go_type}"

    def other_error(self, message: str) -> None:
        if not self.error:
            self.error = message

    def abort(self, message: str) -> None:
        """An unmarshaller's error: Go's decoder stops at it, whatever type error it saw."""
        if not self.aborted:
            self.error, self.aborted = message, True


_GO_SCALARS = ("string", "bool", "int", "int8", "int16", "int32", "int64", "uint", "uint8",
               "uint16", "uint32", "uint64", "float32", "float64")  # fmt: skip


def _unstructured_kind(value: Any) -> str:
    """The Go kind of an unstructured value."""
    match value:
        case bool():
            return "bool"
        case int():
            return "int64"
        case float():
            return "float64"
        case str():
            return "string"
        case list():
            return "slice"
    return "map"


_INTS = ("int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64")


def _converter_error(value: Any, go_type: str) -> str:
    """``DefaultUnstructuredConverter.FromUnstructured``'s error for a value of another type:
    between kinds Go converts (an integer to a string or float, a float to an integer) it cannot
    convert the value; into another kind it does not know how."""
    kind = _unstructured_kind(value)
    underlying = go_structs()["underlying"].get(go_type, go_type)  # a named type: its kind
    if underlying in _GO_SCALARS:
        floats = ("float32", "float64")
        if kind == "int64":
            convertible = underlying in (*_INTS, *floats, "string")
        elif kind == "float64":
            convertible = underlying in (*_INTS, *floats)
        else:
            convertible = kind == underlying
        if not convertible:
            return f"unrecognized type: {underlying}"
        return f"cannot convert {kind} to {go_type}"
    if underlying.startswith("[]"):
        return f"cannot restore slice from {kind}"
    if underlying.startswith("map["):
        return f"cannot restore map from {kind}"
    return f"cannot restore struct from: {kind}"


def _json_name(value: Any) -> str:
    match value:
        case bool():
            return "bool"
        case int() | float():
            return "number"
        case str():
            return "string"
        case list():
            return "array"
    return "object"


_GO_NAMES: dict[int, str] = {}
"""The Go type of each (catalog) schema of a field whose Go type is a named one its schema does
not refer to (``v1.Protocol``), by the schema's id (see :func:`_shape_of`)."""


def _go_type(books: Catalog, schema: Schema) -> str:
    named = _GO_NAMES.get(id(schema))
    if named is not None:
        return named
    resolved, name = books.resolve(schema)
    if name:
        package, _, short = name.rpartition(".")
        return f"{package.rpartition('.')[2]}.{short}"
    match resolved.get("type"):
        case "array":
            return "[]" + _go_type(books, resolved.get("items") or {})
        case "object":
            extra = resolved.get("additionalProperties")
            inner = _go_type(books, extra) if isinstance(extra, Mapping) else "interface {}"
            return f"map[string]{inner}"
        case "integer":
            return str(resolved.get("format") or "int64")
        case "number":
            return "float64"
        case "boolean":
            return "bool"
        case "string":
            return "[]uint8" if resolved.get("format") == "byte" else "string"
    return "interface {}"


_ZEROS = {"quantity": "0"}
"""What a null in a map decodes to, by how its values decode (else it stays a null)."""
_ANY: Schema = {}
"""The schema of an array's items that its schema does not give."""
_SIMPLE = {"string": str, "boolean": bool}


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    """How the values of one (catalog) schema decode.

    Attributes:
        resolved: The schema, its ``$ref`` followed.
        name: The name it refers to (``""`` for an inline schema).
        how: ``object``, ``array``, ``scalar``, ``time``, ``int-or-string`` or ``quantity``.
        collection: An inline list or map: Go leaves it out when empty.
        plain: The Python type whose values it takes as they are, with nothing to check
            (``str`` for a string that is not base64 bytes, ``bool`` for a boolean).
        integer: An integer: an ``int`` of 32 bits fits, whatever the format.
    """

    resolved: Schema
    name: str
    how: str
    collection: bool
    plain: type | None
    integer: bool


_PLANS: dict[int, _Plan] = {}
"""The plan of each (catalog) schema, by its id: the schemas live as long as the process."""


def _plan(books: Catalog, schema: Schema) -> _Plan:
    """How the values of ``schema`` decode (made once per schema)."""
    found = _PLANS.get(id(schema))
    if found is None:
        found = _PLANS[id(schema)] = _plan_of(books, schema)
    return found


def _plan_of(books: Catalog, schema: Schema) -> _Plan:
    resolved, name = books.resolve(schema)
    kind = resolved.get("type")
    if name in _TIMES:
        how = "time"
    elif name == _INT_OR_STRING:
        how = "int-or-string"
    elif name == _QUANTITY:
        how = "quantity"
    elif kind == "object" or (kind is None and "properties" in resolved):
        how = "object"
    elif kind == "array":
        how = "array"
    else:
        how = "scalar"
    extra = resolved.get("additionalProperties")
    collection = not name and (kind == "array" or isinstance(extra, Mapping))
    simple = how == "scalar" and kind in _SIMPLE and resolved.get("format") != "byte"
    plain = _SIMPLE[str(kind)] if simple else None
    return _Plan(resolved, name, how, collection, plain, how == "scalar" and kind == "integer")


def _value(books: Catalog, value: Any, schema: Schema, ctx: _Context, like: Any = None) -> Any:
    """Decode one value by its schema: the kept (pruned) value; errors go into ``ctx``.

    ``like`` is the value decoded before at the same place, if any (see :func:`decode`).
    """
    if value is None:
        return None
    plan = _plan(books, schema)
    if type(value) is plan.plain:
        return value  # nothing to check, nothing to drop
    resolved, name = plan.resolved, plan.name
    match plan.how:
        case "scalar":
            return _scalar(value, resolved, ctx, go_type=lambda: _go_type(books, schema))
        case "object":
            return _object(books, value, resolved, name, schema, ctx, like)
        case "array":
            if not isinstance(value, list):
                ctx.type_error(_json_name(value), _go_type(books, schema), value)
                return value
            items = resolved.get("items") or _ANY
            if type(like) is not list or len(like) != len(value):
                return [_value(books, item, items, ctx) for item in value]
            return [
                _value(books, item, items, ctx, before)
                for item, before in zip(value, like, strict=True)
            ]
        case "time":
            return _time(value, _TIMES[name], ctx)
        case "int-or-string":
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                # Its own UnmarshalJSON decodes into an int32: that error stops the decoder,
                # which adds its context.
                got = f"number {json.dumps(value)}" if type(value) is float else _json_name(value)
                if ctx.converter:
                    ctx.other_error(f"json: cannot unmarshal {got} into Go value of type int32")
                else:
                    ctx.abort(ctx.type_message(got, "int32"))
        case "quantity":
            try:
                return canonical_quantity(value)  # as Go writes it back: "0.5" is "500m"
            except QuantityError as exc:
                # Its own UnmarshalJSON: that error stops Go's decoder; the converter stops at
                # the first error of any kind, met in the struct's field order.
                if ctx.converter:
                    ctx.other_error(str(exc))
                else:
                    ctx.abort(str(exc))
    return value  # an IntOrString: as it is


def _time(value: Any, layout: str, ctx: _Context) -> Any:
    """A time's own ``UnmarshalJSON``: its error stops Go's decoder (the decoder adds its
    context to a type error, not to a parsing error)."""
    if not isinstance(value, str):
        if ctx.converter:
            message = f"json: cannot unmarshal {_json_name(value)} into Go value of type string"
            ctx.other_error(message)
        else:
            ctx.abort(ctx.type_message(_json_name(value), "string"))
        return value
    error = time_error(layout, value)
    if error is not None:
        if ctx.converter:
            ctx.other_error(error)
        else:
            ctx.abort(error)
    return value


_EMBEDDED = {"apiVersion": -3, "kind": -2, "metadata": -1}
"""Where a kind's embedded ``TypeMeta`` and ``ObjectMeta`` fields come in its struct: first."""


def _object(
    books: Catalog,
    value: Any,
    resolved: Schema,
    name: str,
    schema: Schema,
    ctx: _Context,
    like: Any = None,
) -> Any:
    if name == _RAW_EXTENSION:  # (what its kind's checks judge)
        return json_copy(dict(value) if is_map(value) else value)
    if type(value) is not dict and not is_map(value):
        ctx.type_error(_json_name(value), _go_type(books, schema), value)
        return value
    shape = _shape(books, resolved, name)
    if shape.free_form:
        return json_copy(dict(value))  # free-form (e.g. a RawExtension's object)
    if shape.fields is None:
        extra, plain = shape.extra, shape.extra_plain
        if plain is not None and all(type(item) is plain for item in value.values()):
            return dict(value)  # labels, annotations, a ConfigMap's data: nothing to check
        if plain is str:  # a null in a map of strings is Go's zero value there: ""
            return {key: "" if item is None else _value(books, item, extra, ctx)
                    for key, item in value.items()}  # fmt: skip
        zero = _ZEROS.get(_plan(books, extra).how)  # a quantity's: "0"
        return {key: zero if item is None else _value(books, item, extra, ctx)
                for key, item in value.items()}  # fmt: skip
    kept: dict[str, Any] = {}
    fields = shape.fields
    struct = ""
    if type(like) is not dict:
        like = _NOTHING
    pairs: Any = value.items()
    if ctx.converter:  # the converter walks the struct's fields in their Go order
        place = struct_order(name) or {  # (where the Go order is the alphabetical one)
            key: index for index, key in enumerate(sorted(set(fields) - _EMBEDDED.keys()))
        }
        last = len(place)  # the embedded TypeMeta and ObjectMeta lead (the table has them not)
        pairs = sorted(pairs, key=lambda pair: place.get(pair[0], _EMBEDDED.get(pair[0], last)))
    for key, item in pairs:
        field = fields.get(key)
        if field is None:
            continue  # an unknown field: dropped (and warned about)
        sub, plan = field
        if type(item) is plan.plain:  # most fields: nothing to check, nothing to drop
            if item or key not in shape.omitted:  # Go leaves out an omitempty "" or false
                kept[key] = item
            continue
        if plan.integer and type(item) is int and -_INT32 <= item < _INT32:
            if item or key not in shape.omitted:  # fits any integer format
                kept[key] = item
            continue
        before = like.get(key)
        if before is not None and item == before and type(item) is type(before):
            same = _strictly_same(item, before)  # ``==`` takes 2.0 for 2, Go's decoder not
            if same is not None:  # decoded before: it decodes to itself, as the decoder's own
                kept[key] = marshal.loads(same) if type(item) in _TREES else item
                continue
        struct = struct or (name.rpartition(".")[2] if name else ctx.struct)
        outer = ctx.struct, ctx.fields
        embedded = shape.inline.get(key, ())  # Go names the embedded structs on the way
        ctx.struct, ctx.fields = struct, (*outer[1], *embedded, key)  # where an error inside is
        decoded = _value(books, item, sub, ctx, before)
        ctx.struct, ctx.fields = outer
        if decoded is not None and not (
            decoded in ({}, []) and plan.collection and key not in shape.nulls
        ):
            if key in shape.omitted and type(decoded) in (int, float) and decoded == 0:
                continue  # an omitempty number's zero
            kept[key] = decoded  # Go leaves out nulls, and empty maps and lists (omitempty)
    for key, sub in shape.defaulted:
        if key not in kept:
            struct = struct or (name.rpartition(".")[2] if name else ctx.struct)
            kept[key] = _default(books, sub, struct)
    for key in shape.nulls:
        if key not in kept:  # nil, and written (an empty one is kept: see as_stored)
            kept[key] = None
    return kept


def _strictly_same(value: Any, other: Any) -> bytes | None:
    """For two values equal by ``==`` and of one type: the marshal bytes of a dict or list if
    the other's are the same, type for type inside (``True`` is not ``1``, nor ``1.0``), else
    ``None`` (also for parts marshal does not take); ``b""`` for a scalar."""
    if type(value) not in _TREES:
        return b""
    try:  # version 0: no mark of interned strings, nor references, to tell equal values apart
        data = marshal.dumps(value, 0)
        return data if data == marshal.dumps(other, 0) else None
    except ValueError:
        return None


_DEFAULTS: dict[int, Any] = {}
"""Each (catalog) schema's default as it decodes, by the schema's id."""


def _default(books: Catalog, schema: Schema, struct: str) -> Any:
    """A new copy of a field's default, decoded (once per schema)."""
    found = _DEFAULTS.get(id(schema), _DEFAULTS)
    if found is _DEFAULTS:
        found = _DEFAULTS[id(schema)] = _value(
            books, json_copy(schema["default"]), schema, _Context(struct)
        )
    if type(found) is dict and not found:
        return {}  # most: a struct Go serialises empty
    return json_copy(found)


@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    """How an object schema's fields decode, read once per (catalog) schema.

    Attributes:
        fields: Each property's schema and plan; ``None`` for a map (no properties).
        extra: A map's value schema (``additionalProperties``).
        extra_plain: The Python type a map's values are taken as they are, if any.
        free_form: Neither properties nor a value schema: kept as it is.
        defaulted: The properties whose fields come back when missing.
    """

    fields: dict[str, tuple[Schema, _Plan]] | None
    extra: Schema
    extra_plain: type | None
    free_form: bool
    defaulted: list[tuple[str, Schema]]
    omitted: frozenset[str] = frozenset()
    """The ``omitempty`` scalar fields: Go leaves out their zero value (``""``, 0, false)."""
    inline: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """The fields from embedded structs, with their names (in a decoding error's path)."""
    nulls: tuple[str, ...] = ()
    """The slices and maps without ``omitempty``: Go writes ``null`` for them when nil."""


_SHAPES: dict[int, _Shape] = {}
_NOTHING: dict[str, Any] = {}
_TREES = (dict, list)


def _shape(books: Catalog, resolved: Schema, name: str) -> _Shape:
    found = _SHAPES.get(id(resolved))
    if found is None:
        found = _SHAPES[id(resolved)] = _shape_of(books, resolved, name)
    return found


def _shape_of(books: Catalog, resolved: Schema, name: str) -> _Shape:
    """The shape of a definition (``name``) or inline object schema; the named Go types of its
    fields (and of their items and values) are noted for :func:`_go_type`."""
    properties: Mapping[str, Any] = resolved.get("properties") or {}
    for key, go_type in (go_structs()["types"].get(name) or {}).items():
        sub = properties.get(key)
        if isinstance(sub, Mapping):
            _GO_NAMES[id(sub)] = go_type
            inner = sub.get("items") or sub.get("additionalProperties")
            if isinstance(inner, Mapping) and go_type.startswith(("[]", "map[")):
                _GO_NAMES.setdefault(id(inner), go_type.partition("]")[2])
    extra = resolved.get("additionalProperties")
    if not isinstance(extra, Mapping):
        extra = None
    defaulted = [(key, sub) for key, sub in properties.items() if _serialised_default(sub)]
    if not properties:
        plain = _plan(books, extra).plain if extra is not None else None
        return _Shape(None, extra or _ANY, plain, extra is None, defaulted)
    fields = {key: (sub, _plan(books, sub)) for key, sub in properties.items()}
    omitted = frozenset(go_structs()["omitempty"].get(name) or ())
    # An omitempty field's zero default does not come back: Go leaves it out when it writes.
    defaulted = [(key, sub) for key, sub in defaulted
                 if key not in omitted or sub.get("default") not in ("", 0, False)]  # fmt: skip
    chains = go_structs()["inline"].get(name) or {}
    inline = {key: tuple(chain.split(".")) for key, chain in chains.items()}
    nulls = tuple(go_structs()["nulls"].get(name) or ())
    return _Shape(fields, _ANY, None, False, defaulted, omitted, inline, nulls)


def _serialised_default(schema: Schema) -> bool:
    """Whether a missing field comes back anyway: the schema gives a default for the fields Go
    always serialises (a struct's ``{}``, a non-``omitempty`` number's ``0``) and for declared
    defaults (a port's ``TCP``); a list's comes back as ``null``, which is left out here."""
    value = schema.get("default")
    return value is not None and not isinstance(value, (list, tuple))


def _scalar(value: Any, resolved: Schema, ctx: _Context, *, go_type: Callable[[], str]) -> Any:
    match resolved.get("type"):
        case "string":
            if not isinstance(value, str):
                ctx.type_error(_json_name(value), go_type(), value)
            elif resolved.get("format") == "byte":
                _base64(value, ctx)
        case "boolean":
            if not isinstance(value, bool):
                ctx.type_error(_json_name(value), go_type(), value)
        case "integer":
            _integer(value, go_type, ctx)
        case "number":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                ctx.type_error(_json_name(value), go_type(), value)
    return value


def _integer(value: Any, go_type: Callable[[], str], ctx: _Context) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        ctx.type_error(_json_name(value), go_type(), value)
        return
    if isinstance(value, float):
        if not (ctx.converter and value.is_integer()):  # the converter takes 2.0 for 2
            ctx.type_error(f"number {value}", go_type(), value)
    elif not -(2**31) <= value < 2**31:  # only then the type's size matters
        limit = _INT_LIMITS.get(go_type(), 2**63)
        if not -limit <= value < limit:
            ctx.type_error(f"number {value}", go_type(), value)


def _base64(value: str, ctx: _Context) -> None:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        offset = next(
            (
                i
                for i, c in enumerate(value)
                if not (c.isalnum() and c.isascii()) and c not in "+/="
            ),
            len(value) - len(value) % 4,
        )
        error = f"illegal base64 data at input byte {offset}"
        # The converter reads a string into bytes by Go's JSON decoder, and says so.
        ctx.other_error(f"error decoding from json: {error}" if ctx.converter else error)


def decode(
    group: str,
    version: str,
    kind: str,
    body: Mapping[str, Any],
    *,
    like: Any = None,
    unstructured: bool = False,
) -> dict[str, Any]:
    """A built-in object as its Go type keeps it: unknown fields dropped.

    ``like`` is the object as stored (an update's old object): a field equal to its own there
    was decoded before, and decodes to itself, so it is kept without being walked again.

    The result shares no dict or list with ``body`` or ``like``: the writes change it in
    place. Objects of kinds the catalog has no schema for come back as they are (copied).

    ``unstructured``: the body is an unstructured object (a patch's result, an apply's) that
    the API server converts rather than decodes: its errors are the converter's, alone.

    Raises:
        StatusError: 400, a field has the wrong JSON type or a timestamp does not parse.
    """
    books = catalog()
    name = books.schema_name(group, version, kind)
    if name is None:
        return json_copy(dict(body))  # the decoder's own, as below
    ctx = _Context(converter=unstructured)
    kept = _object(books, body, books.schemas[name], name, {"$ref": name}, ctx, like)
    if ctx.error:
        if unstructured:
            raise bad_request(ctx.error)
        raise _refused(kind, version, ctx.error)
    for key in ("apiVersion", "kind"):
        if key in body:
            kept[key] = body[key]
    return dict(kept)


def object_shape(books: Catalog, resolved: Schema, name: str) -> _Shape:
    """How an object schema's fields decode (see :class:`_Shape`), read once per schema."""
    return _shape(books, resolved, name)


def value_plan(books: Catalog, schema: Schema) -> _Plan:
    """How a value of a schema decodes (see :class:`_Plan`), read once per schema."""
    return _plan(books, schema)


def decode_metadata(metadata: Any, *, kind: str, version: str) -> Any:
    """An object's ``metadata`` as ``ObjectMeta`` keeps it (what custom resources keep).

    Raises:
        StatusError: 400, a field has the wrong JSON type (labels that are not strings).
    """
    books = catalog()
    name = f"{_META}ObjectMeta"
    ctx = _Context()
    # A custom resource's metadata reaches Go's decoder as JSON written from a map, its keys
    # sorted: the first error is the first in that order.
    ordered = sorted_keys(metadata)
    kept = _object(books, ordered, books.schemas[name], name, {"$ref": name}, ctx)
    if ctx.error:
        raise _refused(kind, version, ctx.error)
    return kept


def _refused(kind: str, version: str, error: str) -> StatusError:
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {error}')
