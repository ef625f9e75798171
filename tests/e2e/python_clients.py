"""One scripted session per Python client library, run against a kubeconfig; each returns what
the library gave back (objects as dicts, errors as status code, reason and message).

The sessions are sync (as the libraries are) and do the same things in the same order: CRUD with
a label selector, replace, each patch type the library offers, server-side apply where it has
it, on a Namespace, a ConfigMap, a Secret, a Deployment, a CRD (made through the library and
waited for until Established) and one of its objects, and a watch from a resourceVersion with a
server-side timeout. ``tests/e2e/test_python_clients_e2e.py`` runs them on the real API server
and on FakeCluster and compares the records.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Names", "SESSIONS"]

Record = tuple[str, Any]
_CM_DATA = {"colour": "red", "size": "3"}
_IMAGE = "registry.example/app:1"
_MERGE = "application/merge-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_APPLY = "application/apply-patch+yaml"
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@dataclasses.dataclass(frozen=True)
class Names:
    """The names of one session's objects: its own namespace and CRD group, so that sessions
    on one server never meet. The records replace the namespace's name (the group contains it)."""

    namespace: str

    @property
    def group(self) -> str:
        """The CRD's API group."""
        return f"{self.namespace}.example.com"

    @property
    def crd(self) -> str:
        """The CRD's name."""
        return f"widgets.{self.group}"

    @property
    def selector(self) -> str:
        """The label selector of this session's objects."""
        return f"session={self.namespace}"

    @property
    def labels(self) -> dict[str, str]:
        """The labels that :attr:`selector` selects."""
        return {"session": self.namespace}


class Recorder:
    """Calls steps and records their outcomes: a value (through ``view``) or an API error.

    ``resolve`` turns what a step returns into its value (an async client's coroutine run to
    its end, for one session code with both kinds of client)."""

    def __init__(
        self,
        view: Callable[[Any], Any],
        error: Callable[[Exception], Any],
        resolve: Callable[[Any], Any] = lambda value: value,
    ) -> None:
        self.records: list[Record] = []
        self.resolve = resolve
        self._view = view
        self._error = error

    def __call__(self, label: str, step: Callable[[], Any]) -> Any:
        """Run a step; record what it returned (viewed) or the API error it raised."""
        try:
            value = self.resolve(step())
        except Exception as error:
            self.records.append((label, {"error": self._error(error)}))
            return None
        self.records.append((label, shown(self._view(value))))
        return value


def shown(value: Any) -> Any:
    """An answer without what a controller may have changed meanwhile (a Deployment's status
    and revision, a Scale's status, managed fields' times)."""
    if isinstance(value, list):
        return [shown(item) for item in value]
    if isinstance(value, str):  # an object that a client took for a Status shows as text
        return _TIMESTAMP.sub("<time>", value)
    if not isinstance(value, dict):
        return value
    result = {key: shown(item) for key, item in value.items()}
    if result.get("kind") == "Scale":  # its status is the Deployment's
        result.pop("status", None)
        result.get("metadata", {}).pop("resourceVersion", None)
    spec = result.get("spec") if isinstance(result.get("spec"), dict) else {}
    if result.get("kind") == "Deployment" or "template" in spec:  # list items have no kind
        result.pop("status", None)
        annotations = result.get("metadata", {}).get("annotations") or {}
        annotations.pop("deployment.kubernetes.io/revision", None)
        if not annotations:
            result.get("metadata", {}).pop("annotations", None)
        result.get("metadata", {}).pop("resourceVersion", None)
    for entry in result.get("managedFields") or []:
        if isinstance(entry, dict):
            entry.pop("time", None)
    return result


def _manifests(names: Names) -> dict[str, dict[str, Any]]:
    labels = names.labels
    ns = names.namespace
    return {
        "namespace": {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": labels},
        },
        "configmap": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": ns, "labels": labels},
            "data": dict(_CM_DATA),
        },
        "secret": {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": "token", "namespace": ns, "labels": labels},
            "data": {"token": base64.b64encode(b"s3cr3t\n").decode()},
            "stringData": {"plain": "text"},
        },
        "deployment": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "main", "image": _IMAGE, "env": [{"name": "A", "value": "1"}]}
                        ]
                    },
                },
            },
        },
        "crd": {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": names.crd, "labels": labels},
            "spec": {
                "group": names.group,
                "scope": "Namespaced",
                "names": {
                    "kind": "Widget",
                    "plural": "widgets",
                    "singular": "widget",
                    "listKind": "WidgetList",
                },
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "properties": {
                                            "size": {"type": "integer"},
                                            "tags": {"type": "array", "items": {"type": "string"}},
                                        },
                                    },
                                    "status": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            }
                        },
                    }
                ],
            },
        },
        "widget": {
            "apiVersion": f"{names.group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": ns, "labels": labels},
            "spec": {"size": 1, "tags": ["a"]},
        },
    }


def _deadline_loop(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    """Wait (not recorded) until ``check()`` is true: a CRD Established and its objects served."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(0.1)


# -- kubernetes (the official client) -----------------------------------------------------------


def kubernetes_session(kubeconfig: Path, names: Names) -> list[Record]:
    """The official ``kubernetes`` client's session."""
    import kubernetes

    def watched(func: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return list(kubernetes.watch.Watch().stream(func, *args, **kwargs))

    return _official_session(kubernetes, kubeconfig, names, (lambda value: value, watched))


def kubernetes_asyncio_session(kubeconfig: Path, names: Names) -> list[Record]:
    """``kubernetes_asyncio``'s session (the same API, async): on an event loop of its own."""
    import asyncio
    import inspect

    import kubernetes_asyncio

    loop = asyncio.new_event_loop()

    def resolve(value: Any) -> Any:
        return loop.run_until_complete(value) if inspect.isawaitable(value) else value

    async def collected(func: Any, *args: Any, **kwargs: Any) -> list[Any]:
        async with kubernetes_asyncio.watch.Watch() as watch:
            return [event async for event in watch.stream(func, *args, **kwargs)]

    def watched(func: Any, *args: Any, **kwargs: Any) -> list[Any]:
        return list(loop.run_until_complete(collected(func, *args, **kwargs)))

    try:
        return _official_session(kubernetes_asyncio, kubeconfig, names, (resolve, watched))
    finally:
        loop.close()


@dataclasses.dataclass
class _Official:
    """What the official client's session steps share."""

    rec: Recorder
    names: Names
    package: Any
    api: Any
    watched: Callable[..., list[Any]]

    @property
    def m(self) -> dict[str, dict[str, Any]]:
        return _manifests(self.names)

    def __getattr__(self, name: str) -> Any:  # core, apps, ext, custom: the API groups
        groups = {
            "core": "CoreV1Api",
            "apps": "AppsV1Api",
            "ext": "ApiextensionsV1Api",
            "custom": "CustomObjectsApi",
        }
        if name not in groups:
            raise AttributeError(name)
        return getattr(self.package.client, groups[name])(self.api)


def _official_session(
    package: Any,
    kubeconfig: Path,
    names: Names,
    flavour: tuple[Callable[[Any], Any], Callable[..., list[Any]]],
) -> list[Record]:
    """The session of the official client, sync or async: ``flavour`` is how to get a call's
    value (run its coroutine) and a watch's events."""
    resolve, watched = flavour
    exception = package.client.exceptions.ApiException
    api = resolve(package.config.new_client_from_config(config_file=str(kubeconfig)))

    def error(exc: Exception) -> Any:
        if not isinstance(exc, exception):
            raise exc
        body = json.loads(exc.body) if exc.body else {}
        return [exc.status, exc.reason, body.get("reason"), body.get("message")]

    rec = Recorder(api.sanitize_for_serialization, error, resolve)
    session = _Official(rec, names, package, api, watched)
    try:
        for part in (
            _official_core,
            _official_lists,
            _official_deployment,
            _official_custom,
            _official_watch,
            _official_cleanup,
        ):
            part(session)
    finally:
        resolve(api.close())
    return rec.records


def _official_core(o: _Official) -> None:
    rec, core, m, ns, sel = o.rec, o.core, o.m, o.names.namespace, o.names.selector
    rec("ns create", lambda: core.create_namespace(m["namespace"]))
    rec("ns get", lambda: core.read_namespace(ns))
    rec(
        "ns list",
        lambda: [
            i.metadata.name for i in rec.resolve(core.list_namespace(label_selector=sel)).items
        ],
    )
    rec("cm create", lambda: core.create_namespaced_config_map(ns, m["configmap"]))
    rec("cm create again", lambda: core.create_namespaced_config_map(ns, m["configmap"]))
    cm = rec("cm get", lambda: core.read_namespaced_config_map("settings", ns))
    rec("cm get missing", lambda: core.read_namespaced_config_map("missing", ns))
    rec("cm list", lambda: core.list_namespaced_config_map(ns, label_selector=sel))
    cm.data = {"colour": "blue"}
    rec("cm replace", lambda: core.replace_namespaced_config_map("settings", ns, cm))
    rec("cm replace stale", lambda: core.replace_namespaced_config_map("settings", ns, cm))
    patch = core.patch_namespaced_config_map
    merge = {"data": {"size": "4"}, "metadata": {"annotations": {"a": "b"}}}
    rec("cm merge", lambda: patch("settings", ns, merge, _content_type=_MERGE))
    rec(
        "cm strategic",
        lambda: patch("settings", ns, {"data": {"shape": "round"}}, _content_type=_STRATEGIC),
    )
    rec("cm json patch", lambda: patch("settings", ns, [{"op": "remove", "path": "/data/colour"}]))
    rec(
        "cm json patch fails",
        lambda: patch("settings", ns, [{"op": "test", "path": "/data/size", "value": "9"}]),
    )
    applied = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": ns},
        "data": {"size": "5"},
    }
    rec(
        "cm apply conflict",
        lambda: patch("settings", ns, applied, field_manager="tester", _content_type=_APPLY),
    )
    rec(
        "cm apply forced",
        lambda: patch(
            "settings", ns, applied, field_manager="tester", force=True, _content_type=_APPLY
        ),
    )
    rec("secret create", lambda: core.create_namespaced_secret(ns, m["secret"]))
    rec("secret get", lambda: core.read_namespaced_secret("token", ns))
    rec("secret list", lambda: core.list_namespaced_secret(ns, label_selector=sel))


def _official_lists(o: _Official) -> None:
    """Pages, field selectors, a bad selector, a dry-run deletion, a collection's deletion."""
    rec, core, m, ns, sel = o.rec, o.core, o.m, o.names.namespace, o.names.selector
    other = {**m["configmap"], "metadata": {**m["configmap"]["metadata"], "name": "other"}}
    rec.resolve(core.create_namespaced_config_map(ns, other))
    first = rec(
        "cm page 1", lambda: core.list_namespaced_config_map(ns, label_selector=sel, limit=1)
    )
    rec(
        "cm page 2",
        lambda: core.list_namespaced_config_map(
            ns, label_selector=sel, limit=1, _continue=first.metadata._continue
        ),
    )
    rec(
        "cm by field",
        lambda: core.list_namespaced_config_map(ns, field_selector="metadata.name=other"),
    )
    rec("cm bad selector", lambda: core.list_namespaced_config_map(ns, label_selector="a in ("))
    rec("cm bad field", lambda: core.list_namespaced_config_map(ns, field_selector="data.x=1"))
    rec("cm all namespaces", lambda: core.list_config_map_for_all_namespaces(label_selector=sel))
    wrong = {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
    rec(
        "cm delete precondition", lambda: core.delete_namespaced_config_map("other", ns, body=wrong)
    )
    rec("cm delete dry run", lambda: core.delete_namespaced_config_map("other", ns, dry_run="All"))
    rec("cm after dry run", lambda: core.read_namespaced_config_map("other", ns))
    rec(
        "cm delete other",
        lambda: core.delete_namespaced_config_map("other", ns, propagation_policy="Foreground"),
    )
    rec(
        "secret delete collection",
        lambda: core.delete_collection_namespaced_secret(ns, label_selector=sel),
    )
    rec("secret list after", lambda: core.list_namespaced_secret(ns, label_selector=sel))


def _official_deployment(o: _Official) -> None:
    rec, apps, m, ns, sel = o.rec, o.apps, o.m, o.names.namespace, o.names.selector
    rec("deploy create", lambda: apps.create_namespaced_deployment(ns, m["deployment"]))
    containers = [{"name": "main", "env": [{"name": "B", "value": "2"}]}]
    rec(
        "deploy strategic",
        lambda: apps.patch_namespaced_deployment(
            "web",
            ns,
            {"spec": {"template": {"spec": {"containers": containers}}}},
            _content_type=_STRATEGIC,
        ),
    )
    rec(
        "deploy list",
        lambda: rec.resolve(apps.list_namespaced_deployment(ns, label_selector=sel)).items,
    )
    rec("deploy scale", lambda: apps.read_namespaced_deployment_scale("web", ns))
    rec(
        "deploy rescale",
        lambda: apps.patch_namespaced_deployment_scale(
            "web", ns, {"spec": {"replicas": 3}}, _content_type=_MERGE
        ),
    )
    rec(
        "deploy delete",
        lambda: apps.delete_namespaced_deployment("web", ns, propagation_policy="Foreground"),
    )


def _official_custom(o: _Official) -> None:
    rec, ext, custom, m, names = o.rec, o.ext, o.custom, o.m, o.names
    ns, sel = names.namespace, names.selector
    rec("crd create", lambda: ext.create_custom_resource_definition(m["crd"]))

    def established() -> bool:
        conditions = rec.resolve(ext.read_custom_resource_definition(names.crd)).status.conditions
        ready = any(c.type == "Established" and c.status == "True" for c in conditions or [])
        return ready and rec.resolve(custom.list_namespaced_custom_object(*cr)) is not None

    cr = (names.group, "v1", ns, "widgets")
    _deadline_loop(names.crd, established)
    rec("cr create", lambda: custom.create_namespaced_custom_object(*cr, m["widget"]))
    old = rec("cr get", lambda: custom.get_namespaced_custom_object(*cr, "w1"))
    rec("cr list", lambda: custom.list_namespaced_custom_object(*cr, label_selector=sel))
    rec(
        "cr merge",
        lambda: custom.patch_namespaced_custom_object(*cr, "w1", {"spec": {"tags": ["b"]}}),
    )
    rec("cr replace stale", lambda: custom.replace_namespaced_custom_object(*cr, "w1", old))
    rec(
        "cr strategic",
        lambda: custom.patch_namespaced_custom_object(
            *cr, "w1", {"spec": {"size": 2}}, _content_type=_STRATEGIC
        ),
    )
    rec(
        "cr status",
        lambda: custom.patch_namespaced_custom_object_status(
            *cr, "w1", {"status": {"phase": "ok"}}
        ),
    )
    rec("cr status read", lambda: custom.get_namespaced_custom_object_status(*cr, "w1"))
    rec(
        "cr invalid",
        lambda: custom.patch_namespaced_custom_object(*cr, "w1", {"spec": {"size": "big"}}),
    )
    listed = rec.resolve(custom.list_namespaced_custom_object(*cr))
    rec("cr delete", lambda: custom.delete_namespaced_custom_object(*cr, "w1"))
    rec("cr get deleted", lambda: custom.get_namespaced_custom_object(*cr, "w1"))
    rec(
        "cr watch",
        lambda: [
            (e["type"], e["raw_object"])
            for e in o.watched(
                custom.list_namespaced_custom_object,
                *cr,
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=2,
            )
        ],
    )


def _official_watch(o: _Official) -> None:
    rec, core, m, ns, sel = o.rec, o.core, o.m, o.names.namespace, o.names.selector
    listed = rec.resolve(core.list_namespaced_config_map(ns, label_selector=sel))
    extra = {**m["configmap"], "metadata": {**m["configmap"]["metadata"], "name": "watched"}}
    rec.resolve(core.create_namespaced_config_map(ns, extra))
    rec.resolve(core.patch_namespaced_config_map("watched", ns, {"data": {"size": "7"}}))
    rec.resolve(core.delete_namespaced_config_map("watched", ns))
    rec(
        "watch",
        lambda: [
            (e["type"], e["raw_object"])
            for e in o.watched(
                core.list_namespaced_config_map,
                ns,
                label_selector=sel,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=2,
            )
        ],
    )
    rec(
        "watch from now",
        lambda: [
            (e["type"], e["raw_object"])
            for e in o.watched(
                core.list_namespaced_config_map, ns, label_selector=sel, timeout_seconds=1
            )
        ],
    )


def _official_cleanup(o: _Official) -> None:
    rec, core, ns = o.rec, o.core, o.names.namespace
    rec("cm delete", lambda: core.delete_namespaced_config_map("settings", ns))
    rec("cm delete again", lambda: core.delete_namespaced_config_map("settings", ns))
    rec("crd delete", lambda: o.ext.delete_custom_resource_definition(o.names.crd))
    rec("ns delete", lambda: core.delete_namespace(ns))


# -- pykube-ng ----------------------------------------------------------------------------------


def pykube_session(kubeconfig: Path, names: Names) -> list[Record]:
    """pykube-ng's session (Kopf's examples use it): it has merge patches only, and PUT through
    its HTTP client."""
    import pykube

    api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(kubeconfig)))

    def view(value: Any) -> Any:
        if isinstance(value, pykube.objects.APIObject):
            return value.obj
        if isinstance(value, list):
            return [view(item) for item in value]
        return value

    def error(exc: Exception) -> Any:
        if isinstance(exc, pykube.exceptions.HTTPError):
            return [exc.code, str(exc)]
        if isinstance(exc, pykube.exceptions.ObjectDoesNotExist):
            return ["does not exist", str(exc)]
        raise exc

    m = _manifests(names)
    ns = names.namespace
    rec = Recorder(view, error)
    labels = names.labels

    def created(kind: type[pykube.objects.APIObject], manifest: dict[str, Any]) -> Any:
        obj = kind(api, json.loads(json.dumps(manifest)))
        obj.create()
        return obj

    def replaced(obj: pykube.objects.APIObject) -> Any:
        answer = api.put(**obj.api_kwargs(data=json.dumps(obj.obj)))
        api.raise_for_status(answer)
        return answer.json()

    rec("ns create", lambda: created(pykube.Namespace, m["namespace"]))
    rec("ns get", lambda: pykube.Namespace.objects(api).get_by_name(ns))
    rec("ns list", lambda: [o.name for o in pykube.Namespace.objects(api).filter(selector=labels)])

    configmaps = pykube.ConfigMap.objects(api, namespace=ns)
    rec("cm create", lambda: created(pykube.ConfigMap, m["configmap"]))
    rec("cm create again", lambda: created(pykube.ConfigMap, m["configmap"]))
    cm = rec("cm get", lambda: configmaps.get_by_name("settings"))
    rec("cm get missing", lambda: configmaps.get_by_name("missing"))
    rec("cm list", lambda: configmaps.filter(selector=labels).response)
    cm.obj["data"] = {"colour": "blue"}
    rec("cm replace", lambda: replaced(cm))
    rec("cm replace stale", lambda: replaced(cm))
    rec("cm exists", lambda: cm.exists())
    rec("cm merge", lambda: (cm.patch({"data": {"size": "4"}}), cm)[1])
    cm.reload()
    cm.obj["metadata"].setdefault("annotations", {})["a"] = "b"
    del cm.obj["data"]["colour"]
    rec("cm update", lambda: (cm.update(), cm)[1])

    rec("secret create", lambda: created(pykube.Secret, m["secret"]))
    rec("secret get", lambda: pykube.Secret.objects(api, namespace=ns).get(name="token"))
    rec(
        "secret list",
        lambda: list(pykube.Secret.objects(api, namespace=ns).filter(selector=labels)),
    )

    rec("deploy create", lambda: created(pykube.Deployment, m["deployment"]))
    deployments = pykube.Deployment.objects(api, namespace=ns)
    deploy = deployments.get_by_name("web")  # its status changes meanwhile: no update()
    rec("deploy patch", lambda: (deploy.patch({"spec": {"replicas": 2}}), deploy)[1])
    rec("deploy list", lambda: list(deployments.filter(selector=labels)))
    rec("deploy delete", lambda: deploy.delete())

    rec("crd create", lambda: created(pykube.CustomResourceDefinition, m["crd"]))
    crds = pykube.CustomResourceDefinition.objects(api)

    def established() -> bool:
        status = crds.get_by_name(names.crd).obj.get("status", {})
        ready = any(
            c["type"] == "Established" and c["status"] == "True"
            for c in status.get("conditions", [])
        )
        return ready and pykube.object_factory(api, f"{names.group}/v1", "Widget") is not None

    _deadline_loop(names.crd, established)
    widget = pykube.object_factory(api, f"{names.group}/v1", "Widget")
    widgets = widget.objects(api, namespace=ns)
    rec("cr create", lambda: created(widget, m["widget"]))
    cr = rec("cr get", lambda: widgets.get_by_name("w1"))
    rec("cr list", lambda: widgets.filter(selector=labels).response)
    rec("cr merge", lambda: (cr.patch({"spec": {"tags": ["b"]}}), cr)[1])
    rec("cr status", lambda: (cr.patch({"status": {"phase": "ok"}}, subresource="status"), cr)[1])
    rec("cr invalid", lambda: cr.patch({"spec": {"size": "big"}}))
    rec("cr delete", lambda: cr.delete())
    rec("cr exists", lambda: cr.exists())

    start = configmaps.filter(selector=labels).response["metadata"]["resourceVersion"]
    watched = {**m["configmap"], "metadata": {**m["configmap"]["metadata"], "name": "watched"}}
    w = created(pykube.ConfigMap, watched)
    w.patch({"data": {"size": "7"}})
    w.delete()
    stream = configmaps.filter(selector=labels).watch(since=start, params={"timeoutSeconds": 2})
    rec("watch", lambda: [(e.type, e.object.obj) for e in stream])

    rec("cm delete", lambda: cm.delete())
    rec("cm delete again", lambda: cm.delete())  # pykube ignores a 404 here
    rec("crd delete", lambda: crds.get_by_name(names.crd).delete())
    rec("ns delete", lambda: pykube.Namespace.objects(api).get_by_name(ns).delete())
    api.session.close()
    return rec.records


# -- lightkube ----------------------------------------------------------------------------------


def lightkube_session(kubeconfig: Path, names: Names) -> list[Record]:
    """lightkube's session: typed models, each patch type, server-side apply, wait()."""
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.codecs import from_dict
    from lightkube.generic_resource import create_namespaced_resource
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
    from lightkube.resources.apps_v1 import Deployment
    from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret
    from lightkube.types import PatchType

    api = Client(KubeConfig.from_file(str(kubeconfig)), field_manager="lightkube")

    def view(value: Any) -> Any:
        if hasattr(value, "to_dict"):
            return value.to_dict()
        if isinstance(value, list):
            return [view(item) for item in value]
        return value

    def error(exc: Exception) -> Any:
        if not isinstance(exc, ApiError):
            raise exc
        return [exc.status.code, exc.status.reason, exc.status.message]

    m = _manifests(names)
    ns = names.namespace
    labels = names.labels
    rec = Recorder(view, error)

    rec("ns create", lambda: api.create(from_dict(m["namespace"])))
    rec("ns get", lambda: api.get(Namespace, ns))
    rec("ns list", lambda: [o.metadata.name for o in api.list(Namespace, labels=labels)])

    rec("cm create", lambda: api.create(from_dict(m["configmap"])))
    rec("cm create again", lambda: api.create(from_dict(m["configmap"])))
    cm = rec("cm get", lambda: api.get(ConfigMap, "settings", namespace=ns))
    rec("cm get missing", lambda: api.get(ConfigMap, "missing", namespace=ns))
    rec("cm list", lambda: list(api.list(ConfigMap, namespace=ns, labels=labels)))
    cm.data = {"colour": "blue"}
    rec("cm replace", lambda: api.replace(cm))
    rec("cm replace stale", lambda: api.replace(cm))
    rec(
        "cm merge",
        lambda: api.patch(
            ConfigMap, "settings", {"data": {"size": "4"}}, namespace=ns, patch_type=PatchType.MERGE
        ),
    )
    rec(
        "cm strategic",
        lambda: api.patch(ConfigMap, "settings", {"data": {"shape": "round"}}, namespace=ns),
    )
    rec(
        "cm json patch",
        lambda: api.patch(
            ConfigMap,
            "settings",
            [{"op": "remove", "path": "/data/colour"}],
            namespace=ns,
            patch_type=PatchType.JSON,
        ),
    )
    applied = ConfigMap(metadata=from_dict(m["configmap"]).metadata, data={"size": "5"})
    rec("cm apply conflict", lambda: api.apply(applied, field_manager="tester"))
    rec("cm apply forced", lambda: api.apply(applied, field_manager="tester", force=True))

    rec("secret create", lambda: api.create(from_dict(m["secret"])))
    rec("secret get", lambda: api.get(Secret, "token", namespace=ns))
    rec("secret list", lambda: list(api.list(Secret, namespace=ns, labels=labels)))
    rec(
        "all in pages",
        lambda: (
            [
                o.metadata.name
                for o in api.list(ConfigMap, namespace=ns, labels=labels, chunk_size=1)
            ]
            + [
                o.metadata.name
                for o in api.list(
                    Secret, namespace=ns, chunk_size=1, fields={"metadata.name": "token"}
                )
            ]
        ),
    )
    rec(
        "secret replace",
        lambda: api.replace(
            Secret(
                metadata=api.get(Secret, "token", namespace=ns).metadata,
                type="Opaque",
                stringData={"plain": "other"},
            )
        ),
    )

    rec("deploy create", lambda: api.create(from_dict(m["deployment"])))
    rec(
        "deploy strategic",
        lambda: api.patch(
            Deployment,
            "web",
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}]
                        }
                    }
                }
            },
            namespace=ns,
        ),
    )
    rec("deploy list", lambda: list(api.list(Deployment, namespace=ns, labels=labels)))
    rec("deploy delete", lambda: api.delete(Deployment, "web", namespace=ns))

    rec("crd create", lambda: api.create(from_dict(m["crd"])))
    rec(
        "crd wait",
        lambda: [
            (c.type, c.status)
            for c in api.wait(
                CustomResourceDefinition, names.crd, for_conditions=["Established"]
            ).status.conditions
            if c.type == "Established"
        ],
    )
    widget = create_namespaced_resource(names.group, "v1", "Widget", "widgets")
    _deadline_loop(names.crd, lambda: list(api.list(widget, namespace=ns)) is not None)
    rec("cr create", lambda: api.create(widget(m["widget"])))
    rec("cr get", lambda: api.get(widget, "w1", namespace=ns))
    rec("cr list", lambda: list(api.list(widget, namespace=ns, labels=labels)))
    rec(
        "cr merge",
        lambda: api.patch(
            widget, "w1", {"spec": {"tags": ["b"]}}, namespace=ns, patch_type=PatchType.MERGE
        ),
    )
    rec(
        "cr json patch",
        lambda: api.patch(
            widget,
            "w1",
            [{"op": "add", "path": "/spec/tags/-", "value": "c"}],
            namespace=ns,
            patch_type=PatchType.JSON,
        ),
    )
    rec(
        "cr apply",
        lambda: api.apply(
            widget(
                {
                    "apiVersion": f"{names.group}/v1",
                    "kind": "Widget",
                    "metadata": {"name": "w1", "namespace": ns},
                    "spec": {"size": 5},
                }
            ),
            force=True,
        ),
    )
    rec(
        "cr status apply",
        lambda: api.apply(
            widget.Status(
                {
                    "apiVersion": f"{names.group}/v1",
                    "kind": "Widget",
                    "metadata": {"name": "w1", "namespace": ns},
                    "status": {"phase": "ok"},
                }
            ),
            name="w1",
            namespace=ns,
            force=True,
        ),
    )
    rec(
        "cr invalid",
        lambda: api.patch(
            widget, "w1", {"spec": {"size": "big"}}, namespace=ns, patch_type=PatchType.MERGE
        ),
    )
    rec("cr delete", lambda: api.delete(widget, "w1", namespace=ns))
    rec("cr get deleted", lambda: api.get(widget, "w1", namespace=ns))

    start = api.list(ConfigMap, namespace=ns, labels=labels)
    list(start)
    version = start.resourceVersion
    watched = from_dict(m["configmap"])
    watched.metadata.name = "watched"
    api.create(watched)
    api.patch(ConfigMap, "watched", {"data": {"size": "7"}}, namespace=ns)
    api.delete(ConfigMap, "watched", namespace=ns)
    rec(
        "watch",
        lambda: _first(
            api.watch(
                ConfigMap, namespace=ns, labels=labels, resource_version=version, server_timeout=2
            ),
            3,
        ),
    )
    rec("cm delete", lambda: api.delete(ConfigMap, "settings", namespace=ns))
    rec("cm delete again", lambda: api.delete(ConfigMap, "settings", namespace=ns))
    rec("crd delete", lambda: api.delete(CustomResourceDefinition, names.crd))
    rec("ns delete", lambda: api.delete(Namespace, ns))
    api.close()
    return rec.records


def _first(events: Any, count: int) -> list[Any]:
    """The first ``count`` events of a watch that reconnects by itself (lightkube's)."""
    found = []
    for kind, obj in events:
        found.append((kind, obj.to_dict() if hasattr(obj, "to_dict") else obj))
        if len(found) == count:
            break
    events.close()  # its response too
    return found


SESSIONS: dict[str, Callable[[Path, Names], list[Record]]] = {
    "kubernetes": kubernetes_session,
    "kubernetes_asyncio": kubernetes_asyncio_session,
    "pykube": pykube_session,
    "lightkube": lightkube_session,
}
