"""What kube-apiserver's Go code does to ResourceClaims, ResourceClaimTemplates and
DeviceClasses (``resource.k8s.io/v1``, Dynamic Resource Allocation) beyond their schemas, with
its messages and in its order.

Pure. :data:`DEFAULTERS` are the generated ``SetObjectDefaults_*``: a request's (and a
subrequest's) allocation mode ``ExactCount`` and then its count 1, a toleration's operator
``Equal``. :data:`CREATES` is ``Validate<Kind>`` beyond the metadata: the requests (names
unique DNS labels, exactly one of ``exactly`` and ``firstAvailable``, a device class that is a
DNS subdomain, selectors with a CEL expression, the allocation mode and count, tolerations),
the constraints and config naming requests of the claim, the opaque config (a driver name,
parameters that are a JSON object); a template's metadata's labels and annotations too; a
DeviceClass's selectors, config and extended resource name. :data:`UPDATES` is the
strategies' ``ValidateUpdate``: a claim's spec may not change (nothing else of it is checked
again); a template is checked as created, then its spec may not change; a DeviceClass is
checked as created. The answers of kube-apiserver 1.36.3 are those of the handwritten
validation (the declarative one, where it covers a field, gives the same messages).
:func:`admin_access_causes` is the strategies' check of ``adminAccess`` against the
namespace's label (the caller gives the namespace).

Not here: a selector's CEL cost limit (its expression is compiled and type-checked); a claim
status's ``adminAccess``; the template metadata's allow-list (``cannot be set``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anyop.testing.fake.csi_rules import driver_name_causes
from anyop.testing.fake.dra_selectors import selector_refusal
from anyop.testing.fake.field_errors import duplicate, forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import (
    label_causes,
    label_key_errors,
    label_value_errors,
)
from anyop.testing.fake.pod_rules import (
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    required,
    unsupported,
)
from anyop.testing.fake.pod_warnings import mapping
from anyop.testing.fake.resource_names import is_extended

__all__ = [
    "ADMIN_LABEL",
    "CREATES",
    "DEFAULTERS",
    "admin_access_causes",
    "UPDATES",
    "c_identifier",
    "keyed_set",
    "name_of",
    "too_many",
    "validated_slice",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_GROUP = "resource.k8s.io"
_REQUESTS_MAX = 32
_CONSTRAINTS_MAX = 32
_CONFIG_MAX = 32
_SELECTORS_MAX = 32
_FIRST_AVAILABLE_MAX = 8
_EXPRESSION_MAX = 10 * 1024
_PARAMETERS_MAX = 10 * 1024
_ID_MAX = 32
_NOT_A_REQUEST = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
_C_IDENTIFIER = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
    "for validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
_EXACTLY_ONE = "exactly one of `exactly` or `firstAvailable` is required"


# -- defaults -----------------------------------------------------------------------------------


def _request_defaults(request: Body) -> None:
    """``SetDefaults_ExactDeviceRequest`` (and ``_DeviceSubRequest``), then the tolerations'
    operator."""
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    _toleration_defaults(request.get("tolerations"))


def _toleration_defaults(tolerations: Any) -> None:
    for toleration in tolerations or ():
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _claim_spec_defaults(spec: Any) -> None:
    """``SetObjectDefaults_ResourceClaim``'s walk of a claim's spec."""
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for request in (devices or {}).get("requests") or ():
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            _request_defaults(request["exactly"])
        for sub in request.get("firstAvailable") or ():
            if isinstance(sub, dict):
                _request_defaults(sub)


def _claim_defaults(obj: Body) -> None:
    """``SetObjectDefaults_ResourceClaim``: the spec's requests, the allocation's tolerations."""
    _claim_spec_defaults(obj.get("spec"))
    status = obj.get("status")
    allocation = status.get("allocation") if isinstance(status, dict) else None
    devices = allocation.get("devices") if isinstance(allocation, dict) else None
    for result in (devices or {}).get("results") or ():
        if isinstance(result, dict):
            _toleration_defaults(result.get("tolerations"))


def _template_defaults(obj: Body) -> None:
    """``SetObjectDefaults_ResourceClaimTemplate``: the claim spec's requests."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _claim_spec_defaults(spec.get("spec"))


# -- shared checks ------------------------------------------------------------------------------


def too_many(field: str, count: int, limit: int) -> tuple[str, Cause]:
    """``field.TooMany``."""
    message = f"Too many: {count}: must have at most {limit} items"
    return field, {"reason": "FieldValueTooMany", "message": message}


def c_identifier(name: str, field: str) -> Causes:
    """``validateCIdentifier``: at most 32 bytes, a C identifier."""
    causes: Causes = []
    if len(name.encode()) > _ID_MAX:
        causes.append(too_long(field, _ID_MAX))
    if not (name[:1].isascii() and (name[:1].isalpha() or name[:1] == "_")) or not all(
        char.isascii() and (char.isalnum() or char == "_") for char in name
    ):
        causes.append(invalid(field, go_quoted(name), _C_IDENTIFIER))
    return causes


def _fully_qualified_name(name: str, field: str) -> Causes:
    """``validateFullyQualifiedName``: ``validateQualifiedName``, then a domain is required."""
    parts = name.split("/")
    causes: Causes = []
    if len(parts) == 1:
        causes += c_identifier(parts[0], field)
    elif len(parts) == 2:
        if not parts[0]:
            causes.append(invalid(field, '""', "the domain must not be empty"))
        else:
            causes += driver_name_causes(parts[0], field)
        if not parts[1]:
            causes.append(invalid(field, '""', "the name must not be empty"))
        else:
            causes += c_identifier(parts[1], field)
    if "/" not in name:
        detail = "a fully qualified name must be a domain and a name separated by a slash"
        causes.append(invalid(field, go_quoted(name), detail))
    return causes


def _selectors(selectors: list[Any], field: str) -> Causes:
    """``validateSelectorSlice``: each with a CEL expression, not too long, that compiles
    within its cost limit (:func:`~anyop.testing.fake.dra_selectors.selector_refusal`)."""
    if len(selectors) > _SELECTORS_MAX:
        return [too_many(field, len(selectors), _SELECTORS_MAX)]
    causes: Causes = []
    for index, selector in enumerate(selectors):
        cel = (selector or {}).get("cel")
        expression = str((cel or {}).get("expression") or "")
        where = f"{field}[{index}].cel.expression"
        if cel is None:
            causes.append(required(f"{field}[{index}].cel"))
        elif len(expression.encode()) > _EXPRESSION_MAX:
            causes.append(too_long(where, _EXPRESSION_MAX))
        elif (refusal := selector_refusal(expression)) is not None:
            costly, detail = refusal
            causes.append(forbidden(where, detail) if costly else
                          invalid(where, go_quoted(expression), detail))  # fmt: skip
    return causes


def _allocation_mode(request: Mapping[str, Any], field: str) -> Causes:
    """``validateDeviceAllocationMode``."""
    mode, count = str(request.get("allocationMode") or ""), int(request.get("count") or 0)
    if mode == "All":
        if count != 0:
            detail = "must not be specified when allocationMode is 'All'"
            return [invalid(f"{field}.count", str(count), detail)]
        return []
    if mode == "ExactCount":
        if count <= 0:
            return [invalid(f"{field}.count", str(count), "must be greater than zero")]
        return []
    return [unsupported(f"{field}.allocationMode", mode, ("All", "ExactCount"))]


def _toleration(toleration: Mapping[str, Any], field: str) -> Causes:
    """``validateDeviceToleration``."""
    causes: Causes = []
    key, value = str(toleration.get("key") or ""), str(toleration.get("value") or "")
    if key:
        causes += [invalid(f"{field}.key", go_quoted(key), e) for e in label_key_errors(key)]
    operator = str(toleration.get("operator") or "")
    if operator == "Exists":
        if value:
            detail = "must be empty for operator `Exists`"
            causes.append(invalid(f"{field}.value", go_quoted(value), detail))
    elif operator == "Equal":
        causes += [
            invalid(f"{field}.value", go_quoted(value), e) for e in label_value_errors(value)
        ]
    elif not operator:
        causes.append(required(f"{field}.operator"))
    else:
        causes.append(unsupported(f"{field}.operator", operator, ("Equal", "Exists")))
    effect = str(toleration.get("effect") or "")
    if effect and effect not in ("NoExecute", "NoSchedule", "None"):
        causes.append(unsupported(f"{field}.effect", effect, ("NoExecute", "NoSchedule", "None")))
    return causes


def _exact(request: Mapping[str, Any], field: str) -> Causes:
    """``validateExactDeviceRequest`` (and, after the name, ``validateDeviceSubRequest``)."""
    class_name = str(request.get("deviceClassName") or "")
    where = f"{field}.deviceClassName"
    causes = [required(where)] if not class_name else dns_subdomain_causes(class_name, where)
    causes += _selectors(list(request.get("selectors") or ()), f"{field}.selectors")
    causes += _allocation_mode(request, field)
    for index, toleration in enumerate(request.get("tolerations") or ()):
        causes += _toleration(toleration or {}, f"{field}.tolerations[{index}]")
    return causes


def keyed_set(
    items: list[Any], limit: int, field: str, check: Callable[[Any, str], Causes], key: Any
) -> Causes:
    """``validateSet``: at most ``limit`` items (alone if more), each checked, then the
    duplicates of a key."""
    if len(items) > limit:
        return [too_many(field, len(items), limit)]
    causes: Causes = []
    for index, item in enumerate(items):
        causes += check(item, f"{field}[{index}]")
    seen: set[str] = set()
    for index, item in enumerate(items):
        name = key(item)
        if name in seen:
            causes.append(duplicate(f"{field}[{index}]", name))
        seen.add(name)
    return causes


def name_of(item: Any) -> str:
    return str((item or {}).get("name") or "")


def _request(request: Mapping[str, Any], field: str) -> Causes:
    """``validateDeviceRequest``."""
    causes = dns_label_causes(name_of(request), f"{field}.name")
    first, exactly = list(request.get("firstAvailable") or ()), request.get("exactly")
    if first and exactly is not None:
        detail = f"{_EXACTLY_ONE}, but multiple fields are set"
        causes.append(invalid(field, "null", detail))
    elif first:
        causes += keyed_set(first, _FIRST_AVAILABLE_MAX, f"{field}.firstAvailable",
                             _sub_request, name_of)  # fmt: skip
    elif exactly is not None:
        causes += _exact(exactly, f"{field}.exactly")
    else:
        causes.append(required_because(field, _EXACTLY_ONE))
    return causes


def _sub_request(sub: Any, field: str) -> Causes:
    """``validateDeviceSubRequest``: its name, then as an exact request."""
    return dns_label_causes(name_of(sub), f"{field}.name") + _exact(sub or {}, field)


def _request_names(requests: list[Any]) -> dict[str, set[str] | None]:
    """``gatherRequestNames``: each request's subrequests' names (``None`` for an exact one)."""
    names: dict[str, set[str] | None] = {}
    for request in requests:
        first = (request or {}).get("firstAvailable") or ()
        names[name_of(request)] = {name_of(sub) for sub in first} if first else None
    return names


def _has(names: Mapping[str, set[str] | None], reference: str) -> bool:
    segments = reference.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    return len(segments) == 1 or segments[1] in (names[segments[0]] or ())


def _references(names: Mapping[str, set[str] | None]) -> Callable[[Any, str], Causes]:
    def check(reference: Any, field: str) -> Causes:
        """``validateRequestNameRef``."""
        reference = str(reference or "")
        segments = reference.split("/")
        if len(segments) > 2:
            return [invalid(field, go_quoted(reference), _NOT_A_REQUEST)]
        causes = [cause for segment in segments for cause in dns_label_causes(segment, field)]
        if not _has(names, reference):
            causes.append(invalid(field, go_quoted(reference), _NOT_A_REQUEST))
        return causes

    return check


def _configuration(config: Mapping[str, Any], field: str) -> Causes:
    """``validateDeviceConfiguration``: an opaque one, its driver and its parameters."""
    opaque = config.get("opaque")
    if opaque is None:
        return [required(f"{field}.opaque")]
    causes = driver_name_causes(str(opaque.get("driver") or ""), f"{field}.opaque.driver")
    parameters, where = opaque.get("parameters"), f"{field}.opaque.parameters"
    if parameters is None:
        causes.append(required(where))
    elif len(json.dumps(parameters, separators=(",", ":"))) > _PARAMETERS_MAX:
        causes.append(too_long(where, _PARAMETERS_MAX))
    elif not isinstance(parameters, Mapping):
        causes.append(invalid(where, '"<value omitted>"', "must be a valid JSON object"))
    return causes


def _claim_spec(spec: Mapping[str, Any], field: str) -> Causes:
    """``validateResourceClaimSpec``: the requests, the constraints, the config."""
    devices = spec.get("devices") or {}
    field = f"{field}.devices"
    requests = list(devices.get("requests") or ())
    names = _references(_request_names(requests))
    causes = keyed_set(requests, _REQUESTS_MAX, f"{field}.requests", _request, name_of)

    def constraint(item: Any, where: str) -> Causes:
        item = item or {}
        found = keyed_set(list(item.get("requests") or ()), _REQUESTS_MAX,
                           f"{where}.requests", names, str)  # fmt: skip
        if item.get("matchAttribute") is not None:
            return found + _fully_qualified_name(item["matchAttribute"], f"{where}.matchAttribute")
        if item.get("distinctAttribute") is not None:
            distinct = item["distinctAttribute"]
            return found + _fully_qualified_name(distinct, f"{where}.distinctAttribute")
        detail = 'exactly one of "matchAttribute" or "distinctAttribute" is required, ' + (
            "but multiple fields are set"
        )
        return [*found, required_because(where, detail)]

    def configuration(item: Any, where: str) -> Causes:
        item = item or {}
        found = keyed_set(list(item.get("requests") or ()), _REQUESTS_MAX,
                           f"{where}.requests", names, str)  # fmt: skip
        return found + _configuration(item, where)

    causes += validated_slice(list(devices.get("constraints") or ()), _CONSTRAINTS_MAX,
                     f"{field}.constraints", constraint)  # fmt: skip
    causes += validated_slice(list(devices.get("config") or ()), _CONFIG_MAX, f"{field}.config",
                     configuration)  # fmt: skip
    return causes


def validated_slice(
    items: list[Any], limit: int, field: str, check: Callable[[Any, str], Causes]
) -> Causes:
    """``validateSlice``: at most ``limit`` items (alone if more), each checked."""
    if len(items) > limit:
        return [too_many(field, len(items), limit)]
    return [cause for index, item in enumerate(items) for cause in check(item, f"{field}[{index}]")]


# -- the kinds ----------------------------------------------------------------------------------


def _claim(obj: Mapping[str, Any]) -> Causes:
    """``ValidateResourceClaim`` beyond the metadata."""
    return _claim_spec(obj.get("spec") or {}, "spec")


def _toleration_struct(toleration: Any) -> Body:
    toleration = toleration or {}
    return {"Key": toleration.get("key") or "", "Operator": toleration.get("operator") or "",
            "Value": toleration.get("value") or "", "Effect": toleration.get("effect") or "",
            "TolerationSeconds": toleration.get("tolerationSeconds")}  # fmt: skip


def _exact_struct(request: Any, *, sub: bool) -> Body:
    """An ``ExactDeviceRequest`` (or a ``DeviceSubRequest``, ``sub``) as Go's internal struct."""
    request = request or {}
    selectors = request.get("selectors")
    tolerations = request.get("tolerations")
    capacity = request.get("capacity")
    shown: Body = {"Name": request.get("name") or ""} if sub else {}
    shown |= {
        "DeviceClassName": request.get("deviceClassName") or "",
        "Selectors": None if selectors is None else [
            {"CEL": None if (s or {}).get("cel") is None
             else {"Expression": s["cel"].get("expression") or ""}} for s in selectors],
        "AllocationMode": request.get("allocationMode") or "",
        "Count": request.get("count") or 0,
    }  # fmt: skip
    if not sub:
        shown["AdminAccess"] = request.get("adminAccess")
    shown["Tolerations"] = (
        None if tolerations is None else [_toleration_struct(t) for t in tolerations]
    )
    shown["Capacity"] = (
        None
        if capacity is None
        else {"Requests": dict(sorted((capacity.get("requests") or {}).items())) or None}
    )
    return shown


def _claim_spec_struct(spec: Mapping[str, Any]) -> Body:
    """A ``ResourceClaimSpec`` as Go's internal struct (its fields' names, their order)."""
    devices = spec.get("devices") or {}
    requests, constraints = devices.get("requests"), devices.get("constraints")
    config = devices.get("config")

    def request(item: Any) -> Body:
        item = item or {}
        first, exactly = item.get("firstAvailable"), item.get("exactly")
        return {
            "Name": item.get("name") or "",
            "Exactly": None if exactly is None else _exact_struct(exactly, sub=False),
            "FirstAvailable": None if first is None else [
                _exact_struct(sub, sub=True) for sub in first],
        }  # fmt: skip

    def constraint(item: Any) -> Body:
        item = item or {}
        return {"Requests": item.get("requests"), "MatchAttribute": item.get("matchAttribute"),
                "DistinctAttribute": item.get("distinctAttribute")}  # fmt: skip

    def configuration(item: Any) -> Body:
        item = item or {}
        opaque = item.get("opaque")
        shown = (
            None
            if opaque is None
            else {"Driver": opaque.get("driver") or "", "Parameters": opaque.get("parameters")}
        )
        return {"Requests": item.get("requests"), "Opaque": shown}  # fmt: skip

    return {"Devices": {
        "Requests": None if requests is None else [request(item) for item in requests],
        "Constraints": None if constraints is None else [constraint(c) for c in constraints],
        "Config": None if config is None else [configuration(item) for item in config],
    }}  # fmt: skip


def _template_spec_struct(spec: Mapping[str, Any]) -> Body:
    """A ``ResourceClaimTemplateSpec``: its metadata's fields inline, then its ``Spec``."""
    metadata = spec.get("metadata") or {}
    shown: Body = {key: metadata[key] for key in ("name", "generateName", "namespace")
                   if metadata.get(key)}  # fmt: skip
    shown |= {key: metadata[key] for key in ("labels", "annotations") if metadata.get(key)}
    shown["Spec"] = _claim_spec_struct(spec.get("spec") or {})
    return shown


def _immutable_spec(
    old: Mapping[str, Any], new: Mapping[str, Any], shown: Callable[[Mapping[str, Any]], Body]
) -> Causes:
    """``ValidateImmutableField`` of the spec: the new one shown as Go's internal struct."""
    spec = new.get("spec") or {}
    if (old.get("spec") or {}) == spec:
        return []
    return [invalid("spec", go_marshalled(shown(spec), sort_keys=False), "field is immutable")]


def _template(obj: Mapping[str, Any]) -> Causes:
    """``ValidateResourceClaimTemplate`` beyond the metadata: the template's metadata's labels
    and annotations, then the claim's spec."""
    spec = obj.get("spec") or {}
    metadata = spec.get("metadata") or {}
    causes: Causes = []
    for key in metadata.get("annotations") or {}:
        for error in label_key_errors(key.lower()):
            causes.append(invalid("spec.metadata.annotations", go_quoted(key), error))
    causes += label_causes(metadata.get("labels") or {}, "spec.metadata.labels")
    return causes + _claim_spec(spec.get("spec") or {}, "spec.spec")


def _template_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """The strategy's ``ValidateUpdate``: as created, then the spec may not change."""
    return _template(new) + _immutable_spec(old, new, _template_spec_struct)


def _device_class(obj: Mapping[str, Any]) -> Causes:
    """``validateDeviceClassSpec``: selectors, config, the extended resource name."""
    spec = obj.get("spec") or {}
    causes = _selectors(list(spec.get("selectors") or ()), "spec.selectors")
    causes += validated_slice(list(spec.get("config") or ()), _CONFIG_MAX, "spec.config",
                     lambda item, where: _configuration(item or {}, where))  # fmt: skip
    name = spec.get("extendedResourceName")
    if name is not None and not is_extended(str(name)):
        where = "spec.extendedResourceName"
        causes.append(
            invalid(where, go_quoted(str(name)), "must be a valid extended resource name")
        )
    return causes


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {
    (_GROUP, "ResourceClaim"): _claim_defaults,
    (_GROUP, "ResourceClaimTemplate"): _template_defaults,
}
_ADMIN_KINDS = (("resource.k8s.io", "ResourceClaim"), ("resource.k8s.io", "ResourceClaimTemplate"))
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
"""The namespace label that allows its claims and templates to request admin access."""


def admin_access_causes(
    kind: tuple[str, str], obj: Mapping[str, Any], namespace: Mapping[str, Any] | None
) -> Causes:
    """``AuthorizedForAdmin``, which a claim's and a claim template's create check first: a
    request of exactly some devices with ``adminAccess`` (the first one) needs its namespace
    (the stored one, ``None`` if none) labelled :data:`ADMIN_LABEL` ``"true"``. The path is
    ``spec.devices.requests`` in a template too, as Go names it."""
    if kind not in _ADMIN_KINDS:
        return []
    spec = mapping(obj.get("spec"))
    if kind[1] == "ResourceClaimTemplate":
        spec = mapping(spec.get("spec"))
    requests = mapping(spec.get("devices")).get("requests")
    for index, request in enumerate(requests if isinstance(requests, list) else ()):
        if mapping(mapping(request).get("exactly")).get("adminAccess") is True:
            path = f"spec.devices.requests[{index}].adminAccess"
            break
    else:
        return []
    if namespace is None:
        name = (obj.get("metadata") or {}).get("namespace") or ""
        message = ("Internal error: could not retrieve namespace to verify admin access: "
                   f'namespaces "{name}" not found')  # fmt: skip
        return [(path, {"reason": "InternalError", "message": message})]
    labels = mapping(mapping(namespace.get("metadata")).get("labels"))
    if labels.get(ADMIN_LABEL) != "true":
        detail = f"admin access to devices requires the `{ADMIN_LABEL}: true` label on the " \
            "containing namespace"  # fmt: skip
        return [forbidden(path, detail)]
    return []


CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[tuple[str, Cause]]]] = {
    (_GROUP, "ResourceClaim"): _claim,
    (_GROUP, "ResourceClaimTemplate"): _template,
    (_GROUP, "DeviceClass"): _device_class,
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    (_GROUP, "ResourceClaim"): lambda old, new: _immutable_spec(old, new, _claim_spec_struct),
    (_GROUP, "ResourceClaimTemplate"): _template_update,
    (_GROUP, "DeviceClass"): lambda old, new: _device_class(new),
}
