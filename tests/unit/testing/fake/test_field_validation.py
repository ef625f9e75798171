"""Field checks that read a built-in kind's schema nodes once, or stop at the first unknown
field, find what the walks that resolve every node and collect every field find."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.testing.fake.test_field_ownership import deployments

from anyop.testing.fake.field_validation import (
    _builtin,
    _has_unknown,
    _may_add_unknown,
    _without_directives,
)
from anyop.testing.fake.kinds import Kind
from anyop.testing.fake.openapi_catalog import catalog
from anyop.testing.fake.smd_typing import _builtin_smd, _smd

DEPLOYMENT = {"$ref": "io.k8s.api.apps.v1.Deployment"}
DEPLOYMENTS = Kind("apps", "v1", "deployments", "deployment", "Deployment")


@settings(max_examples=300, deadline=None)
@given(deployments(patch=False) | deployments(patch=True), st.sets(st.integers(0, 2)))
def test_undeclared_fields_of_a_configuration_are_those_every_node_resolved_finds(
    config: dict[str, Any], undeclared: set[int]
) -> None:
    """On generated Deployments, with undeclared fields in some items of the map-lists of
    containers (by name) and of their ports (by port and protocol)."""
    spec = ((config.get("spec") or {}).get("template") or {}).get("spec") or {}
    for index, container in enumerate(spec.get("containers") or []):
        if index in undeclared and isinstance(container, dict):
            container["oops"] = index
            for port in container.get("ports") or []:
                port["oops"] = "yes"
    books = catalog()
    expected = list(_smd(config, DEPLOYMENT, "", lambda node: books.resolve(node)[0], True))
    assert list(_builtin_smd(config, DEPLOYMENT, "", True)) == expected


@settings(max_examples=300, deadline=None)
@given(deployments(patch=True), st.sets(st.integers(0, 2)), st.booleans())
def test_a_patch_may_add_unknown_fields_exactly_when_it_has_some(
    patch: dict[str, Any], undeclared: set[int], directives: bool
) -> None:
    """Found in one walk that stops at the first, with a strategic merge patch's directives
    (``$patch``, ``$setElementOrder/...``) beside the fields: as collecting them all finds."""
    spec = ((patch.get("spec") or {}).get("template") or {}).get("spec") or {}
    for index, container in enumerate(spec.get("containers") or []):
        if isinstance(container, dict):
            if index in undeclared:
                container["oops"] = index
            if directives:
                container["$patch"] = "replace"
    if directives and isinstance(patch.get("spec"), dict):
        patch["spec"]["$setElementOrder/containers"] = [{"name": "a"}]
    books = catalog()
    without = _without_directives(patch)
    expected = any(True for _ in _builtin(without, DEPLOYMENT, ""))
    assert _has_unknown(books, patch, DEPLOYMENT) == expected
    assert _may_add_unknown(DEPLOYMENTS, patch) == expected
