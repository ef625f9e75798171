"""Conformance: Kubernetes' CEL libraries in CRD validation rules (``x-kubernetes-validations``):
strings (ext.Strings v2), lists (Kubernetes' and ext.Lists v3), sets, regex, URLs, quantities,
IPs and CIDRs, named formats and optional values; a value that holds, one that breaks the rule
and one the function fails on (the cause then says the Go library's error).

Each scenario makes a CRD of its own in a group named after the scenario's namespace (the
normalisation turns it into ``<ns>``), whose strings and lists declare their ``maxLength`` and
``maxItems`` (kube-apiserver refuses rules whose estimated cost is unbounded), plays many cases
on it (a CRD is what costs the real server most), and deletes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target, status_shown
from tests.conformance.test_outside_scenarios import _crd

pytestmark = pytest.mark.anyio

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _string(*rules: str | dict[str, str], size: int = 64) -> dict[str, Any]:
    listed = [{"rule": rule} if isinstance(rule, str) else rule for rule in rules]
    return {"type": "string", "maxLength": size, "x-kubernetes-validations": listed}


def _list(items: dict[str, Any], *rules: str) -> dict[str, Any]:
    return {"type": "array", "maxItems": 8, "items": items,
            "x-kubernetes-validations": [{"rule": rule} for rule in rules]}  # fmt: skip


_WORD = {"type": "string", "maxLength": 16}
FIELDS: dict[str, dict[str, Any]] = {
    # strings
    "lower": _string("self.lowerAscii() == self", "self.upperAscii() != self"),
    "parts": _string("self.split(',').size() <= 3", "self.split(',', 2)[0] != 'x'",
                     "self.replace(',', '+') != 'a+b+c'", "self.replace(',', '', 1) != 'ab,c'"),
    "trimmed": _string("self.trim() == self"),
    "initial": _string("self.charAt(3) != 'x'"),
    "dashes": _string("self.indexOf('-') != 0", "self.lastIndexOf('-') != self.size() - 1",
                      "self.indexOf('-', 2) != 2", "self.lastIndexOf('-', 1) != 1"),
    "prefixed": _string("self.substring(0, 3) == 'app'", "self.substring(2) != 'x'"),
    "formatted": _string({"rule": "self.size() < 4", "messageExpression":
                          "'%s has %d characters'.format([self, self.size()])"}),
    "quoted": _string({"rule": "!self.contains('\"')",
                       "messageExpression": "strings.quote(self)"}),
    "ratio": {"type": "number", "x-kubernetes-validations": [
        {"rule": "self < 1000.0",
         "messageExpression": "'%.2f is too big, %e'.format([self, self])"},
    ]},
    # lists
    "nums": _list({"type": "integer"}, "self.isSorted()", "self.sum() <= 100",
                  "self.size() == 0 || self.max() < 50", "self.indexOf(7) == -1",
                  "self.lastIndexOf(3) != 1"),
    "least": _list({"type": "integer"}, "self.min() >= 0"),
    "words": _list(_WORD, "self.distinct().size() == self.size()", "self.sort() == self",
                   "self.reverse().size() == self.size()", "self.slice(0, 2).size() == 2",
                   "[self, ['x']].flatten().size() < 5", "lists.range(3).size() == 3",
                   "self.join('-') != 'a-b-c'", "self.join() != 'bc'"),
    "grid": _list(_list({"type": "integer"}), "self.flatten().size() <= 4",
                  "self.flatten(-1).size() >= 0"),
    "allowed": _list(_WORD, "sets.contains(['a', 'b', 'c', 'd'], self)",
                     "!sets.intersects(self, ['z'])", "sets.equivalent(self, self.distinct())"),
    # regex
    "text": _string("self.find('[0-9]+') != '0'", "self.findAll('[a-z]+').size() <= 2",
                    "self.findAll('[0-9]', 1).size() <= 1", "self.find(self) == self"),
    # URLs
    "endpoint": _string("isURL(self) && url(self).getScheme() in ['http', 'https']",
                        "url(self).getHostname() != 'localhost'",
                        "url(self).getPort() != '22'",
                        "url(self).getEscapedPath() != '/forbidden'",
                        "!has(url(self).getQuery().debug)", size=128),
    "host": _string("url(self).getHost() != 'example.com:80'", size=128),
    # quantities
    "memory": _string("isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))",
                      "quantity(self).compareTo(quantity('1Mi')) >= 0",
                      "quantity(self).add(quantity('1k')).isGreaterThan(quantity('2M'))",
                      "sign(quantity(self).sub(1000)) >= 0", size=32),
    "cores": _string("quantity(self).isInteger() && quantity(self).asInteger() <= 64",
                     "quantity(self).asApproximateFloat() < 100.0", size=32),
    "whole": _string("quantity(self).asInteger() < 10", size=32),
    # IPs and CIDRs
    "address": _string("isIP(self) && ip(self).family() == 4", "!ip(self).isLoopback()",
                       "ip.isCanonical(self)", "!ip(self).isUnspecified()",
                       "ip(self).isGlobalUnicast() || ip(self).isLinkLocalUnicast()"),
    "address6": _string("ip(self).family() == 6", "ip.isCanonical(self)",
                        "!ip(self).isLinkLocalMulticast()"),
    "network": _string("isCIDR(self) && cidr(self).prefixLength() >= 8",
                       "cidr(self).containsIP('10.0.0.1')",
                       "cidr(self).containsCIDR('10.1.0.0/16')",
                       "cidr(self).masked().containsIP(cidr(self).ip())",
                       "cidr(self).ip().family() == 4"),
    # what the functions give, shown by a message expression
    "parsed": _string(
        *({"rule": "self == 'never'", "messageExpression": f"url(self).{getter}()"}
          for getter in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")),
        "url(self).getScheme() != 'x'", size=64),
    "shown": _string({"rule": "self == 'never'", "messageExpression":
                      "'%s|%s|%x|%X|%o|%b|%s|%s|%d|%s'.format([[self, self], {'k': self}, "
                      "self.size() * 255, self, self.size(), self.size(), 2.5, [1.5, 2.0], -3, "
                      "1234567.0])"}, size=16),
    "amount": _string({"rule": "self == 'never'", "messageExpression":
                       "'%d %s %d'.format([sign(quantity(self)), quantity(self).isInteger(), "
                       "quantity(self).compareTo(quantity('1'))])"},
                      {"rule": "self == 'never'", "messageExpression":
                       "'%d'.format([quantity(self).asInteger()])"}, size=32),
    "empties": _string({"rule": "self.findAll('a*').size() == 99",
                        "messageExpression": "string(self.findAll('a*').size())"},
                       {"rule": "self.findAll('a*', 2).size() == 99",
                        "messageExpression": "string(self.findAll('a*', 2).size())"}, size=16),
    # named formats, optional values
    "label": _string("!format.dns1123Label().validate(self).hasValue()"),
    "named": _string("!format.named('uuid').value().validate(self).hasValue()",
                     "!format.named('nope').hasValue()"),
    "prefix": _string("!format.dns1035LabelPrefix().validate(self).hasValue()"),
    "labelValue": _string("!format.labelValue().validate(self).hasValue()"),
    "maybe": _string("optional.ofNonZeroValue(self).hasValue()",
                     "optional.of(self).orValue('x') == self",
                     "optional.none().or(optional.of(self)).value() == self",
                     "optional.ofNonZeroValue(self).value() != 'x'"),
}  # fmt: skip
SEMVER: dict[str, dict[str, Any]] = {
    "version": _string("isSemver(self) && semver(self).isGreaterThan(semver('1.0.0'))",
                       "semver(self).major() < 3 && semver(self).minor() != 7",
                       "semver(self).patch() != 9",
                       "semver(self).compareTo(semver('2.0.0-rc.1')) != 0",
                       "!semver(self).isLessThan(semver('1.0.1'))", size=32),
    "loose": _string("isSemver(self, true) && semver(self, true).minor() >= 1", size=32),
}  # fmt: skip
"""Fields of a CRD of their own (with the others, the rules' costs add up to too much)."""


@asynccontextmanager
async def own_crd(t: Target, fields: dict[str, Any] = FIELDS) -> AsyncIterator[str]:
    """Make the scenario's CRD (``fields``: every field above), wait until its objects are
    served."""
    group = f"{t.namespace}.anyop.dev"
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": fields}},
        }
    }
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": schema}]}}  # fmt: skip
    made = await t.post(
        CRDS, body, record=lambda d: d.get("message") if d.get("kind") == "Status" else "ok"
    )
    # (a CRD both refuse would make the scenario hold without testing a rule)
    assert made.get("kind") != "Status", made.get("message")
    path = f"/apis/{group}/v1/namespaces/{t.namespace}/things"
    with anyio.move_on_after(30):
        while (await t.api.get(path)).status_code != 200:
            await anyio.sleep(0.1)
    await anyio.sleep(0.3 if t.name == "real" else 0)
    try:
        yield path
    finally:
        await t.api.delete(f"{CRDS}/things.{group}")


def _shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return document.get("spec") if isinstance(document, dict) else document


CASES: list[tuple[str, str, list[Any]]] = [
    ("lowerAscii and upperAscii", "lower", ["abc-1", "Abc", "123"]),
    ("split and replace", "parts", ["a,b", "a,b,c,d", "x,y", "a,b,c", "a,,b,c"]),
    ("trim", "trimmed", ["x", " x", "x\t"]),
    ("charAt: out of range fails", "initial", ["abcd", "abcx", "abc", "ab"]),
    ("indexOf and lastIndexOf", "dashes", ["a-b", "-a", "a-", "ab-c", "a-bc"]),
    ("substring: out of range fails", "prefixed", ["app-x", "web", "ap"]),
    ("format in a message expression", "formatted", ["abc", "abcdef"]),
    ("strings.quote in a message expression", "quoted", ['a"b', "ok"]),
    ("format of a double: fixed and scientific", "ratio", [1.5, 1234.5, 1234567.25]),
    ("isSorted, sum, max, indexOf, lastIndexOf", "nums", [[1, 2, 3], [3, 1], [60, 70], [1, 7]]),
    ("min: of an empty list fails", "least", [[1, 2], [3, -1], []]),
    (
        "distinct, sort, reverse, slice, flatten, lists.range, join",
        "words",
        [
            ["a", "b"],
            ["b", "a"],
            ["a", "a"],
            ["a"],
            ["a", "b", "c", "d"],
            ["a", "b", "c"],
            ["b", "c"],
        ],
    ),
    ("flatten: a negative depth fails", "grid", [[[1], [2, 3]], [[1, 2], [3, 4, 5]]]),
    ("sets.contains, intersects, equivalent", "allowed", [["a", "b"], ["a", "e"], ["z"]]),
    ("find and findAll", "text", ["abc", "ab0", "a b c", "a1b2", "a+"]),
    (
        "url and its getters",
        "endpoint",
        [
            "https://example.com/x",
            "ftp://example.com",
            "http://localhost:8080/",
            "https://example.com:22/",
            "https://example.com/forbidden",
            "https://example.com/a?debug=1",
            "https://example.com/a%20b?x=1&y",
        ],
    ),
    ("url: not a URL fails", "host", ["not a url", "/relative/path", "https://example.com:80"]),
    ("quantity: compare, add, sub, sign", "memory", ["512Mi", "2Gi", "1Ki", "1.5M", "bad"]),
    ("quantity: isInteger, asInteger, asApproximateFloat", "cores", ["4", "1500m", "100", "2k"]),
    ("quantity: asInteger of a fraction fails", "whole", ["5", "2.5", "1e3"]),
    ("quantity: what is not one fails", "memory", ["", "1Mo", "+", "1e"]),
    (
        "ip: family, isLoopback, isCanonical, unicast",
        "address",
        ["192.168.1.10", "127.0.0.1", "0.0.0.0", "169.254.1.1", "224.0.0.1", "::1"],
    ),
    ("ip: what is not one fails", "address", ["01.2.3.4", "1.2.3", "1.2.3.256", "abc"]),
    ("ip: IPv6 and its canonical form", "address6", ["2001:db8::1", "2001:db8:0::1", "ff02::1"]),
    ("ip: IPv6 that is refused", "address6", ["::ffff:1.2.3.4", "fe80::1%eth0"]),
    (
        "url getters, shown",
        "parsed",
        [
            "https://[::1]:8080/x",
            "http://user@host.example/p",
            "mailto:someone@example.com",
            "https://example.com/a#frag",
            "https://example.com:abc/",
            "HTTPS://EXAMPLE.COM/A",
            "/a/b?c=d",
            "https://example.com/a%2Fb",
            "https://example.com/%zz",
            "http://h/a b",
        ],
    ),
    ("format: lists, maps, hex, octal, binary, doubles", "shown", ["ab", "xyz"]),
    (
        "quantity: sign, isInteger, compareTo, asInteger, shown",
        "amount",
        [
            "1e3",
            "1500m",
            "2000m",
            "0.5Gi",
            "1.5Ki",
            "-1k",
            "1E",
            "0.000000001",
            "1e-12",
            "12345678901234567890",
            "+5",
            "m",
            ".5",
        ],
    ),
    (
        "semver: compare, major, minor, patch",
        "version",
        [
            "1.2.3",
            "0.9.0",
            "3.0.0",
            "2.0.0-rc.1",
            "2.0.0-rc.2",
            "2.0.0-alpha",
            "1.7.0",
            "1.0.9",
            "1.5.0+build.5",
            "1.0.1-1",
        ],
    ),
    (
        "semver: what is not one fails",
        "version",
        ["1.2", "01.2.3", "1.2.3-alpha.01", "1.2.3+", "1.2.x", "", "1.2.3-a_b"],
    ),
    ("semver: normalized", "loose", ["v1.2", "1", "01.02.03", "v2.0-rc.1", "1.x"]),
    ("findAll: empty matches", "empties", ["baaac", "", "aa", "bab"]),
    ("ip: IPv6 that does not parse", "address6", ["1:2:3:4:5:6:7:8:9", "::g", ":::", "1::2::3"]),
    (
        "cidr: containsIP, containsCIDR, masked, ip",
        "network",
        ["10.0.0.0/8", "10.0.0.0/16", "10.1.2.3/8", "192.168.0.0/16", "10.0.0.0/4"],
    ),
    ("cidr: what is not one fails", "network", ["10.0.0.0", "10.0.0.0/33", "10.0.0.0/08"]),
    (
        "format.dns1123Label: its errors as the message",
        "label",
        ["my-name", "My_Name", "a" * 64, "a.b"],
    ),
    ("format.named: uuid", "named", ["0e9f6d3e-3b7a-4b5a-9c1d-2f3e4a5b6c7d", "not-a-uuid"]),
    ("format.dns1035LabelPrefix", "prefix", ["abc-", "9abc", "ab-", "a-"]),
    ("format.labelValue: its errors", "labelValue", ["ok.value", "-bad", "x" * 64]),
    ("optional values", "maybe", ["y", "", "x"]),
]


@pytest.mark.parametrize("library", ["kubernetes", "semver"])
async def test_library_functions_in_rules(conform: Conform, library: str) -> None:
    """Every case of :data:`CASES` on one CRD (the semver cases on one of their own: see
    :data:`SEMVER`)."""
    chosen = [case for case in CASES if (case[1] in SEMVER) == (library == "semver")]

    async def scenario(t: Target) -> None:
        async with own_crd(t, SEMVER if library == "semver" else FIELDS) as path:
            await _cases(t, path, chosen)

    await conform(scenario)


async def _cases(t: Target, path: str, cases: list[tuple[str, str, list[Any]]]) -> None:
    """Each case's values, an object each, named after the case (the diff of a failing
    scenario names the case, noted before its objects)."""
    for index, (name, field, values) in enumerate(cases):
        t.note("case", name)
        for number, value in enumerate(values):
            body = {"apiVersion": f"{t.namespace}.anyop.dev/v1", "kind": "Thing",
                    "metadata": {"name": f"c{index}-{number}"}, "spec": {field: value}}  # fmt: skip
            await t.post(path, body, record=_shown)


TWO_VARIABLE: dict[str, dict[str, Any]] = {
    "pairs": {"type": "object", "maxProperties": 4,
              "additionalProperties": {"type": "string", "maxLength": 8},
              "x-kubernetes-validations": [
                  {"rule": "self.all(k, v, k != v)"},
                  {"rule": "!self.exists(k, v, v == 'bad')"},
                  {"rule": "!self.existsOne(k, v, v == 'one')"},
                  {"rule": "self.transformMap(k, v, v.size()).all(k, n, n < 5)"},
                  {"rule": "self.transformMapEntry(k, v, {v: k}).size() == self.size()"}]},
    "indexed": {"type": "array", "maxItems": 4, "items": {"type": "integer"},
                "x-kubernetes-validations": [
                    {"rule": "self.all(i, v, v >= i)"},
                    {"rule": "self.transformList(i, v, i > 0, v - self[i - 1]).all(d, d < 10)"},
                    {"rule": "self.transformList(i, v, 10 / v).size() >= 0"}]},
}  # fmt: skip
TWO_VARIABLE_CASES: list[tuple[str, str, list[Any]]] = [
    ("all, exists, existsOne, transformMap, transformMapEntry on a map", "pairs",
     [{"a": "b"}, {"a": "a"}, {"a": "bad"}, {"a": "one"}, {"a": "toolong"}, {"a": "x", "b": "x"}]),
    ("all and transformList on a list; an error", "indexed", [[0, 1, 5], [3, 1], [1, 20], [1, 0]]),
]  # fmt: skip


async def test_two_variable_comprehensions_in_rules(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        async with own_crd(t, TWO_VARIABLE) as path:
            await _cases(t, path, TWO_VARIABLE_CASES)

    await conform(scenario)


OPTIONAL_SYNTAX: dict[str, dict[str, Any]] = {
    "opt": {"type": "object", "properties": {
        "a": {"type": "object", "properties": {
            "b": {"type": "integer"},
            "tags": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}},
        }},
        "m": {"type": "object", "maxProperties": 4,
              "additionalProperties": {"type": "string", "maxLength": 8}},
    }, "x-kubernetes-validations": [
        {"rule": "self.?a.?b.orValue(0) < 10"},
        {"rule": "self.?a.b.orValue(1) != 5"},  # optional on, after .?
        {"rule": "self.?a.tags[0].orValue('') != 'bad'"},
        {"rule": "!self.?a.?tags[?1].hasValue() || self.a.tags[1] != 'x'"},
        {"rule": "self.?m[?'k'].orValue('v') != 'no'"},
        {"rule": "self.?m.?k.orValue('') != 'dot'"},
        {"rule": "self.?a.?b.hasValue() || !self.?m.?need.hasValue()"},
        {"rule": "self.?a.?b.value() >= 0", "message": "b must be set"},
        {"rule": "self.?a.?b.orValue(0) != 7 || self.a.?tags.orValue([]).size() > 0"},
    ]},
}  # fmt: skip
OPTIONAL_SYNTAX_CASES: list[tuple[str, str, list[Any]]] = [
    ("optional selection and index: .?field, [?index], [?key], chained", "opt",
     [{"a": {"b": 3}}, {"a": {"b": 12}}, {"a": {"b": 5}}, {"a": {"b": 1, "tags": ["bad"]}},
      {"a": {"b": 1, "tags": ["ok", "x"]}}, {"a": {"b": 1, "tags": ["ok", "y"]}},
      {"a": {"b": 2}, "m": {"k": "no"}}, {"a": {"b": 2}, "m": {"k": "dot"}},
      {"m": {"need": "1"}}, {"a": {}}, {"a": {"b": 7}}, {"a": {"b": 7, "tags": ["t"]}}]),
]  # fmt: skip


async def test_optional_syntax_in_rules(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        async with own_crd(t, OPTIONAL_SYNTAX) as path:
            await _cases(t, path, OPTIONAL_SYNTAX_CASES)

    await conform(scenario)


OPTIONAL_ENTRIES: dict[str, dict[str, Any]] = {
    "ent": {"type": "object", "properties": {
        "a": {"type": "object", "properties": {
            "b": {"type": "integer"}, "c": {"type": "string", "maxLength": 8}}},
        "tags": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}},
        "m": {"type": "object", "maxProperties": 4,
              "additionalProperties": {"type": "string", "maxLength": 8}},
    }, "x-kubernetes-validations": [
        {"rule": "[?self.?a.?b, 1, ?optional.none()].size() == (self.?a.?b.hasValue() ? 2 : 1)"},
        {"rule": "[0, ?self.?a.?b].sum() < 10",
         "message": "too big"},
        {"rule": "!({?'b': self.?a.?b, 'x': 1}.?b.orValue(0) == 5)"},
        {"rule": "!('m' in {?'m': self.?m.?k}) || self.m.k != 'no'"},
        {"rule": "[?self.?a.?c, ?{?'x': self.?a.?c, 'y': 'z'}.?x].size() != 2 || "
                 "self.a.c != 'q'"},
        {"rule": "{?'t': self.?tags[?0], 'u': 'v'}.?t.orValue('') != 'bad'"},
        {"rule": "[ ? self.?tags[?1] , 'd'][0] != 'bad2'"},
        {"rule": "!(self.?a.?c.orValue('') in [?optional.of('no'), ?optional.none()])"},
        {"rule": "'[?x, {?k: v}]'.size() == 13 && [?optional.of('[?')][0] == '[?' && "
                 "\"a, ?b\".size() == 5 && {?'{?': optional.of(', ?')}['{?'] == ', ?'"},
    ]},
}  # fmt: skip
OPTIONAL_ENTRIES_CASES: list[tuple[str, str, list[Any]]] = [
    ("optional entries of list and map literals: present, absent, nested, with .?, in strings",
     "ent",
     [{}, {"a": {"b": 3}}, {"a": {"b": 12}}, {"a": {"b": 5}}, {"m": {"k": "no"}},
      {"m": {"k": "ok"}}, {"a": {"c": "q"}}, {"a": {"c": "r"}}, {"a": {"c": "no"}},
      {"tags": ["bad"]}, {"tags": ["ok", "bad2"]}, {"tags": ["ok", "fine"]}]),
]  # fmt: skip
"""(An optional entry of a ``dyn`` value, which passes the type checker and would fail at
evaluation, makes kube-apiserver 1.36.3 panic: cel-go 0.26's homogeneous aggregate literal
validator takes the type's parameter; no case has one.)"""


async def test_optional_entries_in_rules(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        async with own_crd(t, OPTIONAL_ENTRIES) as path:
            await _cases(t, path, OPTIONAL_ENTRIES_CASES)

    await conform(scenario)


OPTIONAL_ENTRY_MISTAKES = [
    "[?1].size() == 0",
    "{?'k': self.a}.size() == 0",
    "[1, ?self.a, ?optional.of(2)].size() > 0",
]
"""Rules whose optional entry is not an optional: cel-go's type checker refuses them (``expected
type 'optional_type(int)' but found 'int'``, at the entry's value)."""


@pytest.mark.parametrize("rule", OPTIONAL_ENTRY_MISTAKES)
async def test_an_optional_entry_that_is_no_optional_is_refused(
    conform: Conform, rule: str
) -> None:
    async def scenario(t: Target) -> None:
        spec = {"type": "object", "properties": {"a": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": rule}]}  # fmt: skip
        await t.post(CRDS, _crd(t, spec), params={"dryRun": "All"}, record=_shown)

    await conform(scenario)
