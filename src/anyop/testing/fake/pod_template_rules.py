"""What kube-apiserver's Go code checks of PodTemplates and ReplicationControllers (core
``v1``) and of ControllerRevisions (``apps/v1``) beyond their schemas, with its messages and in
its order.

Pure. :data:`CREATES` is ``ValidatePodTemplate`` (its template as ``ValidatePodTemplateSpec``),
``ValidateReplicationController`` (a selector, replicas and a template that matches it, whose
pods restart always) and ``ValidateControllerRevisionCreate`` (a revision not negative, data
that is a JSON object), beyond the metadata; :data:`UPDATES` their ``ValidateUpdate``: the same
checks, but a ControllerRevision's data, which may not change, and is not checked again. Their
defaults are :mod:`.pod_defaults`'. The objects are decoded (typed) already.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anyop.testing.fake.field_errors import forbidden, required_because
from anyop.testing.fake.go_json import go_marshalled
from anyop.testing.fake.pod_rules import invalid, required, template_causes, unsupported

__all__ = ["CREATES", "DEFAULTERS", "UPDATES"]

Cause = dict[str, str]
Causes = list[tuple[str, Cause]]
Body = dict[str, Any]

_NEGATIVE = "must be greater than or equal to 0"
_IMMUTABLE = "field is immutable"


def _pod_template(obj: Mapping[str, Any]) -> Causes:
    """``ValidatePodTemplate`` beyond the metadata: its template."""
    return template_causes(obj.get("template") or {}, "template")


def _replication_controller(obj: Mapping[str, Any]) -> Causes:
    """``ValidateReplicationControllerSpec``."""
    spec = obj.get("spec") or {}
    causes: Causes = []
    for field in ("minReadySeconds", "replicas"):
        value = spec.get(field)
        if value is None and field == "replicas":
            causes.append(required("spec.replicas"))
        elif isinstance(value, int) and value < 0:
            causes.append(invalid(f"spec.{field}", str(value), _NEGATIVE))
        if field == "minReadySeconds" and not spec.get("selector"):  # (checked between them)
            causes.append(required("spec.selector"))
    template = spec.get("template")
    if template is None:
        return [*causes, required("spec.template")]
    selector = spec.get("selector") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and any(labels.get(key) != value for key, value in selector.items()):
        shown = json.dumps(labels, separators=(",", ":"), sort_keys=True) if labels else "null"
        detail = "`selector` does not match template `labels`"
        causes.append(invalid("spec.template.metadata.labels", shown, detail))
    causes += template_causes(template, "spec.template")
    pod_spec = template.get("spec") or {}
    restart = str(pod_spec.get("restartPolicy") or "")
    if restart != "Always":
        causes.append(unsupported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        detail = "activeDeadlineSeconds in ReplicationController is not Supported"
        causes.append(forbidden("spec.template.spec.activeDeadlineSeconds", detail))
    return causes


def _revision(obj: Mapping[str, Any]) -> Causes:
    """``validateControllerRevision`` beyond the metadata: a revision not negative."""
    revision = obj.get("revision")
    if isinstance(revision, int) and revision < 0:
        return [invalid("revision", str(revision), _NEGATIVE)]
    return []


def _revision_create(obj: Mapping[str, Any]) -> Causes:
    """``ValidateControllerRevisionCreate``: the revision's checks, then its data: a JSON
    object."""
    causes = _revision(obj)
    data = obj.get("data")
    if data is None:
        causes.append(required_because("data", "data is mandatory"))
    elif not isinstance(data, Mapping):
        causes.append(required_because("data", "data must be a valid JSON object"))
    return causes


def _revision_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> Causes:
    """``ValidateControllerRevisionUpdate``: the revision's checks, then its data unchanged."""
    causes = _revision(new)
    if new.get("data") != old.get("data"):
        causes.append(invalid("data", go_marshalled(new.get("data")), _IMMUTABLE))
    return causes


def _same(check: Callable[[Mapping[str, Any]], Causes]) -> Callable[..., Iterable[Any]]:
    """An update checked as a create is."""
    return lambda _old, new: check(new)


DEFAULTERS: dict[tuple[str, str], Callable[[Body], None]] = {}
"""(Their defaults are :mod:`.pod_defaults`'.)"""
CREATES: dict[tuple[str, str], Callable[[Mapping[str, Any]], Iterable[Any]]] = {
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("apps", "ControllerRevision"): _revision_create,
}
UPDATES: dict[tuple[str, str], Callable[..., Iterable[Any]]] = {
    ("", "PodTemplate"): _same(_pod_template),
    ("", "ReplicationController"): _same(_replication_controller),
    ("apps", "ControllerRevision"): _revision_update,
}
