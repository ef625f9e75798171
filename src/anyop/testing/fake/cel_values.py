"""The values of Kubernetes' CEL libraries (URLs, quantities, semantic versions) as Go parses
and answers them: ``net/url``, apimachinery's ``resource.Quantity``, ``blang/semver``; IP
addresses and CIDRs are in :mod:`anyop.testing.fake.cel_addresses`.

Pure (no CEL here: :mod:`anyop.testing.fake.cel_library` binds these to cel-python). A text
these refuse raises :class:`CelValueError` with the message the Go library gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from anyop.testing.fake.go_json import go_quoted

__all__ = [
    "URL",
    "CelValueError",
    "Quantity",
    "Semver",
    "in_int64",
    "parse_quantity",
    "parse_semver",
    "parse_url",
]

_INT64 = (-(2**63), 2**63 - 1)


def in_int64(number: int) -> bool:
    """Whether Go keeps ``number`` in an int64."""
    return _INT64[0] <= number <= _INT64[1]


class CelValueError(ValueError):
    """What a Go parser says of a text it refuses."""


# -- URLs: net/url's ParseRequestURI, then Parse ----------------------------------------------

_HEX = "0123456789ABCDEF"
_UNRESERVED = re.compile(r"[A-Za-z0-9\-_.~]")


def _unescape(text: str, host: bool) -> str:
    """``url.unescape``: ``%XX`` escapes (a bad one is an error), as bytes."""
    out = bytearray()
    i = 0
    raw = text.encode()
    while i < len(raw):
        if raw[i] == 0x25:  # %
            chunk = text.encode()[i : i + 3]
            if len(chunk) < 3 or not all(chr(c) in "0123456789abcdefABCDEF" for c in chunk[1:]):
                shown = raw[i : i + 3].decode(errors="replace")
                raise CelValueError(f"invalid URL escape {go_quoted(shown)}")
            out.append(int(chunk[1:], 16))
            i += 3
            continue
        if (
            host
            and raw[i] < 0x80
            and not (chr(raw[i]).isalnum() or chr(raw[i]) in "-_.~!$&'()*+,;=:[]<>\"")
        ):
            raise CelValueError(f"invalid character {go_quoted(chr(raw[i]))} in host name")
        out.append(raw[i])
        i += 1
    return out.decode(errors="replace")


def _escape_path(path: str) -> str:
    """``url.escape(path, encodePath)``."""
    kept = "$&+,/:;=@"
    return "".join(
        chr(b)
        if _UNRESERVED.fullmatch(chr(b)) or chr(b) in kept
        else f"%{_HEX[b >> 4]}{_HEX[b & 15]}"
        for b in path.encode()
    )


def _valid_encoded(raw: str) -> bool:
    """``validEncoded(s, encodePath)``."""
    for char in raw:
        if char in "!$&'()*+,;=:@[]/%":
            continue
        if not (ord(char) < 0x80 and _UNRESERVED.fullmatch(char)):
            return False
    return True


def _valid_port(port: str) -> bool:
    return (
        port == ""
        or (port.startswith(":") and port[1:].isdigit() and port[1:].isascii())
        or port == ":"
    )


@dataclass(frozen=True)
class URL:
    """A parsed URL: what ``getScheme()``, ``getHost()``, ... read."""

    scheme: str
    opaque: str
    host: str
    path: str
    raw_path: str
    raw_query: str

    def hostname(self) -> str:
        host = self.host
        if host.startswith("["):
            end = host.find("]")
            return host[1:end] if end >= 0 else host[1:]
        return host.rsplit(":", 1)[0] if ":" in host else host

    def port(self) -> str:
        host = self.host
        colon = host.rfind(":")
        if colon < 0 or (host.startswith("[") and "]" in host[colon:]):
            return ""
        port = host[colon + 1 :]
        return port if port.isdigit() else ""

    def escaped_path(self) -> str:
        if self.raw_path and _valid_encoded(self.raw_path):
            try:
                if _unescape(self.raw_path, False) == self.path:
                    return self.raw_path
            except CelValueError:
                pass
        if self.path == "*":
            return "*"
        return _escape_path(self.path)

    def query(self) -> dict[str, list[str]]:
        """``url.Values`` of the query: ``;`` in a pair or a bad escape drops the pair."""
        found: dict[str, list[str]] = {}
        for pair in self.raw_query.split("&"):
            if not pair or ";" in pair:
                continue
            key, _, value = pair.partition("=")
            try:
                key, value = (_unescape(part.replace("+", " "), False) for part in (key, value))
            except CelValueError:
                continue
            found.setdefault(key, []).append(value)
        return found

    def __str__(self) -> str:
        text = f"{self.scheme}:" if self.scheme else ""
        if self.opaque:
            text += self.opaque
        else:
            if self.scheme or self.host:
                text += "//" + self.host
            text += self.escaped_path()
        return text + (f"?{self.raw_query}" if self.raw_query else "")


def _scheme(raw: str) -> tuple[str, str]:
    for i, char in enumerate(raw):
        if char.isascii() and char.isalpha():
            continue
        if char.isascii() and (char.isdigit() or char in "+-."):
            if i == 0:
                return "", raw
            continue
        if char == ":":
            if i == 0:
                raise CelValueError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _host(authority: str) -> str:
    host = authority[authority.rfind("@") + 1 :]
    bracket = host.rfind("[")
    if bracket > 0:
        raise CelValueError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind("]")
        if close < 0:
            raise CelValueError("missing ']' in host")
        if not _valid_port(host[close + 1 :]):
            raise CelValueError(f"invalid port {go_quoted(host[close + 1 :])} after host")
        return host
    if ":" in host and not _valid_port(host[host.rfind(":") :]):
        raise CelValueError(f"invalid port {go_quoted(host[host.rfind(':') :])} after host")
    return _unescape(host, True)


def parse_url(raw: str) -> URL:
    """``url.ParseRequestURI``, whose errors the CEL library gives (it then reads
    ``url.Parse``'s answer, the same for what the first takes but for a fragment).

    Raises:
        CelValueError: ``parse "<raw>": <why>``.
    """
    try:
        _parse(raw, request=True)
        return _parse(raw.partition("#")[0], request=False)
    except CelValueError as exc:
        raise CelValueError(f"parse {go_quoted(raw)}: {exc}") from None


def _parse(raw: str, *, request: bool) -> URL:
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in raw):
        raise CelValueError("net/url: invalid control character in URL")
    if raw == "" and request:
        raise CelValueError("empty url")
    if raw == "*":
        return URL("", "", "", "*", "", "")
    scheme, rest = _scheme(raw)
    scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        rest, query = rest[:-1], ""
    else:
        rest, _, query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return URL(scheme, rest, "", "", "", query)
        raise CelValueError("invalid URI for request")
    host = ""
    if (scheme or (not request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        host = _host(authority)
        rest = slash + tail
    path = _unescape(rest, False)
    return URL(scheme, "", host, path, rest, query)


# -- quantities: apimachinery's resource.Quantity ---------------------------------------------

_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NANO = Fraction(1, 10**9)


@dataclass(frozen=True)
class Quantity:
    """A quantity's exact ``value`` and, where apimachinery keeps it in an int64 (its fast
    path), that int64 and its decimal ``scale`` (``asInteger`` needs scale 0 or more)."""

    value: Fraction
    small: tuple[int, int] | None

    def as_integer(self) -> int | None:
        if self.small is None:
            return None
        number, scale = self.small
        if scale < 0:
            return None
        result = number * 10**scale
        return result if _INT64[0] <= result <= _INT64[1] else None

    def added(self, other: Quantity, sign: int = 1) -> Quantity:
        if self.small is not None and other.small is not None:
            summed = _int64_add(self.small, (sign * other.small[0], other.small[1]))
            if summed is not None:
                return Quantity(self.value + sign * other.value, summed)
        return Quantity(self.value + sign * other.value, None)

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


def _scaled(number: int, steps: int) -> int | None:
    """``positiveScaleInt64``: ``number * 10**steps`` if an int64."""
    result = number * 10**steps
    return result if _INT64[0] <= result <= _INT64[1] else None


def _int64_add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    """``int64Amount.Add``: at the smaller scale, if it fits in an int64."""
    if b[0] == 0:
        return a
    if a[0] == 0:
        return b
    scale = min(a[1], b[1])
    left, right = _scaled(a[0], a[1] - scale), _scaled(b[0], b[1] - scale)
    if left is None or right is None or not _INT64[0] <= left + right <= _INT64[1]:
        return None
    return left + right, scale


_QUANTITY = re.compile(r"([+-]?)(0*)([0-9]*)(?:(\.)([0-9]*))?")


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``.

    Raises:
        CelValueError: apimachinery's ``ErrFormatWrong``, ``ErrNumeric`` or ``ErrSuffix``.
    """
    if text == "":
        raise CelValueError(_FORMAT_WRONG)
    if text == "0":
        return Quantity(Fraction(0), (0, 0))
    match = _QUANTITY.match(text)
    assert match is not None
    sign, _, num, _, denom = match.groups()
    num, denom = num or "0", denom or ""
    suffix = text[match.end() :]
    number_text = text[: match.end()]
    if not re.fullmatch(r"[eEinumkKMGTP]*[-+]?[0-9]*", suffix):
        raise CelValueError(_FORMAT_WRONG)
    if suffix in _DECIMAL:
        base, exponent = 10, _DECIMAL[suffix]
    elif suffix in _BINARY:
        base, exponent = 2, _BINARY[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
        base, exponent = 10, int(suffix[1:])
        if not -(2**63) <= exponent < 2**63:
            raise CelValueError("unable to parse quantity's suffix")
    else:
        raise CelValueError("unable to parse quantity's suffix")
    negative = sign == "-"
    if base == 10:
        precision, scale, mantissa = 18 - len(num) - len(denom), exponent, 1
    elif not denom:
        precision, scale, mantissa = 15 - len(num) - int(exponent * 3 / 10) - 1, 0, 1 << exponent
    else:
        precision, scale, mantissa = -1, 0, 1
    if precision >= 0 and scale - len(denom) >= -9:
        scale -= len(denom)
        small = int(num + denom) * mantissa
        if small <= _INT64[1]:
            small = -small if negative else small
            return Quantity(Fraction(small) * Fraction(10) ** scale, (small, scale))
    digits = number_text.lstrip("+-")
    if not any(char.isdigit() for char in digits):
        raise CelValueError("unable to parse numeric part of quantity")
    whole, _, fraction = digits.partition(".")
    value = Fraction(int(whole or "0")) + (
        Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0
    )
    value *= Fraction(base) ** exponent
    scaled = value / _NANO
    if scaled.denominator != 1:
        value = Fraction(-(-scaled.numerator // scaled.denominator)) * _NANO
    if base == 2 and value > _INT64[1]:
        value = Fraction(_INT64[1])
    return Quantity(-value if negative else value, None)


# -- semantic versions: github.com/blang/semver/v4 --------------------------------------------

_NUMBERS = set("0123456789")
_ALPHANUM = _NUMBERS | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


@dataclass(frozen=True)
class Semver:
    """A version: its numbers and its pre-release parts (numbers or strings)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()

    def compare(self, other: Semver) -> int:
        """``Version.Compare`` (build metadata is not compared)."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) != isinstance(b, int):
                return -1 if isinstance(a, int) else 1
            return 1 if a > b else -1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch))


def _version_number(text: str, name: str) -> int:
    if not set(text) <= _NUMBERS:
        raise CelValueError(f"Invalid character(s) found in {name} number {go_quoted(text)}")
    if len(text) > 1 and text[0] == "0":
        raise CelValueError(
            f"{name.capitalize()} number must not contain leading zeroes {go_quoted(text)}"
        )
    if not text or int(text) >= 2**64:
        reason = "invalid syntax" if not text else "value out of range"
        raise CelValueError(f"strconv.ParseUint: parsing {go_quoted(text)}: {reason}")
    return int(text)


def parse_semver(text: str, normalize: bool = False) -> Semver:
    """``semver.Parse`` (``normalize``: the library's ``normalizeAndParse`` first: a ``v``
    prefix dropped, leading zeroes trimmed, missing minor and patch numbers made 0).

    Raises:
        CelValueError: the package's message.
    """
    if normalize:
        parts = text.removeprefix("v").split(".", 2)
        for i, part in enumerate(parts):
            if len(part) > 1:
                part = part.lstrip("0")
                parts[i] = part if part and part[0].isdigit() else "0" + part
        if len(parts) < 3:
            if "+" in parts[-1] or "-" in parts[-1]:
                raise CelValueError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        text = ".".join(parts)
    if not text:
        raise CelValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise CelValueError("No Major.Minor.Patch elements found")
    major, minor = _version_number(parts[0], "major"), _version_number(parts[1], "minor")
    rest, _, build = parts[2].partition("+")
    patch_text, dash, pre_text = rest.partition("-")
    patch = _version_number(patch_text, "patch")
    pre: list[int | str] = []
    for part in pre_text.split(".") if dash else ():
        if not part:
            raise CelValueError("Prerelease is empty")
        if set(part) <= _NUMBERS:
            if len(part) > 1 and part[0] == "0":
                raise CelValueError(
                    f"Numeric PreRelease version must not contain leading zeroes {go_quoted(part)}"
                )
            pre.append(int(part))
        elif set(part) <= _ALPHANUM:
            pre.append(part)
        else:
            raise CelValueError(f"Invalid character(s) found in prerelease {go_quoted(part)}")
    for part in build.split(".") if "+" in parts[2] else ():
        if not part:
            raise CelValueError("Build meta data is empty")
        if not set(part) <= _ALPHANUM:
            raise CelValueError(f"Invalid character(s) found in build meta data {go_quoted(part)}")
    return Semver(major, minor, patch, tuple(pre))
