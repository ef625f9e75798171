"""Conformance: the functions of kube-apiserver's CEL libraries (strings, Kubernetes' lists,
cel-go's lists and sets extensions, regex) typed and priced when a CRD is written: a call
whose operands match none of the function's overloads is refused in cel-go's words, and the
estimates of the calls whose cost grows with their lists and strings (``sets.contains``,
``distinct``, ``sort``, ``flatten``, ``replace``, ``join``...) count towards the rule's limit.

Each case is a dry-run create of a CRD whose one rule sits at ``spec``, recorded as the
refusal's causes or the kind written.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target
from tests.conformance.test_crd_cel_limits import CRDS, _crd, _shown

pytestmark = pytest.mark.anyio

Body = dict[str, Any]


def _strings(most: int, length: int = 8) -> Body:
    return {"type": "array", "maxItems": most, "items": {"type": "string", "maxLength": length}}


def _ints(most: int) -> Body:
    return {"type": "array", "maxItems": most, "items": {"type": "integer"}}


FIELDS: Body = {
    "s": {"type": "string", "maxLength": 20},
    "n": {"type": "integer"},
    "l": _ints(10),
    "ls": _strings(10),
    "g": {"type": "array", "maxItems": 10, "items": _ints(10)},
    "ints2k": _ints(2000),
    "ints3k": _ints(3000),
    "words3k": _strings(3000),
    "words5k": _strings(5000),
    "long": _strings(1000, 10000),
    "m": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "integer"}},
}

RULES = [
    # refused: no overload of the function takes these operands
    "self.s.charAt('a') == 'x'",
    "self.s.indexOf(1) > 0",
    "self.l.indexOf('a') > 0",
    "self.s.replace('a', 1) == ''",
    "self.s.split(1).size() > 0",
    "self.s.substring('1') == ''",
    "self.s.lowerAscii(1) == ''",
    "self.l.join(',') == ''",
    "self.l.sum() == 'x'",
    "self.ls.sum() > 0",
    "self.l.max() == 'a'",
    "sets.contains(self.l, self.ls)",
    "self.l.sort()[0] == 'a'",
    "lists.range('a').size() > 0",
    "self.s.find(1) == ''",
    "self.s.findAll('a', 'b').size() > 0",
    "strings.quote(1) == ''",
    "self.l.slice(0, 'a').size() > 0",
    "self.g.flatten().size() > 'a'",
    # written: each function as it is declared
    "self.s.charAt(0) == 'a' && self.s.indexOf('a', 1) >= 0 && self.l.indexOf(1) >= 0",
    "self.l.sum() + self.l.max() + self.l.min() > 0 && self.l.isSorted()",
    "self.l.slice(0, 1).size() <= 1 && self.l.reverse().distinct().size() >= 0",
    "lists.range(3).size() == 3 && self.ls.sort().size() >= 0 && self.g.flatten().size() > 0",
    "self.ls.join('-').size() < 100 && self.s.replace('a', 'bb').size() < 100",
    "'%s: %d'.format([self.s, self.n]) != '' && self.s.format(self.l) != ''",
    "sets.equivalent(self.ls, ['a']) || sets.intersects(self.l, [1, 2])",
    # costs: the sets' products, distinct's and sort's squares, flatten's depth
    "sets.contains(self.words3k, self.words3k)",
    "sets.contains(self.words5k, self.words3k)",
    "sets.equivalent(self.words3k, self.words3k)",
    "self.ints2k.distinct().size() > 0",
    "self.ints3k.distinct().size() > 0",
    "self.words3k.sort().size() > 0",
    "self.ints2k.sort().size() > 0",
    "self.g.flatten(self.n).size() > 0",
    "self.g.flatten(2).size() > 0 && self.ints3k.slice(0, self.n).size() > 0",
    "lists.range(self.n).size() > 0",
    "self.long.all(w, w.replace('a', 'bbb') != '')",
    "self.long.all(w, w.replace('abc', 'b') != '')",
    "self.long.join(',').size() > 0",
    "self.long.all(w, [w, w].join(w) != '')",
    # Kubernetes' own types: refused where an operand is of another type
    "quantity(self.s).isGreaterThan('1Gi')",
    "quantity(self.s).compareTo(semver('1.0.0')) > 0",
    "semver(self.s).major() == 'x'",
    "url(self.s).getHost() == 1",
    "ip(self.s).family() == '4'",
    "cidr(self.s).containsIP(1)",
    "isIP(1)",
    "sign(self.s) > 0",
    "self.s.sign() > 0",
    "charAt(self.s, 1) == 'a'",
    "getHost(url(self.s)) == ''",
    "quantity(self.s) == '1'",
    "format.dns1123Label().validate(1).hasValue()",
    "format.named('uuid').validate(self.s).hasValue()",
    "ip(self.s).ip().family() == 4",
    "url(self.s).getQuery() == 1",
    # written
    "quantity(self.s).add(1).sub(quantity('1')).isLessThan(quantity('2')) && "
    "sign(quantity(self.s)) >= 0 && quantity(self.s).asApproximateFloat() > 0.5",
    "semver(self.s, true).compareTo(semver('1.0.0')) >= 0 && isSemver(self.s, true)",
    "url(self.s).getQuery()['a'][0] != 'b' && isURL(self.s)",
    "string(ip(self.s)) != '' && string(cidr(self.s)) != '' && ip.isCanonical(self.s)",
    "cidr(self.s).containsIP(ip('1.2.3.4')) || cidr(self.s).containsCIDR(cidr(self.s).masked())",
    "cidr(self.s).ip().family() == 4 && ip(self.s) == cidr(self.s).ip() && "
    "!ip(self.s).isLoopback()",
    "format.named('uuid').value().validate(self.s).hasValue() || "
    "format.dns1123Label() == format.dns1123Label()",
    # the two-variable comprehensions: an index or a key, and a value, of their types
    "self.m.all(k, v, v > 'a')",
    "self.l.all(i, v, i > 'x')",
    "self.m.transformMap(k, v, v + 1).all(k, n, n > 'a')",
    "self.ls.transformList(i, v, v + 1).size() > 0",
    "self.m.exists(k, v, k == 1)",
    "self.m.transformMapEntry(k, v, {v: k}).all(a, b, b == 1)",
    "self.s.all(a, b, a == b)",
    "self.ls.transformList(i, v, i > 0, v + 'x').all(x, x != 'a')",
    "self.m.existsOne(k, v, v == 2) || self.m.exists_one(k, v, v == 3)",
    "self.words5k.all(i, w, self.long.exists(j, x, x.contains(w)))",
    "self.long.transformList(i, w, w + w).all(x, x.size() > 0)",
    "self.ints3k.transformMap(i, v, i).all(k, v, v > 0)",
    "self.words3k.transformMapEntry(i, w, {w: i}).all(k, v, k.matches('^a') || v > 1)",
    # their comparisons' costs
    "quantity(self.s) == quantity('1') && semver(self.s) == semver('1.0.0')",
    "quantity(self.s) != quantity('1')",
    "url(self.s) == url('https://example.com')",
    "self.ls.all(q, quantity(q) == quantity('1') || cidr(q).containsCIDR(q))",
]
"""One rule each, at ``spec``."""


@pytest.mark.parametrize("rule", RULES)
async def test_library_functions_are_typed_and_priced_when_the_crd_is_written(
    conform: Conform, rule: str
) -> None:
    async def scenario(t: Target) -> None:
        schema = {"type": "object", "properties": {"spec": {
            "type": "object", "properties": FIELDS,
            "x-kubernetes-validations": [{"rule": rule}]}}}  # fmt: skip
        crd = _crd(f"{t.namespace}.example.com", schema)
        await t.post(CRDS, crd, params={"dryRun": "All"}, record=_shown)

    await conform(scenario)
