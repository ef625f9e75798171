"""The diff kube-apiserver shows when it refuses a change to a Pod's (or a claim's) spec.

Pure. ``ValidatePodUpdate`` compares the old spec with the new one (its images, deadline and
tolerations taken from the old) as its internal Go type, ``core.PodSpec``, and shows their
difference: both written as indented JSON (the internal type has no JSON tags, so every field
shows, by its Go name, in its Go order) and compared line by line, as a unified diff with three
lines of context. The internal layout comes from Kubernetes' Go code (``data/go_types.json.gz``,
made by ``scripts/fake_go_types.py``); a ``v1`` spec is read into it as the API server converts
it (the host namespace fields move into its security context).
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from typing import Any

from anyop.testing.fake.go_structs import go_structs

__all__ = [
    "claim_spec_diff",
    "pod_spec_diff",
    "spec_json",
    "template_json",
    "with_sent_empties",
]

_ZERO: Mapping[str, Any] = {
    "string": "", "bool": False, "int": 0, "int32": 0, "int64": 0, "uint32": 0, "uint64": 0,
    "float32": 0, "float64": 0, "types.UID": "", "resource.Quantity": "0",
    "intstr.IntOrString": 0, "metav1.Time": None,
}  # fmt: skip
_HOST_FIELDS = {
    "HostNetwork": "hostNetwork", "HostPID": "hostPID", "HostIPC": "hostIPC",
    "ShareProcessNamespace": "shareProcessNamespace", "HostUsers": "hostUsers",
}  # fmt: skip


@functools.cache
def _layout() -> Mapping[str, Any]:
    layout: Mapping[str, Any] = go_structs()["internal"]
    return layout


def _value(expression: str, value: Any) -> Any:
    """A ``v1`` JSON value as the internal Go type ``expression`` writes it."""
    layout = _layout()
    if expression.startswith("*"):
        return None if value is None else _value(expression[1:], value)
    if expression.startswith("[]"):
        if value is None:
            return None
        if expression == "[]byte":
            return value
        return [_value(expression[2:], item) for item in value]
    if expression.startswith("map["):
        if value is None:
            return None
        inner = expression[expression.index("]") + 1 :]
        return {key: _value(inner, value[key]) for key in sorted(value)}
    if expression in layout["structs"]:
        return _struct(expression, value if isinstance(value, Mapping) else {})
    if expression in layout["named"]:
        return _value(layout["named"][expression], value)
    if value is not None:
        return value
    return _ZERO.get(expression)


def _struct(name: str, value: Mapping[str, Any], out: dict[str, Any] | None = None) -> Any:
    layout = _layout()
    out = {} if out is None else out
    names = layout["json"].get(name) or {}
    for go_name, expression in layout["structs"][name]:
        if not go_name and expression == "metav1.ObjectMeta":  # a claim template's, promoted
            out.update(_promoted_meta(value.get("metadata") or {}))
            continue
        if not go_name:  # embedded: its fields are promoted, from the same JSON object
            _struct(expression, value, out)
            continue
        out[go_name] = _value(expression, value.get(names.get(go_name, "")))
    return out


def _internal(spec: Mapping[str, Any]) -> Any:
    """A ``v1`` Pod spec (decoded and defaulted) as ``core.PodSpec``."""
    converted = _struct("PodSpec", spec)
    if converted.get("ServiceAccountName") == "":
        converted["ServiceAccountName"] = spec.get("serviceAccount") or ""
    security = converted.get("SecurityContext") or _struct("PodSecurityContext", {})
    for go_name, json_name in _HOST_FIELDS.items():
        kind = "bool" if go_name.startswith("Host") and go_name != "HostUsers" else "*bool"
        security[go_name] = _value(kind, spec.get(json_name))
    converted["SecurityContext"] = security
    return converted


def _go_json(value: Any) -> list[str]:
    """``json.MarshalIndent(value, "", " ")``, split into lines as the diff reads them."""
    text = _escaped(json.dumps(value, indent=1, ensure_ascii=False))
    return [line + "\n" for line in text.split("\n")]


def _escaped(text: str) -> str:
    """JSON as Go's encoder writes it: ``<``, ``>`` and ``&`` escaped."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


def pod_spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """The unified diff of two ``v1`` Pod specs as kube-apiserver writes it into its refusal
    (``new`` already has the fields that may change taken from ``old``)."""
    return _diff(_internal(old), _internal(new))


def claim_spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """The same of two ``v1`` PersistentVolumeClaim specs."""
    empty: Mapping[str, Any] = {}
    return _diff(_struct("PersistentVolumeClaimSpec", old or empty),
                 _struct("PersistentVolumeClaimSpec", new or empty))  # fmt: skip


def _diff(old: Any, new: Any) -> str:
    """``diff.Diff``: both as indented JSON, compared line by line (three of context)."""
    before, after = _go_json(old), _go_json(new)
    lines: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after)
    for group in matcher.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in before[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                lines += ["-" + line for line in before[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + line for line in after[j1:j2]]
    return "".join(lines)


_META_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
               "generation", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
               "finalizers", "managedFields")  # fmt: skip


def _promoted_meta(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """An embedded ``ObjectMeta``'s fields as Go writes them promoted: tagged, ``omitempty``."""
    out: dict[str, Any] = {}
    for key in _META_ORDER:
        value = metadata.get(key)
        if value:  # omitempty (and omitzero: a template's creationTimestamp)
            out[key] = dict(sorted(value.items())) if isinstance(value, Mapping) else value
    return out


def template_json(template: Mapping[str, Any]) -> str:
    """A ``v1`` pod template as ``field.Invalid`` shows the internal ``core.PodTemplateSpec``:
    compact JSON, its embedded ``ObjectMeta``'s fields (tagged, ``omitempty``) promoted beside
    ``Spec``, the internal ``PodSpec``."""
    out = _promoted_meta(template.get("metadata") or {})
    out["Spec"] = _internal(template.get("spec") or {})
    return _escaped(json.dumps(out, separators=(",", ":"), ensure_ascii=False))


def spec_json(spec: Mapping[str, Any]) -> str:
    """A ``v1`` Pod spec as ``field.Invalid`` shows the internal ``core.PodSpec``: compact."""
    return _escaped(json.dumps(_internal(spec), separators=(",", ":"), ensure_ascii=False))


def with_sent_empties(decoded: Any, sent: Any) -> Any:
    """A decoded value with the empty lists and maps the request sent put back where decoding
    left them out: Go's object holds them empty, not nil, until it is written (its diffs and
    messages show ``[]`` and ``{}``)."""
    if isinstance(decoded, Mapping) and isinstance(sent, Mapping):
        result = dict(decoded)
        for key, value in sent.items():
            if key not in result and isinstance(value, (list, dict)) and not value:
                result[key] = type(value)()
            elif key in result:
                result[key] = with_sent_empties(result[key], value)
        return result
    if isinstance(decoded, list) and isinstance(sent, list) and len(decoded) == len(sent):
        return [with_sent_empties(a, b) for a, b in zip(decoded, sent, strict=True)]
    return decoded
