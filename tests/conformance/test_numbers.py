"""Conformance: JSON numbers as kube-apiserver reads, checks and gives back those of custom
resources (Go's unstructured decoding: an integer literal of 64 bits stays an integer, every
other number is a float64, and an integral float64 is written as an integer)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, JSON_PATCH, MERGE, Target

pytestmark = pytest.mark.anyio

APPLY = "application/apply-patch+yaml"
_G = GROUP.encode()


def _object(kind: bytes, name: bytes, spec: bytes) -> bytes:
    head = b'{"apiVersion":"%s/v1","kind":"%s","metadata":{"name":"%s"},' % (_G, kind, name)
    return head + b'"spec":%s}' % spec


async def test_numbers_come_back_as_go_writes_them(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        name = b"g-" + t.namespace.encode()
        numbers = b'{"a":2.0,"b":1e3,"c":1.5,"d":123456789012345678901234567890,"e":1e-7,'
        numbers += b'"f":-0.0,"g":9007199254740993,"h":1E2,"i":0.1e1,"j":[1.0,2.5,-3e0]}'
        await t.post(t.gadgets(), _object(b"Gadget", name, numbers))
        await t.get(t.gadgets(name.decode()))
        await t.delete(t.gadgets(name.decode()))

    await conform(scenario)


async def test_checks_see_a_float_where_the_body_has_one(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.widgets(), _object(b"Widget", b"w", b'{"size":2.0,"limits":{"x":3.0}}'))
        await t.post(t.widgets(), _object(b"Widget", b"v", b'{"size":2.5}'))
        await t.post(t.gizmos(), _object(b"Gizmo", b"z", b'{"replicas":2.0}'))  # scale's path

    await conform(scenario)


async def test_every_write_gives_back_integral_floats_as_integers(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        spec = b'{"replicas":2,"low":1e2,"ratio":0.5,"extra":{"x":7.0,"y":[1.0,2.5]}}'
        await t.post(t.gizmos(), _object(b"Gizmo", b"z", spec))
        await t.patch(t.gizmos("z"), b'{"spec":{"high":3.0,"extra":{"z":1e1}}}', ct=MERGE)
        add = b'[{"op":"add","path":"/spec/extra/j","value":4.0}]'
        await t.patch(t.gizmos("z"), add, ct=JSON_PATCH)
        await t.patch(t.gizmos("z", sub="status"), b'{"status":{"replicas":6.0}}', ct=MERGE)
        manager = {"fieldManager": "m"}
        applied = _object(b"Gizmo", b"z", b'{"low":5.0,"extra":{"a":8.0}}')
        await t.patch(t.gizmos("z"), applied, ct=APPLY, params=manager)
        yaml = b"apiVersion: %s/v1\nkind: Gizmo\nmetadata:\n  name: z\n" % _G
        yaml += b"spec:\n  low: 5.0\n  extra:\n    a: 9.0\n"
        await t.patch(t.gizmos("z"), yaml, ct=APPLY, params=manager)
        await t.get(t.gizmos("z"))

    await conform(scenario)


async def test_an_integral_float_written_over_an_integer_is_a_change(conform: Conform) -> None:
    """Go compares a write's unstructured object with the stored one type for type: a ``2.0``
    sent where ``2`` is stored is written (a new version and generation), every time, though
    it reads back as ``2``; a ``2`` is not."""

    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _object(b"Gizmo", b"z", b'{"low":2,"extra":{"x":1}}'))
        for patch in (
            b'{"spec":{"low":2.0}}',
            b'{"spec":{"low":2.0}}',
            b'{"spec":{"low":2}}',
            b'{"spec":{"extra":{"x":1.0}}}',
            b'{"metadata":{"labels":{"a":"b"}}}',
        ):
            await t.patch(t.gizmos("z"), patch, ct=MERGE)  # fmt: skip

    await conform(scenario)


def _refusal(document: Any) -> Any:
    """A refused patch of a Scale: all but the patched Scale that its message shows (Go's
    patcher writes it in an order of its own)."""
    causes = document.get("details", {}).get("causes", [])
    error = document.get("message", "").rpartition('": ')[2]
    fields = [cause.get("field") for cause in causes]
    return {"code": document.get("code"), "fields": fields, "error": error}


async def test_the_scale_of_numbers_that_are_not_integers(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.gizmos(), _object(b"Gizmo", b"none", b"{}"))
        await t.get(t.gizmos("none", sub="scale"))  # no replicas to scale
        await t.post(t.gizmos(), _object(b"Gizmo", b"z", b'{"replicas":2}'))
        scale = b'{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"z"},'
        for replicas in (b"3.0", b'"3"', b"3.5"):
            await t.put(t.gizmos("z", sub="scale"), scale + b'"spec":{"replicas":%s}}' % replicas)
        for replicas in (b"4.0", b'"4"'):
            patch = b'{"spec":{"replicas":%s}}' % replicas
            await t.patch(t.gizmos("z", sub="scale"), patch, ct=MERGE, record=_refusal)
        await t.get(t.gizmos("z"))

    await conform(scenario)
