"""The CEL types of kube-apiserver's CRD rules, and the signatures of the functions their type
checker knows (cel-go's standard declarations, the optional types', and the libraries of
Kubernetes' CEL environment it types); :mod:`~anyop.testing.fake.cel_check` checks with them.

Pure: tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from anyop.testing.fake.cel_decls import Decl

__all__ = [
    "BINDERS",
    "DYN",
    "ERROR",
    "GLOBAL_ONLY",
    "MEMBER",
    "NAMESPACES",
    "OPTIONAL_MACROS",
    "PRIMS",
    "RESULT_OF",
    "SIGNATURES",
    "UNKNOWN",
    "VAGUE",
    "T",
    "decl_to_type",
    "optional_of",
]


@dataclass(frozen=True, eq=False)
class T:
    """A CEL type: ``kind`` a primitive's name, ``list``, ``map``, ``optional`` (its value's
    type the parameter), ``object`` (``decl``), ``dyn``, ``type``, ``param`` (an overload's type
    parameter), ``error`` or ``unknown``."""

    kind: str
    params: tuple[T, ...] = ()
    decl: Decl | None = None

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.params[0]})"
        if self.kind == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if self.kind == "optional":
            return f"optional_type({self.params[0]})"
        if self.kind == "object" and self.decl is not None:
            return self.decl.name
        return _NAMES.get(self.kind, self.kind)


_NAMES = {"timestamp": "google.protobuf.Timestamp", "duration": "google.protobuf.Duration"}
DYN, UNKNOWN, ERROR = T("dyn"), T("unknown"), T("error")
_OPAQUE = ("kubernetes.URL", "net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver",
           "kubernetes.NamedFormat")  # fmt: skip
"""The types of Kubernetes' libraries (a URL's, an IP's...), by their names."""
_SIMPLE = ("int", "uint", "double", "bool", "string", "bytes", "null_type", "timestamp",
           "duration", "type")  # fmt: skip
PRIMS = {name: T(name) for name in (*_SIMPLE, *_OPAQUE)}
VAGUE = ("dyn", "unknown", "error", "param")
NAMESPACES = ("sets", "optional", "format", "strings", "lists", "ip", "math", "base64", "cel",
              "url", "quantity", "semver")  # fmt: skip


def optional_of(value: T) -> T:
    """The optional of a type (``optional_type(int)``)."""
    return T("optional", (value,))


def decl_to_type(decl: Decl) -> T:
    """A schema node's CEL type."""
    if decl.kind == "list" and decl.elem is not None:
        return T("list", (decl_to_type(decl.elem),))
    if decl.kind == "map" and decl.elem is not None:
        key = PRIMS["string"] if decl.key is None else decl_to_type(decl.key)
        return T("map", (key, decl_to_type(decl.elem)))
    if decl.kind == "object":
        return T("object", decl=decl)
    if decl.kind in ("dyn", "unknown"):
        return DYN if decl.kind == "dyn" else UNKNOWN
    return PRIMS[decl.kind]


def _spec(text: str) -> T:
    text = text.strip()
    if text in ("A", "B"):
        return T("param", decl=Decl(text))
    if text.startswith("list("):
        return T("list", (_spec(text[5:-1]),))
    if text.startswith("optional("):
        return optional_of(_spec(text[9:-1]))
    if text.startswith("map("):
        key, _, value = text[4:-1].partition(",")
        return T("map", (_spec(key), _spec(value)))
    return DYN if text == "dyn" else PRIMS[text]


MEMBER_ONLY: set[str] = set()
"""The overloads only a member call takes (a library's ``MemberOverload``)."""
GLOBAL_ONLY_OVERLOADS: set[str] = set()
"""The overloads only a global call takes (a library's ``Overload``)."""


def _overloads(*rows: str) -> list[tuple[str, list[T], T]]:
    """``id: param; param -> result`` rows; an id after ``.`` is a member call's only, after
    ``/`` a global call's only (else either's)."""
    table = []
    for row in rows:
        name, _, rest = row.partition(":")
        if name[0] in "./":
            (MEMBER_ONLY if name[0] == "." else GLOBAL_ONLY_OVERLOADS).add(name[1:])
            name = name[1:]
        params, _, result = rest.partition("->")
        table.append((name.strip(), [_spec(p) for p in params.split(";") if p.strip()],
                      _spec(result)))  # fmt: skip
    return table


_NUMERIC = ("int", "uint", "double")
_ORDERED = (*_NUMERIC, "string", "bytes", "bool", "timestamp", "duration")
_COMPARE = [f"{a}_{b}: {a}; {b} -> bool" for a in _ORDERED for b in _ORDERED
            if a == b or (a in _NUMERIC and b in _NUMERIC)]  # fmt: skip
_STRINGS = {"matches": "matches_string", "startsWith": "starts_with_string",
            "endsWith": "ends_with_string", "contains": "contains_string"}  # fmt: skip
SIGNATURES: dict[str, list[tuple[str, list[T], T]]] = {
    "_+_": _overloads("add_int64: int; int -> int", "add_uint64: uint; uint -> uint",
                      "add_double: double; double -> double",
                      "add_string: string; string -> string", "add_bytes: bytes; bytes -> bytes",
                      "add_list: list(A); list(A) -> list(A)",
                      "add_timestamp_duration: timestamp; duration -> timestamp",
                      "add_duration_timestamp: duration; timestamp -> timestamp",
                      "add_duration_duration: duration; duration -> duration"),
    "_-_": _overloads("subtract_int64: int; int -> int", "subtract_uint64: uint; uint -> uint",
                      "subtract_double: double; double -> double",
                      "subtract_timestamp_timestamp: timestamp; timestamp -> duration",
                      "subtract_timestamp_duration: timestamp; duration -> timestamp",
                      "subtract_duration_duration: duration; duration -> duration"),
    **{op: _overloads(*(f"{name}_{t}: {t}; {t} -> {t}" for t in types)) for op, name, types in (
        ("_*_", "multiply", _NUMERIC), ("_/_", "divide", _NUMERIC),
        ("_%_", "modulo", ("int", "uint")))},
    "-_": _overloads("negate_int64: int -> int", "negate_double: double -> double"),
    "!_": _overloads("logical_not: bool -> bool"),
    "_&&_": _overloads("logical_and: bool; bool -> bool"),
    "_||_": _overloads("logical_or: bool; bool -> bool"),
    "_?_:_": _overloads("conditional: bool; A; A -> A"),
    "_==_": _overloads("equals: A; A -> bool"),
    "_!=_": _overloads("not_equals: A; A -> bool"),
    **{op: _overloads(*(f"less_{row}" if op in ("_<_", "_<=_") else f"greater_{row}"
                        for row in _COMPARE)) for op in ("_<_", "_<=_", "_>_", "_>=_")},
    "@in": _overloads("in_list: A; list(A) -> bool", "in_map: A; map(A, B) -> bool"),
    "_[_]": _overloads("index_list: list(A); int -> A", "index_map: map(A, B); A -> B"),
    "@not_strictly_false": _overloads("not_strictly_false: bool -> bool"),
    "size": _overloads("size_string: string -> int", "size_bytes: bytes -> int",
                       "size_list: list(A) -> int", "size_map: map(A, B) -> int"),
    **{name: _overloads(f"{oid}: string; string -> bool") for name, oid in _STRINGS.items()},
    "int": _overloads("int64_to_int64: int -> int", "uint64_to_int64: uint -> int",
                      "double_to_int64: double -> int", "string_to_int64: string -> int",
                      "timestamp_to_int64: timestamp -> int"),
    "uint": _overloads("uint64_to_uint64: uint -> uint", "int64_to_uint64: int -> uint",
                       "double_to_uint64: double -> uint", "string_to_uint64: string -> uint"),
    "double": _overloads("double_to_double: double -> double", "int64_to_double: int -> double",
                         "uint64_to_double: uint -> double",
                         "string_to_double: string -> double"),
    "string": _overloads(*(f"{t}_to_string: {t} -> string" for t in (
        "int", "uint", "double", "bool", "string", "bytes", "timestamp", "duration"))),
    "bool": _overloads("bool_to_bool: bool -> bool", "string_to_bool: string -> bool"),
    "bytes": _overloads("bytes_to_bytes: bytes -> bytes", "string_to_bytes: string -> bytes"),
    "duration": _overloads("duration_to_duration: duration -> duration",
                           "string_to_duration: string -> duration"),
    "timestamp": _overloads("timestamp_to_timestamp: timestamp -> timestamp",
                            "string_to_timestamp: string -> timestamp",
                            "int64_to_timestamp: int -> timestamp"),
    "dyn": _overloads("to_dyn: A -> dyn"),
    # the optional types' (cel-go's ``cel.OptionalTypes``, every version: kube-apiserver's)
    "hasValue": _overloads("optional_hasValue: optional(A) -> bool"),
    "value": _overloads("optional_value: optional(A) -> A"),
    "or": _overloads("optional_or_optional: optional(A); optional(A) -> optional(A)"),
    "orValue": _overloads("optional_orValue_value: optional(A); A -> A"),
    "first": _overloads("list_first: list(A) -> optional(A)"),
    "last": _overloads("list_last: list(A) -> optional(A)"),
    "unwrapOpt": _overloads("optional_unwrapOpt: list(optional(A)) -> list(A)"),
    "optional.of": _overloads("optional_of: A -> optional(A)"),
    "optional.ofNonZeroValue": _overloads("optional_ofNonZeroValue: A -> optional(A)"),
    "optional.none": _overloads("optional_none: -> optional(A)"),
    "optional.unwrap": _overloads("optional_unwrap: list(optional(A)) -> list(A)"),
    "_[?_]": _overloads("list_optindex_optional_int: list(A); int -> optional(A)",
                        "optional_list_optindex_optional_int: optional(list(A)); int -> "
                        "optional(A)",
                        "map_optindex_optional_value: map(A, B); A -> optional(B)",
                        "optional_map_optindex_optional_value: optional(map(A, B)); A -> "
                        "optional(B)"),
}  # fmt: skip
"""Standard CEL's functions (cel-go's ``checker/decls``) and the optional types', by name:
``(overload, params, result)``; a member call's receiver is its first parameter."""
SIGNATURES["_[_]"] += _overloads(
    "optional_list_index_int: optional(list(A)); int -> optional(A)",
    "optional_map_index_value: optional(map(A, B)); A -> optional(B)",
)
_COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
_LIBRARIES: dict[str, list[tuple[str, list[T], T]]] = {
    # cel-go's strings extension, version 2
    "charAt": _overloads("string_char_at_int: string; int -> string"),
    "indexOf": _overloads("string_index_of_string: string; string -> int",
                          "string_index_of_string_int: string; string; int -> int",
                          "list_a_index_of_int: list(A); A -> int"),
    "lastIndexOf": _overloads("string_last_index_of_string: string; string -> int",
                              "string_last_index_of_string_int: string; string; int -> int",
                              "list_a_last_index_of_int: list(A); A -> int"),
    "lowerAscii": _overloads("string_lower_ascii: string -> string"),
    "upperAscii": _overloads("string_upper_ascii: string -> string"),
    "replace": _overloads("string_replace_string_string: string; string; string -> string",
                          "string_replace_string_string_int: string; string; string; int -> "
                          "string"),
    "split": _overloads("string_split_string: string; string -> list(string)",
                        "string_split_string_int: string; string; int -> list(string)"),
    "substring": _overloads("string_substring_int: string; int -> string",
                            "string_substring_int_int: string; int; int -> string"),
    "trim": _overloads("string_trim: string -> string"),
    "format": _overloads("string_format: string; list(dyn) -> string"),
    "join": _overloads("list_join: list(string) -> string",
                       "list_join_string: list(string); string -> string"),
    "strings.quote": _overloads("strings_quote: string -> string"),
    # Kubernetes' lists library
    "isSorted": _overloads(*(f"list_{t}_is_sorted_bool: list({t}) -> bool" for t in _COMPARABLE)),
    "sum": _overloads(*(f"list_{t}_sum_{t}: list({t}) -> {t}"
                        for t in ("int", "uint", "double", "duration"))),
    **{name: _overloads(*(f"list_{t}_{name}_{t}: list({t}) -> {t}" for t in _COMPARABLE))
       for name in ("max", "min")},
    # cel-go's lists extension, version 3
    "slice": _overloads("list_slice: list(A); int; int -> list(A)"),
    "flatten": _overloads("list_flatten: list(list(A)) -> list(A)",
                          "list_flatten_int: list(dyn); int -> list(dyn)"),
    "sort": _overloads(*(f"list_{t}_sort: list({t}) -> list({t})" for t in _COMPARABLE)),
    "reverse": _overloads("list_reverse: list(A) -> list(A)"),
    "distinct": _overloads("list_distinct: list(A) -> list(A)"),
    "lists.range": _overloads("lists_range: int -> list(int)"),
    # cel-go's sets extension
    **{f"sets.{name}": _overloads(f"list_sets_{name}_list: list(A); list(A) -> bool")
       for name in ("contains", "equivalent", "intersects")},
    # Kubernetes' regex library
    "find": _overloads("string_find_string: string; string -> string"),
    "findAll": _overloads("string_find_all_string: string; string -> list(string)",
                          "string_find_all_string_int: string; string; int -> list(string)"),
}  # fmt: skip
"""The functions of the libraries in kube-apiserver's CEL environment that the checker types,
by name (a namespaced one with its namespace: ``sets.contains``): each a member function, but
the namespaced ones."""
for _name, _rows in _LIBRARIES.items():
    (GLOBAL_ONLY_OVERLOADS if "." in _name else MEMBER_ONLY).update(row[0] for row in _rows)
_Q, _S = "kubernetes.Quantity", "kubernetes.Semver"
_IP_TESTS = (("isUnspecified", "unspecified"), ("isLoopback", "loopback"),
             ("isLinkLocalMulticast", "link_local_multicast"),
             ("isLinkLocalUnicast", "link_local_unicast"),
             ("isGlobalUnicast", "global_unicast"))  # fmt: skip
_FORMATS = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
            "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue",
            "uri", "uuid", "byte", "date", "datetime")  # fmt: skip
_KUBERNETES: dict[str, list[tuple[str, list[T], T]]] = {
    # URLs
    "url": _overloads("/string_to_url: string -> kubernetes.URL"),
    "isURL": _overloads("/is_url_string: string -> bool"),
    **{f"get{part}": _overloads(f".url_get_{name}: kubernetes.URL -> string") for part, name in (
        ("Scheme", "scheme"), ("Host", "host"), ("Hostname", "hostname"), ("Port", "port"),
        ("EscapedPath", "escaped_path"))},
    "getQuery": _overloads(".url_get_query: kubernetes.URL -> map(string, list(string))"),
    # IPs and CIDRs
    "ip": _overloads("/string_to_ip: string -> net.IP", ".cidr_ip: net.CIDR -> net.IP"),
    "isIP": _overloads("/is_ip: string -> bool"),
    "ip.isCanonical": _overloads("/ip_is_canonical: string -> bool"),
    "family": _overloads(".ip_family: net.IP -> int"),
    **{test: _overloads(f".ip_is_{name}: net.IP -> bool") for test, name in _IP_TESTS},
    "cidr": _overloads("/string_to_cidr: string -> net.CIDR"),
    "isCIDR": _overloads("/is_cidr: string -> bool"),
    "containsIP": _overloads(".cidr_contains_ip_string: net.CIDR; string -> bool",
                             ".cidr_contains_ip_ip: net.CIDR; net.IP -> bool"),
    "containsCIDR": _overloads(".cidr_contains_cidr_string: net.CIDR; string -> bool",
                               ".cidr_contains_cidr: net.CIDR; net.CIDR -> bool"),
    "prefixLength": _overloads(".cidr_prefix_length: net.CIDR -> int"),
    "masked": _overloads(".cidr_masked: net.CIDR -> net.CIDR"),
    # quantities and semantic versions
    "quantity": _overloads(f"/string_to_quantity: string -> {_Q}"),
    "isQuantity": _overloads("/is_quantity_string: string -> bool"),
    "sign": _overloads(f"/quantity_sign: {_Q} -> int"),
    "isGreaterThan": _overloads(f".quantity_is_greater_than: {_Q}; {_Q} -> bool",
                                f".semver_is_greater_than: {_S}; {_S} -> bool"),
    "isLessThan": _overloads(f".quantity_is_less_than: {_Q}; {_Q} -> bool",
                             f".semver_is_less_than: {_S}; {_S} -> bool"),
    "compareTo": _overloads(f".quantity_compare_to: {_Q}; {_Q} -> int",
                            f".semver_compare_to: {_S}; {_S} -> int"),
    "asApproximateFloat": _overloads(f".quantity_get_float: {_Q} -> double"),
    "asInteger": _overloads(f".quantity_get_int: {_Q} -> int"),
    "isInteger": _overloads(f".quantity_is_integer: {_Q} -> bool"),
    **{name: _overloads(f".quantity_{name}: {_Q}; {_Q} -> {_Q}",
                        f".quantity_{name}_int: {_Q}; int -> {_Q}") for name in ("add", "sub")},
    "semver": _overloads(f"/string_to_semver: string -> {_S}",
                         f"/string_bool_to_semver: string; bool -> {_S}"),
    "isSemver": _overloads("/is_semver_string: string -> bool",
                           "/is_semver_string_bool: string; bool -> bool"),
    **{part: _overloads(f".semver_{part}: {_S} -> int") for part in ("major", "minor", "patch")},
    # named formats
    "validate": _overloads(".format-validate: kubernetes.NamedFormat; string -> "
                           "optional(list(string))"),
    "format.named": _overloads("/format-named: string -> optional(kubernetes.NamedFormat)"),
    **{f"format.{name}": _overloads(f"/format.{name}: -> kubernetes.NamedFormat")
       for name in _FORMATS},
}  # fmt: skip
"""Kubernetes' own libraries (URLs, IPs, CIDRs, quantities, semantic versions, named
formats), of the types their values are."""
SIGNATURES.update(_LIBRARIES)
SIGNATURES.update(_KUBERNETES)
SIGNATURES["cel.@mapInsert"] = _overloads(  # (a transformMap's step)
    "@mapInsert_map_key_value: map(A, B); A; B -> map(A, B)",
    "@mapInsert_map_map: map(A, B); map(A, B) -> map(A, B)",
)
SIGNATURES["string"] += _overloads(
    "/ip_to_string: net.IP -> string", "/cidr_to_string: net.CIDR -> string"
)
_OPTIONAL_MEMBERS = {"hasValue", "value", "or", "orValue", "first", "last", "unwrapOpt"}
MEMBER = {
    "size",
    *_STRINGS,
    *_OPTIONAL_MEMBERS,
    *(n for n, rows in SIGNATURES.items() if any(r[0] in MEMBER_ONLY for r in rows)),
}
"""The functions a member call may be of."""
GLOBAL_TOO = {
    "size",
    *(n for n in MEMBER if any(r[0] in GLOBAL_ONLY_OVERLOADS for r in SIGNATURES.get(n, ()))),
}
MARKED = {
    n
    for n, rows in SIGNATURES.items()
    if all(r[0] in MEMBER_ONLY or r[0] in GLOBAL_ONLY_OVERLOADS for r in rows)
}
"""The functions whose every overload says which calls take it (the libraries')."""
"""Of those, the ones a global call may be of too (``size``, ``ip``)."""
GLOBAL_ONLY = {"int", "uint", "double", "string", "bool", "bytes", "duration", "timestamp",
                "dyn"}  # fmt: skip
_RESULTS = {
    "bool": ("isSorted", "isQuantity", "isGreaterThan", "isLessThan", "isURL", "isIP", "isCIDR",
             "isSemver", "isInteger", "containsIP", "containsCIDR", "isCanonical",
             "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
             "isGlobalUnicast"),
    "string": ("lowerAscii", "upperAscii", "trim", "replace", "substring", "join", "charAt",
               "format", "quote", "getScheme", "getHost", "getHostname", "getPort",
               "getEscapedPath", "find"),
    "int": ("indexOf", "lastIndexOf", "compareTo", "asInteger", "sign", "prefixLength",
            "family", "major", "minor", "patch", "getFullYear", "getMonth", "getDayOfYear",
            "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes", "getSeconds",
            "getMilliseconds"),
}  # fmt: skip
OPTIONAL_MACROS = {"optMap", "optFlatMap"}
BINDERS = {"all", "exists", "existsOne", "exists_one", "map", "filter", "transformList",
            "transformMap", "transformMapEntry", "sortBy"}  # fmt: skip
RESULT_OF = {name: PRIMS[kind] for kind, names in _RESULTS.items() for name in names}
RESULT_OF["validate"] = T("optional", (T("list", (PRIMS["string"],)),))  # a format's errors
