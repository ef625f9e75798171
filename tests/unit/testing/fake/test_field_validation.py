"""Server-side apply's check for undeclared fields reads a built-in kind's schema nodes once;
it finds what the walk that resolves every node finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.testing.fake.test_field_ownership import deployments

from anyop.testing.fake.field_validation import _builtin_smd, _smd
from anyop.testing.fake.openapi_catalog import catalog

DEPLOYMENT = {"$ref": "io.k8s.api.apps.v1.Deployment"}


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
    expected = list(_smd(config, DEPLOYMENT, "", lambda node: books.resolve(node)[0]))
    assert list(_builtin_smd(config, DEPLOYMENT, "")) == expected
