"""Conformance: lists, pagination, label and field selectors, resourceVersion parameters."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import Target

pytestmark = pytest.mark.anyio


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"n": name}}  # fmt: skip


async def _three(t: Target) -> None:
    for name, tier in (("c", "web"), ("a", "db"), ("b", "web")):
        await t.call("POST", t.cm(), _cm(name, tier=tier, app="x"), record=lambda d: None)


async def test_list_is_sorted_by_name_without_kind_in_items(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        await t.get(t.cm())

    await conform(scenario)


async def test_list_of_custom_resources_keeps_kind_in_items(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 1}}  # fmt: skip
        await t.post(t.widgets(), body)
        await t.get(t.widgets())

    await conform(scenario)


async def test_list_pages_with_limit_and_continue(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        first = await t.get(t.cm(), params={"limit": "2"})
        token = first["metadata"]["continue"]
        await t.get(t.cm(), params={"limit": "2", "continue": token})

    await conform(scenario)


async def test_a_selected_page_has_a_next_one_while_any_object_follows(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)  # a (db), b (web), c (web)
        db = {"labelSelector": "tier=db", "limit": "1"}
        first = await t.get(t.cm(), params=db)  # b and c follow: a next page, empty
        await t.get(t.cm(), params={**db, "continue": first["metadata"]["continue"]})
        await t.get(t.cm(), params={"labelSelector": "tier=web", "limit": "2"})  # c is last

    await conform(scenario)


async def test_a_list_at_resource_version_0_is_served_whole(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)  # the watch cache serves it, and no page size applies there
        await t.get(t.cm(), params={"limit": "1", "resourceVersion": "0"})

    await conform(scenario)


async def test_a_page_size_makes_a_resource_version_exact(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        first = await t.post(t.cm(), _cm("a"))
        await t.call("POST", t.cm(), _cm("b"), record=lambda d: None)
        rv = first["metadata"]["resourceVersion"]
        await t.get(t.cm(), params={"limit": "5", "resourceVersion": rv})  # a alone
        await t.get(t.cm(), params={"resourceVersion": rv})  # not older than: a and b

    await conform(scenario)


async def test_a_field_selector_on_the_name_reads_that_object_alone(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)  # a, b, c: a page of a has no next one, as nothing else is read
        await t.get(t.cm(), params={"limit": "1", "fieldSelector": "metadata.name=a"})
        await t.get(
            t.cm(), params={"limit": "1", "fieldSelector": "metadata.name==b,metadata.namespace!=x"}
        )
        await t.get(t.cm(), params={"limit": "1", "fieldSelector": "metadata.name!=c"})
        scoped = {"limit": "1", "fieldSelector": f"metadata.namespace={t.namespace}"}
        await t.get("/api/v1/configmaps", params=scoped)  # the namespace's objects counted
        await t.get("/api/v1/configmaps", params={**scoped, "labelSelector": "app=x",
                                                  "fieldSelector": f"{scoped['fieldSelector']},"
                                                  "metadata.name=c"})  # fmt: skip

    await conform(scenario)


async def test_later_pages_show_the_state_of_the_first_page(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        first = await t.get(t.cm(), params={"limit": "1"})
        await t.call("DELETE", t.cm("c"), record=lambda d: None)
        await t.call("POST", t.cm(), _cm("d"), record=lambda d: None)
        await t.get(t.cm(), params={"limit": "5", "continue": first["metadata"]["continue"]})

    await conform(scenario)


async def test_a_garbled_continue_token_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm(), params={"limit": "1", "continue": "garbage"},
                    record=lambda d: (d["code"], d["reason"]))  # fmt: skip

    await conform(scenario)


async def test_label_selectors_of_every_form(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        selectors = ["tier=web", "tier==db", "tier!=web", "tier in (db,web)", "tier notin (web)"]
        for selector in [*selectors, "app", "!app", "app=x,tier=db", "missing=1"]:
            await t.get(t.cm(), params={"labelSelector": selector},
                        record=lambda d: [i["metadata"]["name"] for i in d["items"]])  # fmt: skip

    await conform(scenario)


async def test_a_malformed_label_selector_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm(), params={"labelSelector": "a in (b"})

    await conform(scenario)


async def test_each_malformed_label_selector_gets_the_parsers_message(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for selector in ["a in (", "a in (x y)", "a in x", "a b", "a,", ",a", "!a=b", "a=b=c",
                         "a in (x,", "a notin (,)", "a >", "(a)", "a=(b)"]:  # fmt: skip
            await t.get(t.cm(), params={"labelSelector": selector})

    await conform(scenario)


def _names_or_message(d: Any) -> Any:
    return [i["metadata"]["name"] for i in d["items"]] if "items" in d else d.get("message")


async def test_label_selectors_with_empty_values_numbers_and_keywords(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for name, labels in (("a", {"n": "5", "k": "in"}), ("b", {"n": "12", "e": ""}),
                             ("c", {"n": "x"})):  # fmt: skip
            await t.call("POST", t.cm(), _cm(name, **labels), record=lambda d: None)
        for selector in ["n>6", "n<6", "n>x", "k in (in,notin)", "e=", "e in ()", "e notin ()",
                         "x in (foo,,baz),n", "  n = 5 ", "n,!k", "e==,n!=12"]:  # fmt: skip
            await t.get(t.cm(), params={"labelSelector": selector}, record=_names_or_message)

    await conform(scenario)


async def test_field_selectors_on_name_and_namespace(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        names = lambda d: [i["metadata"]["name"] for i in d["items"]]  # noqa: E731
        await t.get(t.cm(), params={"fieldSelector": "metadata.name=b"}, record=names)
        await t.get(t.cm(), params={"fieldSelector": "metadata.name!=b"}, record=names)
        await t.get("/api/v1/configmaps", record=names,
                    params={"fieldSelector": f"metadata.namespace={t.namespace}"})  # fmt: skip

    await conform(scenario)


async def test_a_field_selector_on_an_unknown_field_is_400(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm(), params={"fieldSelector": "spec.x=1"})

    await conform(scenario)


_COLLECTIONS = [("v1", "configmaps"), ("v1", "secrets"), ("v1", "services"), ("v1", "pods"),
                ("v1", "events"), ("events.k8s.io/v1", "events"), ("batch/v1", "jobs"),
                ("apps/v1", "statefulsets"), ("coordination.k8s.io/v1", "leases")]  # fmt: skip


@pytest.mark.parametrize(("version", "plural"), _COLLECTIONS)
async def test_a_field_label_is_refused_with_the_kinds_own_message(
    conform: Conform, version: str, plural: str
) -> None:
    async def scenario(t: Target) -> None:
        path = t.core(plural) if version == "v1" else t.apis(version, plural)
        for text in ("spec.x=1", "metadata.namespace!=x,status.phase=a", "reason=a", "type=a"):
            await t.get(path, params={"fieldSelector": text})

    await conform(scenario)


async def test_field_labels_of_custom_resources_and_cluster_kinds(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for text in ("spec.size=1", "metadata.namespace=x", "metadata.name=g"):
            await t.get(t.gizmos(), params={"fieldSelector": text})
        for text in ("metadata.namespace=x", "status.phase=Active,metadata.name=x"):
            await t.get("/api/v1/namespaces", params={"fieldSelector": text}, record=_names)

    await conform(scenario)


def _names(document: dict[str, Any]) -> Any:
    if "items" not in document:
        return document
    return sorted(item["metadata"]["name"] for item in document["items"])


async def test_fields_a_kind_selects_by_are_read_as_its_strategy_computes_them(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        secret = {"metadata": {"name": "s"}, "stringData": {"a": "b"}}
        await t.call("POST", t.core("secrets"), secret, record=lambda d: None)
        service = {"metadata": {"name": "v"}, "spec": {"ports": [{"port": 80}]}}
        await t.call("POST", t.core("services"), service, record=lambda d: None)
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        await t.call("POST", t.core("pods"), pod, record=lambda d: None)
        for plural, text in [("secrets", "type=Opaque"), ("services", "spec.type=ClusterIP"),
                             ("pods", "spec.host="), ("pods", "spec.hostNetwork=false"),
                             ("pods", "spec.restartPolicy=Always,status.podIP="),
                             ("pods", "status.podIPs=")]:  # fmt: skip
            await t.get(t.core(plural), params={"fieldSelector": text}, record=_names)

    await conform(scenario)


@pytest.mark.parametrize(
    "text",
    [
        "x=" + "v" * 64,
        "-x=1",
        "a/b/c",
        "!-a",
        "a in (x,$$,-)",
        "a>b",
        "-a>b,c",
        "A=b",
        "-a b",
        "a=-",
    ],
)
async def test_a_label_selector_of_invalid_keys_or_values_is_400(
    conform: Conform, text: str
) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm(), params={"labelSelector": text})

    await conform(scenario)


async def test_remaining_item_count_is_absent_with_a_selector(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await _three(t)
        await t.get(t.cm(), params={"limit": "1", "labelSelector": "app=x"})

    await conform(scenario)


async def test_list_at_an_exact_older_resource_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        first = await t.post(t.cm(), _cm("a"))
        await t.call("POST", t.cm(), _cm("b"), record=lambda d: None)
        rv = first["metadata"]["resourceVersion"]
        await t.get(t.cm(), params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
        await t.get(t.cm(), params={"resourceVersion": "0"},
                    record=lambda d: [i["metadata"]["name"] for i in d["items"]])  # fmt: skip

    await conform(scenario)


async def test_list_at_a_resource_version_from_the_future_is_504(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        await t.get(t.cm(), params={"resourceVersion": "999999999"},
                    record=lambda d: (d["code"], d["reason"], d["details"]))  # fmt: skip

    await conform(scenario)


async def test_cluster_wide_list_spans_namespaces_in_order(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        other = f"{t.namespace}-b"
        await t.call("POST", "/api/v1/namespaces", {"metadata": {"name": other}},
                     record=lambda d: None)  # fmt: skip
        await t.call(
            "POST", t.core("configmaps", namespace=other), _cm("z", mark="m"), record=lambda d: None
        )
        await t.call("POST", t.cm(), _cm("y", mark="m"), record=lambda d: None)

        def ours(d: Any) -> list[tuple[str, str]]:
            pairs = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in d["items"]]
            return [pair for pair in pairs if t.namespace in pair[0]]

        await t.get("/api/v1/configmaps", params={"labelSelector": "mark=m"}, record=ours)

    await conform(scenario)
