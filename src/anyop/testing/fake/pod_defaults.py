"""The defaults Kubernetes' defaulting functions give a pod spec, wherever one is: a Pod's, and a
workload's pod template (``pkg/apis/core/v1/defaults.go`` and the generated
``SetObjectDefaults_*`` that call them for every ``PodSpec``).

Pure; each function fills in place what the decoder made. :func:`pod_defaults` is a Pod's own
(``SetDefaults_Pod``: requests copied from limits, ``enableServiceLinks``, host ports of a
host-network pod, pod-level requests); :func:`template_defaults` a template's (what a Pod and a
template share: ``SetDefaults_PodSpec``, containers, probes, lifecycle handlers, environment
field references, volumes); :func:`claim_template_defaults` a StatefulSet's claim templates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from anyop.testing.fake.quantities import (
    QuantityError,
    formatted_quantity,
    milli_rounded,
    parsed_quantity,
)

__all__ = [
    "claim_spec_defaults",
    "claim_template_defaults",
    "pod_defaults",
    "pod_spec_defaults",
    "replication_controller_defaults",
    "resource_lists_rounded",
    "template_defaults",
]

Body = dict[str, Any]

_CONTAINER_KINDS = ("containers", "initContainers", "ephemeralContainers")


def _pull_policy(image: Any) -> str:
    """``Always`` for an image tagged (or, with no tag, defaulting to) ``latest``."""
    image = str(image or "")
    tag = "" if "@" in image else image.rpartition("/")[2].partition(":")[2]
    # No image is no reference, hence no "latest" tag (Go's parser refuses it).
    return "Always" if image and tag in ("", "latest") else "IfNotPresent"


def resource_lists_rounded(resources: Any, *bags: str) -> None:
    """Resource lists rounded up to milli-units (``SetDefaults_ResourceList``)."""
    if not isinstance(resources, dict):
        return
    for bag in bags or ("limits", "requests"):
        if isinstance(resources.get(bag), dict):
            resources[bag] = {name: milli_rounded(value) if isinstance(value, str) else value
                              for name, value in resources[bag].items()}  # fmt: skip


def _http_get(action: Any) -> None:
    if isinstance(action, dict):  # SetDefaults_HTTPGetAction
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                         ("successThreshold", 1), ("failureThreshold", 3)):  # fmt: skip
        if not probe.get(field):  # zero is unset (SetDefaults_Probe)
            probe[field] = value
    _http_get(probe.get("httpGet"))
    grpc = probe.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


def _container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = _pull_policy(container.get("image"))
    if not container.get("terminationMessagePath"):
        container["terminationMessagePath"] = "/dev/termination-log"
    if not container.get("terminationMessagePolicy"):
        container["terminationMessagePolicy"] = "File"
    resource_lists_rounded(container.setdefault("resources", {}))
    for port in container.get("ports") or ():
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = "TCP"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            _http_get((lifecycle.get(hook) or {}).get("httpGet"))
    for variable in container.get("env") or ():
        value_from = (variable or {}).get("valueFrom") or {}
        _field_ref(value_from.get("fieldRef"))
        _resource_field_ref(value_from.get("resourceFieldRef"))
        file_key = value_from.get("fileKeyRef")
        if isinstance(file_key, dict) and file_key.get("optional") is None:
            file_key["optional"] = False


def _field_ref(field_ref: Any) -> None:
    if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
        field_ref["apiVersion"] = "v1"  # SetDefaults_ObjectFieldSelector


def _resource_field_ref(field_ref: Any) -> None:
    if isinstance(field_ref, dict) and field_ref.get("divisor") is None:
        field_ref["divisor"] = "0"  # a Quantity, not a pointer: Go writes its zero


def _items_field_refs(source: Any) -> None:
    for item in (source or {}).get("items") or ():
        if isinstance(item, dict):
            _field_ref(item.get("fieldRef"))
            _resource_field_ref(item.get("resourceFieldRef"))


def _fill(source: Any, **defaults: Any) -> None:
    """Declarative defaults: a field unset (or, for strings, empty) gets its default."""
    if isinstance(source, dict):
        for field, value in defaults.items():
            if source.get(field) in (None, ""):
                source[field] = value


def claim_spec_defaults(spec: Any) -> None:
    """A claim's spec: ``volumeMode`` ``Filesystem``, resource lists rounded."""
    if isinstance(spec, dict):
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        resource_lists_rounded(spec.get("resources"))


def _volume(volume: Any) -> None:
    if not isinstance(volume, dict):
        return
    if all(value is None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}  # SetDefaults_Volume: no source is an emptyDir
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict) and volume[source].get("defaultMode") is None:
            volume[source]["defaultMode"] = 420
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""
    image = volume.get("image")
    if isinstance(image, dict) and not image.get("pullPolicy"):
        reference = str(image.get("reference") or "")
        image["pullPolicy"] = _pull_policy(reference) if reference else "IfNotPresent"
    _items_field_refs(volume.get("downwardAPI"))
    for projection in (volume.get("projected") or {}).get("sources") or ():
        if isinstance(projection, dict):
            _items_field_refs(projection.get("downwardAPI"))
            _fill(projection.get("serviceAccountToken"), expirationSeconds=3600)
    _fill(volume.get("iscsi"), iscsiInterface="default")
    _fill(volume.get("rbd"), pool="rbd", user="admin", keyring="/etc/ceph/keyring")
    _fill(volume.get("scaleIO"), storageMode="ThinProvisioned", fsType="xfs")
    azure = volume.get("azureDisk")
    if isinstance(azure, dict):
        for field, value in (("cachingMode", "ReadWrite"), ("fsType", "ext4"),
                             ("readOnly", False), ("kind", "Shared")):  # fmt: skip
            if azure.get(field) is None:
                azure[field] = value
    claim = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
    if isinstance(claim, dict):
        claim_spec_defaults(claim.setdefault("spec", {}))


def pod_spec_defaults(spec: Any) -> None:
    """What every pod spec gets: ``SetDefaults_PodSpec`` and its parts' defaults."""
    if not isinstance(spec, dict):
        return
    for key in _CONTAINER_KINDS:
        for container in spec.get(key) or ():
            _container(container)
    for volume in spec.get("volumes") or ():
        _volume(volume)
    for field, value in (("restartPolicy", "Always"), ("dnsPolicy", "ClusterFirst"),
                         ("schedulerName", "default-scheduler")):  # fmt: skip
        if not spec.get(field):
            spec[field] = value
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if isinstance(spec.get("overhead"), dict):
        resource_lists_rounded(spec, "overhead")
    resource_lists_rounded(spec.get("resources"))


def template_defaults(spec: Mapping[str, Any]) -> None:
    """The pod template of a workload's (or a PodTemplate's) ``spec``."""
    template = spec.get("template")
    if isinstance(template, dict):
        if template.get("metadata") is None:
            template["metadata"] = {}
        if template.get("spec") is None:
            template["spec"] = {}
        pod_spec_defaults(template["spec"])


def _requests_from_limits(container: Any) -> None:
    resources = (container or {}).get("resources") if isinstance(container, dict) else None
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, value in resources["limits"].items():
        requests.setdefault(name, value)


Amounts = dict[str, tuple[Fraction, str]]
"""Quantities by resource name, as values and Go formats (see :func:`parsed_quantity`)."""


def _pod_level_requests(spec: Body) -> None:
    """``defaultPodRequests`` (PodLevelResources, on by default), where pod-level limits are
    set: a resource with no pod-level request gets what the containers request in all (CPU
    and memory), else its pod-level limit (CPU, memory, huge pages)."""
    resources = spec.get("resources")
    if not isinstance(resources, dict) or not resources.get("limits"):
        return
    requests = dict(resources.get("requests") or {})
    for name, (value, form) in _container_requests(spec).items():
        if name not in requests and name in ("cpu", "memory"):  # (huge pages: no overcommit)
            requests[name] = formatted_quantity(value, form)
    for name, value in resources["limits"].items():
        supported = name in ("cpu", "memory") or name.startswith("hugepages-")
        if name not in requests and supported:
            requests[name] = value
    if requests:
        resources["requests"] = requests


def _container_requests(spec: Body) -> Amounts:
    """What a pod's containers request in all (component-helpers'
    ``AggregateContainerRequests``): the containers' and the sidecars' (restartable init
    containers') requests added up, or more where an init container, with the sidecars started
    before it, needs more."""
    total: Amounts = {}
    sidecars: Amounts = {}
    initializing: Amounts = {}
    for container in _dicts(spec.get("containers")):
        _add(total, _requests_of(container))
    for container in _dicts(spec.get("initContainers")):
        requests = _requests_of(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            needs = sidecars
        else:
            needs = {}
            _add(needs, requests)
            _add(needs, sidecars.items())
        for name, amount in needs.items():  # the most any init container needs
            if name not in initializing or amount[0] > initializing[name][0]:
                initializing[name] = amount
    for name, amount in initializing.items():
        if name not in total or amount[0] > total[name][0]:
            total[name] = amount
    return total


def _dicts(items: Any) -> Iterable[Body]:
    return (item for item in items or () if isinstance(item, dict))


def _requests_of(container: Body) -> list[tuple[str, tuple[Fraction, str]]]:
    resources = container.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    amounts = []
    for name, quantity in (requests or {}).items() if isinstance(requests, dict) else ():
        try:
            amounts.append((name, parsed_quantity(quantity)))
        except QuantityError:
            continue  # refused by the validation that follows
    return amounts


def _add(into: Amounts, amounts: Iterable[tuple[str, tuple[Fraction, str]]]) -> None:
    """Go's ``Quantity.Add`` per resource: the sum keeps the first one's format (unless that
    one is zero)."""
    for name, (value, form) in amounts:
        if name in into:
            before, kept = into[name]
            into[name] = (before + value, form if before == 0 else kept)
        else:
            into[name] = (value, form)


def pod_defaults(obj: Body) -> None:
    """A Pod's defaults: ``SetDefaults_Pod`` then every pod spec's."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            _requests_from_limits(container)
    _pod_level_requests(spec)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                for port in (container or {}).get("ports") or ():
                    if isinstance(port, dict) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    pod_spec_defaults(spec)


def claim_template_defaults(spec: Mapping[str, Any]) -> None:
    """A StatefulSet's ``volumeClaimTemplates``: each a whole v1 PersistentVolumeClaim (its
    ``apiVersion`` and ``kind`` are written by the apps/v1 conversion, whatever was sent), with
    a claim's defaults (``volumeMode``, ``status.phase`` ``Pending``)."""
    for claim in spec.get("volumeClaimTemplates") or ():
        if not isinstance(claim, dict):
            continue
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"
        claim_spec_defaults(claim.setdefault("spec", {}))
        status = claim.get("status")
        if not isinstance(status, dict):
            status = claim["status"] = {}
        if not status.get("phase"):
            status["phase"] = "Pending"
        resource_lists_rounded(status, "capacity", "allocatedResources")


def replication_controller_defaults(obj: Body) -> None:
    """``SetDefaults_ReplicationController``: the template's labels are the selector and the
    controller's labels where those are empty; then ``replicas`` 1 and the template's."""
    spec = obj.setdefault("spec", {})
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    template_defaults(spec)
