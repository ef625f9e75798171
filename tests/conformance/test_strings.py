"""Conformance: strings as Go reads them (a UTF-16 surrogate escaped alone is U+FFFD) and as field
errors quote them (``%q``: printable characters of any script as they are)."""

from __future__ import annotations

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, MERGE, Target

pytestmark = pytest.mark.anyio

_DATA = b'{"a":"x\\ud800y","b":"\\udc00","c":"\\ud83d\\ude00","d":"\\ud800\\ud800","e\\ud800":"k"}'


async def test_a_lone_surrogate_escape_reads_as_the_replacement_character(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        head = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":'
        await t.post(t.cm(), head + _DATA + b"}")  # the key is not a valid config key
        await t.post(t.cm(), head + b'{"k":"\\udfff"}}')
        await t.patch(t.cm("a"), b'{"data":{"f":"\\ud800!"}}', ct=MERGE)
        name = b"g-" + t.namespace.encode()
        gadget = b'{"apiVersion":"%s/v1","kind":"Gadget","metadata":{"name":"%s"},"spec":%s}'
        await t.post(t.gadgets(), gadget % (GROUP.encode(), name, _DATA))
        await t.get(t.gadgets(name.decode()))
        await t.delete(t.gadgets(name.decode()))

    await conform(scenario)


async def test_field_errors_quote_values_as_go_does(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for key in ("café", "tab\there", 'quote"d', "back\\slash", "ctl\x01"):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q"},
                    "data": {key: "v"}}  # fmt: skip
            await t.post(t.cm(), body)

    await conform(scenario)
