"""Generated requests on the objects that set policy around workloads, as operators write them:
a PodDisruptionBudget (``b1``), a NetworkPolicy (``n1``), a Role (``o1``), a DaemonSet (``m1``)
and an ``autoscaling/v1`` HorizontalPodAutoscaler (``h1``); valid and invalid values alike
(see :mod:`tests.conformance.generated_requests` for how a sequence is built and played).
"""

from __future__ import annotations

import random
from typing import Any

from tests.conformance.generated_requests import Maker, Step, _metadata, _value, objects_plan

__all__ = ["POLICY_COLLECTIONS", "policies_plan"]

Choices = tuple[tuple[Any, ...], tuple[Any, ...]]

_SELECTORS: Choices = (
    ({"matchLabels": {"app": "d"}}, {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
     {}),
    ({"matchLabels": {"-a": "b"}}, {"matchExpressions": [{"key": "app", "operator": "In"}]},
     {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}),
)  # fmt: skip
_INT_OR_PERCENT: Choices = ((1, 0, "25%", "100%"), (-1, "150%", "1", "x%"))


def _budget(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    fields = rng.sample(["minAvailable", "maxUnavailable"], k=1 if rng.random() > bad / 2 else 2)
    for field in fields:
        spec[field] = _value(rng, _INT_OR_PERCENT, bad)
    if rng.random() < 0.7:
        spec["selector"] = _value(rng, _SELECTORS, bad)
    if rng.random() < 0.3:
        policy = (("AlwaysAllow", "IfHealthyBudget"), ("Sometimes",))
        spec["unhealthyPodEvictionPolicy"] = _value(rng, policy, bad)
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": _metadata(rng, "b1", bad=bad), "spec": spec}  # fmt: skip


def _port(rng: random.Random, *, bad: float) -> dict[str, Any]:
    port: dict[str, Any] = {}
    if rng.random() < 0.8:
        port["port"] = _value(rng, ((80, "http", 53), (0, 70000, "a b", "HTTP")), bad)
    if rng.random() < 0.4:
        port["protocol"] = _value(rng, (("TCP", "UDP"), ("HTTP",)), bad)
    if rng.random() < 0.2:
        port["endPort"] = _value(rng, ((90, 8080), (1, 70000)), bad)
    return port


def _peer(rng: random.Random, *, bad: float) -> dict[str, Any]:
    kind = rng.choice(["podSelector", "namespaceSelector", "ipBlock", "both"])
    if kind in ("podSelector", "namespaceSelector"):
        return {kind: _value(rng, _SELECTORS, bad)}
    cidrs = (("10.0.0.0/8", "192.168.0.0/16"), ("10.0.0.1/8", "10.0.0.0/33", "x"))
    block: dict[str, Any] = {"cidr": _value(rng, cidrs, bad)}
    if rng.random() < 0.4:
        block["except"] = [_value(rng, (("10.1.0.0/16",), ("11.0.0.0/16", "10.0.0.0/8")), bad)]
    peer = {"ipBlock": block}
    return {**peer, "podSelector": {}} if kind == "both" else peer


def _network_policy(rng: random.Random, *, bad: float) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": _value(rng, _SELECTORS, bad)}
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        if rng.random() < 0.6:
            rule: dict[str, Any] = {}
            if rng.random() < 0.7:
                rule["ports"] = [_port(rng, bad=bad) for _ in range(rng.randint(1, 2))]
            if rng.random() < 0.7:
                rule[peers] = [_peer(rng, bad=bad) for _ in range(rng.randint(1, 2))]
            spec[direction] = [rule]
    if rng.random() < 0.4:
        types = ((["Ingress"], ["Ingress", "Egress"], ["Egress"]), (["Both"], []))
        spec["policyTypes"] = _value(rng, types, bad)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _metadata(rng, "n1", bad=bad), "spec": spec}  # fmt: skip


def _role(rng: random.Random, *, bad: float) -> dict[str, Any]:
    rules = (
        ({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
         {"verbs": ["*"], "apiGroups": ["apps"], "resources": ["deployments"],
          "resourceNames": ["d"]}),
        ({"verbs": []}, {"verbs": ["get"], "nonResourceURLs": ["/x"]},
         {"verbs": ["get"], "resources": ["pods"]}),
    )  # fmt: skip
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": _metadata(rng, "o1", bad=bad),
            "rules": [_value(rng, rules, bad) for _ in range(rng.randint(0, 2))]}  # fmt: skip


def _daemon_set(rng: random.Random, *, bad: float) -> dict[str, Any]:
    image = _value(rng, (("i", "j"), ("",)), bad)
    pod = {"metadata": {"labels": {"app": "d"}},
           "spec": {"containers": [{"name": "c", "image": image}]}}  # fmt: skip
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "d"}}, "template": pod}
    if rng.random() < 0.4:
        rolling = {"maxUnavailable": _value(rng, _INT_OR_PERCENT, bad)}
        if rng.random() < 0.4:
            rolling["maxSurge"] = _value(rng, _INT_OR_PERCENT, bad)
        kind = _value(rng, (("RollingUpdate", "OnDelete"), ("Sometimes",)), bad)
        spec["updateStrategy"] = {"type": kind, "rollingUpdate": rolling}
        if kind == "OnDelete":
            del spec["updateStrategy"]["rollingUpdate"]
    for field in ("minReadySeconds", "revisionHistoryLimit"):
        if rng.random() < 0.3:
            spec[field] = _value(rng, ((0, 5), (-1,)), bad)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": _metadata(rng, "m1", bad=bad), "spec": spec}  # fmt: skip


def _autoscaler(rng: random.Random, *, bad: float) -> dict[str, Any]:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    if rng.random() < bad / 2:
        target = rng.choice([{"kind": "", "name": ""}, {**target, "name": "a/b"}])
    spec: dict[str, Any] = {"scaleTargetRef": target,
                            "maxReplicas": _value(rng, ((3, 10), (0, -1)), bad)}  # fmt: skip
    if rng.random() < 0.6:
        spec["minReplicas"] = _value(rng, ((1, 2), (0, 20)), bad)
    if rng.random() < 0.6:
        spec["targetCPUUtilizationPercentage"] = _value(rng, ((50, 80), (0, -5)), bad)
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": _metadata(rng, "h1", bad=bad), "spec": spec}  # fmt: skip


_POLICIES: dict[str, Maker] = {"b1": _budget, "n1": _network_policy, "o1": _role,
                               "m1": _daemon_set, "h1": _autoscaler}  # fmt: skip

POLICY_COLLECTIONS = {"b": ("policy/v1", "poddisruptionbudgets"),
                      "n": ("networking.k8s.io/v1", "networkpolicies"),
                      "o": ("rbac.authorization.k8s.io/v1", "roles"),
                      "m": ("apps/v1", "daemonsets"),
                      "h": ("autoscaling/v1", "horizontalpodautoscalers")}  # fmt: skip
"""Where each object of the family lives, by the first letter of its name."""


def policies_plan(seed: int, *, steps: int = 10) -> list[Step]:
    """Requests on two of the family's objects (see :func:`objects_plan`)."""
    return objects_plan(seed, _POLICIES, steps=steps)
