"""What kube-apiserver's Go code does to ResourceSlices (``resource.k8s.io/v1``, Dynamic
Resource Allocation) beyond their schema, with its messages and in its order.

Pure. :data:`DEFAULTERS` is ``SetObjectDefaults_ResourceSlice`` but for a taint's time (a node
allocatable resource mapping's multiplier 1). :func:`prepared` is the rest, which needs the
server's clock (``SetDefaults_DeviceTaint``: a taint's ``timeAdded``), then the strategy's
``PrepareForCreate``/``PrepareForUpdate``: the generation (counted again where that default
changed the spec), then ``dropDisabledFields`` with the gates of kube-apiserver 1.36.3:
``DRANodeAllocatableResources`` and ``DRAListTypeAttributes`` are off (a device's mappings and
an attribute's ``bools``, ``ints``, ``strings`` and ``versions`` go, unless the stored slice
has some); taints, partitionable devices, binding conditions and consumable capacity are on.
:data:`CREATES` is ``ValidateResourceSlice`` beyond the metadata: the driver, the pool,
exactly one node selection, the devices (names, attributes, capacities and request policies,
taints, counters consumed, their own node selection, binding conditions), the shared counters,
the limits on counts. :data:`UPDATES` is ``ValidateResourceSliceUpdate``: the same, with the
pool's name, the driver and the node name immutable, a device's unchanged taints not checked
again. :func:`warnings` is the strategy's ``WarningsOnCreate``/``WarningsOnUpdate``. The
declarative validations are not enforced for ResourceSlices in 1.36.3: these answer.

Not here: a list sent empty (``"sharedCounters": []``) reads as one left out (Go forbids an
empty one beside ``devices``, and errors show it as ``[]``, not ``null``); Go walks maps
(attributes, capacities, counters) in random order, this in the order sent; a request
policy's ``step`` of zero (Go divides by it); the checks of the dropped fields (list
attributes, mappings), which see none while their gates are off; the update's metadata checks
(``ValidateObjectMetaUpdate`` alone).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from anyop.testing.fake.csi_rules import driver_name_causes
from anyop.testing.fake.field_errors import duplicate, forbidden, required_because, too_long
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.json_copy import json_copy
from anyop.testing.fake.object_meta import label_key_errors, label_value_errors
from anyop.testing.fake.pod_rules import (
    dns_label_causes,
    dns_subdomain_causes,
    invalid,
    unsupported_shown,
)
from anyop.testing.fake.pod_warnings import mapping
from anyop.testing.fake.quantities import (
    QuantityError,
    canonical_quantity,
    formatted_quantity,
    parsed_quantity,
)
from anyop.testing.fake.resource_claim_rules import (
    c_identifier,
    keyed_set,
    name_of,
    too_many,
    validated_slice,
)

__all__ = ["CREATES", "DEFAULTERS", "UPDATES", "prepared", "truncated_key", "warnings"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]
Check = Callable[[Any, str], Causes]

_KEY = ("resource.k8s.io", "ResourceSlice")
_MAX_DEVICES, _MAX_DEVICES_ADVANCED = 128, 64  # (with taints or counters consumed)
_VALUE_MAX = 64  # an attribute's string or version, in bytes
_KEY_SHOWN = 63 + 1 + 32  # a qualified name's domain, slash and identifier
_EFFECTS = ("NoExecute", "NoSchedule", "None")
_ONE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
_ONE_DEVICE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
_NOT_PER_DEVICE = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is "
    "set to true in the ResourceSlice spec"
)
_ONE_VALUE = "exactly one value must be specified"
_IMMUTABLE = "field is immutable"
_LISTS = ("bools", "ints", "strings", "versions")
_NUMBER, _BUILD = r"(0|[1-9][0-9]*)", r"[0-9a-zA-Z-]+"
_PRERELEASE = r"(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_SEMVER = re.compile(
    rf"{_NUMBER}\.{_NUMBER}\.{_NUMBER}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?"
)


def _devices(spec: Any) -> list[Any]:
    return list(mapping(spec).get("devices") or ())


# -- defaults and the strategy ------------------------------------------------------------------


def _defaults(obj: Body) -> None:
    """``SetObjectDefaults_ResourceSlice`` but for the taints' times (see :func:`prepared`):
    ``SetDefaults_Device``'s multiplier 1 of a node allocatable resource mapping."""
    for device in _devices(obj.get("spec")):
        for entry in mapping(mapping(device).get("nodeAllocatableResourceMappings")).values():
            if isinstance(entry, dict) and entry.get("allocationMultiplier") is None:
                entry["allocationMultiplier"] = "1"


def _gated(spec: Any) -> tuple[bool, bool]:
    """Whether a device has node allocatable resource mappings; an attribute, list values."""
    devices = [mapping(device) for device in _devices(spec)]
    values = [mapping(item).get(key) for d in devices for key in _LISTS
              for item in mapping(d.get("attributes")).values()]  # fmt: skip
    mapped = any(d.get("nodeAllocatableResourceMappings") for d in devices)
    return mapped, any(value is not None for value in values)


def prepared(obj: Body, *, old: Mapping[str, Any] | None = None, now: str) -> Body:
    """``SetDefaults_DeviceTaint`` (a taint's ``timeAdded``: ``now``, whole seconds), then the
    strategy's ``PrepareForCreate`` or (``old``) ``PrepareForUpdate``: the generation, the old
    one plus one if the spec changed (counted again where that default changed it), then
    ``dropDisabledFields`` (the mappings and the list values, unless ``old`` has some)."""
    untimed = [
        (index, position)
        for index, device in enumerate(_devices(obj.get("spec")))
        for position, taint in enumerate(mapping(device).get("taints") or ())
        if isinstance(taint, Mapping) and not taint.get("timeAdded")
    ]
    kept = _gated(old.get("spec")) if old is not None else (False, False)
    used = _gated(obj.get("spec"))
    mappings, lists = used[0] and not kept[0], used[1] and not kept[1]
    if not untimed and not mappings and not lists:
        return obj
    spec = json_copy(dict(mapping(obj.get("spec"))))
    result = {**obj, "spec": spec}
    for index, position in untimed:
        spec["devices"][index]["taints"][position]["timeAdded"] = now
    if old is not None and untimed:
        metadata = result["metadata"] = dict(mapping(obj.get("metadata")))
        before = mapping(old.get("metadata")).get("generation") or 0
        if spec != old.get("spec") and metadata.get("generation") == before:
            metadata["generation"] = int(before) + 1
    for device in _devices(spec):
        if mappings and isinstance(device, dict):
            device.pop("nodeAllocatableResourceMappings", None)
        for attribute in mapping(mapping(device).get("attributes")).values():
            for key in _LISTS if lists and isinstance(attribute, dict) else ():
                attribute.pop(key, None)
    return result


def warnings(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """``WarningsOnCreate`` and ``WarningsOnUpdate``: a driver name in upper case."""
    driver = str(mapping(obj.get("spec")).get("driver") or "")
    if driver == driver.lower():
        return []
    shown = f"spec.driver: driver names should be lowercase; {go_quoted(driver)} contains "
    return [f"{shown}uppercase characters"]


# -- shared checks ------------------------------------------------------------------------------


def truncated_key(key: str, limit: int) -> str:
    """``truncateIfTooLong``: a map key as a field path shows it, cut in its middle (``...``)
    past ``limit`` bytes (16 at least)."""
    limit, data = max(limit, 16), key.encode()
    if len(data) <= limit:
        return key
    remaining = limit - 3
    kept = data[: (remaining + 1) // 2] + b"..." + data[len(data) - remaining // 2 :]
    return kept.decode(errors="replace")


def _map(items: Mapping[str, Any], field: str, shown: int, check_key: Check,
         check_value: Check | None, limit: int = -1) -> Causes:  # fmt: skip
    """``validateMap``: at most ``limit`` entries (alone if more), then each key (at the map's
    path) and value (at the key's, cut to ``shown`` bytes)."""
    if 0 <= limit < len(items):
        return [too_many(field, len(items), limit)]
    causes: Causes = []
    for key, value in items.items():
        causes += check_key(key, field)
        if check_value is not None:
            causes += check_value(value, f"{field}[{truncated_key(key, shown)}]")
    return causes


def _qualified_name(name: str, field: str) -> Causes:
    """``validateQualifiedName``: a C identifier, or a domain (a driver name) and one."""
    parts = name.split("/")
    if len(parts) != 2:
        return c_identifier(name, field) if len(parts) == 1 else []  # (more slashes pass)
    domain, identifier = parts
    causes = driver_name_causes(domain, field) if domain else [
        invalid(field, '""', "the domain must not be empty")]  # fmt: skip
    if not identifier:
        return [*causes, invalid(field, '""', "the name must not be empty")]
    return causes + c_identifier(identifier, field)


def _label_name(name: Any, field: str) -> Causes:
    """``ValidateLabelName``: a qualified name."""
    name = str(name or "")
    return [invalid(field, go_quoted(name), error) for error in label_key_errors(name)]


# -- node selectors -----------------------------------------------------------------------------


_VALUES_RULES: dict[str, tuple[Callable[[int], bool], str]] = {
    "In": (lambda n: n == 0, "must be specified when `operator` is 'In' or 'NotIn'"),
    "Exists": (lambda n: n > 0,
               "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    "Gt": (lambda n: n != 1, "must be specified single value when `operator` is 'Lt' or 'Gt'"),
}  # fmt: skip
_VALUES_RULES |= {"NotIn": _VALUES_RULES["In"], "DoesNotExist": _VALUES_RULES["Exists"],
                  "Lt": _VALUES_RULES["Gt"]}  # fmt: skip


def _requirement(requirement: Mapping[str, Any], field: str, *, fields: bool) -> Causes:
    """``ValidateNodeSelectorRequirement`` (label values checked) or, ``fields``,
    ``ValidateNodeFieldSelectorRequirement`` (``metadata.name`` alone, one node name)."""
    operator, key = str(requirement.get("operator") or ""), str(requirement.get("key") or "")
    values = [str(value) for value in requirement.get("values") or ()]
    rule = _VALUES_RULES.get(operator) if not fields or operator in ("In", "NotIn") else None
    causes: Causes = []
    if rule is None:
        shown = go_marshalled(operator)
        causes.append(invalid(f"{field}.operator", shown, "not a valid selector operator"))
    elif fields and len(values) != 1:
        detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
        causes.append(required_because(f"{field}.values", detail))
    elif not fields and rule[0](len(values)):
        build = forbidden if operator in ("Exists", "DoesNotExist") else required_because
        causes.append(build(f"{field}.values", rule[1]))
    if not fields:
        causes += _label_name(key, f"{field}.key")
        return causes + [invalid(f"{field}.values[{index}]", go_quoted(value), error)
                         for index, value in enumerate(values)
                         for error in label_value_errors(value)]  # fmt: skip
    if key != "metadata.name":
        return [*causes, invalid(f"{field}.key", go_quoted(key), "not a valid field selector key")]
    for index, value in enumerate(values):
        causes += dns_subdomain_causes(value, f"{field}.values[{index}]")
    return causes


def _node_selector(selector: Mapping[str, Any], field: str) -> Causes:
    """``ValidateNodeSelector``: at least one term, each one's requirements."""
    terms, field = list(selector.get("nodeSelectorTerms") or ()), f"{field}.nodeSelectorTerms"
    if not terms:
        return [required_because(field, "must have at least one node selector term")]
    causes: Causes = []
    for index, term in enumerate(terms):
        for name, fields in (("matchExpressions", False), ("matchFields", True)):
            for position, item in enumerate(mapping(term).get(name) or ()):
                where = f"{field}[{index}].{name}[{position}]"
                causes += _requirement(mapping(item), where, fields=fields)
    return causes


def _terms_struct(terms: Any) -> Any:
    """Node selector terms as Go's internal structs (what an error shows of them)."""

    def requirements(items: Any) -> Any:
        return None if items is None else [
            {"Key": mapping(item).get("key") or "", "Operator": mapping(item).get("operator")
             or "", "Values": mapping(item).get("values")} for item in items]  # fmt: skip

    return None if terms is None else [
        {"MatchExpressions": requirements(mapping(term).get("matchExpressions")),
         "MatchFields": requirements(mapping(term).get("matchFields"))}
        for term in terms]  # fmt: skip


def _node_selection(holder: Mapping[str, Any], field: str, *, spec: bool) -> Causes:
    """Exactly one node selection: a slice's (``spec``: a node name, a node selector of one
    term, all nodes, per device) or, where the slice selects per device, a device's."""
    keys = ("nodeName", "nodeSelector", "allNodes") + (("perDeviceNodeSelection",) if spec else ())
    chosen: list[str] = []
    causes: Causes = []
    for key in keys:
        value, where = holder.get(key), f"{field}.{key}"
        if value is None:
            continue
        if key == "nodeName" and not value:
            empty = "must be either unset or set to a non-empty string" if spec else ""
            causes.append(invalid(where, '""', empty or "must not be empty"))
            continue
        if key != "nodeSelector" and value is not True and key != "nodeName":
            causes.append(invalid(where, "false", "must be either unset or set to true"))
            continue
        chosen.append(f"`{key}`")
        if key == "nodeName":
            causes += dns_subdomain_causes(str(value), where)
        elif key == "nodeSelector":
            causes += _node_selector(mapping(value), where)
            terms = mapping(value).get("nodeSelectorTerms")
            if spec and len(terms or ()) != 1:
                shown = go_marshalled(_terms_struct(terms), sort_keys=False)
                detail = "must have exactly one node selector term"
                causes.append(invalid(f"{where}.nodeSelectorTerms", shown, detail))
    one = _ONE_NODE_SELECTION if spec else _ONE_DEVICE_SELECTION
    if not chosen:
        causes.append(required_because(field, one))
    elif len(chosen) > 1:
        many = f"{one}, but multiple fields are set" if spec else one
        causes.append(invalid(field, go_quoted("{" + ", ".join(chosen) + "}"), many))
    return causes


# -- devices ------------------------------------------------------------------------------------


def _attribute(attribute: Any, field: str) -> Causes:
    """``validateDeviceAttribute``: a string's length; a version's form (semantic versioning
    2.0.0) and length; exactly one value (its list values dropped)."""
    attribute = mapping(attribute)
    given = [key for key in ("int", "bool", "string", "version") if attribute.get(key) is not None]
    causes: Causes = []
    for key in (key for key in given if key in ("string", "version")):
        text = str(attribute[key])
        if key == "version" and not _SEMVER.fullmatch(text):
            detail = "must be a string compatible with semver.org spec 2.0.0"
            causes.append(invalid(f"{field}.version", go_quoted(text), detail))
        if len(text.encode()) > _VALUE_MAX:
            causes.append(too_long(f"{field}.{key}", _VALUE_MAX))
    if not given:
        causes.append(invalid(field, '""', _ONE_VALUE))
    elif len(given) > 1:
        kinds = ("Int", "Bool", "String", "Version")
        shown = {f"{kind}Value": attribute.get(kind.lower()) for kind in kinds}
        shown |= {f"{kind}Values": None for kind in kinds}
        causes.append(invalid(field, go_marshalled(shown, sort_keys=False), _ONE_VALUE))
    return causes


def _quantity(text: Any) -> tuple[Fraction, str]:
    try:
        return parsed_quantity(text)
    except QuantityError:  # (the decoder refused those)
        return Fraction(0), "decimal"


def _shown(text: Any) -> str:
    """A quantity as ``Quantity.String`` writes it (canonical), quoted."""
    try:
        return go_quoted(canonical_quantity(text))
    except QuantityError:
        return go_quoted(str(text))


def _whole(text: Any) -> int:
    """``Quantity.Value``: rounded up to an integer."""
    return math.ceil(_quantity(text)[0])


def _valid_values(default: Any, maximum: Any, values: list[Any], field: str) -> Causes:
    """``validateRequestPolicyValidValues``: ascending, a set of at most 10 (by integer value)
    none above the capacity, the default among them."""
    causes = [invalid(f"{field}[{index + 1}]", _shown(values[index + 1]),
                      "values must be sorted in ascending order")
              for index in range(len(values) - 1)
              if _quantity(values[index])[0] > _quantity(values[index + 1])[0]]  # fmt: skip
    found, capacity = False, _quantity(maximum)[0]

    def option(value: Any, where: str) -> Causes:
        nonlocal found
        found = found or _quantity(value)[0] == _quantity(default)[0]
        if _quantity(value)[0] <= capacity:
            return []
        detail = f"option is larger than capacity value: {_shown(maximum)[1:-1]}"
        return [invalid(where, _shown(value), detail)]

    causes += keyed_set(values, 10, field, option, lambda value: str(_whole(value)))
    if not found:
        detail = "default value is not valid according to the requestPolicy"
        causes.append(invalid(field, _shown(default), detail))
    return causes


def _step(value: Any, low: Any, step: Any, field: str) -> Causes:
    """``validateRequestPolicyRangeStep``: a whole number of steps above the minimum."""
    size = _whole(step)
    if size == 0 or (_whole(value) - _whole(low)) % size == 0:
        return []
    step, low = _shown(step)[1:-1], _shown(low)[1:-1]
    detail = f"value is not a multiple of a given step ({step}) from ({low})"
    return [invalid(field, _shown(value), detail)]


def _valid_range(default: Any, maximum: Any, bounds: Mapping[str, Any], field: str) -> Causes:
    """``validateRequestPolicyRange``: a minimum, within the capacity and the maximum, the
    default between them, steps that fit."""
    low, high, step = bounds.get("min"), bounds.get("max"), bounds.get("step")
    if low is None:
        return [required_because(f"{field}.min", "required when validRange is defined")]
    value = {text: _quantity(text)[0] for text in (low, high, step, default, maximum)}
    shown = {text: _shown(text)[1:-1] for text in (low, high, step, maximum)}
    capacity = f"capacity value: {shown[maximum]}"
    checks = [(value[low] > value[maximum], "min", low, f"min is larger than {capacity}"),
              (value[default] < value[low], "min", default,
               f"default is less than min: {shown[low]}")]  # fmt: skip
    if high is not None:
        checks += [(value[low] > value[high], "max", low, f"min is larger than max: {shown[high]}"),
                   (value[high] > value[maximum], "max", high, f"max is larger than {capacity}"),
                   (value[default] > value[high], "max", default,
                    f"default is more than max: {shown[high]}")]  # fmt: skip
    causes = [invalid(f"{field}.{name}", _shown(text), detail)
              for failed, name, text, detail in checks if failed]  # fmt: skip
    if step is not None:
        form = _quantity(low)[1] if value[low] else _quantity(step)[1]  # (Quantity.Add's)
        if value[low] + value[step] > value[maximum]:
            added = formatted_quantity(value[low] + value[step], form)
            detail = f"one step {added} is larger than {capacity}"
            causes.append(invalid(f"{field}.step", _shown(step), detail))
        causes += _step(default, low, step, f"{field}.step")
        causes += _step(high, low, step, f"{field}.step") if high is not None else []
    return causes


def _capacity(multiple: bool) -> Callable[[Any, str], Causes]:
    def check(capacity: Any, field: str) -> Causes:
        """``validateMultiAllocatableDeviceCapacity`` (``multiple``: its request policy) or
        ``validateSingleAllocatableDeviceCapacity`` (none allowed)."""
        policy, field = mapping(capacity).get("requestPolicy"), f"{field}.requestPolicy"
        if policy is None:
            return []
        if not multiple:
            return [forbidden(field, "allowMultipleAllocations must be true")]
        values, bounds = list(policy.get("validValues") or ()), policy.get("validRange")
        if values and bounds is not None:
            return [forbidden(field, 'exactly one policy can be specified, cannot specify '
                              '"validValues" and "validRange" at the same time')]  # fmt: skip
        default, maximum = policy.get("default"), mapping(capacity).get("value")
        if not values and bounds is None:
            return []
        if default is None:
            detail = f"required when {'validValues' if values else 'validRange'} is defined"
            return [required_because(f"{field}.default", detail)]
        if values:
            return _valid_values(default, maximum, values, f"{field}.validValues")
        return _valid_range(default, maximum, mapping(bounds), f"{field}.validRange")

    return check


def _taint(taint: Any, field: str) -> Causes:
    """``validateDeviceTaint``: a key, a label value, an effect."""
    taint = mapping(taint)
    causes = _label_name(taint.get("key"), f"{field}.key")
    value, effect = str(taint.get("value") or ""), str(taint.get("effect") or "")
    causes += [invalid(f"{field}.value", go_quoted(value), error)
               for error in (label_value_errors(value) if value else ())]  # fmt: skip
    if not effect:
        causes.append(required_because(f"{field}.effect"))
    elif effect not in _EFFECTS:
        causes.append(unsupported_shown(f"{field}.effect", go_marshalled(effect), _EFFECTS))
    return causes


def _counter_set(counter_set: Any, field: str, name: str = "name") -> Causes:
    """``validateCounterSet`` (``name``: ``counterSet``, ``validateDeviceCounterConsumption``):
    its name a DNS label, some counters (at most 32), named as DNS labels."""
    counter_set = mapping(counter_set)
    given, where = str(counter_set.get(name) or ""), f"{field}.{name}"
    causes = dns_label_causes(given, where) if given else [required_because(where)]
    counters = mapping(counter_set.get("counters"))
    if not counters:
        return [*causes, required_because(f"{field}.counters")]
    return causes + _map(counters, f"{field}.counters", 63, dns_label_causes, None, 32)


def _binding(device: Mapping[str, Any], field: str) -> Causes:
    """``validateDeviceBindingParameters``: at most 4 of each, label names, no duplicates, no
    condition both, neither without the other."""
    given = device.get("bindingConditions"), device.get("bindingFailureConditions")
    conditions, failures = (list(items or ()) for items in given)
    names = (f"{field}.bindingConditions", f"{field}.bindingFailureConditions")
    causes = [cause for items, where in zip((conditions, failures), names, strict=True)
              for cause in validated_slice(items, 4, where, _label_name)]  # fmt: skip
    for items, where in ((conditions, names[0]), (failures, names[1])):
        for index, condition in enumerate(items):
            if condition in items[:index]:
                causes.append(duplicate(f"{where}[{index}]", condition))
            if items is failures and condition in conditions:
                detail = "bindingFailureConditions must not overlap with bindingConditions"
                causes.append(invalid(f"{where}[{index}]", go_quoted(condition), detail))
    if not conditions and failures:
        detail = "bindingConditions are required to use bindingFailureConditions"
        causes.append(invalid(names[0], go_marshalled(given[0]), detail))
    if not failures and conditions:
        detail = "bindingFailureConditions are required to use bindingConditions"
        causes.append(invalid(names[1], go_marshalled(given[1]), detail))
    return causes


def _device(device: Any, field: str, old: Mapping[str, Any] | None, per_device: bool) -> Causes:
    """``validateDevice``: its name, its counts of attributes and capacities, those, its taints
    (unless the same as ``old``'s), its counters consumed, its node selection, its binding
    conditions."""
    device = mapping(device)
    causes = dns_label_causes(name_of(device), f"{field}.name")
    attributes, capacity = mapping(device.get("attributes")), mapping(device.get("capacity"))
    totals = ((len(attributes) + len(capacity), 32, "attributes and capacities"),
              (len(attributes), 48, "attribute values"))  # fmt: skip
    for total, limit, what in totals:
        if total > limit:
            detail = f"the total number of {what} must not exceed {limit}"
            causes.append(invalid(field, str(total), detail))
    causes += _map(attributes, f"{field}.attributes", _KEY_SHOWN, _qualified_name, _attribute)
    multiple = device.get("allowMultipleAllocations") is True
    causes += _map(capacity, f"{field}.capacity", _KEY_SHOWN, _qualified_name, _capacity(multiple))
    taints = device.get("taints")
    if old is None or (old.get("taints") or None) != (taints or None):
        causes += validated_slice(list(taints or ()), 16, f"{field}.taints", _taint)
    causes += keyed_set(list(device.get("consumesCounters") or ()), 2,
                         f"{field}.consumesCounters",
                         lambda item, where: _counter_set(item, where, "counterSet"),
                         lambda item: str(mapping(item).get("counterSet") or ""))  # fmt: skip
    if per_device:
        causes += _node_selection(device, field, spec=False)
    elif any(device.get(key) is not None for key in ("nodeName", "nodeSelector", "allNodes")):
        causes.append(invalid(field, "null", _NOT_PER_DEVICE))
    return causes + _binding(device, field)


# -- the slice ----------------------------------------------------------------------------------


def _pool(pool: Mapping[str, Any]) -> Causes:
    """``validateResourcePool``: a name of DNS subdomains separated by slashes (at most 253
    bytes), a positive slice count, a generation not negative."""
    name, field = str(pool.get("name") or ""), "spec.pool.name"
    causes = [] if name else [required_because(field)]
    if name and len(name.encode()) > 253:
        causes.append(too_long(field, 253))
    for part in name.split("/") if name else ():
        causes += dns_subdomain_causes(part, field)
    count, generation = int(pool.get("resourceSliceCount") or 0), int(pool.get("generation") or 0)
    if count <= 0:
        detail = "must be greater than zero"
        causes.append(invalid("spec.pool.resourceSliceCount", str(count), detail))
    if generation < 0:
        detail = "must be greater than or equal to zero"
        causes.append(invalid("spec.pool.generation", str(generation), detail))
    return causes


def _immutables(spec: Mapping[str, Any], old: Mapping[str, Any]) -> Causes:
    """``ValidateImmutableField`` of the pool's name, the driver (strings), the node name (a
    pointer: ``null`` if unset)."""
    pool, old_pool = mapping(spec.get("pool")), mapping(old.get("pool"))
    pairs = (("spec.pool.name", pool.get("name"), old_pool.get("name")),
             ("spec.driver", spec.get("driver"), old.get("driver")))  # fmt: skip
    causes = [invalid(where, go_quoted(str(new or "")), _IMMUTABLE)
              for where, new, before in pairs if (new or "") != (before or "")]  # fmt: skip
    if spec.get("nodeName") != old.get("nodeName"):
        causes.append(invalid("spec.nodeName", go_marshalled(spec.get("nodeName")), _IMMUTABLE))
    return causes


def _spec(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> Causes:
    """``validateResourceSliceSpec`` (``old``: the stored spec, on update), what
    ``ValidateResourceSlice`` and ``ValidateResourceSliceUpdate`` check beyond the metadata."""
    causes = driver_name_causes(str(spec.get("driver") or ""), "spec.driver")
    causes += _pool(mapping(spec.get("pool")))
    causes += _immutables(spec, old) if old is not None else []
    causes += _node_selection(spec, "spec", spec=True)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        causes.append(invalid("spec", '""', "only one of `sharedCounters` or `devices` is allowed"))
    devices = _devices(spec)
    olds = {name_of(device): mapping(device) for device in reversed(_devices(old))}  # the first
    per_device = spec.get("perDeviceNodeSelection") is True
    advanced = any(mapping(d).get(key) for d in devices for key in ("taints", "consumesCounters"))
    limit = _MAX_DEVICES_ADVANCED if advanced else _MAX_DEVICES

    def device(item: Any, where: str) -> Causes:
        return _device(item, where, olds.get(name_of(item)), per_device)

    causes += keyed_set(devices, limit, "spec.devices", device, name_of)
    shared = list(spec.get("sharedCounters") or ())
    return causes + keyed_set(shared, 8, "spec.sharedCounters", _counter_set, name_of)


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {_KEY: _defaults}
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Causes]] = {
    _KEY: lambda obj: _spec(mapping(obj.get("spec")), None)  # ValidateResourceSlice
}
UPDATES: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Causes]] = {
    _KEY: lambda old, new: _spec(mapping(new.get("spec")), mapping(old.get("spec")))
}
