"""A pod's AppArmor profiles as kube-apiserver treats them: the deprecated per-container
annotations (``container.apparmor.security.beta.kubernetes.io/<container>``) copied into the
containers' ``appArmorProfile`` fields when a Pod is created, with their warning (the pod
strategy's ``applyAppArmorVersionSkew``), and the checks of annotations and fields, on Pods and
on pod templates (``pkg/apis/core/validation``: ``ValidateAppArmorPodAnnotations``,
``ValidateAppArmorProfileField``, ``validateAppArmorAnnotationsAndFieldsMatchOnCreate``,
``ValidatePodSpecificAnnotationUpdates``).

Pure. Causes are ``(field, cause)`` pairs with Go's messages; several annotations are checked
in their keys' order (Go's follows its map iteration, which differs from run to run).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from anyop.testing.fake.go_json import go_quoted
from anyop.testing.fake.pod_warnings import mapping

__all__ = [
    "PREFIX",
    "annotation_causes",
    "annotation_update_causes",
    "match_causes",
    "profile_causes",
    "profile_for",
    "with_profile_fields",
]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]

PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")
_LOCALHOST = "localhost/"
_MAX_NAME = 4095  # PATH_MAX - 1
_MESSAGE = 'deprecated since v1.30; use the "appArmorProfile" field instead'


def _cause(field: str, reason: str, message: str) -> tuple[str, Cause]:
    return field, {"reason": reason, "message": message}


def _invalid(field: str, value: str, detail: str) -> tuple[str, Cause]:
    return _cause(field, "FieldValueInvalid", f"Invalid value: {go_quoted(value)}: {detail}")


def _forbidden(field: str, detail: str) -> tuple[str, Cause]:
    return _cause(field, "FieldValueForbidden", f"Forbidden: {detail}")


_NO_NAME = "Required value: must be set when AppArmor type is Localhost"


def profile_for(annotation: str) -> dict[str, str] | None:
    """``ApparmorFieldForAnnotation``: the profile an annotation's value names, if any."""
    if annotation == "unconfined":
        return {"type": "Unconfined"}
    if annotation == "runtime/default":
        return {"type": "RuntimeDefault"}
    if annotation.startswith(_LOCALHOST) and annotation != _LOCALHOST:
        return {"type": "Localhost", "localhostProfile": annotation.removeprefix(_LOCALHOST)}
    return None


def profile_causes(profile: Any, path: str) -> Causes:
    """``ValidateAppArmorProfileField`` of a security context's ``appArmorProfile``."""
    if not isinstance(profile, Mapping):
        return []
    kind, name = str(profile.get("type") or ""), profile.get("localhostProfile")
    if kind == "Localhost":
        where = f"{path}.localhostProfile"
        if name is None:
            return [_cause(where, "FieldValueRequired", _NO_NAME)]
        causes: Causes = []
        text = str(name)
        if text.strip() != text:
            causes.append(_invalid(where, text, "must not be padded with whitespace"))
        elif not text:
            causes.append(_cause(where, "FieldValueRequired", _NO_NAME))
        if len(text.encode()) > _MAX_NAME:
            message = f"Too long: may not be more than {_MAX_NAME} bytes"
            causes.append(_cause(where, "FieldValueTooLong", message))
        return causes
    if kind in ("RuntimeDefault", "Unconfined"):
        if name is None:
            return []
        detail = "can only be set when AppArmor type is Localhost"
        return [_invalid(f"{path}.localhostProfile", str(name), detail)]
    if not kind:
        detail = "Required value: type is required when appArmorProfile is set"
        return [_cause(f"{path}.type", "FieldValueRequired", detail)]
    listed = ", ".join(go_quoted(each) for each in _TYPES)
    detail = f"Unsupported value: {go_quoted(kind)}: supported values: {listed}"
    return [_cause(f"{path}.type", "FieldValueNotSupported", detail)]


def _containers(spec: Mapping[str, Any], path: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """``VisitContainersWithPath``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(key) or ()):
            yield mapping(container), f"{path}.{key}[{index}]"


def annotation_causes(annotations: Any, spec: Mapping[str, Any], where: str) -> Causes:
    """``ValidateAppArmorPodAnnotations``: each AppArmor annotation names a container of the
    pod, and a profile of the annotations' form (``where``: the annotations' path)."""
    names = {str(c.get("name") or "") for c, _ in _containers(spec, "spec")}
    causes: Causes = []
    for key, value in sorted(mapping(annotations).items()):
        if not key.startswith(PREFIX):
            continue
        name, text = key.removeprefix(PREFIX), str(value or "")
        if name not in names:
            causes.append(_invalid(f"{where}[{key}]", name, "container not found"))
        if text not in ("", "runtime/default", "unconfined") and not text.startswith(_LOCALHOST):
            detail = f"invalid AppArmor profile name: {go_quoted(text)}"
            causes.append(_invalid(f"{where}[{key}]", text, detail))
    return causes


def _windows(spec: Mapping[str, Any]) -> bool:
    return mapping(spec.get("os")).get("name") == "windows"


def match_causes(metadata: Any, spec: Mapping[str, Any], spec_path: str) -> Causes:
    """``validateAppArmorAnnotationsAndFieldsMatchOnCreate``: a container's annotation names
    the profile its field (or else the pod's) has, unless the pod is a Windows one."""
    if _windows(spec):
        return []
    annotations = mapping(mapping(metadata).get("annotations"))
    pod_profile = mapping(spec.get("securityContext")).get("appArmorProfile")
    causes: Causes = []
    for container, path in _containers(spec, spec_path):
        profile = mapping(container.get("securityContext")).get("appArmorProfile")
        profile = profile if profile is not None else pod_profile
        key = f"{PREFIX}{container.get('name') or ''}"
        if not isinstance(profile, Mapping) or key not in annotations:
            continue
        annotation, where = str(annotations[key] or ""), f"{path}.securityContext.appArmorProfile"
        kind = profile.get("type")
        wrong_type = (
            (kind == "Unconfined" and annotation != "unconfined")
            or (kind == "RuntimeDefault" and annotation != "runtime/default")
            or (kind == "Localhost" and not annotation.startswith(_LOCALHOST))
        )
        name = annotation.removeprefix(_LOCALHOST)
        if wrong_type:
            detail = "apparmor type in annotation and field must match"
            causes.append(_forbidden(f"{where}.type", detail))
        elif kind == "Localhost" and name != profile.get("localhostProfile"):
            detail = "apparmor profile in annotation and field must match"
            causes.append(_forbidden(f"{where}.localhostProfile", detail))
    return causes


def annotation_update_causes(old: Any, new: Any) -> Causes:
    """``ValidatePodSpecificAnnotationUpdates``' AppArmor part: a Pod's AppArmor annotations may
    not be changed, removed or added."""
    before, after = mapping(old), mapping(new)
    causes: Causes = []
    for key, value in sorted(before.items()):
        if key.startswith(PREFIX) and (key not in after or after[key] != value):
            detail = "may not remove or update AppArmor annotations"
            causes.append(_forbidden(f"metadata.annotations[{key}]", detail))
    for key in sorted(after):
        if key.startswith(PREFIX) and key not in before:
            detail = "may not add AppArmor annotations"
            causes.append(_forbidden(f"metadata.annotations[{key}]", detail))
    return causes


def with_profile_fields(pod: dict[str, Any], warnings: list[str] | None) -> dict[str, Any]:
    """``applyAppArmorVersionSkew`` on a new Pod: each container without a profile of its own
    whose annotation names a valid profile other than the pod's gets it in its field; added to
    ``warnings`` (if a list: the request's), each annotation copied, and each that names no
    valid profile. The pod is given back changed, or as it is."""
    spec = mapping(pod.get("spec"))
    annotations = mapping(mapping(pod.get("metadata")).get("annotations"))
    if _windows(spec) or not any(key.startswith(PREFIX) for key in annotations):
        return pod
    pod_profile = mapping(spec.get("securityContext")).get("appArmorProfile")
    new_spec, found = dict(spec), []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        if not isinstance(spec.get(key), list):
            continue
        containers = new_spec[key] = list(spec[key])
        for index, container in enumerate(containers):
            container = mapping(container)
            security = mapping(container.get("securityContext"))
            name = f"{PREFIX}{container.get('name') or ''}"
            if name not in annotations or security.get("appArmorProfile") is not None:
                continue
            profile = profile_for(str(annotations[name] or ""))
            if profile is not None and profile_causes(profile, ""):
                profile = None  # (a name padded with whitespace, or too long)
            if profile is not None and not _same(profile, pod_profile):
                security = {**security, "appArmorProfile": profile}
                containers[index] = {**container, "securityContext": security}
            elif profile is not None:
                continue
            found.append(f"metadata.annotations[{name}]: {_MESSAGE}")
    if warnings is not None:
        warnings += found
    return {**pod, "spec": new_spec}


def _same(profile: Mapping[str, Any], other: Any) -> bool:
    """``apiequality.Semantic.DeepEqual`` of two profiles."""
    if not isinstance(other, Mapping):
        return False
    return all(profile.get(k) == other.get(k) for k in ("type", "localhostProfile"))
