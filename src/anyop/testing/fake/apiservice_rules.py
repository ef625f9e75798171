"""What kube-apiserver's Go code does to APIServices (``apiregistration.k8s.io/v1``) beyond
their schema, with its messages and in its order, and what its aggregator's controllers decide.

Pure. From kube-aggregator: :data:`DEFAULTERS` is ``SetDefaults_ServiceReference`` (a
service's port 443); :func:`name_check` is the name function ``ValidateAPIService`` gives
``ValidateObjectMeta`` (a path segment, and exactly ``<spec.version>.<spec.group>``);
:data:`CREATES` the rest of ``ValidateAPIService``; :data:`UPDATES` that again with
``ValidateAPIServiceStatus`` (the strategies keep the other part: a write of the resource keeps
the stored status, one of ``/status`` the stored spec, so each finds the errors of its own
part only). :func:`prepared` is the strategy's ``PrepareForCreate``: the status reset and, for
a local APIService (no ``spec.service``), its ``Available`` condition at once.

The controllers' decisions, for :mod:`.apiservice_controllers`:
:func:`available_status` is what the local and the remote availability controllers would
write (the remote one's service, port and EndpointSlice checks; not its discovery request),
:func:`registered` the APIServices kube-apiserver's ``crdregistration`` controller asks for
the CRDs' group versions, and :func:`registration` what the ``autoregister`` controller then
does to one of them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from anyop.testing.fake.field_errors import path_segment_errors, required_because
from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.object_meta import DNS_1035, DNS_1035_HINT, dns_subdomain_errors
from anyop.testing.fake.pod_rules import PORT_RANGE, invalid, required, unsupported

__all__ = [
    "AUTOMANAGED",
    "CREATES",
    "DEFAULTERS",
    "UPDATES",
    "available_status",
    "name_causes",
    "name_check",
    "prepared",
    "registered",
    "registration",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_GROUP = "apiregistration.k8s.io"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
"""The label of the APIServices the ``autoregister`` controller manages: ``onstart`` (the
built-in group versions', left alone once made) or ``true`` (the CRDs', kept as asked)."""
_CRD_PRIORITIES = {"groupPriorityMinimum": 1000, "versionPriority": 100}
"""The priorities of a CRD's APIService ("CRDs should have relatively low priority")."""
_LOCAL = {"type": "Available", "status": "True", "reason": "Local",
          "message": "Local APIServices are always available"}  # fmt: skip
_STATUSES = ("True", "False", "Unknown")
_NAME_RULE = 'must be `spec.version+"."+spec.group`'


# -- defaults and validation --------------------------------------------------------------------


def _defaults(obj: Body) -> None:
    """``SetDefaults_ServiceReference``: a service's port is 443 unless given."""
    service = (obj.get("spec") or {}).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def _required_name(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec") or {}
    return f"{spec.get('version') or ''}.{spec.get('group') or ''}"


def name_check(obj: Mapping[str, Any]) -> Callable[[str, bool], list[str]]:
    """The name function of ``ValidateAPIService``, for a name or (the same check) a
    ``generateName``: a path segment, then exactly ``<spec.version>.<spec.group>``."""
    wanted = _required_name(obj)

    def check(name: str, prefix: bool) -> list[str]:
        minimal = path_segment_errors(name)
        if minimal:
            return minimal
        return [] if name == wanted else [f"{_NAME_RULE}: {go_quoted(wanted)}"]

    return check


def name_causes(obj: Mapping[str, Any]) -> Causes:
    """The errors of an updated APIService's ``generateName`` and name, which its update's
    ``ValidateObjectMeta`` checks again against its spec (a changed version or group)."""
    metadata = obj.get("metadata") or {}
    check = name_check(obj)
    causes: Causes = []
    for field in ("generateName", "name"):
        value = metadata.get(field)
        if isinstance(value, str) and value:
            shown = go_quoted(value)
            causes += [invalid(f"metadata.{field}", shown, error) for error in check(value, False)]
    return causes


def _ca_bundle_size(value: Any) -> int:
    """The length of ``spec.caBundle`` in bytes (base64 in JSON; decoded already)."""
    if not isinstance(value, str) or not value:
        return 0
    try:
        return len(base64.b64decode(value))
    except (binascii.Error, ValueError):
        return len(value)


def _api_service(obj: Mapping[str, Any]) -> Causes:
    """``ValidateAPIService`` beyond the metadata."""
    spec = obj.get("spec") or {}
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    causes: Causes = []
    if not group and version != "v1":
        detail = "only v1 may have an empty group and it better be legacy kube"
        causes.append(required_because("spec.group", detail))
    if group:
        shown = go_quoted(group)
        causes += [invalid("spec.group", shown, error) for error in dns_subdomain_errors(group)]
    errors = ["must be no more than 63 characters"] if len(version) > 63 else []
    errors += [] if DNS_1035.match(version) else [DNS_1035_HINT]
    causes += [invalid("spec.version", go_quoted(version), error) for error in errors]
    for field, limit in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
        value = int(spec.get(field) or 0)
        if value <= 0 or value > limit:
            detail = f"must be positive and less than {limit}"
            causes.append(invalid(f"spec.{field}", str(value), detail))
    bundle = _ca_bundle_size(spec.get("caBundle"))
    insecure = bool(spec.get("insecureSkipTLSVerify"))
    service = spec.get("service")
    if not isinstance(service, Mapping):
        if bundle:
            detail = "local APIServices may not have a caBundle"
            causes.append(invalid("spec.caBundle", go_quoted(f"{bundle} bytes"), detail))
        if insecure:
            detail = "local APIServices may not have insecureSkipTLSVerify"
            causes.append(invalid("spec.insecureSkipTLSVerify", "true", detail))
        return causes
    if not service.get("namespace"):
        causes.append(required("spec.service.namespace"))
    if not service.get("name"):
        causes.append(required("spec.service.name"))
    port = int(service.get("port") or 0)
    if not 1 <= port <= 65535:
        causes.append(invalid("spec.service.port", str(port), f"port is not valid: {PORT_RANGE}"))
    if insecure and bundle:
        detail = "may not be true if caBundle is present"
        causes.append(invalid("spec.insecureSkipTLSVerify", "true", detail))
    return causes


def _status(obj: Mapping[str, Any]) -> Causes:
    """``ValidateAPIServiceStatus``: each condition's status is one of three."""
    causes: Causes = []
    conditions = (obj.get("status") or {}).get("conditions") or ()
    for index, condition in enumerate(conditions):
        value = str((condition or {}).get("status") or "")
        if value not in _STATUSES:
            field = f"status.conditions[{index}].status"
            causes.append(unsupported(field, value, _STATUSES))
    return causes


def _api_service_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """An update's errors beyond the metadata: those of its spec (``ValidateAPIServiceUpdate``)
    and of its status (``ValidateAPIServiceStatusUpdate``); the strategy of each keeps the
    other part as stored, which was checked when it was written."""
    return [*_api_service(new), *_status(new)]


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {(_GROUP, "APIService"): _defaults}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (_GROUP, "APIService"): _api_service,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (_GROUP, "APIService"): _api_service_update,
}


# -- the strategy and the controllers' decisions ------------------------------------------------


def _local(now: str) -> Body:
    """``NewLocalAvailableAPIServiceCondition``."""
    return {"type": "Available", "status": "True", "lastTransitionTime": now,
            "reason": _LOCAL["reason"], "message": _LOCAL["message"]}  # fmt: skip


def prepared(obj: Body, *, now: str) -> Body:
    """``PrepareForCreate``: the status reset; a local APIService's is ``Available``."""
    obj.pop("status", None)
    if not isinstance((obj.get("spec") or {}).get("service"), Mapping):
        obj["status"] = {"conditions": [_local(now)]}
    return obj


def _set_condition(status: Mapping[str, Any], condition: Body) -> Body:
    """``SetAPIServiceCondition``: a status with the condition set (its transition time
    kept where its status is the same), appended if none of its type is there."""
    conditions = [dict(item) for item in status.get("conditions") or ()]
    for item in conditions:
        if item.get("type") == condition["type"]:
            if item.get("status") != condition["status"]:
                item["status"] = condition["status"]
                item["lastTransitionTime"] = condition["lastTransitionTime"]
            item["reason"], item["message"] = condition.get("reason"), condition.get("message")
            break
    else:
        conditions.append(condition)
    return {**status, "conditions": conditions}


def _unavailable(reason: str, message: str, now: str) -> Body:
    return {"type": "Available", "status": "False", "lastTransitionTime": now,
            "reason": reason, "message": message}  # fmt: skip


def _remote(
    service_ref: Mapping[str, Any],
    service: Mapping[str, Any] | None,
    slices: Sequence[Mapping[str, Any]],
    now: str,
) -> Body | None:
    """The remote availability controller's condition from its checks before it asks the
    service for its discovery document; ``None`` where it would ask (not modelled)."""
    name, namespace = str(service_ref.get("name") or ""), str(service_ref.get("namespace") or "")
    where = f"service/{name} in {go_quoted(namespace)}"
    if service is None:
        return _unavailable("ServiceNotFound", f"{where} is not present", now)
    spec = service.get("spec") or {}
    if (spec.get("type") or "ClusterIP") != "ClusterIP":
        return None
    port = int(service_ref.get("port") or 443)
    found = [item for item in spec.get("ports") or () if item.get("port") == port]
    if not found:
        return _unavailable("ServicePortError", f"{where} is not listening on port {port}", now)
    port_name = str(found[0].get("name") or "")
    if not slices:
        message = f"cannot find endpointslices for {where}"
        return _unavailable("EndpointsNotFound", message, now)
    if not any(_serves(piece, port_name) for piece in slices):
        named = go_quoted(port_name)
        message = f"endpointslices for {where} have no addresses with port name {named}"
        return _unavailable("MissingEndpoints", message, now)
    return None


def _serves(piece: Mapping[str, Any], port_name: str) -> bool:
    """``hasAvailableEndpoint`` of one EndpointSlice: a ready endpoint (or one of unknown
    readiness) and a port of that name with a number."""
    ready = any(
        (endpoint.get("conditions") or {}).get("ready") is not False
        for endpoint in piece.get("endpoints") or ()
    )
    return ready and any(
        item.get("name") is not None and item.get("name") == port_name
        and item.get("port") is not None
        for item in piece.get("ports") or ()
    )  # fmt: skip


def available_status(
    api_service: Mapping[str, Any],
    *,
    service: Mapping[str, Any] | None,
    slices: Sequence[Mapping[str, Any]],
    now: str,
) -> Body | None:
    """The status the availability controllers would write (the local one's for an
    APIService without ``spec.service``, the remote one's for another, given its Service, if
    it exists, and the EndpointSlices labelled for it); ``None`` where they write nothing: the
    status is what they would make, or the remote controller would ask the service itself."""
    status = api_service.get("status") or {}
    reference = (api_service.get("spec") or {}).get("service")
    if isinstance(reference, Mapping):
        condition = _remote(reference, service, slices, now)
    else:
        condition = _local(now)
    if condition is None:
        return None
    result = _set_condition(status, condition)
    return None if result == {**status, "conditions": status.get("conditions")} else result


def registered(crds: Iterable[Mapping[str, Any]], names: Iterable[str]) -> dict[str, Body]:
    """The APIServices the ``crdregistration`` controller asks for, among ``names``: one for
    each group version some CRD (established or not, being deleted or not) serves."""
    wanted = set(names)
    found: dict[str, Body] = {}
    for crd in crds:
        spec = crd.get("spec") or {}
        group = str(spec.get("group") or "")
        for version in spec.get("versions") or ():
            name = f"{version.get('name')}.{group}"
            if name in wanted and version.get("served") and name not in found:
                found[name] = {
                    "apiVersion": f"{_GROUP}/v1",
                    "kind": "APIService",
                    "metadata": {"name": name, "labels": {AUTOMANAGED: "true"}},
                    "spec": {"group": group, "version": str(version.get("name"))} | _CRD_PRIORITIES,
                }
    return found


def _same_spec(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether two specs are equal as Go's structs are (an unset field is its zero value)."""

    def set_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in spec.items() if value not in (None, "", 0, False)}

    return set_fields(current.get("spec") or {}) == set_fields(desired.get("spec") or {})


def registration(current: Mapping[str, Any] | None, desired: Mapping[str, Any] | None) -> str:
    """What the ``autoregister`` controller does to an APIService (``current``, if it exists)
    that is asked for as ``desired`` (or not asked for): ``create``, ``update`` (its spec),
    ``delete`` or ``""`` (nothing: it is not managed, it is the built-ins' own, or it is as
    asked)."""
    if current is None:
        return "create" if desired is not None else ""
    managed = ((current.get("metadata") or {}).get("labels") or {}).get(AUTOMANAGED)
    if managed != "true":  # another's, or made at the start and left alone since
        return ""
    if desired is None:
        return "delete"
    return "" if _same_spec(current, desired) else "update"
