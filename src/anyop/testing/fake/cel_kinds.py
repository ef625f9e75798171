"""Kubernetes' CEL types for cel-python: URLs, quantities, IP addresses, CIDRs, semantic
versions and named formats (k8s.io/apiserver ``pkg/cel/library``: urls, quantity, ip, cidr,
semver version 1, format), and what the
functions of :mod:`anyop.testing.fake.cel_library` share: namespaces, optional values, the
checks of their arguments' types and the wording of their errors.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

from anyop.testing.fake import cel_addresses as addresses
from anyop.testing.fake import cel_values as values
from anyop.testing.fake.object_meta import (
    DNS_1035,
    DNS_1035_HINT,
    dns_label_errors,
    dns_subdomain_errors,
    label_key_errors,
    label_value_errors,
)

__all__ = ["NAMESPACES", "KIND_FUNCTIONS", "Namespace", "Optional", "Wrapped", "as_int",
           "as_list", "as_string", "fail", "guarded", "is_namespace", "of_kind"]  # fmt: skip


class Namespace:
    """The receiver of a namespaced function: ``sets`` in ``sets.contains(a, b)``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Namespace({self.name})"


NAMESPACES = {name: Namespace(name) for name in ("sets", "optional", "format", "strings",
                                                  "lists", "ip")}  # fmt: skip


def is_namespace(value: Any, name: str) -> bool:
    return isinstance(value, Namespace) and value.name == name


class Optional:
    """An optional value (``optional.of(x)``, ``optional.none()``)."""

    def __init__(self, value: Any = None, present: bool = False) -> None:
        self.value, self.present = value, present

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return NotImplemented
        return self.present == other.present and (not self.present or self.value == other.value)

    __hash__ = None  # type: ignore[assignment]


class Wrapped:
    """A value of a Kubernetes CEL type: a URL, a quantity, an IP, a CIDR or a format."""

    def __init__(self, kind: str, value: Any) -> None:
        self.kind, self.value = kind, value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Wrapped) or other.kind != self.kind:
            return NotImplemented
        if self.kind == "url":
            return str(self.value) == str(other.value)
        return bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]


def of_kind(kind: str, value: Any) -> Any:
    if not isinstance(value, Wrapped) or value.kind != kind:
        raise TypeError(kind)
    return value.value


def as_string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("string")
    return value


def as_int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, (bool, celtypes.BoolType)):
        raise TypeError("int")
    return value


def as_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("list")
    return value


def guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    """A library error (``CelValueError``) as CEL's error value."""

    def run(*args: Any) -> Any:
        for arg in args:
            if isinstance(arg, CELEvalError):
                return arg
        try:
            return function(*args)
        except values.CelValueError as exc:
            return CELEvalError(str(exc))

    run.__name__ = function.__name__
    return run


def fail(message: str) -> Any:
    raise values.CelValueError(message)


# -- URLs, quantities, IPs and CIDRs -------------------------------------------------------------


def _url(text: Any) -> Any:
    text = as_string(text)
    try:
        return Wrapped("url", values.parse_url(text))
    except values.CelValueError as exc:
        return fail(f"URL parse error during conversion from string: {exc}")


def _is_url(text: Any) -> Any:
    try:
        values.parse_url(as_string(text))
    except values.CelValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _url_part(read: Callable[[values.URL], str]) -> Callable[[Any], Any]:
    return lambda url: celtypes.StringType(read(of_kind("url", url)))


def _query(url: Any) -> Any:
    found = of_kind("url", url).query()
    return celtypes.MapType({
        celtypes.StringType(key): celtypes.ListType([celtypes.StringType(v) for v in listed])
        for key, listed in found.items()
    })  # fmt: skip


def _quantity(text: Any) -> Any:
    return Wrapped("quantity", values.parse_quantity(as_string(text)))


def _is_quantity(text: Any) -> Any:
    try:
        values.parse_quantity(as_string(text))
    except values.CelValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _as_quantity(other: Any) -> values.Quantity:
    if isinstance(other, int) and not isinstance(other, (bool, celtypes.BoolType)):
        return values.Quantity(Fraction(other), (other, 0))
    return of_kind("quantity", other)  # type: ignore[no-any-return]


def _quantity_sum(sign: int) -> Callable[[Any, Any], Any]:
    def summed(left: Any, right: Any) -> Any:
        return Wrapped("quantity", of_kind("quantity", left).added(_as_quantity(right), sign))

    return summed


def _compare(left: Any, right: Any) -> int:
    """``compareTo`` of two quantities or of two semantic versions."""
    kind = "semver" if isinstance(left, Wrapped) and left.kind == "semver" else "quantity"
    return of_kind(kind, left).compare(of_kind(kind, right))  # type: ignore[no-any-return]


def _semver(text: Any, *normalize: Any) -> Any:
    return Wrapped("semver", values.parse_semver(as_string(text), _flag(normalize)))


def _is_semver(text: Any, *normalize: Any) -> Any:
    try:
        values.parse_semver(as_string(text), _flag(normalize))
    except values.CelValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _flag(given: tuple[Any, ...]) -> bool:
    if given and not isinstance(given[0], celtypes.BoolType):
        raise TypeError("bool")
    return bool(given and given[0])


def _as_integer(quantity: Any) -> Any:
    number = of_kind("quantity", quantity).as_integer()
    return celtypes.IntType(number) if number is not None else fail(
        "cannot convert value to integer")  # fmt: skip


def _ip(value: Any) -> Any:
    if isinstance(value, Wrapped) and value.kind == "cidr":
        return Wrapped("ip", value.value[0])
    return Wrapped("ip", addresses.parse_ip(as_string(value)))


def _is_ip(text: Any) -> Any:
    try:
        addresses.parse_ip(as_string(text))
    except values.CelValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _is_canonical(namespace: Any, text: Any) -> Any:
    if not is_namespace(namespace, "ip"):
        raise TypeError("isCanonical")
    return celtypes.BoolType(str(addresses.parse_ip(as_string(text))) == text)


def _ip_test(test: Callable[[addresses.IP], bool]) -> Callable[[Any], Any]:
    return lambda ip: celtypes.BoolType(test(of_kind("ip", ip)))


def _cidr(text: Any) -> Any:
    return Wrapped("cidr", addresses.parse_cidr(as_string(text)))


def _is_cidr(text: Any) -> Any:
    try:
        addresses.parse_cidr(as_string(text))
    except values.CelValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _contains_ip(cidr: Any, ip: Any) -> Any:
    address = addresses.parse_ip(ip) if isinstance(ip, str) else of_kind("ip", ip)
    return celtypes.BoolType(addresses.cidr_contains(of_kind("cidr", cidr), address))


def _contains_cidr(cidr: Any, other: Any) -> Any:
    outer = of_kind("cidr", cidr)
    inner = addresses.parse_cidr(other) if isinstance(other, str) else of_kind("cidr", other)
    return celtypes.BoolType(addresses.cidr_contains(addresses.masked(outer), inner[0])
                             and outer[1] <= inner[1])  # fmt: skip


def _to_string(value: Any) -> Any:
    if isinstance(value, Wrapped) and value.kind == "ip":
        return celtypes.StringType(str(value.value))
    if isinstance(value, Wrapped) and value.kind == "cidr":
        return celtypes.StringType(f"{value.value[0]}/{value.value[1]}")
    return base_functions["string"](value)


# -- named formats (Kubernetes' format library) -----------------------------------------------


def _masked(name: str, prefix: bool) -> str:
    """``maskTrailingDash`` (it drops two characters)."""
    return name[:-2] + "a" if prefix and len(name) > 1 and name.endswith("-") else name


def _dns1035(value: str) -> list[str]:
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    return errors if DNS_1035.match(value) else [*errors, DNS_1035_HINT]


def _uri(value: str) -> list[str]:
    try:
        values.parse_url(value)
    except values.CelValueError as exc:
        return [str(exc)]
    return []


_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_CLOCK = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")


def _is_date(value: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    parts = value.lower().split("t")
    if len(value) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    clock = _CLOCK.search(parts[1])
    return bool(clock) and clock[1] <= "23" and clock[2] <= "59" and clock[3] <= "59"  # type: ignore[index]


def _is_base64(value: str) -> bool:
    try:
        base64.b64decode(value.encode(), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": dns_label_errors,
    "dns1123Subdomain": dns_subdomain_errors,
    "dns1035Label": _dns1035,
    "qualifiedName": label_key_errors,
    "dns1123LabelPrefix": lambda v: dns_label_errors(_masked(v, True)),
    "dns1123SubdomainPrefix": lambda v: dns_subdomain_errors(_masked(v, True)),
    "dns1035LabelPrefix": lambda v: _dns1035(_masked(v, True)),
    "labelValue": label_value_errors,
    "uri": _uri,
    "uuid": lambda v: [] if _UUID.match(v) else ["does not match the UUID format"],
    "byte": lambda v: [] if _is_base64(v) else ["invalid base64"],
    "date": lambda v: [] if _is_date(v) else ["invalid date"],
    "datetime": lambda v: [] if _is_datetime(v) else ["invalid datetime"],
}


def _named_format(name: str) -> Callable[[Any], Any]:
    def format_(namespace: Any) -> Any:
        if not is_namespace(namespace, "format"):
            raise TypeError(name)
        return Wrapped("format", name)

    return format_


def _named(namespace: Any, name: Any) -> Any:
    if not is_namespace(namespace, "format"):
        raise TypeError("named")
    name = as_string(name)
    return Optional(Wrapped("format", name), True) if name in _FORMATS else Optional()


def _validate(form: Any, text: Any) -> Any:
    errors = _FORMATS[of_kind("format", form)](as_string(text))
    listed = celtypes.ListType([celtypes.StringType(error) for error in errors])
    return Optional(listed, True) if errors else Optional()


_ZERO = values.parse_quantity("0")
KIND_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "url": _url, "isURL": _is_url, "getScheme": _url_part(lambda u: u.scheme),
    "getHost": _url_part(lambda u: u.host), "getHostname": _url_part(values.URL.hostname),
    "getPort": _url_part(values.URL.port), "getEscapedPath": _url_part(values.URL.escaped_path),
    "getQuery": _query,
    "quantity": _quantity, "isQuantity": _is_quantity,
    "sign": lambda q: celtypes.IntType(of_kind("quantity", q).compare(_ZERO)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) == 1),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) == -1),
    "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(of_kind("quantity", q).value)),
    "asInteger": _as_integer,
    "isInteger": lambda q: celtypes.BoolType(of_kind("quantity", q).as_integer() is not None),
    "add": _quantity_sum(1), "sub": _quantity_sum(-1),
    "semver": _semver, "isSemver": _is_semver,
    "major": lambda v: celtypes.IntType(of_kind("semver", v).major),
    "minor": lambda v: celtypes.IntType(of_kind("semver", v).minor),
    "patch": lambda v: celtypes.IntType(of_kind("semver", v).patch),
    "ip": _ip, "isIP": _is_ip, "isCanonical": _is_canonical,
    "family": lambda ip: celtypes.IntType(of_kind("ip", ip).version),
    "isUnspecified": _ip_test(lambda a: a.is_unspecified),
    "isLoopback": _ip_test(lambda a: a.is_loopback),
    "isLinkLocalMulticast": _ip_test(addresses.is_link_local_multicast),
    "isLinkLocalUnicast": _ip_test(addresses.is_link_local_unicast),
    "isGlobalUnicast": _ip_test(addresses.is_global_unicast),
    "cidr": _cidr, "isCIDR": _is_cidr, "containsIP": _contains_ip, "containsCIDR": _contains_cidr,
    "prefixLength": lambda c: celtypes.IntType(of_kind("cidr", c)[1]),
    "masked": lambda c: Wrapped("cidr", addresses.masked(of_kind("cidr", c))),
    "string": _to_string,
    "named": _named, "validate": _validate,
    **{name: _named_format(name) for name in _FORMATS},
}  # fmt: skip
"""The functions of the URL, quantity, IP, CIDR and format libraries, by name."""
