"""The checks of a CRD beyond its schemas, as apiextensions-apiserver's
``ValidateCustomResourceDefinition`` and ``ValidateCustomResourceDefinitionUpdate`` make them
(``pkg/apis/apiextensions/validation``): its group, scope, versions, names, subresources,
printer columns, selectable fields, conversion, stored versions, API approval and
``preserveUnknownFields``, with the schemas' errors (:mod:`.crd_schema_checks`) and a version's
subresources', printer columns' and selectable fields' (:mod:`.crd_version_checks`) where Go
meets them: one list, in Go's order.

Pure. Paths are those of the internal version, which the ``v1`` conversion makes: a schema, the
subresources, the printer columns or the selectable fields every version has alike are the
spec's (``spec.validation``, ``spec.subresources``, ``spec.additionalPrinterColumns``,
``spec.selectableFields``), and ``spec.version`` is the first version's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from anyop.testing.fake.crd_schema_checks import schema_has
from anyop.testing.fake.crd_structural import field_invalid
from anyop.testing.fake.crd_version_checks import (
    MAX_SELECTABLE,
    column_causes,
    selectable_causes,
    subresource_causes,
)
from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_marshalled, go_quoted
from anyop.testing.fake.object_meta import DNS_1035, DNS_1035_HINT, dns_subdomain_errors
from anyop.testing.fake.statuses import Cause
from anyop.testing.fake.webhook_config_rules import webhook_service_causes, webhook_url_causes

__all__ = ["crd_causes", "crd_name_check"]

Causes = list[tuple[str, Cause]]

_REVIEW_VERSIONS = ("v1", "v1beta1")
_APPROVAL = "api-approved.kubernetes.io"
_SCHEMA_AT = re.compile(r"^spec\.versions\[(\d+)\]\.schema\.")


def crd_name_check(crd: Mapping[str, Any]) -> Callable[[str, bool], list[str]]:
    """The CRD's name function (``ValidateObjectMeta``'s), for its name and its
    ``generateName``: a subdomain, and ``<plural>.<group>``."""
    spec = crd.get("spec") or {}
    required = f"{(spec.get('names') or {}).get('plural') or ''}.{spec.get('group') or ''}"

    def check(name: str, prefix: bool) -> list[str]:
        masked = name[:-1] + "a" if prefix and len(name) > 1 and name.endswith("-") else name
        errors = dns_subdomain_errors(masked)
        return errors if name == required else [*errors, 'must be spec.names.plural+"."+spec.group']

    return check


def crd_causes(
    crd: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    schema: Causes,
    subresource: str | None = None,
) -> Causes:
    """All the errors of a new CRD (``old``: the stored one, of an update) after its metadata's,
    in Go's order; ``schema``: its schemas' errors (:mod:`.crd_schema_checks`, then its rules'),
    put where Go finds them. An update of the status checks none of the spec."""
    if subresource == "status":  # its accepted names alone
        accepted = (crd.get("status") or {}).get("acceptedNames") or {}
        return _valid_names(accepted, "status.acceptedNames")
    spec = _defaulted(crd.get("spec") or {})
    view = _Internal(spec)
    required, per_version, top = _split(schema, len(view.versions))
    causes = _group(spec.get("group"))
    causes += _enum("spec.scope", spec.get("scope"), ("Cluster", "Namespaced"))
    causes += required
    if spec.get("preserveUnknownFields") is True and any(
        schema_has(schema, _has_default) for schema in view.schemas()
    ):
        detail = "must be false in order to use defaults in the schema"
        causes.append(field_invalid("spec.preserveUnknownFields", True, detail))
    allowed = _too_many_allowed(view, _Internal((old or {}).get("spec") or {}), old is not None)
    for index, version in enumerate(view.versions):
        at = f"spec.versions[{index}]"
        name = str(version.get("name") or "")
        causes += [field_invalid(f"{at}.name", name, e) for e in _dns_1035(name, ",")]
        causes += _deprecation(version, at)
        causes += per_version.get(index, [])
        if not view.same_subresources:
            causes += subresource_causes(version.get("subresources"), f"{at}.subresources")
        if not view.same_columns:
            causes += column_causes(version.get("additionalPrinterColumns"), at)
        if not view.same_selectable and version.get("selectableFields"):
            wrapper = None if view.same_schema else version.get("schema")
            causes += selectable_causes(version.get("selectableFields"), wrapper, at,
                                     allowed.get(name, False), per_version=True)  # fmt: skip
    names = [str(v.get("name") or "") for v in view.versions]
    if len(set(names)) != len(names):
        causes.append(_versions_invalid(view, "must contain unique version names"))
    if sum(1 for v in view.versions if v.get("storage") is True) != 1:
        detail = "must have exactly one version marked as storage version"
        causes.append(_versions_invalid(view, detail))
    if names:
        causes += [field_invalid("spec.version", names[0], e) for e in _dns_1035(names[0], ",")]
    causes += _names(spec.get("names") or {})
    causes += top
    if view.same_subresources and view.versions:
        causes += subresource_causes(view.versions[0].get("subresources"), "spec.subresources")
    if view.same_columns and view.versions:
        causes += column_causes(view.versions[0].get("additionalPrinterColumns"), "spec")
    if view.same_selectable and view.versions and view.versions[0].get("selectableFields"):
        wrapper = view.versions[0].get("schema") if view.same_schema else None
        causes += selectable_causes(view.versions[0].get("selectableFields"), wrapper, "spec",
                                 allowed.get("", False), per_version=False)  # fmt: skip
    causes += _conversion(spec, old)
    if old is not None:
        causes += _immutable(spec, old)
    causes += _stored_versions(view.versions, old)
    causes += _approval(crd, old)
    old_preserves = old is not None and (old.get("spec") or {}).get("preserveUnknownFields")
    if spec.get("preserveUnknownFields") is True and old_preserves is not True:
        detail = ("cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                  "spec.versions[*].schema instead")  # fmt: skip
        causes.append(field_invalid("spec.preserveUnknownFields", True, detail))
    return causes


def _defaulted(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The spec with the ``v1`` defaults of its names (an update's body may leave them out)."""
    names = dict(spec.get("names") or {})
    kind = str(names.get("kind") or "")
    names["singular"] = names.get("singular") or kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = f"{kind}List"
    return {**spec, "names": names}


class _Internal:
    """The ``v1`` versions as the internal version has them: which per-version fields all
    versions share (the conversion moves those to the spec)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        raw = spec.get("versions")
        self.versions = [v for v in raw or () if isinstance(v, Mapping)]
        self.nil = raw is None  # (Go's nil slice: shown as null)
        self.same_schema = self._same("schema", pointer=True)
        self.same_subresources = self._same("subresources", pointer=True)
        self.same_columns = self._same("additionalPrinterColumns", pointer=False)
        self.same_selectable = self._same("selectableFields", pointer=False)

    def _same(self, key: str, *, pointer: bool) -> bool:
        if not self.versions:
            return False
        values = [v.get(key) if pointer else (v.get(key) or None) for v in self.versions]
        return all(value == values[0] for value in values)

    def schemas(self) -> list[Any]:
        return [(v.get("schema") or {}).get("openAPIV3Schema") for v in self.versions]

    def shown(self) -> str:
        """The internal versions as Go's ``json.Marshal`` writes them (field names, in order)."""
        if self.nil:
            return "null"
        rendered = []
        for version in self.versions:
            warning = version.get("deprecationWarning")
            rendered.append({
                "Name": version.get("name") or "",
                "Served": version.get("served") is True,
                "Storage": version.get("storage") is True,
                "Deprecated": version.get("deprecated") is True,
                "DeprecationWarning": warning if isinstance(warning, str) else None,
                "Schema": None if self.same_schema else _schema_shown(version.get("schema")),
                "Subresources": None if self.same_subresources
                else _subresources_shown(version.get("subresources")),
                "AdditionalPrinterColumns": None if self.same_columns
                else _columns_shown(version.get("additionalPrinterColumns")),
                "SelectableFields": None if self.same_selectable
                else _selectable_shown(version.get("selectableFields")),
            })  # fmt: skip
        return go_marshalled(rendered, sort_keys=False)


def _schema_shown(wrapper: Any) -> Any:
    # (A per-version schema's internal struct is not rendered: its JSON is shown instead.)
    if not isinstance(wrapper, Mapping):
        return None
    return {"OpenAPIV3Schema": wrapper.get("openAPIV3Schema")}


def _subresources_shown(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return None
    scale = value.get("scale")
    if isinstance(scale, Mapping):
        selector = scale.get("labelSelectorPath")
        scale = {"SpecReplicasPath": scale.get("specReplicasPath") or "",
                 "StatusReplicasPath": scale.get("statusReplicasPath") or "",
                 "LabelSelectorPath": selector if isinstance(selector, str) else None}  # fmt: skip
    status: dict[str, Any] | None = {} if isinstance(value.get("status"), Mapping) else None
    return {"Status": status, "Scale": scale if isinstance(scale, Mapping) else None}


def _columns_shown(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    return [{"Name": c.get("name") or "", "Type": c.get("type") or "",
             "Format": c.get("format") or "", "Description": c.get("description") or "",
             "Priority": c.get("priority") or 0, "JSONPath": c.get("jsonPath") or ""}
            for c in value if isinstance(c, Mapping)]  # fmt: skip


def _selectable_shown(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    return [{"JSONPath": f.get("jsonPath") or ""} for f in value if isinstance(f, Mapping)]


def _versions_invalid(view: _Internal, detail: str) -> tuple[str, Cause]:
    message = f"Invalid value: {view.shown()}: {detail}"
    return "spec.versions", {"reason": "FieldValueInvalid", "message": message}


def _split(schema: Causes, count: int) -> tuple[Causes, dict[int, Causes], Causes]:
    """The schemas' errors by where Go finds them: the required schemas first, each version's
    with its version, the spec's schema's after the names."""
    required: Causes = []
    per_version: dict[int, Causes] = {}
    top: Causes = []
    for cause in schema:
        path, detail = cause
        found = _SCHEMA_AT.match(path + ".")
        if found is None or int(found.group(1)) >= count:
            top.append(cause)
        elif path.endswith(".schema.openAPIV3Schema") and detail["reason"] == "FieldValueRequired":
            required.append(cause)
        else:
            per_version.setdefault(int(found.group(1)), []).append(cause)
    return required, per_version, top


def _dns_1035(value: str, joined: str | None = None) -> list[str]:
    """``IsDNS1035Label``'s errors (``joined``: as one, joined so)."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    errors += [] if DNS_1035.match(value) else [DNS_1035_HINT]
    return [joined.join(errors)] if joined is not None and errors else errors


def _group(group: Any) -> Causes:
    group = group if isinstance(group, str) else ""
    if not group:
        return [required_because("spec.group")]
    if errors := dns_subdomain_errors(group):
        return [field_invalid("spec.group", group, ",".join(errors))]
    if "." not in group:
        return [field_invalid("spec.group", group, "should be a domain with at least one dot")]
    return []


def _enum(path: str, value: Any, accepted: tuple[str, ...]) -> Causes:
    """``validateEnumStrings``, the value required."""
    value = value if isinstance(value, str) else ""
    if not value:
        return [required_because(path)]
    if value in accepted:
        return []
    supported = ", ".join(go_quoted(a) for a in accepted)
    message = f"Unsupported value: {go_quoted(value)}: supported values: {supported}"
    return [(path, {"reason": "FieldValueNotSupported", "message": message})]


def _deprecation(version: Mapping[str, Any], at: str) -> Causes:
    """``validateDeprecationWarning``."""
    warning = version.get("deprecationWarning")
    if not isinstance(warning, str):
        return []
    path = f"{at}.deprecationWarning"
    shown = go_marshalled(warning)  # (a pointer: shown as JSON, not quoted)
    if version.get("deprecated") is not True:
        errors = ["can only be set for deprecated versions"]
        return [(path, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {e}"})
                for e in errors]  # fmt: skip
    errors = ["must be <= 256 characters long"] if len(warning.encode()) > 256 else []
    errors += [] if warning else ["must not be an empty string"]
    for index, char in enumerate(warning):
        if not char.isprintable():  # (Go checks this first: a control character is one)
            where = len(warning[:index].encode())
            errors.append("must only contain printable UTF-8 characters; non-printable "
                          f"character found at index {where}")  # fmt: skip
            break
    return [(path, {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: {e}"})
            for e in errors]  # fmt: skip


def _names(names: Mapping[str, Any]) -> Causes:
    """The spec's required names, then ``ValidateCustomResourceDefinitionNames``."""
    plural, singular = str(names.get("plural") or ""), str(names.get("singular") or "")
    kind, list_kind = str(names.get("kind") or ""), str(names.get("listKind") or "")
    if not kind and list_kind == "List":  # (the fake's defaulting: Go's leaves it empty)
        list_kind = ""
    causes: Causes = []
    for key, value in (("plural", plural), ("singular", singular), ("kind", kind),
                       ("listKind", list_kind)):  # fmt: skip
        if not value:
            causes.append(required_because(f"spec.names.{key}"))
    return causes + _valid_names(names, "spec.names")


def _valid_names(names: Mapping[str, Any], at: str) -> Causes:
    """``ValidateCustomResourceDefinitionNames`` (``at``: ``spec.names`` or
    ``status.acceptedNames``)."""
    plural, singular = str(names.get("plural") or ""), str(names.get("singular") or "")
    kind, list_kind = str(names.get("kind") or ""), str(names.get("listKind") or "")
    if not kind and list_kind == "List":  # (the fake's defaulting: Go's leaves it empty)
        list_kind = ""
    causes: Causes = []
    for key, value in (("plural", plural), ("singular", singular)):
        if value and (errors := _dns_1035(value, ",")):
            causes.append(field_invalid(f"{at}.{key}", value, errors[0]))
    for key, value in (("kind", kind), ("listKind", list_kind)):
        if value and (errors := _dns_1035(value.lower(), ",")):
            detail = f"may have mixed case, but should otherwise match: {errors[0]}"
            causes.append(field_invalid(f"{at}.{key}", value, detail))
    for index, short in enumerate(names.get("shortNames") or ()):
        for error in _dns_1035(str(short), ","):
            causes.append(field_invalid(f"{at}.shortNames[{index}]", str(short), error))
    if kind and kind == list_kind:
        detail = "kind and listKind may not be the same"
        causes.append(field_invalid(f"{at}.listKind", list_kind, detail))
    for index, category in enumerate(names.get("categories") or ()):
        for error in _dns_1035(str(category), ","):
            causes.append(field_invalid(f"{at}.categories[{index}]", str(category), error))
    return causes


def _conversion(spec: Mapping[str, Any], old: Mapping[str, Any] | None) -> Causes:
    """The conversion's strategy against ``preserveUnknownFields``, then
    ``validateCustomResourceConversion``."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, Mapping):
        return []
    strategy = conversion.get("strategy")
    causes: Causes = []
    if strategy != "None" and spec.get("preserveUnknownFields") is True:
        detail = "must be None if spec.preserveUnknownFields is true"
        causes.append(field_invalid("spec.conversion.strategy", strategy or "", detail))
    causes += _enum("spec.conversion.strategy", strategy, ("None", "Webhook"))
    given = conversion.get("webhook")
    webhook: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    config = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions") or []
    at = "spec.conversion"
    if strategy != "Webhook":
        if isinstance(config, Mapping):
            detail = "should not be set when strategy is not set to Webhook"
            causes.append(forbidden(f"{at}.webhookClientConfig", detail))
        if versions:
            detail = "should not be set when strategy is not set to Webhook"
            causes.append(forbidden(f"{at}.conversionReviewVersions", detail))
        return causes
    if not isinstance(config, Mapping):
        detail = "required when strategy is set to Webhook"
        causes.append(required_because(f"{at}.webhookClientConfig", detail))
    else:
        url, service = config.get("url"), config.get("service")
        if (url is None) == (service is None):
            detail = "exactly one of url or service is required"
            causes.append(required_because(f"{at}.webhookClientConfig", detail))
        elif url is not None:
            causes += list(webhook_url_causes(str(url), f"{at}.webhookClientConfig.url"))
        elif isinstance(service, Mapping):  # (Go passes its name as the namespace, and back)
            name, namespace = service.get("name"), service.get("namespace")
            swapped = {**service, "name": namespace, "namespace": name}
            causes += list(webhook_service_causes(swapped, f"{at}.webhookClientConfig.service"))
    return causes + _review_versions(versions, _recognized_required(old))


def _recognized_required(old: Mapping[str, Any] | None) -> bool:
    if old is None:
        return True
    conversion = (old.get("spec") or {}).get("conversion")
    if not isinstance(conversion, Mapping):
        return True
    versions = (conversion.get("webhook") or {}).get("conversionReviewVersions") or []
    return not versions or any(v in _REVIEW_VERSIONS for v in versions)


def _review_versions(versions: list[Any], recognized: bool) -> Causes:
    """``validateConversionReviewVersions``."""
    at = "spec.conversion.conversionReviewVersions"
    if not versions:
        return [required_because(at)]
    causes: Causes = []
    seen: set[str] = set()
    for index, version in enumerate(str(v) for v in versions):
        if version in seen:
            causes.append(field_invalid(f"{at}[{index}]", version, "duplicate version"))
            continue
        seen.add(version)
        causes += [field_invalid(f"{at}[{index}]", version, e) for e in _dns_1035(version)]
    if recognized and not seen & set(_REVIEW_VERSIONS):
        detail = f"must include at least one of {', '.join(_REVIEW_VERSIONS)}"
        causes.append(field_invalid(at, [str(v) for v in versions], detail))
    return causes


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(isinstance(c, Mapping) and c.get("type") == "Established"
               and c.get("status") == "True" for c in conditions)  # fmt: skip


def _immutable(spec: Mapping[str, Any], old: Mapping[str, Any]) -> Causes:
    """``validateCustomResourceDefinitionSpecUpdate``'s fields that may not change."""
    old_spec = old.get("spec") or {}
    names, old_names = spec.get("names") or {}, old_spec.get("names") or {}
    pairs = [("spec.group", spec.get("group"), old_spec.get("group")),
             ("spec.names.plural", names.get("plural"), old_names.get("plural"))]  # fmt: skip
    if _established(old):
        pairs[:0] = [("spec.scope", spec.get("scope"), old_spec.get("scope")),
                     ("spec.names.kind", names.get("kind"), old_names.get("kind"))]  # fmt: skip
    return [field_invalid(path, new or "", "field is immutable")
            for path, new, was in pairs if (new or "") != (was or "")]  # fmt: skip


def _too_many_allowed(view: _Internal, old: _Internal, updating: bool) -> dict[str, bool]:
    """``findTooManySelectableFieldsAllowed``: unchanged lists already too long stay."""
    if not updating:
        return {}
    allowed: dict[str, bool] = {}
    if old.same_selectable and old.versions and view.same_selectable and view.versions:
        fields = old.versions[0].get("selectableFields") or []
        same = fields == (view.versions[0].get("selectableFields") or [])
        allowed[""] = len(fields) > MAX_SELECTABLE and same
    olds = {str(v.get("name")): v for v in old.versions} if not old.same_selectable else {}
    for version in view.versions if not view.same_selectable else ():
        before = olds.get(str(version.get("name")))
        fields = (before or {}).get("selectableFields") or []
        if len(fields) > MAX_SELECTABLE and fields == (version.get("selectableFields") or []):
            allowed[str(version.get("name"))] = True
    return allowed


def _stored_versions(versions: list[Mapping[str, Any]], old: Mapping[str, Any] | None) -> Causes:
    """``ValidateCustomResourceDefinitionStoredVersions`` of what the strategy makes of them:
    the stored CRD's, with the (first) storage version added."""
    stored: list[str] | None = None
    if old is not None:
        kept = (old.get("status") or {}).get("storedVersions")
        stored = [str(v) for v in kept] if isinstance(kept, list) else None
    storage = next((str(v.get("name")) for v in versions if v.get("storage") is True), None)
    if storage is not None and storage not in (stored or []):
        stored = [*(stored or []), storage]
    at = "status.storedVersions"
    if not stored:
        return [field_invalid(at, stored, "must have at least one stored version")]
    causes: Causes = []
    left = {name: index for index, name in enumerate(stored)}
    for version in versions:
        name = str(version.get("name") or "")
        if version.get("storage") is True and name not in left:
            causes.append(field_invalid(at, stored, f"must have the storage version {name}"))
        left.pop(name, None)
    for name, index in sorted(left.items(), key=lambda item: item[1]):
        detail = (f"missing from spec.versions; {name} was previously a storage version, and "
                  f"must remain in spec.versions until a storage migration ensures no data "
                  f"remains persisted in {name} and removes {name} from "
                  "status.storedVersions")  # fmt: skip
        causes.append(field_invalid(f"{at}[{index}]", name, detail))
    return causes


def _approval_state(crd: Mapping[str, Any]) -> tuple[str, str, str]:
    """``GetAPIApprovalState``: the state, why, and the annotation."""
    annotation = str(((crd.get("metadata") or {}).get("annotations") or {}).get(_APPROVAL) or "")
    if not annotation:
        reason = (f'protected groups must have approval annotation "{_APPROVAL}", see '
                  "https://github.com/kubernetes/enhancements/pull/1111")  # fmt: skip
        return "missing", reason, annotation
    if annotation.startswith("unapproved"):
        return "bypassed", "", annotation
    try:
        parts = urlsplit(annotation)
    except ValueError:
        parts = None
    if parts is not None and parts.scheme and parts.netloc:
        return "approved", "", annotation
    reason = (f'protected groups must have approval annotation "{_APPROVAL}" with either a URL '
              'or a reason starting with "unapproved", see '
              "https://github.com/kubernetes/enhancements/pull/1111")  # fmt: skip
    return "invalid", reason, annotation


def _approval(crd: Mapping[str, Any], old: Mapping[str, Any] | None) -> Causes:
    """``validateAPIApproval``: a protected group's (``k8s.io``, ``kubernetes.io``) CRD needs
    the approval annotation."""
    group = str((crd.get("spec") or {}).get("group") or "")
    if not any(group == g or group.endswith(f".{g}") for g in ("k8s.io", "kubernetes.io")):
        return []
    state, reason, annotation = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    at = f"metadata.annotations[{_APPROVAL}]"
    if state == "missing":
        return [required_because(at, reason)]
    if state == "invalid":
        return [field_invalid(at, annotation, reason)]
    return []


def _has_default(node: Mapping[str, Any]) -> bool:
    return "default" in node
