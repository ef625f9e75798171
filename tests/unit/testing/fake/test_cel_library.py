"""Kubernetes' CEL libraries in the fake's CRD validation rules: the Go parsers they rely on
(pure), the string formatting, and the functions as rules call them."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import pytest

from anyop.testing.fake.cel_addresses import parse_cidr, parse_ip
from anyop.testing.fake.cel_rules import rule_causes
from anyop.testing.fake.cel_values import (
    CelValueError,
    parse_quantity,
    parse_semver,
    parse_url,
)
from anyop.testing.fake.go_json import go_float


@pytest.mark.parametrize(
    ("number", "shown"),
    [(1234.5, "1234.5"), (1234567.25, "1.23456725e+06"), (1e6, "1e+06"), (100000.0, "100000"),
     (0.0001, "0.0001"), (0.00001, "1e-05"), (1.0, "1"), (-2.5, "-2.5"), (0.0, "0")],
)  # fmt: skip
def test_go_float_writes_a_float_as_gos_percent_g(number: float, shown: str) -> None:
    assert go_float(number) == shown


@pytest.mark.parametrize(
    ("text", "small", "value"),
    [("1500m", (1500, -3), Fraction(3, 2)), ("2k", (2, 3), Fraction(2000)),
     ("1Ki", (1024, 0), Fraction(1024)), ("1.5Ki", None, Fraction(1536)), ("m", (0, -3), 0),
     ("1e-12", None, Fraction(1, 10**9)), ("12345678901234567890", None, 12345678901234567890)],
)  # fmt: skip
def test_a_quantity_keeps_apimachinerys_int64_form_where_it_has_one(
    text: str, small: tuple[int, int] | None, value: Fraction
) -> None:
    quantity = parse_quantity(text)
    assert (quantity.small, quantity.value) == (small, value)


def test_a_quantity_is_an_integer_only_at_a_scale_of_zero_or_more() -> None:
    assert parse_quantity("2k").as_integer() == 2000
    assert parse_quantity("2000m").as_integer() is None  # apimachinery does not reduce it
    assert parse_quantity("50k").added(parse_quantity("20")).as_integer() == 50020
    assert parse_quantity("1").added(parse_quantity("1m"), -1).small == (999, -3)


@pytest.mark.parametrize(
    ("text", "error"),
    [("", "quantities must match the regular expression"), ("1Mo", "must match"),
     ("1e", "unable to parse quantity's suffix"), ("1Q", "must match")],
)  # fmt: skip
def test_what_is_not_a_quantity_is_refused(text: str, error: str) -> None:
    with pytest.raises(CelValueError, match=error):
        parse_quantity(text)


def test_a_url_is_read_as_gos_net_url_reads_it() -> None:
    url = parse_url("https://user@[::1]:8080/a%2Fb/c d?x=1&x=2&y#frag")
    assert (url.scheme, url.host, url.hostname(), url.port()) == ("https", "[::1]:8080", "::1",
                                                                  "8080")  # fmt: skip
    assert url.escaped_path() == "/a/b/c%20d"  # its raw path is not validly escaped
    assert parse_url("http://h/a%2Fb").escaped_path() == "/a%2Fb"
    assert url.query() == {"x": ["1", "2"], "y": [""]}
    assert parse_url("mailto:a@b").scheme == "mailto"
    assert parse_url("/only/a/path").host == ""


@pytest.mark.parametrize(
    ("text", "error"),
    [("foo", 'parse "foo": invalid URI for request'),
     ("https://h:abc/", 'parse "https://h:abc/": invalid port ":abc" after host'),
     ("https://h/%zz", 'parse "https://h/%zz": invalid URL escape "%zz"'),
     ("", 'parse "": empty url'), (":x", 'parse ":x": missing protocol scheme')],
)  # fmt: skip
def test_what_is_not_a_url_is_refused_with_gos_message(text: str, error: str) -> None:
    with pytest.raises(CelValueError) as refused:
        parse_url(text)
    assert str(refused.value) == error


@pytest.mark.parametrize(
    ("text", "error"),
    [("01.2.3.4", "IPv4 field has octet with leading zero"), ("1.2.3", "IPv4 address too short"),
     ("1.2..3", 'IPv4 field must have at least one digit (at ".3")'),
     ("1::2::3", 'multiple :: in address (at ":3")'), ("abc", "unable to parse IP"),
     ("1:2:3:4:5:6:7", "address string too short"),
     ("::ffff:1.2.3.4", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
     ("fe80::1%eth0", 'IP address "fe80::1%eth0" with zone value is not allowed')],
)  # fmt: skip
def test_what_is_not_an_ip_is_refused_with_gos_message(text: str, error: str) -> None:
    with pytest.raises(CelValueError) as refused:
        parse_ip(text)
    assert error in str(refused.value)


def test_ips_and_cidrs_parse_as_netip_parses_them() -> None:
    assert str(parse_ip("2001:db8:0::1")) == "2001:db8::1"
    assert str(parse_ip("::1.2.3.4")) == "::102:304"
    assert parse_cidr("10.1.2.3/8")[1] == 8
    with pytest.raises(CelValueError, match=r'ParsePrefix\("10.0.0.0/08"\): bad bits'):
        parse_cidr("10.0.0.0/08")


def test_semantic_versions_compare_as_blang_semver_compares_them() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-rc.1",
               "1.0.0", "1.0.1", "1.10.0", "2.0.0"]  # fmt: skip
    versions = [parse_semver(text) for text in ordered]
    for earlier, later in itertools.pairwise(versions):
        assert (earlier.compare(later), later.compare(earlier)) == (-1, 1)
    assert parse_semver("1.0.0+build") == parse_semver("1.0.0")
    assert parse_semver("v01.2", normalize=True) == parse_semver("1.2.0")


@pytest.mark.parametrize(
    ("text", "error"),
    [("1.2", "No Major.Minor.Patch elements found"), ("", "Version string empty"),
     ("01.2.3", 'Major number must not contain leading zeroes "01"'),
     ("1.2.x", 'Invalid character(s) found in patch number "x"'),
     ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
     ("1.2.3+", "Build meta data is empty")],
)  # fmt: skip
def test_what_is_not_a_semantic_version_is_refused(text: str, error: str) -> None:
    with pytest.raises(CelValueError) as refused:
        parse_semver(text)
    assert str(refused.value) == error


def _causes(rule: str, value: Any, **schema: Any) -> list[str]:
    node = {"type": "string", **schema, "x-kubernetes-validations": [{"rule": rule}]}
    return [cause["message"] for _, cause in rule_causes(value, node, "spec.x")]


@pytest.mark.parametrize(
    ("rule", "value"),
    [("self.lowerAscii() == 'abc'", "ABC"), ("self.split(',').join('+') == 'a+b'", "a,b"),
     ("self.substring(1) == 'bc'", "abc"), ("self.charAt(3) == ''", "abc"),
     ("self.indexOf('c') == 2 && self.lastIndexOf('a') == 0", "abc"),
     ("'%s=%d'.format([self, 1]) == 'abc=1'", "abc"), ("strings.quote(self) == '\"abc\"'", "abc"),
     ("self.find('[a-z]+') == 'abc'", "abc1"), ("self.findAll('.', 2) == ['a', 'b']", "abc"),
     ("[3, 1, 2].sort() == [1, 2, 3] && [1, 2].isSorted()", "x"),
     ("[1, 2, 3].sum() == 6 && [1, 5].min() == 1 && [1, 5].max() == 5", "x"),
     ("[[1], [2]].flatten() == [1, 2] && [1, 1].distinct() == [1]", "x"),
     ("[1, 2, 3].slice(1, 2) == [2] && lists.range(2) == [0, 1]", "x"),
     ("sets.contains([1, 2], [2]) && sets.intersects([1], [1, 3])", "x"),
     ("sets.equivalent([1, 2], [2, 1])", "x"),
     ("url(self).getHost() == 'h:1' && isURL(self)", "http://h:1/"),
     ("quantity(self).isGreaterThan(quantity('1G')) && isQuantity(self)", "1Gi"),
     ("quantity(self).add(1).asInteger() == 1025 && sign(quantity(self)) == 1", "1Ki"),
     ("ip(self).family() == 6 && ip(self).isLoopback()", "::1"),
     ("cidr(self).containsIP('10.0.0.1') && cidr(self).prefixLength() == 8", "10.0.0.0/8"),
     ("string(cidr(self).masked()) == '10.0.0.0/8'", "10.1.2.3/8"),
     ("!format.dns1123Label().validate(self).hasValue()", "my-name"),
     ("format.named('uuid').hasValue() && !format.named('nope').hasValue()", "x"),
     ("optional.of(self).value() == self && optional.none().orValue(1) == 1", "x"),
     ("semver(self).isLessThan(semver('1.10.0')) && semver(self).minor() == 9", "1.9.0"),
     ("semver(self, true).major() == 1 && isSemver(self, true) && !isSemver(self)", "v1"),
     ("[1, 2, 3].all(i, v, v == i + 1) && {'a': 'b'}.exists(k, v, k + v == 'ab')", "x"),
     ("[1, 2, 1].existsOne(i, v, v == 2) && !{'a': 1}.exists_one(k, v, v == 2)", "x"),
     ("[1, 2, 3].transformList(i, v, i > 0, v * 2) == [4, 6]", "x"),
     ("{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}", "x"),
     ("['x', 'y'].transformMapEntry(i, v, {v: i}) == {'x': 0, 'y': 1}", "x"),
     ("[0, 1].all(i, v, v > 0 && 1 / v > 0) == false && 1.0 / 0.0 > 1.0", "x")],
)  # fmt: skip
def test_a_library_function_holds_in_a_rule(rule: str, value: str) -> None:
    assert _causes(rule, value) == []


@pytest.mark.parametrize(
    ("rule", "value", "error"),
    [("self.charAt(9) == ''", "abc", "index out of range: 9"),
     ("self.substring(2, 1) == ''", "abc", "invalid substring range. start: 2, end: 1"),
     ("[1].slice(0, 3).size() == 0", "x", "cannot slice(0, 3), list is length 1"),
     ("self.split('').min() == ''", "", "min called on empty list"),
     ("quantity(self).isInteger()", "1Mo", "quantities must match the regular expression"),
     ("quantity(self).asInteger() == 1", "1.5", "cannot convert value to integer"),
     ("ip(self).family() == 4", "1.2.3", "IP Address \"1.2.3\" parse error"),
     ("url(self).getHost() == ''", "x", 'URL parse error during conversion from string: parse "x"'),
     ("optional.none().value() == 1", "x", "optional.none() dereference"),
     ("[1].flatten(-1).size() == 1", "x", "level must be non-negative"),
     ("ip(self).isLoopback() || ip(self).isUnspecified()", "x", "IP Address \"x\" parse"),
     ("semver(self).major() == 1", "1.2", "No Major.Minor.Patch elements found"),
     ("1 / self.size() == 0", "", "division by zero"),
     ("1 % self.size() == 0", "", "modulus by zero"),
     ("[1, 1].transformMapEntry(i, v, {v: i}).size() == 1", "x",
      "insert failed: key 1 already exists"),
     ("[0].all(i, v, 1 / v > 0)", "x", "division by zero")],
)  # fmt: skip
def test_a_library_function_that_fails_gives_the_go_librarys_error(
    rule: str, value: str, error: str
) -> None:
    (message,) = _causes(rule, value)
    assert message.startswith('Invalid value: "string": ')
    assert error in message
    assert message.endswith(f" evaluating rule: {rule}")


def test_a_double_breaking_a_rule_is_shown_as_go_prints_it() -> None:
    node = {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.0"}]}
    (cause,) = (cause for _, cause in rule_causes(1234567.25, node, "spec.x"))
    assert cause["message"] == "Invalid value: 1.23456725e+06: failed rule: self < 1.0"


def test_format_writes_doubles_as_golang_x_text_does() -> None:
    (message,) = _causes("self == 'x'", "y")
    assert message.endswith("failed rule: self == 'x'")
    node = {"type": "number", "x-kubernetes-validations": [
        {"rule": "false", "messageExpression": "'%.2f %e'.format([self, self])"}]}  # fmt: skip
    (cause,) = (cause for _, cause in rule_causes(1234.5, node, "spec.x"))
    assert cause["message"] == "Invalid value: 1234.5: 1,234.50 1.234500\u00d710\u2070\u00b3"
