"""Conformance: server-side apply: field ownership, conflicts, force, removal of fields."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target
from tests.conformance.test_workloads import DEPLOYMENT

pytestmark = pytest.mark.anyio

APPLY = "application/apply-patch+yaml"


def _cm(**data: str) -> bytes:
    return json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}
    ).encode()


def _owners(d: Any) -> Any:
    """The body without its managedFields, and who owns what (times left out)."""
    if d.get("kind") == "Status":
        return d
    entries = d["metadata"].get("managedFields") or []
    owners = sorted(
        (e["manager"], e["operation"], json.dumps(e.get("fieldsV1"), sort_keys=True))
        for e in entries
    )
    return {
        "data": d.get("data"),
        "spec": d.get("spec"),
        "labels": d["metadata"].get("labels"),
        "owners": owners,
    }


def _gizmo(name: str = "g", **spec: Any) -> bytes:
    """A Gizmo's applied configuration."""
    gizmo = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name}}
    return json.dumps({**gizmo, "spec": spec}).encode()


async def _apply(t: Target, path: str, body: bytes, manager: str, *, force: bool = False) -> Any:
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return await t.patch(path, body, ct=APPLY, params=params, record=_owners)


async def test_apply_creates_and_records_the_owner(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1", y="2"), "one")
        await _apply(t, t.cm("a"), _cm(x="1", y="2"), "one")

    await conform(scenario)


async def test_another_manager_changing_an_owned_field_conflicts(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1", y="2"), "one")
        await _apply(t, t.cm("a"), _cm(x="9"), "two")
        await _apply(t, t.cm("a"), _cm(x="9", y="8"), "two")

    await conform(scenario)


async def test_applying_the_same_value_shares_the_field(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1"), "one")
        await _apply(t, t.cm("a"), _cm(x="1", z="3"), "two")

    await conform(scenario)


async def test_force_takes_the_field_over(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1", y="2"), "one")
        await _apply(t, t.cm("a"), _cm(x="9"), "two", force=True)
        await _apply(t, t.cm("a"), _cm(y="2"), "one")

    await conform(scenario)


async def test_fields_a_manager_stops_applying_are_removed(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1", y="2", z="3"), "one")
        await _apply(t, t.cm("a"), _cm(z="3"), "two")
        await _apply(t, t.cm("a"), _cm(x="1"), "one")

    await conform(scenario)


async def test_an_update_takes_ownership_and_conflicts_with_appliers(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _cm(x="1"), "one")
        await t.patch(
            t.cm("a"), {"data": {"x": "2"}}, params={"fieldManager": "editor"}, record=_owners
        )
        await _apply(t, t.cm("a"), _cm(x="3"), "one")

    await conform(scenario)


async def test_apply_merges_containers_by_name(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def deployment(*containers: str) -> bytes:
            return json.dumps(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "d"},
                    "spec": {
                        "selector": {"matchLabels": {"app": "d"}},
                        "template": {
                            "metadata": {"labels": {"app": "d"}},
                            "spec": {
                                "containers": [{"name": n, "image": f"{n}:1"} for n in containers]
                            },
                        },
                    },
                }
            ).encode()

        def names(d: Any) -> Any:
            if d.get("kind") == "Status":
                return d
            return [c["name"] for c in d["spec"]["template"]["spec"]["containers"]]

        path = t.apis("apps/v1", "deployments", "d")
        await t.patch(
            path, deployment("a", "b"), ct=APPLY, params={"fieldManager": "one"}, record=names
        )
        await t.patch(path, deployment("c"), ct=APPLY, params={"fieldManager": "two"}, record=names)
        await t.patch(path, deployment("a"), ct=APPLY, params={"fieldManager": "one"}, record=names)

    await conform(scenario)


async def test_apply_to_a_custom_resource_conflicts_and_removes(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def widget(**spec: Any) -> bytes:
            return json.dumps(
                {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": "Widget",
                    "metadata": {"name": "w"},
                    "spec": spec,
                }
            ).encode()

        await _apply(t, t.widgets("w"), widget(size=1, color="red"), "one")
        await _apply(t, t.widgets("w"), widget(size=2), "two")
        await _apply(t, t.widgets("w"), widget(size=1), "one")

    await conform(scenario)


async def test_apply_without_a_field_manager_is_422(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.patch(t.cm("a"), _cm(x="1"), ct=APPLY)

    await conform(scenario)


def _status_owners(d: Any) -> Any:
    """The spec, the status and who owns what (with the subresource of each entry; the fields
    of appliers only: an Update.s differ, see docs/fake-cluster.md)."""
    if d.get("kind") == "Status":
        return d
    entries = d["metadata"].get("managedFields") or []
    owners = sorted(
        (e["manager"], e["operation"], e.get("subresource", ""),
         json.dumps(e.get("fieldsV1") if e["operation"] == "Apply" else None, sort_keys=True))
        for e in entries
    )  # fmt: skip
    return {"spec": d.get("spec"), "status": d.get("status"), "owners": owners}


async def test_apply_to_the_status_subresource_changes_only_the_status(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        def widget(**fields: Any) -> bytes:
            body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}}
            return json.dumps({**body, **fields}).encode()

        status = t.widgets("w", sub="status")
        await t.patch(status, widget(status={"phase": "new"}), ct=APPLY,
                      params={"fieldManager": "one"}, record=_status_owners)  # fmt: skip
        await t.post(t.widgets(), json.loads(widget(spec={"size": 1})), record=_status_owners)
        for manager, fields, force in [
            ("one", {"status": {"phase": "ok", "ready": True}, "spec": {"size": 9}}, False),
            ("two", {"status": {"phase": "bad"}}, False),
            ("two", {"status": {"phase": "bad"}}, True),
            ("one", {"status": {"ready": True}}, False),
        ]:
            params = {"fieldManager": manager, **({"force": "true"} if force else {})}
            await t.patch(status, widget(**fields), ct=APPLY, params=params,
                          record=_status_owners)  # fmt: skip

    await conform(scenario)


def _raw(**fields: Any) -> bytes:
    return json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, **fields}
    ).encode()


async def test_nulls_in_an_applied_configuration(conform: Conform) -> None:
    """A null in an applied configuration: where others own the field, where the applier
    owned it, under a map, and in an apply that creates."""

    async def scenario(t: Target) -> None:
        await _apply(t, t.cm("a"), _raw(data={"k": None, "x": "1"}, metadata={
            "name": "a", "labels": None, "annotations": {"n": None}}), "one")  # fmt: skip
        await t.post(t.cm(), {"metadata": {"name": "b"}, "data": {"y": "1"}}, record=_owners)
        await _apply(t, t.cm("b"), _raw(metadata={"name": "b"}, data=None), "two")
        await _apply(t, t.cm("b"), _raw(metadata={"name": "b"}, data={"y": None}), "two")
        await _apply(t, t.cm("a"), _raw(data={"x": "1", "z": "2"}), "one")
        await _apply(t, t.cm("a"), _raw(data={"x": "1", "z": None}), "one")
        await _apply(t, t.cm("a"), _raw(data=None), "one")
        await _apply(t, t.cm("a"), _raw(data={"x": None}), "three")

    await conform(scenario)


async def test_nulls_applied_over_lists(conform: Conform) -> None:
    """An applied null over a map-list or a set with items leaves them; over an atomic list
    another manager owns, it conflicts."""

    def deployment(**pod: Any) -> bytes:
        template = {"metadata": {"labels": {"app": "d"}}, "spec": pod}
        spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
        meta = {"name": "d", "finalizers": None}
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}
        return json.dumps(body).encode()

    def shown(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        pod = d["spec"]["template"]["spec"]
        return {"containers": pod["containers"], "volumes": pod.get("volumes"),
                "finalizers": d["metadata"].get("finalizers")}  # fmt: skip

    async def scenario(t: Target) -> None:
        path = t.apis("apps/v1", "deployments")
        container = {"name": "app", "image": "nginx", "args": ["a"]}
        volume = {"name": "v", "emptyDir": {}}
        await t.post(path, {"metadata": {"name": "d", "finalizers": ["example.com/f"]},
                            "spec": json.loads(deployment(containers=[container],
                                                          volumes=[volume]))["spec"]},
                     record=shown)  # fmt: skip
        named = {"name": "app", "image": "nginx"}
        for pod in ({"containers": [named], "volumes": None},
                    {"containers": [{**named, "args": None}]}):  # fmt: skip
            await t.patch(f"{path}/d", deployment(**pod), ct=APPLY, record=shown,
                          params={"fieldManager": "two"})  # fmt: skip
        await t.patch(f"{path}/d", {"metadata": {"finalizers": None}}, record=shown)

    await conform(scenario)


async def test_a_scale_write_takes_the_replicas_from_their_applier(conform: Conform) -> None:
    """A Scale write that changes the replicas takes them from every owner, an applier too;
    one that keeps them leaves the applier its field. The next apply of other replicas then
    conflicts with the Scale's writer alone."""

    def owners(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        return sorted((e["manager"], e["operation"], e.get("subresource") or "",
                       json.dumps(e["fieldsV1"], sort_keys=True))
                      for e in d["metadata"].get("managedFields") or [])  # fmt: skip

    async def scenario(t: Target) -> None:
        deployment = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 1}}
        gizmo = json.loads(_gizmo(replicas=1))
        for path, body in ((t.apis("apps/v1", "deployments", "d"), deployment),
                           (t.gizmos("g"), gizmo)):  # fmt: skip
            await _apply(t, path, json.dumps(body).encode(), "one")
            for replicas in (1, 4):
                await t.patch(f"{path}/scale", {"spec": {"replicas": replicas}})
                await t.get(path, record=owners)
            body["spec"]["replicas"] = 2
            await _apply(t, path, json.dumps(body).encode(), "two")

    await conform(scenario)


async def test_an_item_an_applier_drops_takes_the_other_owners_fields_in_it(
    conform: Conform,
) -> None:
    """An applier that stops applying a list item it created removes it, and with it the
    fields other managers owned inside it: they conflict no more when the item comes back."""

    def owners(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        containers = d["spec"]["template"]["spec"]["containers"]
        return {"containers": [(c["name"], c.get("image")) for c in containers],
                "owners": sorted((e["manager"], json.dumps(e["fieldsV1"], sort_keys=True))
                                 for e in d["metadata"].get("managedFields") or [])}  # fmt: skip

    def deployment(*containers: dict[str, Any]) -> bytes:
        template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": list(containers)}}
        spec = {"selector": {"matchLabels": {"app": "d"}}, "template": template}
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": spec}  # fmt: skip
        return json.dumps(body).encode()

    async def scenario(t: Target) -> None:
        path = t.apis("apps/v1", "deployments", "d")
        side = {"name": "side", "image": "busybox"}
        app = {"name": "app", "image": "nginx", "env": [{"name": "B", "value": "v"}]}
        await _apply(t, path, deployment(side, app), "two")
        changed = {"name": "app", "image": "busybox", "env": [{"name": "A", "value": "v"}]}
        patch = {"spec": {"template": {"spec": {"containers": [changed]}}}}
        await t.patch(path, patch, ct="application/strategic-merge-patch+json", record=owners)
        await t.patch(path, deployment(side), ct=APPLY, params={"fieldManager": "two"},
                      record=owners)  # fmt: skip
        await t.patch(path, deployment(side, {"name": "app", "image": "nginx"}), ct=APPLY,
                      params={"fieldManager": "two"}, record=owners)  # fmt: skip

    await conform(scenario)


@pytest.mark.parametrize(
    "spec",
    [{"plain": None}, {"note": None}, {"size": None}, {"labels": None}, {"options": None}],
    ids=["not nullable", "nullable", "defaulted", "a set", "a defaulted object"],
)
async def test_a_null_applied_to_a_custom_resource_is_checked_by_its_schema(
    conform: Conform, spec: dict[str, Any]
) -> None:
    """An apply's result is not decoded as a request's body is: a null stays, a default fills
    it, ``nullable`` keeps it, and any other is refused as not of the field's type."""

    async def scenario(t: Target) -> None:
        await _apply(t, t.gizmos("g"), _gizmo(**spec), "m")
        await t.post(t.gizmos(), json.loads(_gizmo("h", low=1)))  # then applied to: an update
        await _apply(t, t.gizmos("h"), _gizmo("h", **spec, low=1), "m")

    await conform(scenario)


async def test_a_field_that_an_apply_empties_and_another_owns_is_left_null(
    conform: Conform,
) -> None:
    """A list another manager owns, whose items an applier removes (it applies them no more),
    stays as null, not empty: a custom resource whose schema refuses null refuses the apply."""

    async def scenario(t: Target) -> None:
        created = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"},
                   "spec": {"labels": [], "low": 1}}  # fmt: skip
        await t.post(t.gizmos(), created, record=_owners)
        await _apply(t, t.gizmos("g"), _gizmo(labels=["a", "b"]), "two", force=True)
        await _apply(t, t.gizmos("g"), _gizmo(high=5), "two")
        await _apply(t, t.gizmos("g"), _gizmo(labels=["a"]), "three")
        await _apply(t, t.gizmos("g"), _gizmo(high=5), "three")

    await conform(scenario)


async def test_a_key_the_schema_does_not_name_is_a_field_of_its_own(conform: Conform) -> None:
    """Under a field that keeps unknown fields, an applied key holding a map is owned itself
    (``"."``) besides what it holds: when its applier drops it, the key goes whole, and a
    map another manager owns that is left empty is null."""

    async def scenario(t: Target) -> None:
        created = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"},
                   "spec": {"extra": {}}}  # fmt: skip
        await t.post(t.gizmos(), created, record=_owners)
        await _apply(t, t.gizmos("g"), _gizmo(extra={"any": {"thing": [1]}, "n": {"x": 1}}), "m")
        await _apply(t, t.gizmos("g"), _gizmo(extra={"n": {"x": 1}}), "m")
        await _apply(t, t.gizmos("g"), _gizmo(low=1), "m")

    await conform(scenario)


async def test_a_null_label_applied_to_a_custom_resource_is_stored_until_the_next_write(
    conform: Conform,
) -> None:
    """A custom resource keeps a label applied as null as it is stored (it reads ``""``): its
    next update is written whatever it changes (a new version), and not the one after."""

    def version(d: Any) -> Any:
        if d.get("kind") == "Status":
            return d
        meta = d["metadata"]
        kept = {key: meta.get(key) for key in ("name", "uid", "resourceVersion", "labels")}
        return {"kind": d["kind"], "metadata": kept}

    async def scenario(t: Target) -> None:
        applied = json.loads(_gizmo(low=1))
        applied["metadata"]["labels"] = {"app": None, "tier": "x"}
        await t.patch(t.gizmos("g"), json.dumps(applied).encode(), ct=APPLY,
                      params={"fieldManager": "m"}, record=version)  # fmt: skip
        for _ in range(2):
            await t.patch(t.gizmos("g"), {"spec": {"low": 1}}, record=version)

    await conform(scenario)
