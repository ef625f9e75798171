"""An update's object decodes as it decodes alone, when the stored object's unchanged fields are
kept without being walked again (``decode(..., like=stored)``)."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.unit.testing.fake.test_field_ownership import deployments

from anyop.kube.patches import merge
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.statuses import StatusError
from anyop.testing.fake.typed_decoding import decode


def _decoded(body: Any, **like: Any) -> Any:
    try:
        return decode("apps", "v1", "Deployment", body, **like)
    except StatusError as exc:
        return ("refused", exc.code, exc.body["message"])


def _containers(value: Any) -> set[int]:
    """The ids of every dict and list in a document."""
    found: set[int] = set()
    todo = [value]
    while todo:
        each = todo.pop()
        if isinstance(each, dict):
            found.add(id(each))
            todo += each.values()
        elif isinstance(each, list):
            found.add(id(each))
            todo += each
    return found


@settings(max_examples=400, deadline=None)
@given(
    deployments(patch=False),
    deployments(patch=True) | deployments(patch=False),
    st.sampled_from(["none", "string", "float", "nested float"]),
)
def test_an_update_decodes_as_its_object_alone_does(
    old: dict[str, Any], patch: dict[str, Any], wrong: str
) -> None:
    """Same object or same refusal, whatever the stored object shares with the new one (a
    wrong type too, where it is equal by ``==`` to the stored value: ``2.0`` and ``2``); and
    the decoded object shares no dict or list with either (the decoder's own, changed in place
    by the defaulting that follows)."""
    stored = _decoded(old)
    assume(isinstance(stored, dict))
    new = json_copy(merge(stored, patch))  # changed below: none of it the stored object's
    spec = new.get("spec") if isinstance(new.get("spec"), dict) else {}
    if wrong == "string" and spec:
        spec["replicas"] = "two"  # a wrong type beside fields equal to the stored ones
    if wrong == "float" and type(spec.get("replicas")) is int:
        spec["replicas"] = float(spec["replicas"])
    if wrong == "nested float":
        template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
        pod = template.get("spec") if isinstance(template.get("spec"), dict) else {}
        for container in pod.get("containers") or []:
            for port in container.get("ports") or [] if isinstance(container, dict) else []:
                if isinstance(port, dict) and type(port.get("containerPort")) is int:
                    port["containerPort"] = float(port["containerPort"])
    alone = _decoded(new)
    reused = _decoded(new, like=stored)
    assert reused == alone
    if isinstance(reused, dict):
        assert not _containers(reused) & (_containers(new) | _containers(stored))
