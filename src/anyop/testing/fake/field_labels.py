"""Which fields a field selector may name, per kind, and the value each field has in an object.

Pure. kube-apiserver converts a field selector's labels with the kind's field label conversion
(Kubernetes' ``pkg/apis/*/v1/conversion.go``; apimachinery's default takes ``metadata.name`` and
``metadata.namespace``; a CRD's takes its ``selectableFields``), and refuses another label with
the conversion's own message. It matches the converted label against the fields its registry's
strategy computes of an object (``ToSelectableFields``): a field not computed there is ``""``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted

__all__ = ["FieldLabels", "field_labels"]

Getter = Callable[[Mapping[str, Any]], str]

_NAME, _NAMESPACE = "metadata.name", "metadata.namespace"
_META = (_NAME, _NAMESPACE)
_UNSUPPORTED = "field label not supported: {label}"


@dataclasses.dataclass(frozen=True)
class FieldLabels:
    """A kind's field label conversion.

    Attributes:
        labels: The labels a field selector may name, each with the field it is converted to.
        refusal: The message for another label (``{label}`` is replaced by it).
        quoted: The refusal quotes the label as Go's ``%q`` does.
    """

    labels: Mapping[str, str]
    refusal: str = _UNSUPPORTED
    quoted: bool = False
    kind: tuple[str, str] = ("", "")

    def refused(self, label: str) -> str:
        """The message for a label the conversion does not take."""
        return self.refusal.replace("{label}", go_quoted(label) if self.quoted else label)

    def getter(self, field: str) -> Getter:
        """How a converted field's value is read from an object of the kind."""
        return _COMPUTED.get((*self.kind, field)) or _path(field)


def _same(*labels: str) -> dict[str, str]:
    return {label: label for label in labels}


_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

_DEFAULT = FieldLabels(
    _same(*_META), '{label} is not a known field selector: only "metadata.name", '
    '"metadata.namespace"', quoted=True)  # fmt: skip
"""apimachinery's ``DefaultMetaV1FieldSelectorConversion``: kinds without a conversion."""

_BUILT_IN: Mapping[tuple[str, str], FieldLabels] = {
    ("", "Pod"): FieldLabels({
        **_same(*_META, "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                "status.podIPs", "status.nominatedNodeName"),
        "spec.host": "spec.nodeName"}),
    ("", "Node"): FieldLabels(_same(_NAME, "spec.unschedulable")),
    ("", "ReplicationController"): FieldLabels(_same(*_META, "status.replicas")),
    ("", "Event"): FieldLabels(_same(
        *_META, *(f"involvedObject.{part}" for part in _INVOLVED), "reason",
        "reportingComponent", "source", "type")),
    ("", "Namespace"): FieldLabels(_same(_NAME, "status.phase")),
    ("", "Secret"): FieldLabels(_same(*_META, "type")),
    ("", "Service"): FieldLabels(_same(*_META, "spec.clusterIP", "spec.type")),
    ("batch", "Job"): FieldLabels(_same(*_META, "status.successful"),
                                  'field label {label} not supported for Job', quoted=True),
    ("events.k8s.io", "Event"): FieldLabels({
        **_same(*_META, "reason", "type"), "reportingController": "reportingComponent",
        **{f"regarding.{part}": f"involvedObject.{part}" for part in _INVOLVED}}),
    ("certificates.k8s.io", "CertificateSigningRequest"): FieldLabels(
        _same(_NAME, "spec.signerName")),
    ("resource.k8s.io", "ResourceSlice"): FieldLabels(
        _same(_NAME, "spec.nodeName", "spec.driver"),
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: {label}"),
}  # fmt: skip
"""The kinds with a field label conversion of their own (Kubernetes 1.36's served versions)."""


@functools.lru_cache(maxsize=256)
def field_labels(
    group: str, kind: str, *, custom: bool, namespaced: bool, selectable: tuple[str, ...] = ()
) -> FieldLabels:
    """The field label conversion of a kind (``selectable``: a CRD version's fields)."""
    if custom:  # apiextensions' crConverter
        labels = _same(_NAME, *((_NAMESPACE,) if namespaced else ()), *selectable)
        return FieldLabels(labels, kind=(group, kind))
    return dataclasses.replace(_BUILT_IN.get((group, kind), _DEFAULT), kind=(group, kind))


def _text(value: Any) -> str:
    """A field's value as the strategies print it (``strconv.FormatBool``, ``Itoa``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _path(path: str) -> Getter:
    parts = path.split(".")

    def get(body: Mapping[str, Any]) -> str:
        value: Any = body
        for part in parts:
            value = value.get(part) if isinstance(value, Mapping) else None
        return _text(value)

    return get


def _flag(path: str) -> Getter:
    """A boolean printed whether set or not (``false`` when unset)."""
    get = _path(path)
    return lambda body: "true" if get(body) == "true" else "false"


def _first_pod_ip(body: Mapping[str, Any]) -> str:
    ips = (body.get("status") or {}).get("podIPs") or ()
    first = ips[0] if ips and isinstance(ips[0], Mapping) else {}
    return _text(first.get("ip"))


def _event_source(body: Mapping[str, Any]) -> str:
    source = _path("source.component")(body)  # else the reporting controller, as Go does
    return source or _text(body.get("reportingComponent") or body.get("reportingController"))


_COMPUTED: Mapping[tuple[str, str, str], Getter] = {
    ("", "Pod", "spec.hostNetwork"): _flag("spec.hostNetwork"),
    ("", "Pod", "status.podIP"): _first_pod_ip,
    ("", "Pod", "status.podIPs"): lambda body: "",  # converted, but no field of the set
    ("", "Node", "spec.unschedulable"): _flag("spec.unschedulable"),
    ("", "ReplicationController", "status.replicas"): lambda body: _text(
        (body.get("status") or {}).get("replicas") or 0),
    ("", "Event", "source"): _event_source,
    ("batch", "Job", "status.successful"): lambda body: _text(
        (body.get("status") or {}).get("succeeded") or 0),
}  # fmt: skip
"""Fields a strategy computes otherwise than by the path of their name (events.k8s.io's
Events are selected as stored: as core Events, by the names their labels convert to)."""
