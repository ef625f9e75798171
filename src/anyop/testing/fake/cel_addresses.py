"""IP addresses and CIDRs of Kubernetes' CEL libraries (``ip()``, ``cidr()``) as Go's
``net/netip`` parses them, with its error messages and the library's.

Pure. A text refused raises :class:`~anyop.testing.fake.cel_values.CelValueError`.
"""

from __future__ import annotations

import ipaddress
import re

from anyop.testing.fake.cel_values import CelValueError
from anyop.testing.fake.go_json import go_quoted

__all__ = [
    "CIDR",
    "IP",
    "cidr_contains",
    "is_global_unicast",
    "is_link_local_multicast",
    "is_link_local_unicast",
    "masked",
    "parse_cidr",
    "parse_ip",
]

# -- IP addresses and CIDRs: net/netip ----------------------------------------------------------

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
CIDR = tuple[IP, int]


def _addr_error(text: str, message: str, at: str | None = None) -> CelValueError:
    shown = f"ParseAddr({go_quoted(text)}): {message}"
    return CelValueError(f"{shown} (at {go_quoted(at)})" if at is not None else shown)


def _v4_fields(whole: str, text: str) -> bytes:
    """``parseIPv4Fields`` of ``text``, a part of ``whole`` (which errors name)."""
    fields: list[int] = []
    value, digits = 0, 0
    for i, char in enumerate(text):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise _addr_error(whole, "IPv4 field has octet with leading zero")
            value, digits = value * 10 + int(char), digits + 1
            if value > 255:
                raise _addr_error(whole, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(text) - 1 or text[i - 1] == ".":
                raise _addr_error(whole, "IPv4 field must have at least one digit", text[i:])
            if len(fields) == 3:
                raise _addr_error(whole, "IPv4 address too long")
            fields.append(value)
            value, digits = 0, 0
        else:
            raise _addr_error(whole, "unexpected character", text[i:])
    if len(fields) < 3:
        raise _addr_error(whole, "IPv4 address too short")
    return bytes([*fields, value])


def _v6(text: str) -> tuple[ipaddress.IPv6Address, str]:
    """``parseIPv6``: the address and its zone."""
    rest, _, zone = text.partition("%")
    if "%" in text and not zone:
        raise _addr_error(text, "zone must be a non-empty string")
    address = bytearray(16)
    ellipsis, i = -1, 0
    if rest.startswith("::"):
        ellipsis, rest = 0, rest[2:]
        if not rest:
            return ipaddress.IPv6Address(0), zone
    while i < 16:
        digits = len(rest) - len(rest.lstrip("0123456789abcdefABCDEF"))
        if digits > 4:
            raise _addr_error(text, "each group must have 4 or less digits", rest)
        if digits == 0:
            raise _addr_error(text, "each colon-separated field must have at least one digit",
                              rest)  # fmt: skip
        if rest[digits : digits + 1] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(text, "embedded IPv4 address must replace the final 2 fields "
                                  "of the address", rest)  # fmt: skip
            if i + 4 > 16:
                raise _addr_error(text, "too many hex fields to fit an embedded IPv4 at the end "
                                  "of the address", rest)  # fmt: skip
            address[i : i + 4] = _v4_fields(text, rest)
            rest, i = "", i + 4
            break
        group = int(rest[:digits], 16)
        address[i : i + 2] = group.to_bytes(2, "big")
        i, rest = i + 2, rest[digits:]
        if not rest:
            break
        if rest[0] != ":":
            raise _addr_error(text, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _addr_error(text, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(text, "multiple :: in address", rest)
            ellipsis, rest = i, rest[1:]
            if not rest:
                break
    if rest:
        raise _addr_error(text, "trailing garbage after address", rest)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(text, "address string too short")
        address[ellipsis:] = bytes(16 - i) + address[ellipsis:i]
    elif ellipsis >= 0:
        raise _addr_error(text, "the :: must expand to at least one field of zeros")
    return ipaddress.IPv6Address(bytes(address)), zone


def _netip(text: str) -> tuple[IP, str]:
    """``netip.ParseAddr``: the address and its zone."""
    for char in text:
        if char == ".":
            return ipaddress.IPv4Address(_v4_fields(text, text)), ""
        if char == ":":
            return _v6(text)
        if char == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def parse_ip(text: str) -> IP:
    """The CEL library's ``parseIPAddr``: ``netip.ParseAddr`` without zones or IPv4-mapped
    IPv6 addresses.

    Raises:
        CelValueError: the library's message.
    """
    try:
        address, zone = _netip(text)
    except CelValueError as exc:
        raise CelValueError(
            f"IP Address {go_quoted(text)} parse error during conversion from string: {exc}"
        ) from None
    if zone:
        raise CelValueError(f"IP address {go_quoted(text)} with zone value is not allowed")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelValueError(f"IPv4-mapped IPv6 address {go_quoted(text)} is not allowed")
    return address


def parse_cidr(text: str) -> CIDR:
    """The CEL library's ``parseCIDR`` (``netip.ParsePrefix``), its message said twice as
    the library says it.

    Raises:
        CelValueError: the library's message.
    """
    said = "network address parse error during conversion from string: "
    try:
        prefix = _netip_prefix(text)
    except CelValueError as exc:
        raise CelValueError(f"{said}{said}{exc}") from None
    if isinstance(prefix[0], ipaddress.IPv6Address) and prefix[0].ipv4_mapped is not None:
        raise CelValueError(f"{said}IPv4-mapped IPv6 address {go_quoted(text)} is not allowed")
    return prefix


def _netip_prefix(text: str) -> CIDR:
    def error(message: str) -> CelValueError:
        return CelValueError(f"netip.ParsePrefix({go_quoted(text)}): {message}")

    slash = text.rfind("/")
    if slash < 0:
        raise error("no '/'")
    try:
        address, zone = _netip(text[:slash])
    except CelValueError as exc:
        raise error(str(exc)) from None
    if zone:
        raise error("IPv6 zones cannot be present in a prefix")
    bits = text[slash + 1 :]
    if (len(bits) > 1 and not "1" <= bits[0] <= "9") or not re.fullmatch(r"[+-]?[0-9]+", bits):
        raise error(f"bad bits after slash: {go_quoted(bits)}")
    if not 0 <= int(bits) <= address.max_prefixlen:
        raise error("prefix length out of range")
    return address, int(bits)


def masked(cidr: CIDR) -> CIDR:
    network = ipaddress.ip_network(f"{cidr[0]}/{cidr[1]}", strict=False)
    return network.network_address, cidr[1]


def cidr_contains(cidr: CIDR, address: IP) -> bool:
    if cidr[0].version != address.version:
        return False
    return address in ipaddress.ip_network(f"{cidr[0]}/{cidr[1]}", strict=False)


def is_global_unicast(address: IP) -> bool:
    """``netip.Addr.IsGlobalUnicast``."""
    if address == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (address.is_unspecified or address.is_loopback or address.is_multicast
                or is_link_local_unicast(address))  # fmt: skip


def is_link_local_unicast(address: IP) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.ip_network("169.254.0.0/16")
    return address in ipaddress.ip_network("fe80::/10")


def is_link_local_multicast(address: IP) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.ip_network("224.0.0.0/24")
    return (int(address) >> 112) & 0xFF0F == 0xFF02
