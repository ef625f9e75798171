"""Seeded request sequences for the conformance suite: valid and invalid writes of Gizmos (a CR
with a rich schema, validation rules, status and scale), of a ConfigMap and a Deployment, of
the kinds operators write and of workloads and their neighbours, drawn from one seed.

Pure: :func:`plan` turns a seed into steps; the test plays them on both API servers. A value is
drawn from the field's schema (valid mostly) or from the values that schema refuses (a wrong
type, a number out of range, a string against its pattern, a list too long), so both the paths
that accept and those that refuse are met.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "Maker",
    "Step",
    "builtin_plan",
    "kinds_plan",
    "objects_plan",
    "plan",
    "workloads_plan",
]

NAMES = ("g1", "g2")

_WRONG_TYPES: tuple[Any, ...] = (1, "s", True, None, [], {}, 1.5, [1], {"k": "v"})

# Per field of the Gizmo spec: values its schema accepts, then values it refuses (or that are
# edge cases the two servers might read differently).
_SPEC: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {
    "low": ((0, 5, 999, -3), (1.5, "5", 2.0)),
    "high": ((1, 10, 500), (1000, 5000, -1.0)),
    "fixed": (("a", "b"), ("", 1)),
    "replicas": ((0, 1, 3), (-1, 2.5)),
    "size": ((1, 5, 10), (0, 11, "3")),
    "ratio": ((0.5, 0.25, 0.999), (0, 1, 1.5, -0.1, "0.5")),
    "name": (("abc", "hello", "abcdefgh"), ("ab", "abcdefghi", "ABC", "a-b", "")),
    "tags": ((["a"], ["a", "b", "c"], ["x", "x"]), ([], ["a", "b", "c", "d"], [1], "a")),
    "labels": ((["a", "b"], []), (["a", "a"], ["a", 1], ["b", "b", "c", "c"])),
    "mode": (("fast", "slow"), ("medium", "", None)),
    "port": ((80, "http", 0), (8.5, True, [80])),
    "when": (("2026-01-01T00:00:00Z", "2026-01-01T10:00:00.5+02:00"),
             ("yesterday", "2026-01-01", "2026-13-01T00:00:00Z")),
    "note": ((None, "x"), (5,)),
    "plain": (("x", "long " * 5), (5, False)),
    "options": (({}, {"retries": 2}, {"verbose": True}), ({"verbose": "yes"}, {"unknown": 1},
                                                           {"retries": None})),
    "items": (([{"key": "a"}], [{"key": "a", "weight": 2}, {"key": "b"}]),
              ([{"weight": 2}], [{"key": "b", "weight": "x"}], [None])),
    "extra": (({"any": {"thing": [1]}}, {}), (None, [])),
    "bogus": (("dropped",), ()),
}  # fmt: skip

_LABELS: tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]] = (
    ({"app": "a"}, {"app": "b", "tier": "x"}, {"example.com/key": "v"}),
    ({"a b": "c"}, {"app": "x" * 64}, {"app": 1}, {"-app": "x"}, {"app": None}),
)
_FINALIZERS: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    (["example.com/f"], [], ["example.com/f", "example.com/g"]),
    (["not a name"], [1], "example.com/f"),
)


@dataclasses.dataclass(frozen=True)
class Step:
    """One request: ``op`` on object ``name`` with ``body`` (and options)."""

    op: str
    name: str
    body: Any = None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


def _value(rng: random.Random, choices: tuple[tuple[Any, ...], tuple[Any, ...]], bad: float) -> Any:
    valid, invalid = choices
    if invalid and rng.random() < bad:
        return rng.choice(invalid)
    if rng.random() < bad / 3:
        return rng.choice(_WRONG_TYPES)
    return rng.choice(valid)


def _spec(rng: random.Random, *, bad: float, fields: int) -> dict[str, Any]:
    chosen = rng.sample(sorted(_SPEC), k=fields)
    return {field: _value(rng, _SPEC[field], bad) for field in chosen}


def _metadata(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if rng.random() < 0.5:
        metadata["labels"] = _value(rng, _LABELS, bad)
    if rng.random() < 0.2:
        metadata["finalizers"] = _value(rng, _FINALIZERS, bad)
    if rng.random() < 0.1:
        metadata["bogus"] = "pruned"
    return metadata


def _gizmo(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "conformance.anyop.dev/v1", "kind": "Gizmo",
                            "metadata": _metadata(rng, name, bad=bad)}  # fmt: skip
    if rng.random() < 0.9:
        body["spec"] = _spec(rng, bad=bad, fields=rng.randint(0, 6))
    if rng.random() < 0.2:
        body["status"] = {"replicas": _value(rng, ((1, 2), ("2", -1)), bad)}
    return body


def _json_patch(rng: random.Random, *, bad: float) -> list[dict[str, Any]]:
    ops = []
    for _ in range(rng.randint(1, 3)):
        field = rng.choice(sorted(_SPEC))
        kind = rng.choice(["add", "replace", "remove", "test"])
        path = rng.choice([f"/spec/{field}", f"/spec/{field}", "/metadata/labels/app",
                           "/spec/tags/0", "/spec/tags/-", "/spec/items/0/key",
                           "/spec"])  # fmt: skip
        op: dict[str, Any] = {"op": kind, "path": path}
        if kind != "remove":
            op["value"] = _value(rng, _SPEC[field], bad) if path.startswith("/spec/") else "v"
        ops.append(op)
    return ops


def _list_options(
    rng: random.Random, selectors: list[str], names: Sequence[str], *, bad: float
) -> dict[str, str]:
    """A list's query: a label selector, and at times a field selector, a page size or a
    resourceVersion (each possibly one the API server refuses)."""
    options = {"labelSelector": rng.choice(selectors)}
    if rng.random() < bad / 2:
        options["labelSelector"] = rng.choice(["app=(", "a b", "app in a", "x=" + "v" * 64])
    if rng.random() < 0.3:
        name = rng.choice(list(names))
        fields = [f"metadata.name={name}", f"metadata.name!={name}", "metadata.namespace!=x"]
        wrong = ["spec.x=1", "metadata.name", "metadata.uid=1"]
        options["fieldSelector"] = rng.choice(wrong if rng.random() < bad else fields)
    if rng.random() < 0.5:
        options["limit"] = rng.choice(["1", "2", "1", "2", "0", "x"] if rng.random() < bad
                                      else ["1", "2"])  # fmt: skip
    if rng.random() < 0.15:
        options["resourceVersion"] = "0"
    return options


def plan(seed: int, *, steps: int = 10) -> list[Step]:
    """The requests of one seed: creates first, then writes and reads of the same objects."""
    rng = random.Random(seed)
    bad = rng.choice([0.1, 0.25, 0.5])
    out = [Step("create", name, _gizmo(rng, name, bad=bad)) for name in NAMES]
    for _ in range(steps):
        name = rng.choice(NAMES)
        op = rng.choice(["put", "merge", "merge", "json", "apply", "apply", "status", "scale",
                         "delete", "get", "list", "create"])  # fmt: skip
        if op in ("put", "create"):
            version = rng.choice(["current", "current", "stale", "none"])
            out.append(Step(op, name, _gizmo(rng, name, bad=bad), {"version": version}))
        elif op == "merge":
            patch: dict[str, Any] = {"spec": _spec(rng, bad=bad, fields=rng.randint(1, 3))}
            if rng.random() < 0.3:
                patch["metadata"] = {"labels": _value(rng, _LABELS, bad)}
            if rng.random() < 0.2:
                patch["metadata"] = {"finalizers": None}
            out.append(Step(op, name, patch))
        elif op == "json":
            out.append(Step(op, name, _json_patch(rng, bad=bad)))
        elif op == "apply":
            # An applied configuration holds no unknown fields (structured merge stops
            # checking a map at the first, in Go's map order, which varies), no nulls and no
            # finalizers (the fake does not own them one by one: docs/fake-cluster.md).
            body = _gizmo(rng, name, bad=bad)
            body.pop("status", None)
            body["metadata"] = {k: v for k, v in body["metadata"].items()
                                if k not in ("finalizers", "bogus")}  # fmt: skip
            spec = body.get("spec")
            if isinstance(spec, dict):
                body["spec"] = {k: v for k, v in spec.items() if v is not None and k != "bogus"}
                for key, value in body["spec"].items():
                    if isinstance(value, dict):
                        body["spec"][key] = {k: v for k, v in value.items() if k != "unknown"}
            manager = rng.choice(["m1", "m2"])
            out.append(Step(op, name, body, {"manager": manager, "force": rng.random() < 0.3}))
        elif op == "status":
            status = {"replicas": _value(rng, ((1, 2, 7), ("2", -1, 1.5)), bad)}
            out.append(Step(op, name, {"status": status, "spec": {"low": 1}}))
        elif op == "scale":
            replicas = _value(rng, ((0, 2, 4), (-1, "3", 1.5)), bad)
            out.append(Step(op, name, {"spec": {"replicas": replicas}}))
        elif op == "list":
            selectors = ["app=a", "app!=a", "tier", "!tier", "app in (a,b)"]
            out.append(Step(op, name, options=_list_options(rng, selectors, NAMES, bad=bad)))
        else:
            out.append(Step(op, name))
    return out


# Built-in kinds: a ConfigMap and a Deployment, written in every way an operator writes them.

_DATA: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    ({"a": "1"}, {"a": "1", "b.c": "2"}, {"K_1": "x"}, {}),
    ({"a b": "1"}, {"..": "x"}, {"a": 1}, {"a": None}, {"x" * 254: "v"}, {"-": "v"}),
)
_CONTAINER_NAMES = ("app", "side")


def _container(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": rng.choice(["nginx", "busybox:1.36"])}
    if rng.random() < 0.5:
        port = _value(rng, ((80, 8080), (0, 70000, "80")), bad)
        container["ports"] = [{"containerPort": port, "protocol": rng.choice(["TCP", "UDP"])}]
    if rng.random() < 0.4:
        container["env"] = [{"name": _value(rng, (("A", "B_2"), ("1A", "a b", "")), bad),
                             "value": "v"}]  # fmt: skip
    if rng.random() < 0.4:
        quantity = _value(rng, (("100m", "1", "0.5", "1Gi"), ("abc", "1.5.5", -1)), bad)
        container["resources"] = {"requests": {"cpu": quantity}}
    if rng.random() < bad / 2:
        container.pop("image")
    return container


def _deployment(rng: random.Random, *, bad: float) -> dict[str, Any]:
    labels = {"app": "d"} if rng.random() > bad / 2 else {"app": "other"}
    names = rng.sample(_CONTAINER_NAMES, k=rng.randint(1, 2))
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [_container(rng, n, bad=bad) for n in names]}},
    }  # fmt: skip
    if rng.random() < 0.5:
        spec["replicas"] = _value(rng, ((0, 1, 3), (-1, "2", 1.5)), bad)
    if rng.random() < 0.2:
        spec["strategy"] = rng.choice([{"type": "Recreate"}, {"type": "RollingUpdate"},
                                       {"type": "Bogus"}])  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
            "spec": spec}  # fmt: skip


def _configmap(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": _metadata(rng, "c1", bad=bad)}  # fmt: skip
    body["data"] = _value(rng, _DATA, bad)
    if rng.random() < 0.2:
        body["immutable"] = rng.random() < 0.5
    return body


def builtin_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on a ConfigMap (``c1``) and a Deployment (``d1``): creates, replaces, merge,
    JSON and strategic merge patches, applies, scale writes and deletions."""
    rng = random.Random(seed)
    bad = rng.choice([0.1, 0.25, 0.5])
    out = [Step("create", "c1", _configmap(rng, bad=bad)),
           Step("create", "d1", _deployment(rng, bad=bad))]  # fmt: skip
    for _ in range(steps):
        name = rng.choice(["c1", "d1"])
        make = (lambda: _configmap(rng, bad=bad)) if name == "c1" else (
            lambda: _deployment(rng, bad=bad))  # fmt: skip
        op = rng.choice(["put", "merge", "strategic", "json", "apply", "apply", "get",
                         "delete", "create"] + (["scale"] if name == "d1" else []))  # fmt: skip
        if op in ("put", "create"):
            out.append(Step(op, name, make(), {"version": rng.choice(["current", "none"])}))
        elif op == "apply":
            body = make()
            body["metadata"] = {k: v for k, v in body["metadata"].items() if k == "name"}
            out.append(Step(op, name, body, {"manager": rng.choice(["m1", "m2"]),
                                             "force": rng.random() < 0.3}))  # fmt: skip
        elif op in ("merge", "strategic"):
            if name == "c1":
                patch: Any = {"data": _value(rng, _DATA, bad)}
            else:
                names = rng.sample(_CONTAINER_NAMES, k=rng.randint(1, 2))
                containers = [_container(rng, n, bad=bad) for n in names]
                if op == "strategic" and rng.random() < 0.3:
                    containers.append({"name": rng.choice(_CONTAINER_NAMES), "$patch": "delete"})
                patch = {"spec": {"template": {"spec": {"containers": containers}}}}
            if rng.random() < 0.3:
                patch["metadata"] = {"labels": _value(rng, _LABELS, bad)}
            out.append(Step(op, name, patch))
        elif op == "json":
            path = "/data/a" if name == "c1" else "/spec/replicas"
            value = "2" if name == "c1" else _value(rng, ((1, 2), (-1, "x")), bad)
            out.append(Step(op, name, [{"op": rng.choice(["add", "replace", "remove"]),
                                        "path": path, "value": value}]))  # fmt: skip
        elif op == "scale":
            replicas = _value(rng, ((0, 2, 4), (-1, "3")), bad)
            out.append(Step(op, name, {"spec": {"replicas": replicas}}))
        else:
            out.append(Step(op, name))
    return out


# More kinds operators write: a Secret, a Service, a Lease, an events.k8s.io Event and a Pod.

_B64: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    ({"a": "MQ=="}, {"a": "", "tls.crt": "eA=="}, {}),
    ({"a": "!!"}, {"a": 1}, {"a b": "MQ=="}, {"a": "MQ"}),
)
_STRING_DATA: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    ({"a": "2"}, {"b": "x", "username": "u"}, {}), ({"a": 2}, {"a b": "x"}, {"a": None}),
)  # fmt: skip
_SECRET_TYPES: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    ("Opaque", "example.com/custom", None),
    ("kubernetes.io/tls", "kubernetes.io/basic-auth", "kubernetes.io/service-account-token",
     "kubernetes.io/dockerconfigjson", "", "a b"),
)  # fmt: skip


def _secret(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret",
                            "metadata": _metadata(rng, "s1", bad=bad)}  # fmt: skip
    kind = _value(rng, _SECRET_TYPES, bad)
    if kind is not None:
        body["type"] = kind
    if rng.random() < 0.7:
        body["data"] = _value(rng, _B64, bad)
    if rng.random() < 0.4:
        body["stringData"] = _value(rng, _STRING_DATA, bad)
    if rng.random() < 0.15:
        body["immutable"] = rng.random() < 0.5
    return body


def _service_port(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    port: dict[str, Any] = {"port": _value(rng, ((80, 443, 8080), (0, 70000, "80")), bad)}
    if rng.random() < 0.6:
        port["name"] = name
    if rng.random() < 0.5:
        port["targetPort"] = _value(rng, ((8080, "http", 1), (0, "a b", 70000)), bad)
    if rng.random() < 0.3:
        port["protocol"] = _value(rng, (("TCP", "UDP", "SCTP"), ("tcp", "HTTP")), bad)
    return port


def _service(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    kind = _value(rng, (("ClusterIP", None, "ClusterIP"), ("ExternalName", "Bogus")), bad)
    if kind is not None:
        spec["type"] = kind
    if kind == "ExternalName" or rng.random() < bad / 4:
        spec["externalName"] = rng.choice(["db.example.com", "not a name"])
    if rng.random() < 0.85:
        names = rng.sample(["http", "https", "http"], k=rng.randint(1, 2))
        spec["ports"] = [_service_port(rng, n, bad=bad) for n in names]
    if rng.random() < 0.6:
        spec["selector"] = _value(rng, _LABELS, bad)
    if rng.random() < 0.2:
        spec["clusterIP"] = rng.choice(["None", "None", "10.0.0.999", ""])
    if rng.random() < 0.2:
        spec["sessionAffinity"] = _value(rng, (("None", "ClientIP"), ("Sticky",)), bad)
    return {"apiVersion": "v1", "kind": "Service", "metadata": _metadata(rng, "v1", bad=bad),
            "spec": spec}  # fmt: skip


_MICRO_TIMES: tuple[tuple[Any, ...], tuple[Any, ...]] = (
    ("2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:01.123456Z"),
    ("2026-01-01T00:00:00Z", "yesterday", 5),
)


def _lease(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for field, choices in (
        ("holderIdentity", (("me", "pod-a"), (7, ""))),
        ("leaseDurationSeconds", ((15, 1), (0, -1, "15", 1.5))),
        ("leaseTransitions", ((0, 3), (-1, "1"))),
        ("acquireTime", _MICRO_TIMES),
        ("renewTime", _MICRO_TIMES),
    ):
        if rng.random() < 0.6:
            spec[field] = _value(rng, choices, bad)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": _metadata(rng, "l1", bad=bad), "spec": spec}  # fmt: skip


def _event(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                            "metadata": _metadata(rng, "e1", bad=bad)}  # fmt: skip
    for field, choices in (
        ("eventTime", _MICRO_TIMES),
        ("reportingController", (("example.com/op", "op"), ("", "a b/c"))),
        ("reportingInstance", (("op-1",), ("",))),
        ("action", (("Create", "Update"), ("",))),
        ("reason", (("Started", "Failed"), ("",))),
        ("type", (("Normal", "Warning"), ("Info", ""))),
        ("note", (("it ran", ""), ("x" * 1025, 5))),
        ("regarding", (({"kind": "Pod", "name": "p1", "namespace": "other"},
                        {"kind": "ConfigMap", "name": "c"}), ({"kind": 1}, "p1"))),
    ):  # fmt: skip
        if rng.random() < 0.8:
            body[field] = _value(rng, choices, bad)
    if rng.random() < 0.15:
        body["series"] = {"count": _value(rng, ((2, 5), (1, 0)), bad),
                          "lastObservedTime": _value(rng, _MICRO_TIMES, bad)}  # fmt: skip
    return body


def _pod(rng: random.Random, *, bad: float) -> dict[str, Any]:
    names = rng.sample(_CONTAINER_NAMES, k=rng.randint(1, 2))
    spec: dict[str, Any] = {"containers": [_container(rng, n, bad=bad) for n in names]}
    if rng.random() < 0.3:
        spec["restartPolicy"] = _value(rng, (("Always", "Never", "OnFailure"), ("Sometimes",)), bad)
    if rng.random() < 0.2:
        spec["activeDeadlineSeconds"] = _value(rng, ((30, 600), (0, -5)), bad)
    if rng.random() < 0.2:
        operator = _value(rng, (("Exists", "Equal"), ("Maybe",)), bad)
        spec["tolerations"] = [{"key": "k", "operator": operator}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _metadata(rng, "p1", bad=bad),
            "spec": spec}  # fmt: skip


_KINDS = {"s1": _secret, "v1": _service, "l1": _lease, "e1": _event, "p1": _pod}


def _kind_patch(rng: random.Random, name: str, *, bad: float) -> dict[str, Any]:
    """A merge or strategic merge patch of the fields an operator changes on each kind."""
    whole = _KINDS[name](rng, bad=bad)
    if name == "p1":
        spec = whole["spec"]
        patch: dict[str, Any] = {
            "spec": {
                "containers": [
                    {"name": c["name"], "image": c.get("image", "x")} for c in spec["containers"]
                ]
            }
        }
        for field in ("activeDeadlineSeconds", "tolerations", "restartPolicy"):
            if field in spec and rng.random() < 0.5:
                patch["spec"][field] = spec[field]
    else:
        fields = [k for k in whole if k not in ("apiVersion", "kind", "metadata")]
        chosen = rng.sample(fields, k=min(len(fields), rng.randint(1, 2)))
        patch = {field: whole[field] for field in chosen}
    if rng.random() < 0.3:
        patch["metadata"] = {"labels": _value(rng, _LABELS, bad)}
    return patch  # fmt: skip


def kinds_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on two of a Secret (``s1``), a Service (``v1``), a Lease (``l1``), an
    events.k8s.io Event (``e1``) and a Pod (``p1``): creates, replaces, merge, JSON and strategic
    merge patches, applies, status writes, reads, lists and deletions."""
    rng = random.Random(seed)
    bad = rng.choice([0.1, 0.25, 0.5])
    names = rng.sample(sorted(_KINDS), k=2)
    out = [Step("create", name, _KINDS[name](rng, bad=bad)) for name in names]
    for _ in range(steps):
        name = rng.choice(names)
        op = rng.choice(["put", "merge", "strategic", "json", "apply", "apply", "get", "list",
                         "delete", "create"])  # fmt: skip
        if op in ("put", "create"):
            out.append(Step(op, name, _KINDS[name](rng, bad=bad),
                            {"version": rng.choice(["current", "none"])}))  # fmt: skip
        elif op == "apply":
            body = _KINDS[name](rng, bad=bad)
            body["metadata"] = {k: v for k, v in body["metadata"].items() if k == "name"}
            out.append(Step(op, name, body, {"manager": rng.choice(["m1", "m2"]),
                                             "force": rng.random() < 0.3}))  # fmt: skip
        elif op in ("merge", "strategic"):
            out.append(Step(op, name, _kind_patch(rng, name, bad=bad)))
        elif op == "json":
            path, value = rng.choice([("/metadata/labels", {"app": "j"}),
                                      ("/metadata/annotations/a", "v"),
                                      ("/metadata/labels/app", "j")])  # fmt: skip
            out.append(Step(op, name, [{"op": rng.choice(["add", "replace", "remove"]),
                                        "path": path, "value": value}]))  # fmt: skip
        elif op == "list":
            selectors = ["app=a", "app!=a", "tier", "!tier"]
            out.append(Step(op, name, options=_list_options(rng, selectors, names, bad=bad)))
        else:
            out.append(Step(op, name))
    return out


# Workloads and their neighbours: a Job, a CronJob, a StatefulSet, an Ingress, a
# PersistentVolumeClaim, a ServiceAccount and a RoleBinding.

_LABELS_D = {"app": "d"}


def _template(rng: random.Random, *, bad: float, restart: tuple[Any, ...]) -> dict[str, Any]:
    names = rng.sample(_CONTAINER_NAMES, k=rng.randint(1, 2))
    spec: dict[str, Any] = {"containers": [_container(rng, n, bad=bad) for n in names]}
    if restart:
        spec["restartPolicy"] = _value(rng, (restart, ("Sometimes", "Always")), bad)
    metadata = {"labels": dict(_LABELS_D)} if rng.random() < 0.7 else {}
    return {"metadata": metadata, "spec": spec}


def _job_spec(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": _template(rng, bad=bad, restart=("Never", "OnFailure"))}
    for field, choices in (
        ("backoffLimit", ((0, 6), (-1, "3"))),
        ("completions", ((1, 3), (-2,))),
        ("parallelism", ((1, 2), (-1,))),
        ("activeDeadlineSeconds", ((60,), (0, -5))),
        ("ttlSecondsAfterFinished", ((0, 100), (-1,))),
        ("suspend", ((True, False), ("yes",))),
        ("completionMode", (("NonIndexed", "Indexed"), ("Sometimes",))),
    ):
        if rng.random() < 0.3:
            spec[field] = _value(rng, choices, bad)
    if rng.random() < bad / 2:
        spec["manualSelector"] = True
        spec["selector"] = {"matchLabels": dict(_LABELS_D)}
    return spec


def _job(rng: random.Random, *, bad: float) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _metadata(rng, "j1", bad=bad),
            "spec": _job_spec(rng, bad=bad)}  # fmt: skip


def _cron_job(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedule": _value(rng, (("*/5 * * * *", "@hourly", "0 0 * * 1"),
                                 ("bogus", "61 * * * *", "")), bad),
        "jobTemplate": {"spec": _job_spec(rng, bad=bad)},
    }  # fmt: skip
    for field, choices in (
        ("concurrencyPolicy", (("Allow", "Forbid", "Replace"), ("Sometimes",))),
        ("suspend", ((True, False), ("no",))),
        ("startingDeadlineSeconds", ((30,), (-1,))),
        ("successfulJobsHistoryLimit", ((1, 5), (-1,))),
        ("timeZone", (("Etc/UTC", "Europe/Berlin"), ("Mars/Base", " "))),
    ):
        if rng.random() < 0.3:
            spec[field] = _value(rng, choices, bad)
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": _metadata(rng, "k1", bad=bad), "spec": spec}  # fmt: skip


def _stateful_set(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(_LABELS_D)},
                            "template": _template(rng, bad=bad, restart=("Always",))}  # fmt: skip
    for field, choices in (
        ("serviceName", (("t", ""), ("a b",))),
        ("replicas", ((0, 1, 3), (-1,))),
        ("podManagementPolicy", (("OrderedReady", "Parallel"), ("Sometimes",))),
        ("updateStrategy", (({"type": "RollingUpdate"}, {"type": "OnDelete"}),
                            ({"type": "Bogus"},))),
        ("minReadySeconds", ((0, 10), (-1,))),
        ("revisionHistoryLimit", ((1, 10), (-3,))),
    ):  # fmt: skip
        if rng.random() < 0.4:
            spec[field] = _value(rng, choices, bad)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": _metadata(rng, "t1", bad=bad), "spec": spec}  # fmt: skip


def _ingress(rng: random.Random, *, bad: float) -> dict[str, Any]:
    port = rng.choice([{"number": _value(rng, ((80, 8080), (0, 70000)), bad)},
                       {"name": _value(rng, (("http",), ("a b", "")), bad)}])  # fmt: skip
    path = {"path": _value(rng, (("/", "/api"), ("api", "")), bad),
            "pathType": _value(rng, (("Prefix", "Exact", "ImplementationSpecific"),
                                     ("Regex", "")), bad),
            "backend": {"service": {"name": _value(rng, (("web",), ("Web", "")), bad),
                                    "port": port}}}  # fmt: skip
    rule: dict[str, Any] = {"http": {"paths": [path]}}
    if rng.random() < 0.6:
        rule["host"] = _value(rng, (("example.com", "*.example.com"), ("a b", "1.2.3.4")), bad)
    spec: dict[str, Any] = {"rules": [rule] if rng.random() < 0.9 else []}
    if rng.random() < 0.3:
        spec["ingressClassName"] = _value(rng, (("nginx",), ("Nginx",)), bad)
    if rng.random() < 0.2:
        spec["tls"] = [{"hosts": ["example.com"], "secretName": "tls"}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": _metadata(rng, "i1", bad=bad), "spec": spec}  # fmt: skip


def _claim(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": _value(rng, ((["ReadWriteOnce"], ["ReadOnlyMany", "ReadWriteMany"]),
                                    ([], ["Sometimes"])), bad),
        "resources": {"requests": {"storage": _value(rng, (("1Gi", "500Mi"),
                                                           ("-1Gi", "0", "lots")), bad)}},
    }  # fmt: skip
    if rng.random() < 0.3:
        spec["storageClassName"] = _value(rng, (("standard", ""), ("A b",)), bad)
    if rng.random() < 0.2:
        spec["volumeMode"] = _value(rng, (("Filesystem", "Block"), ("Tape",)), bad)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": _metadata(rng, "q1", bad=bad), "spec": spec}  # fmt: skip


def _service_account(rng: random.Random, *, bad: float) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": _metadata(rng, "a1", bad=bad)}  # fmt: skip
    if rng.random() < 0.4:
        body["automountServiceAccountToken"] = _value(rng, ((True, False), ("no",)), bad)
    if rng.random() < 0.3:
        body["imagePullSecrets"] = [{"name": _value(rng, (("pull",), ("",)), bad)}]
    if rng.random() < 0.3:
        body["secrets"] = [{"name": "token"}]
    return body


def _role_binding(rng: random.Random, *, bad: float) -> dict[str, Any]:
    subject = rng.choice([
        {"kind": "ServiceAccount", "name": "a1"},
        {"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "Group", "name": "devs"},
        {"kind": "Robot", "name": "r"},
        {"kind": "ServiceAccount", "name": ""},
    ])  # fmt: skip
    role = {"apiGroup": "rbac.authorization.k8s.io",
            "kind": _value(rng, (("Role", "ClusterRole"), ("Deployment",)), bad),
            "name": _value(rng, (("reader", "view"), ("",)), bad)}  # fmt: skip
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": _metadata(rng, "r1", bad=bad), "subjects": [subject],
            "roleRef": role}  # fmt: skip


_WORKLOADS = {"j1": _job, "k1": _cron_job, "t1": _stateful_set, "i1": _ingress, "q1": _claim,
              "a1": _service_account, "r1": _role_binding}  # fmt: skip


def workloads_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on two of a Job (``j1``), a CronJob (``k1``), a StatefulSet (``t1``), an
    Ingress (``i1``), a PersistentVolumeClaim (``q1``), a ServiceAccount (``a1``) and a
    RoleBinding (``r1``): see :func:`objects_plan`."""
    return objects_plan(seed, _WORKLOADS, steps=steps)


Maker = Callable[..., dict[str, Any]]
"""Makes an object's body: ``make(rng, bad=...)``."""


def objects_plan(seed: int, makers: Mapping[str, Maker], *, steps: int = 10) -> list[Step]:
    """Requests on two of the objects ``makers`` make (by name): creates, replaces, merge, JSON
    and strategic merge patches, applies, reads, lists and deletions."""
    rng = random.Random(seed)
    bad = rng.choice([0.1, 0.25, 0.5])
    names = rng.sample(sorted(makers), k=2)
    out = [Step("create", name, makers[name](rng, bad=bad)) for name in names]
    for _ in range(steps):
        name = rng.choice(names)
        make = makers[name]
        op = rng.choice(["put", "merge", "strategic", "json", "apply", "apply", "get", "list",
                         "delete", "create"])  # fmt: skip
        if op in ("put", "create"):
            out.append(Step(op, name, make(rng, bad=bad),
                            {"version": rng.choice(["current", "none"])}))  # fmt: skip
        elif op == "apply":
            body = make(rng, bad=bad)
            body["metadata"] = {k: v for k, v in body["metadata"].items() if k == "name"}
            out.append(Step(op, name, body, {"manager": rng.choice(["m1", "m2"]),
                                             "force": rng.random() < 0.3}))  # fmt: skip
        elif op in ("merge", "strategic"):
            whole = make(rng, bad=bad)
            fields = [k for k in whole if k not in ("apiVersion", "kind", "metadata")]
            chosen = rng.sample(fields, k=min(len(fields), rng.randint(1, 2)))
            patch: dict[str, Any] = {field: whole[field] for field in chosen}
            if rng.random() < 0.3:
                patch["metadata"] = {"labels": _value(rng, _LABELS, bad)}
            out.append(Step(op, name, patch))
        elif op == "json":
            path, value = rng.choice([("/metadata/labels", {"app": "j"}),
                                      ("/metadata/annotations/a", "v")])  # fmt: skip
            out.append(Step(op, name, [{"op": rng.choice(["add", "replace", "remove"]),
                                        "path": path, "value": value}]))  # fmt: skip
        elif op == "list":
            selectors = ["app=a", "app!=a", "tier", "!tier"]
            out.append(Step(op, name, options=_list_options(rng, selectors, names, bad=bad)))
        else:
            out.append(Step(op, name))
    return out
