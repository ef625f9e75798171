"""Conformance: what a request's body, path and options must agree on: the body's kind and
version against the URL's (built-in kinds by kube-apiserver's scheme, custom resources by
their CRD), its name, namespace and uid against the stored object's; the deprecated watch
paths; a continued list's resourceVersion; a long ``generateName``; a CronJob's zone prefix;
bookmarks before a watch's end; a body's duplicate members and each warning's own header.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conformance.conftest import Conform
from tests.conformance.harness import GROUP, Target, status_shown

pytestmark = pytest.mark.anyio

Body = dict[str, Any]


def shown(document: Any) -> Any:
    if isinstance(document, dict) and document.get("kind") == "Status":
        return status_shown(document)
    return "ok"


def _cm(name: str, **extra: Any) -> Body:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


BODIES: list[tuple[str, str, Body]] = [
    ("a Pod to configmaps", "configmaps", {"apiVersion": "v1", "kind": "Pod"}),
    ("a ConfigMapList", "configmaps", {"apiVersion": "v1", "kind": "ConfigMapList"}),
    ("a ConfigMap of v2", "configmaps", {"apiVersion": "v2", "kind": "ConfigMap"}),
    ("a ConfigMap of another group", "configmaps",
     {"apiVersion": "foo.dev/v1", "kind": "ConfigMap"}),
    ("a Status", "configmaps", {"apiVersion": "v1", "kind": "Status"}),
    ("a kind in lower case", "configmaps", {"apiVersion": "v1", "kind": "configmap"}),
    ("no kind nor version", "configmaps", {}),
    ("a ConfigMap to secrets", "secrets", {"apiVersion": "v1", "kind": "ConfigMap"}),
    ("an events.k8s.io Event to core events", "events", {"apiVersion": "events.k8s.io/v1",
                                                          "kind": "Event"}),
]  # fmt: skip


@pytest.mark.parametrize(("plural", "body"), [(p, b) for _, p, b in BODIES],
                         ids=[name for name, _, _ in BODIES])  # fmt: skip
async def test_a_built_in_body_is_decoded_by_the_kind_and_version_it_names(
    conform: Conform, plural: str, body: Body
) -> None:
    async def scenario(t: Target) -> None:
        await t.post(t.core(plural), {**body, "metadata": {"name": "a"}}, record=shown)

    await conform(scenario)


@pytest.mark.parametrize("group_version", ["apps/v1beta2", "extensions/v1beta1", "v1"])
async def test_a_deployment_of_another_version_is_refused(
    conform: Conform, group_version: str
) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": group_version, "kind": "Deployment", "metadata": {"name": "d"}}
        await t.post(t.apis("apps/v1", "deployments"), body, record=shown)

    await conform(scenario)


async def test_a_custom_resource_s_body_names_its_kind_and_version(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        meta = {"name": "w"}
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "widget",
                                   "metadata": meta}, record=shown)  # fmt: skip
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "",
                                   "metadata": meta}, record=shown)  # fmt: skip
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": meta}, record=shown)  # fmt: skip
        made = await t.get(t.widgets("w"))
        await t.put(t.widgets("w"), {**made, "kind": "Gizmo"}, record=shown)
        await t.put(t.widgets("w"), {**made, "apiVersion": "v1"}, record=shown)

    await conform(scenario)


async def test_an_update_keeps_the_stored_uid(conform: Conform) -> None:
    """Another uid in a PUT or a patch is refused; an empty one is the stored one."""

    async def scenario(t: Target) -> None:
        made = await t.post(t.cm(), _cm("a"))  # (its uid, shown in a message, normalised)
        other = "6f1c7d1e-0000-4000-8000-000000000002"
        await t.put(t.cm("a"), {**made, "metadata": {**made["metadata"], "uid": other}},
                    record=shown)  # fmt: skip
        await t.put(t.cm("a"), {**made, "metadata": {**made["metadata"], "uid": ""}}, record=shown)
        await t.post(t.widgets(), {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}}, record=shown)  # fmt: skip
        await t.patch(t.widgets("w"), {"metadata": {"uid": other}}, record=shown)

    await conform(scenario)


async def test_a_deprecated_watch_path_of_one_object_checks_its_field_selector(
    conform: Conform,
) -> None:
    async def scenario(t: Target) -> None:
        path = f"/api/v1/watch/namespaces/{t.namespace}/configmaps/a"
        await t.get(path, params={"fieldSelector": "metadata.name=b"}, record=shown)

    await conform(scenario)


async def test_a_continued_list_takes_no_resource_version_but_0(conform: Conform) -> None:
    async def scenario(t: Target) -> None:
        for name in "abc":
            await t.post(t.cm(), _cm(name), record=shown)
        page = await t.get(t.cm(), params={"limit": "1"}, record=shown)
        token = page["metadata"]["continue"]
        for version in ("0", "1"):
            params = {"limit": "1", "continue": token, "resourceVersion": version}
            await t.get(t.cm(), params=params, record=shown)

    await conform(scenario)


@pytest.mark.parametrize("length", [57, 58, 59, 70])
async def test_a_generate_name_is_cut_to_leave_room_for_its_suffix(
    conform: Conform, length: int
) -> None:
    async def scenario(t: Target) -> None:
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "g" * length}}  # fmt: skip
        await t.post(t.cm(), body, record=lambda d: len(d["metadata"]["name"]))

    await conform(scenario)


@pytest.mark.parametrize("schedule", ["TZ=Mars/Olympus 0 * * * *", "CRON_TZ=UTC 0 * * * *",
                                      "TZ=UTC", "TZ=UTC 61 * * * *"])  # fmt: skip
async def test_a_cron_job_schedule_s_zone_prefix_is_parsed(conform: Conform, schedule: str) -> None:
    async def scenario(t: Target) -> None:
        job = {
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        }
        body = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": job}},
        }
        await t.post(t.apis("batch/v1", "cronjobs"), body, record=shown)

    await conform(scenario)


@pytest.mark.parametrize("seconds", ["2", "4"])
async def test_a_watch_gets_its_bookmark_two_seconds_before_its_end(
    conform: Conform, seconds: str
) -> None:
    """A bookmark comes two seconds before a watch's end (none in a watch of two seconds) when
    its resource changed after the watch's last event (here: an object its selector leaves
    out; without such a change, whether one comes depends on other clients' writes)."""

    async def scenario(t: Target) -> None:
        listed = await t.get(t.cm(), record=lambda d: None)
        params = {"resourceVersion": listed["metadata"]["resourceVersion"],
                  "allowWatchBookmarks": "true", "timeoutSeconds": seconds,
                  "fieldSelector": "metadata.name=a"}  # fmt: skip

        async def change() -> None:
            await t.post(t.cm(), _cm("a"))
            await t.post(t.cm(), _cm("b"))

        await t.watch(t.cm(), params, actions=change)

    await conform(scenario)


async def test_a_built_in_body_s_duplicate_members_are_merged_as_go_decodes_them(
    conform: Conform,
) -> None:
    """Maps given twice merge (their members too); a list or a value given twice is the last."""

    async def scenario(t: Target) -> None:
        raw = (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"},'
            b'"labels":{"y":"2"}},"data":{"a":"1"},"data":{"a":"3","b":"2"},'
            b'"metadata":{"annotations":{"k":"v"}}}'
        )
        response = await t.api.post(
            t.cm(),
            content=raw,
            params={"fieldValidation": "Warn"},
            headers={"Content-Type": "application/json"},
        )
        made = response.json()
        metadata = made.get("metadata", {})
        t.note("created", (response.status_code, response.headers.get_list("warning"),
                           made.get("data"), metadata.get("labels"),
                           metadata.get("annotations")))  # fmt: skip

    await conform(scenario)
