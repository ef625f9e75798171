"""Shard selectors (``shardSelector``, KEP-5866): parsed from the query, matched against objects.

Pure. kube-apiserver 1.36 with its ``ShardedListAndWatch`` feature gate (the local control plane
turns it on, and so does the fake) keeps only the objects whose 64-bit FNV-1a hash of
``metadata.uid`` or ``metadata.namespace`` falls in one of the selector's ranges, in lists and
watch-streams alike, and echoes the selector in a typed list's ``metadata.shardInfo`` (not in a
list of custom resources, which kube-apiserver builds unstructured). The grammar is a
small part of CEL: ``shardRange(object.metadata.uid, '0x…', '0x…')`` calls joined by ``||``,
with parentheses. A selector the server cannot parse fails the request as it does there (its
message, an internal error).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from anyop.kube.shard_ranges import uid_hash
from anyop.testing.fake.statuses import StatusError, status_body

__all__ = ["ShardSelector", "parse_shard_selector"]

_PATHS = ("object.metadata.uid", "object.metadata.namespace")
_END = "0x10000000000000000"
_TOKEN = re.compile(
    r"""\s*(?:(?P<or>\|\|)|(?P<open>\()|(?P<close>\))|(?P<comma>,)|(?P<dot>\.)"""
    r"""|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<string>'[^'\\\n]*'|"[^"\\\n]*")|(?P<other>\S))"""
)


@dataclasses.dataclass(frozen=True, slots=True)
class ShardSelector:
    """Hash ranges over one field, as the API server applied them.

    Attributes:
        key: ``object.metadata.uid`` or ``object.metadata.namespace``.
        ranges: ``(start, end)`` pairs of ``0x``-prefixed hex strings, as written.
    """

    key: str
    ranges: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        """The selector as the server echoes it in ``shardInfo``."""
        return " || ".join(f"shardRange({self.key}, '{s}', '{e}')" for s, e in self.ranges)

    def __call__(self, body: Mapping[str, Any]) -> bool:
        metadata = body.get("metadata") or {}
        field = "uid" if self.key == "object.metadata.uid" else "namespace"
        hashed = f"0x{uid_hash(str(metadata.get(field) or '')):016x}"
        return any(not _less(hashed, s) and _less(hashed, e) for s, e in self.ranges)


def _less(a: str, b: str) -> bool:
    """The order of hex strings as the server compares them: the shorter first, then by text."""
    return (len(a), a) < (len(b), b)


def _refused(message: str) -> StatusError:
    text = f"invalid shard selector: {message}"
    return StatusError(status_body(500, "", text))  # a plain error: no reason


def parse_shard_selector(text: str | None) -> ShardSelector | None:
    """The selector of a ``shardSelector`` parameter; ``None`` if there is none.

    Raises:
        StatusError: 500, with kube-apiserver's message, for a selector it cannot parse.
    """
    if text is None or text == "":
        return None
    if not text.strip():
        raise _refused(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    tokens = _tokens(text)
    ranges, rest = _disjunction(tokens)
    if rest:
        raise _refused(f"CEL parse error: Syntax error: extraneous input {rest[0][1]!r}")
    keys = [key for key, _, _ in ranges]
    for key in keys[1:]:
        if key != keys[0]:
            raise _refused(
                "all shard ranges must use the same field, "
                f"got {_go_quote(keys[0])} and {_go_quote(key)}"
            )
    return ShardSelector(keys[0], tuple((start, end) for _, start, end in ranges))


Token = tuple[str, str]
Range = tuple[str, str, str]


def _tokens(text: str) -> list[Token]:
    tokens: list[Token] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind is None:
            continue
        if kind == "other":
            raise _refused(
                f"CEL parse error: Syntax error: token recognition error at: {match[kind]!r}"
            )
        tokens.append((kind, match[kind]))
    return tokens


def _disjunction(tokens: list[Token]) -> tuple[list[Range], list[Token]]:
    ranges, tokens = _term(tokens)
    while tokens and tokens[0][0] == "or":
        more, tokens = _term(tokens[1:])
        ranges = ranges + more
    return ranges, tokens


def _term(tokens: list[Token]) -> tuple[list[Range], list[Token]]:
    if not tokens:
        raise _refused("CEL parse error: Syntax error: mismatched input '<EOF>'")
    kind, value = tokens[0]
    if kind == "open":
        ranges, rest = _disjunction(tokens[1:])
        if not rest or rest[0][0] != "close":
            raise _refused("CEL parse error: Syntax error: missing ')'")
        return ranges, rest[1:]
    if kind != "name":
        raise _refused(f"CEL parse error: Syntax error: mismatched input {value!r}")
    path, rest = _path(tokens)
    if not rest or rest[0][0] != "open":
        raise _refused("unexpected expression kind; expected shardRange() call or || operator")
    if path != "shardRange":
        raise _refused(
            f"unsupported function {_go_quote(path)}; only shardRange() and || are allowed"
        )
    args, rest = _arguments(rest[1:])
    return [_shard_range(args)], rest


def _path(tokens: list[Token]) -> tuple[str, list[Token]]:
    parts = [tokens[0][1]]
    rest = tokens[1:]
    while len(rest) >= 2 and rest[0][0] == "dot" and rest[1][0] == "name":
        parts.append(rest[1][1])
        rest = rest[2:]
    return ".".join(parts), rest


def _arguments(tokens: list[Token]) -> tuple[list[Token], list[Token]]:
    """The call's arguments (a path as one ``name`` token, or a string), up to its ``)``."""
    args: list[Token] = []
    rest = tokens
    while rest and rest[0][0] != "close":
        if rest[0][0] == "name":
            path, rest = _path(rest)
            args.append(("name", path))
        elif rest[0][0] == "string":
            args.append(rest[0])
            rest = rest[1:]
        else:
            raise _refused(f"CEL parse error: Syntax error: mismatched input {rest[0][1]!r}")
        if rest and rest[0][0] == "comma":
            rest = rest[1:]
    if not rest:
        raise _refused("CEL parse error: Syntax error: missing ')'")
    return args, rest[1:]


def _shard_range(args: list[Token]) -> Range:
    if len(args) != 3:
        raise _refused(f"shardRange() requires exactly 3 arguments, got {len(args)}")
    (path_kind, path), start, end = args
    if path_kind != "name":
        raise _refused(
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), "
            "got expression kind LiteralKind"
        )
    if path not in _PATHS:
        raise _refused(
            f"unsupported field path {_go_quote(path)}; supported: object.metadata.uid, "
            "object.metadata.namespace"
        )
    low, high = _hex(start, "hexStart"), _hex(end, "hexEnd")
    if not _less(low, high):
        raise _refused(f"shard range start {low} must be less than end {high}")
    return path, low, high


def _hex(token: Token, name: str) -> str:
    kind, literal = token
    if kind != "string":
        raise _refused(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind IdentKind"
        )
    value = literal[1:-1]
    if not value.startswith("0x"):
        raise _refused(f"{name} must have '0x' prefix, got {_go_quote(value)}")
    digits = value[2:]
    if not digits:
        raise _refused(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise _refused(
            f"{name}: hex value too long ({len(digits)} chars, max 17): {_go_quote(digits)}"
        )
    for char in digits:
        if char not in "0123456789abcdef":
            raise _refused(f"{name}: invalid hex character {_go_quote(char)} in {_go_quote(value)}")
    if len(digits) == 17 and value != _END:
        raise _refused(
            f"{name}: 17-digit hex value must be '0x10000000000000000' (2^64), "
            f"got {_go_quote(value)}"
        )
    if len(digits) < 16:
        padded = "0x" + digits.rjust(16, "0")
        raise _refused(
            f"{name} must be a 0x-prefixed 16-digit hex value, got {_go_quote(value)} "
            f"(did you mean {_go_quote(padded)}?)"
        )
    return value


def _go_quote(text: str) -> str:
    """Go's ``%q`` of a plain string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
